//! `pi_agent_run`: one run of an agent as a value (core's `AgentRun`), read as a pull iterator
//! like `pi_stream`: its events, its result, its abort.

use std::ffi::c_char;
use std::sync::{Arc, Mutex, PoisonError, TryLockError};

use ::pi_agent::agent::{AgentMessage, AgentRun, RunInput};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentShared, images_input, messages_input, pi_agent, shared};
use crate::args::{Out, arg_str};
use crate::boundary::{act, into_handle, lock, opt_ref, take_handle};
use crate::error::{pi_error, pi_error_kind};
use crate::event::{EventText, pi_agent_event};
use crate::runtime::{Scope, block_on, current_scope, may_block, runtime};

/// One run of an agent, started by `pi_agent_run_open` (or `_open_with_images`,
/// `_open_messages`, `_open_continue`). Read its events with `pi_agent_run_next` (the same
/// events, in the same order, as the agent's subscribers get), wait for its end with
/// `pi_agent_run_result_json`, stop it with `pi_agent_run_abort`. The run goes on while nobody
/// reads it, until 1024 events wait unread; then it waits for the reader.
///
/// Thread-safety: `pi_agent_run_next` and `pi_agent_run_result_json` from one thread at a time
/// (they block, so not from an event callback); `pi_agent_run_abort` from any thread at any
/// time; `pi_agent_run_free` once, after the last other call has returned.
pub struct pi_agent_run {
    agent: Arc<AgentShared>,
    signal: CancellationToken,
    pub(crate) state: Mutex<RunState>,
}

pub(crate) struct RunState {
    /// `None` once the run was consumed by `pi_agent_run_result_json`.
    run: Option<AgentRun>,
    finished: bool,
    text: EventText,
    new_messages: Option<Vec<AgentMessage>>,
    /// The run's answer (core's `RunOutcome::output`), once it has ended.
    pub(crate) output: Option<serde_json::Value>,
}

/// Whether this thread runs a tool or hook callback of `run`'s agent: the run (the agent's only
/// one) waits for that callback, so waiting for the run would wait for itself, and so would
/// waiting for the run's state, which another thread may hold while it waits for the run.
fn inside_own_run(run: &pi_agent_run) -> bool {
    matches!(current_scope(), Scope::Callback(key) if key == run.agent.key())
}

/// The run's state: locked, or from inside its own run only if it is free now (`None`).
fn run_state(run: &pi_agent_run, inside: bool) -> Option<std::sync::MutexGuard<'_, RunState>> {
    if !inside {
        return Some(lock(&run.state));
    }
    match run.state.try_lock() {
        Ok(state) => Some(state),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Waits for the end of `run` once (later calls return at once) and keeps its outcome.
pub(crate) fn finish(run: &pi_agent_run) -> Result<(), pi_error> {
    let refused = || {
        pi_error::new(
            pi_error_kind::CalledFromCallback,
            "a run's result cannot be waited for from a tool or hook callback of its agent while \
             the run goes on: it would wait for itself",
        )
    };
    // Refused before anything is touched: a refusal must leave the run as it was.
    may_block("pi_agent_run_result_json")?;
    let inside = inside_own_run(run);
    let Some(mut state) = run_state(run, inside) else {
        return Err(refused());
    };
    if inside && state.run.is_some() && !state.finished {
        return Err(refused());
    }
    if let Some(events) = state.run.as_mut() {
        // `finish` (not `result`, which takes the run): a wait that fails leaves the run.
        let outcome = block_on("pi_agent_run_result_json", events.finish())?;
        state.run = None;
        state.new_messages = Some(outcome.new_messages);
        state.output = outcome.output;
        state.finished = true;
        run.agent.registrations.prune();
    }
    Ok(())
}

/// Starts a run with `text` as a user message (pi's `prompt(text)`) and writes it to
/// `*run_out` (free it with `pi_agent_run_free`). Returns at once; the run works on the
/// library's runtime.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `ALREADY_RUNNING` (pi's message), `RUNTIME`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_run_open(
    agent: *mut pi_agent,
    text: *const c_char,
    run_out: *mut *mut pi_agent_run,
) -> *mut pi_error {
    ffi_fallible! {
        let input = RunInput::text(arg_str(text, "text")?);
        open(agent, input, run_out)
    }
}

/// Starts a run with `text` and images as one user message (see
/// `pi_agent_prompt_with_images`) and writes it to `*run_out`.
///
/// Errors: those of `pi_agent_run_open`, and `INVALID_JSON`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_run_open_with_images(
    agent: *mut pi_agent,
    text: *const c_char,
    images_json: *const c_char,
    run_out: *mut *mut pi_agent_run,
) -> *mut pi_error {
    ffi_fallible! {
        let input = images_input(text, images_json)?;
        open(agent, input, run_out)
    }
}

/// Starts a run with messages as the prompt (one pi-shaped message or an array, see
/// `pi_agent_prompt_messages`) and writes it to `*run_out`.
///
/// Errors: those of `pi_agent_run_open`, and `INVALID_JSON`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_run_open_messages(
    agent: *mut pi_agent,
    messages_json: *const c_char,
    run_out: *mut *mut pi_agent_run,
) -> *mut pi_error {
    ffi_fallible! {
        let input = messages_input(messages_json)?;
        open(agent, input, run_out)
    }
}

/// Starts a run that continues from the transcript (see `pi_agent_continue`) and writes it to
/// `*run_out`.
///
/// Errors: `NULL_ARGUMENT`, `ALREADY_RUNNING`, `CANNOT_CONTINUE` (pi's messages), `RUNTIME`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_run_open_continue(
    agent: *mut pi_agent,
    run_out: *mut *mut pi_agent_run,
) -> *mut pi_error {
    ffi_fallible! {
        open(agent, RunInput::Continue, run_out)
    }
}

fn open(
    agent: *mut pi_agent,
    input: RunInput,
    run_out: *mut *mut pi_agent_run,
) -> Result<(), pi_error> {
    let agent = shared(agent)?;
    let out = Out::new(run_out, "run_out")?;
    let run = {
        let _runtime = runtime()?.enter();
        agent.agent.start(input).map_err(pi_error::from_agent)?
    };
    out.write(into_handle(pi_agent_run {
        agent,
        signal: run.signal(),
        state: Mutex::new(RunState {
            run: Some(run),
            finished: false,
            text: EventText::default(),
            new_messages: None,
            output: None,
        }),
    }));
    Ok(())
}

/// Blocks until the run's next event, writes it to `*event_out` and returns `true`; returns
/// `false` (leaving `*event_out` untouched) once `agent_end` has been returned, so
/// `while (pi_agent_run_next(run, &event))` sees every event exactly once. The event's strings
/// stay valid until the next call on the run. Also returns `false` for NULL arguments and when
/// called from an event callback. From a tool or hook callback of the run's own agent (the run
/// waits for that callback) it does not block: it returns an event already there, else
/// `false`.
///
/// Thread-safety: one thread at a time per run; not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_run_next(
    run: *mut pi_agent_run,
    event_out: *mut pi_agent_event,
) -> bool {
    ffi_boundary! {
        let Some(run) = opt_ref(run) else {
            return false;
        };
        let Ok(out) = Out::new(event_out, "event_out") else {
            return false;
        };
        // From an event callback it cannot block (and another thread may hold the state while
        // it waits for the event this callback's return lets through).
        if may_block("pi_agent_run_next").is_err() {
            return false;
        }
        // From a tool or hook callback of the run's agent, the run waits for this callback:
        // only an event already there can be read.
        let inside = inside_own_run(run);
        let Some(mut state) = run_state(run, inside) else {
            return false;
        };
        let state = &mut *state;
        let Some(events) = state.run.as_mut().filter(|_| !state.finished) else {
            return false;
        };
        let next = if inside {
            match events.poll_next_ready() {
                std::task::Poll::Ready(next) => next,
                std::task::Poll::Pending => return false,
            }
        } else {
            let Ok(next) = block_on("pi_agent_run_next", events.next()) else {
                return false;
            };
            next
        };
        let Some(event) = next else {
            state.finished = true;
            return false;
        };
        out.write(state.text.view(&event, false, run.signal.is_cancelled()));
        true
    }
}

/// Blocks until the run has ended (reading and dropping the events not read yet) and the agent
/// is idle again, and writes the messages the run added (`agent_end`'s `messages`) as a
/// pi-shaped JSON array to `*json_out` (free it with `pi_string_free`). May be called again.
///
/// Errors: `NULL_ARGUMENT`, `CALLED_FROM_CALLBACK` (from an event callback, or from a tool
/// or hook callback of the agent before the run has ended: it would wait for itself).
/// Thread-safety: one thread at a time per run; not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_run_result_json(
    run: *mut pi_agent_run,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let run = crate::args::arg_ref(run, "run")?;
        let out = Out::new(json_out, "json_out")?;
        finish(run)?;
        let state = lock(&run.state);
        let messages = state.new_messages.as_deref().unwrap_or_default();
        out.write_json(messages, "messages")
    }
}

/// Aborts the run (no-op once it has ended, or when `run` is NULL). Returns at once; the run
/// then ends promptly with `agent_end` (see `pi_agent_abort`).
///
/// Thread-safety: may be called from any thread at any time before `pi_agent_run_free`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_run_abort(run: *const pi_agent_run) {
    act(run, |run| run.signal.cancel())
}

/// Frees a run. A run that has not ended is aborted, and since C has no background to finish
/// the abort in, this then blocks until the agent is idle again (so a new run can start right
/// after). From an event callback, or a tool or hook callback of the agent, it cannot wait: it
/// aborts and returns. NULL is a no-op.
///
/// Thread-safety: call once, after the last other call on the run has returned.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_run_free(run: *mut pi_agent_run) {
    ffi_boundary! {
        let Some(run) = take_handle(run) else {
            return;
        };
        let pi_agent_run { agent, state, .. } = *run;
        let state = state.into_inner().unwrap_or_else(PoisonError::into_inner);
        let Some(core_run) = state.run else {
            return;
        };
        // A no-op when the run is over already.
        core_run.abort();
        if agent.inside_own_callback() {
            // Dropped here; the abort completes in the background.
            return;
        }
        // Until this run's end and the agent idle (not a later run's end).
        let _ = block_on("pi_agent_run_free", core_run.result());
        agent.registrations.prune();
    }
}
