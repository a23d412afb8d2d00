//! `pi_agent_stepper`: the agent loop as a state machine without I/O (core's `AgentStepper`),
//! for a C host that drives its own loop: every step says what to do next (call the model,
//! run tools, poll queues, ask a hook) and the host answers with the result, all in JSON.

use std::ffi::c_char;

use pi_agent::agent::{AgentMessage, AgentStepper, RunStart, Step, StepInput, StepperConfig};

use crate::args::{Out, arg_json, arg_mut, arg_opt_str, arg_str, method, write_json};
use crate::boundary::{flag, free, into_handle};
use crate::error::{pi_error, to_json};
use crate::options::parse_or_default;
use crate::string::{into_c_string, pi_str, view};

/// One agent run driven by the caller (core's `AgentStepper`). Each step is JSON:
/// `{"events":[...],"action":{"type":...}}`: the agent events to deliver now (pi's shapes, in
/// pi's order), then the action to perform and answer with `pi_agent_stepper_resume`:
///
/// - `poll_steering` / `poll_follow_up`: answer `{"type":"steering","messages":[...]}` /
///   `{"type":"follow_up","messages":[...]}` (queued messages; may be empty);
/// - `call_model`: call the model with `pi_agent_stepper_system_prompt` and
///   `pi_agent_stepper_messages_json` (e.g. `pi_stream_open_simple`), answer
///   `{"type":"model_result","message":{...final assistant message...},"startEmitted":false}`;
/// - `execute_tools` (`assistantMessage`, `toolCalls`, `mode`): run the calls, answer
///   `{"type":"tool_results","outcomes":[{"message":{...toolResult message...},
///   "terminate":false}, ...]}`, one per call, in order;
/// - `should_stop_after_turn` (`message`, `toolResults`, `newMessages`): answer
///   `{"type":"should_stop","stop":false}`;
/// - `finished` (`newMessages`): the run is over.
///
/// A failure outside the model call is answered `{"type":"failed","message":{...}}`. The
/// stepper has no clock, thread or I/O: the same answers give the same steps, and its state
/// (`pi_agent_stepper_state_json`) can be stored and restored anywhere.
///
/// Not thread-safe: use it from one thread at a time (`pi_agent_stepper_abort` included).
pub struct pi_agent_stepper {
    stepper: AgentStepper,
}

/// Starts a run and writes the stepper to `*stepper_out` (free it with
/// `pi_agent_stepper_free`) and its first step as JSON to `*step_json_out` (free it with
/// `pi_string_free`). `config_json` (nullable) is core's `StepperConfig`:
/// `{"toolExecution":"parallel"|"sequential","toolModes":{"<tool>":"sequential"},
/// "shouldStopAfterTurn":false,"skipInitialSteeringPoll":false}`; `messages_json` is the
/// transcript so far (a JSON array); `start_json` is core's `RunStart`:
/// `{"type":"prompt","prompts":[...messages...]}` or `{"type":"continue"}` (the transcript's
/// last message must then not be an assistant message).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_stepper_start(
    config_json: *const c_char,
    system_prompt: *const c_char,
    messages_json: *const c_char,
    start_json: *const c_char,
    stepper_out: *mut *mut pi_agent_stepper,
    step_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let config: StepperConfig =
            parse_or_default(arg_opt_str(config_json, "config_json")?, "config_json")?;
        let system_prompt = arg_str(system_prompt, "system_prompt")?;
        let messages: Vec<AgentMessage> =
            arg_json(messages_json, "messages_json")?;
        let start: RunStart = arg_json(start_json, "start_json")?;
        let stepper_out = Out::new(stepper_out, "stepper_out")?;
        let step_json_out = Out::new(step_json_out, "step_json_out")?;
        let (stepper, step) = AgentStepper::start(config, system_prompt.to_owned(), messages, start);
        let step = step_json(&step)?;
        stepper_out.write(into_handle(pi_agent_stepper { stepper }));
        step_json_out.write(step);
        Ok(())
    }
}

/// Answers the pending action with core's `StepInput` JSON (see `pi_agent_stepper`) and writes
/// the next step as JSON to `*step_json_out` (free it with `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `INVALID_ARGUMENT` (the input does
/// not answer the pending action, core's message: "step input `x` does not answer the pending
/// action `y`"; the stepper is then unchanged).
/// Thread-safety: one thread at a time per stepper.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_stepper_resume(
    stepper: *mut pi_agent_stepper,
    input_json: *const c_char,
    step_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let stepper = arg_mut(stepper, "stepper")?;
        let input: StepInput = arg_json(input_json, "input_json")?;
        let out = Out::new(step_json_out, "step_json_out")?;
        let step = stepper
            .stepper
            .resume(input)
            .map_err(|error| pi_error::invalid_argument(error.to_string()))?;
        out.write(step_json(&step)?);
        Ok(())
    }
}

fn step_json(step: &Step) -> Result<*mut c_char, pi_error> {
    Ok(into_c_string(to_json(step, "step")?))
}

/// The system prompt of the run (empty when `stepper` is NULL). Valid until the stepper is
/// freed.
///
/// Thread-safety: one thread at a time per stepper.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_stepper_system_prompt(stepper: *const pi_agent_stepper) -> pi_str {
    view(stepper, |s| pi_str::new(s.stepper.system_prompt()))
}

/// Writes the transcript as the run sees it now (what `call_model` sends, before the host's
/// `transform_context` and conversion) as a pi-shaped JSON array to `*json_out` (free it with
/// `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: one thread at a time per stepper.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_stepper_messages_json(
    stepper: *const pi_agent_stepper,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(stepper, "stepper", |stepper| {
        let out = Out::new(json_out, "json_out")?;
        out.write(into_c_string(to_json(
            stepper.stepper.messages(),
            "messages",
        )?));
        Ok(())
    })
}

/// Records that the run was aborted: after the current turn's tools the run ends instead of
/// starting another turn, and the queues are not polled. No-op when `stepper` is NULL.
///
/// Thread-safety: one thread at a time per stepper.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_stepper_abort(stepper: *mut pi_agent_stepper) {
    ffi_boundary! {
        if let Ok(stepper) = arg_mut(stepper, "stepper") {
            stepper.stepper.abort();
        }
    }
}

/// Whether the run is over (`false` when `stepper` is NULL).
///
/// Thread-safety: one thread at a time per stepper.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_stepper_is_finished(stepper: *const pi_agent_stepper) -> bool {
    flag(stepper, |stepper| stepper.stepper.is_finished())
}

/// Writes the stepper's whole state as JSON to `*json_out` (free it with `pi_string_free`), to
/// store while an action runs and restore with `pi_agent_stepper_from_state_json` (here or in
/// another process).
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: one thread at a time per stepper.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_stepper_state_json(
    stepper: *const pi_agent_stepper,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(stepper, "stepper", |stepper| {
        write_json(json_out, &stepper.stepper, "stepper")
    })
}

/// Restores a stepper from `pi_agent_stepper_state_json`'s JSON into `*stepper_out` (free it
/// with `pi_agent_stepper_free`); it continues where the saved one was.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_stepper_from_state_json(
    state_json: *const c_char,
    stepper_out: *mut *mut pi_agent_stepper,
) -> *mut pi_error {
    ffi_fallible! {
        let stepper: AgentStepper = arg_json(state_json, "state_json")?;
        let out = Out::new(stepper_out, "stepper_out")?;
        out.write(into_handle(pi_agent_stepper { stepper }));
        Ok(())
    }
}

/// Frees a stepper. NULL is a no-op.
///
/// Thread-safety: call once, when no other thread uses `stepper`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_stepper_free(stepper: *mut pi_agent_stepper) {
    free(stepper, drop)
}
