//! `pi_agent`: a stateful, tool-using agent (pi's `Agent`): its lifetime, C tools, event
//! subscriptions and blocking runs. Hooks are installed in `agent_hooks.rs`, runs as values are
//! in `agent_run.rs`, and its state (transcript, queues, settings, snapshots) is in
//! `agent_state.rs` and `agent_settings.rs`.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ::pi_agent::agent::{Agent, AgentMessage, AgentOptions, AgentSettings, RunInput, Subscription};
use ::pi_agent::ai::ImageContent;
use serde_json::Value;

use crate::args::{Out, arg_json, arg_opt_str, arg_ref, arg_str, method};
use crate::boundary::{act, into_handle, lock, opt_ref, take_handle};
use crate::callback::{CallbackSite, CallsInFlight};
use crate::error::{parse_json, parse_object, pi_error, pi_error_kind};
use crate::event::{Listener, pi_agent_event_callback};
use crate::model::pi_model;
use crate::runtime::{Scope, block_on, current_scope};
use crate::tool::pi_tool_callback;
use crate::tool_object::{pi_tool, pi_tool_free, pi_tool_new};
use crate::user_data::{Registrations, UserData, pi_free_callback};

/// A stateful agent (pi's `Agent`): a transcript, tools, and a model it calls in a loop until
/// the model stops asking for tools.
///
/// Thread-safe: every function may be called from any thread, concurrently, except
/// `pi_agent_free` (see there). Blocking functions (`pi_agent_prompt`, `pi_agent_continue`,
/// `pi_agent_wait_for_idle`, ...) must not be called from an event callback.
pub struct pi_agent {
    pub(crate) shared: Arc<AgentShared>,
}

/// What a `pi_agent` handle and the calls working on it share. Blocking calls and runs hold a
/// reference, so the agent outlives a `pi_agent_free` made from one of its callbacks while such
/// a call is still in progress.
pub(crate) struct AgentShared {
    pub(crate) agent: Agent,
    pub(crate) calls: Arc<CallsInFlight>,
    /// The `user_data` of every tool and hook (see [`Registrations`]).
    pub(crate) registrations: Registrations,
    subscriptions: Mutex<HashMap<u64, (Subscription, Arc<Listener>)>>,
    next_subscription: AtomicU64,
}

impl AgentShared {
    /// Identifies this agent in callback scopes.
    pub(crate) fn key(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }

    fn subscriptions(&self) -> MutexGuard<'_, HashMap<u64, (Subscription, Arc<Listener>)>> {
        lock(&self.subscriptions)
    }

    /// Where this agent's callbacks run.
    pub(crate) fn site(self: &Arc<Self>) -> CallbackSite {
        CallbackSite {
            calls: Some(Arc::clone(&self.calls)),
            agent_key: self.key(),
        }
    }

    /// Whether the current thread runs a callback that the agent's run waits for, so that
    /// waiting for the run here would wait for itself.
    pub(crate) fn inside_own_callback(self: &Arc<Self>) -> bool {
        match current_scope() {
            Scope::Outside => false,
            Scope::Callback(key) => key == self.key(),
            Scope::Event(_) => true,
        }
    }

    /// Starts a run and blocks until it has ended (the blocking `pi_agent_prompt` family).
    fn run_blocking(self: &Arc<Self>, what: &str, input: RunInput) -> Result<(), pi_error> {
        let agent = self.agent.clone();
        let outcome = block_on(what, async move {
            match agent.start(input) {
                Ok(run) => Ok(run.result().await),
                Err(error) => Err(error),
            }
        })?;
        self.registrations.prune();
        outcome.map(drop).map_err(pi_error::from_agent)
    }
}

/// Borrows the shared part of an agent handle, for calls that may outlive the handle.
pub(crate) fn shared(agent: *const pi_agent) -> Result<Arc<AgentShared>, pi_error> {
    Ok(Arc::clone(&arg_ref(agent, "agent")?.shared))
}

/// Creates an agent for `model` (copied) with `system_prompt` (may be empty, not NULL).
/// `settings_json` may be NULL (pi's defaults), or core's `AgentSettings` as JSON, any subset
/// of: `{"thinkingLevel":"off"|"minimal"|"low"|"medium"|"high"|"xhigh",
/// "toolExecution":"parallel"|"sequential", "steeringMode":"one-at-a-time"|"all",
/// "followUpMode":"one-at-a-time"|"all", "streamOptions":{...}, "streamIdleTimeoutMs":N,
/// "toolTimeoutMs":N, "limits":{"maxTurns":N|null,"maxToolCalls":N,"maxInputTokens":N,
/// "maxOutputTokens":N,"maxTotalTokens":N,"maxCostUsd":X}}`. `streamOptions` are the options
/// of every model call, the same object
/// `pi_stream_open` takes (`apiKey`, `maxTokens`, `headers`, `sessionId`, provider keys, ...);
/// its `reasoning` is set by the agent from `thinkingLevel`. `streamIdleTimeoutMs` ends a turn
/// whose model stream sends nothing for that long; `toolTimeoutMs` gives a tool call (with its
/// hooks) still running after that long an error result. `limits` bound one run (default: 100
/// model calls, `"maxTurns":null` for none); a run that reaches one ends with a failure whose
/// kind `pi_agent_last_error` reads as `RUN_LIMIT`. Unknown keys are refused (core's
/// message names the known ones). Start from a saved transcript with
/// `pi_agent_set_messages_json`. On success `*agent_out` receives the agent; free it with
/// `pi_agent_free`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_new(
    model: *const pi_model,
    system_prompt: *const c_char,
    settings_json: *const c_char,
    agent_out: *mut *mut pi_agent,
) -> *mut pi_error {
    method(model, "model", |model| {
        let system_prompt = arg_str(system_prompt, "system_prompt")?;
        let settings: AgentSettings = match arg_opt_str(settings_json, "settings_json")? {
            Some(json) => parse_object(json, "settings_json")?,
            None => AgentSettings::default(),
        };
        let out = Out::new(agent_out, "agent_out")?;
        let agent = Agent::new(AgentOptions {
            system_prompt: system_prompt.to_owned(),
            model: Some(model.model.clone()),
            settings,
            ..AgentOptions::default()
        });
        out.write(wrap(agent));
        Ok(())
    })
}

/// Hands a core agent to C.
pub(crate) fn wrap(agent: Agent) -> *mut pi_agent {
    into_handle(pi_agent {
        shared: Arc::new(AgentShared {
            agent,
            calls: Arc::default(),
            registrations: Registrations::default(),
            subscriptions: Mutex::default(),
            next_subscription: AtomicU64::new(1),
        }),
    })
}

/// Frees an agent. An active run is aborted first. Then it waits until the run has ended and
/// every tool and hook callback has returned, and calls the `free_user_data` of each of the
/// agent's tools, hooks and subscriptions not freed yet; so once it returns, no callback of
/// this agent runs any more. NULL is a no-op.
///
/// From an event callback (of any agent, run or stream: it runs on a runtime thread) or a tool
/// or hook callback of this agent it cannot wait: the free is deferred. The handle is gone at once (do not use it again, not even after a blocking call
/// such as `pi_agent_prompt` in progress on another thread returns), the run is aborted, and the
/// agent itself is released when the last call or run using it has ended; each `free_user_data`
/// is then called when its last running callback has returned, possibly on a runtime thread.
///
/// Thread-safety: call once, when no other call on the agent is in progress, except blocking
/// calls (`pi_agent_prompt`, ...) and runs (`pi_agent_run`) of this agent, which then end
/// (aborted).
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_free(agent: *mut pi_agent) {
    ffi_boundary! {
        let Some(handle) = take_handle(agent) else {
            return;
        };
        let shared = handle.shared;
        shared.agent.abort();
        let can_wait = !shared.inside_own_callback();
        for (_, (subscription, listener)) in shared.subscriptions().drain() {
            subscription.unsubscribe();
            listener.release();
        }
        if can_wait {
            let _ = block_on("pi_agent_free", shared.agent.wait_for_idle());
            shared.calls.wait_until_idle();
        }
        shared.agent.set_tools(Vec::new());
        shared.agent.update_hooks(|hooks| *hooks = Default::default());
        if can_wait {
            shared.registrations.release_all();
        } else {
            // Each `user_data` is freed when its last running callback returns.
            shared.registrations.forget_all();
        }
    }
}

/// Adds a tool implemented in C, replacing a tool with the same name (for later runs): the
/// short form of `pi_tool_new` + `pi_agent_add_tool_object`. `parameters_json_schema` is the
/// JSON Schema of the arguments object, e.g.
/// `{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`;
/// arguments are validated against it before `callback` runs. See `pi_tool_callback` for how
/// and where the callback runs. `free_user_data` (nullable) is called with `user_data` exactly
/// once, when no callback of the tool runs any more: once the tool was replaced or removed and
/// no run uses it (on the thread of a later `pi_agent_add_tool`, `pi_agent_remove_tool`,
/// `pi_agent_set_*` hook call, or when a blocking run or `pi_agent_run_free` returns), else by
/// `pi_agent_free`. On error nothing is registered and `free_user_data` is not called.
///
/// Errors: `NULL_ARGUMENT` (also for a NULL `callback`), `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread, also during a run (the run keeps the tools it
/// started with) and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_add_tool(
    agent: *mut pi_agent,
    name: *const c_char,
    description: *const c_char,
    parameters_json_schema: *const c_char,
    callback: pi_tool_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        let shared = shared(agent)?;
        let mut tool: *mut pi_tool = std::ptr::null_mut();
        let error = pi_tool_new(
            name,
            description,
            parameters_json_schema,
            callback,
            user_data,
            free_user_data,
            &mut tool,
        );
        if let Some(error) = pi_error::from_raw(error) {
            return Err(error);
        }
        add_tool_object(&shared, tool);
        Ok(())
    }
}

/// Adds a tool made with `pi_tool_new` (with its label, execution mode and
/// `prepare_arguments`), replacing a tool with the same name (for later runs). Takes ownership
/// of `tool` in every case: on success the agent keeps it (`free_user_data` is then called as
/// described at `pi_agent_add_tool`), on error it is freed (with its `free_user_data`). Do not
/// use `tool` afterwards.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_add_tool_object(
    agent: *mut pi_agent,
    tool: *mut pi_tool,
) -> *mut pi_error {
    ffi_fallible! {
        let shared = match shared(agent) {
            Ok(shared) => shared,
            Err(error) => {
                pi_tool_free(tool);
                return Err(error);
            }
        };
        if tool.is_null() {
            return Err(pi_error::null_argument("tool"));
        }
        add_tool_object(&shared, tool);
        Ok(())
    }
}

/// Adds a non-NULL `tool` handle to the agent, consuming it.
fn add_tool_object(shared: &Arc<AgentShared>, tool: *mut pi_tool) {
    if let Some(tool) = take_handle(tool) {
        let tool = tool.into_agent_tool(&shared.registrations, shared.site());
        shared.agent.add_tool(Arc::new(tool));
        shared.registrations.prune();
    }
}

/// Removes the tool named `name` (for later runs; a run keeps the tools it started with). Its
/// `free_user_data` is called as described at `pi_agent_add_tool`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `NOT_FOUND` (no tool with that name).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_remove_tool(agent: *mut pi_agent, name: *const c_char) -> *mut pi_error {
    ffi_fallible! {
        let shared = shared(agent)?;
        let name = arg_str(name, "name")?;
        let removed = shared.agent.remove_tool(name);
        shared.registrations.prune();
        if removed {
            Ok(())
        } else {
            Err(pi_error::not_found(format!("no tool named `{name}`")))
        }
    }
}

/// Subscribes `callback` to the events of all later runs (see `pi_agent_event_callback`) and
/// writes the subscription id to `*subscription_out`. A `message_update` carries the delta
/// only; see `pi_agent_subscribe_with_partial`. `free_user_data` (nullable) is called with
/// `user_data` exactly once, by `pi_agent_unsubscribe` or `pi_agent_free`, when no delivery is
/// in progress. On error nothing is registered and `free_user_data` is not called.
///
/// Errors: `NULL_ARGUMENT` (also for a NULL `callback`).
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_subscribe(
    agent: *mut pi_agent,
    callback: pi_agent_event_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
    subscription_out: *mut u64,
) -> *mut pi_error {
    ffi_fallible! {
        subscribe(agent, callback, user_data, free_user_data, subscription_out, false)
    }
}

/// Like `pi_agent_subscribe`, but the JSON of every `message_update` also carries pi's
/// `message`: the whole assistant message so far (`{"type":"message_update",
/// "assistantMessageEvent":{...},"message":{...}}`, as pi sends it). This costs a copy of the
/// message per update, which is why it is not the default.
///
/// Errors: `NULL_ARGUMENT` (also for a NULL `callback`).
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_subscribe_with_partial(
    agent: *mut pi_agent,
    callback: pi_agent_event_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
    subscription_out: *mut u64,
) -> *mut pi_error {
    ffi_fallible! {
        subscribe(agent, callback, user_data, free_user_data, subscription_out, true)
    }
}

fn subscribe(
    agent: *mut pi_agent,
    callback: pi_agent_event_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
    subscription_out: *mut u64,
    include_partial: bool,
) -> Result<(), pi_error> {
    let shared = shared(agent)?;
    let callback = callback.ok_or_else(|| pi_error::null_argument("callback"))?;
    let out = Out::new(subscription_out, "subscription_out")?;
    let listener = Arc::new(Listener::new(
        callback,
        UserData::new(user_data, free_user_data),
        include_partial,
    ));
    let id = shared.next_subscription.fetch_add(1, Ordering::Relaxed);
    let delivering = Arc::clone(&listener);
    // The awaited kind of subscriber, for the run's signal; the C callback runs synchronously
    // inside it, so this is as quick as a plain subscriber.
    let subscription = shared.agent.subscribe_async(move |event, signal| {
        delivering.deliver(&event, signal.is_cancelled());
        std::future::ready(())
    });
    shared.subscriptions().insert(id, (subscription, listener));
    out.write(id);
    Ok(())
}

/// Ends a subscription and frees its `user_data` (after a delivery in progress on another
/// thread has returned; when called from the subscription's own callback, right after that
/// callback returns).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_ARGUMENT` (no such subscription).
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_unsubscribe(agent: *mut pi_agent, subscription: u64) -> *mut pi_error {
    ffi_fallible! {
        let shared = shared(agent)?;
        let removed = shared.subscriptions().remove(&subscription);
        let (subscription, listener) = removed.ok_or_else(|| {
            pi_error::invalid_argument(format!("no subscription with id {subscription}"))
        })?;
        subscription.unsubscribe();
        listener.release();
        Ok(())
    }
}

/// Sends `text` as a user message and blocks until the run has ended (pi's `prompt(text)`).
/// Model failures and aborts are not errors: they end the run with an assistant message whose
/// `stopReason` is `error` or `aborted` (see `pi_agent_error_message`). To read the run's events
/// as they come instead, open it with `pi_agent_run_open`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `ALREADY_RUNNING` (pi's message: "Agent is already
/// processing a prompt. Use steer() or followUp() to queue messages, or wait for
/// completion."), `CALLED_FROM_CALLBACK` (from an event callback), `RUN_FAILED`.
/// Thread-safety: may be called from any thread but not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_prompt(agent: *mut pi_agent, text: *const c_char) -> *mut pi_error {
    ffi_fallible! {
        let shared = shared(agent)?;
        let text = arg_str(text, "text")?;
        shared.run_blocking("pi_agent_prompt", RunInput::text(text))
    }
}

/// Sends `text` with images as one user message and blocks until the run has ended (pi's
/// `prompt(text, images)`). `images_json` is a JSON array of image blocks:
/// `[{"type":"image","data":"<base64>","mimeType":"image/png"}]`. Models without image input
/// get a placeholder text instead (pi's rule).
///
/// Errors: those of `pi_agent_prompt`, and `INVALID_JSON`.
/// Thread-safety: may be called from any thread but not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_prompt_with_images(
    agent: *mut pi_agent,
    text: *const c_char,
    images_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let shared = shared(agent)?;
        let input = images_input(text, images_json)?;
        shared.run_blocking("pi_agent_prompt_with_images", input)
    }
}

/// Sends messages as the prompt and blocks until the run has ended (pi's `prompt(messages)`).
/// `messages_json` is one pi-shaped message or a JSON array of them, of any role (custom
/// messages are kept in the transcript and not sent to the model), e.g.
/// `[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image",...}],
/// "timestamp":0}]`.
///
/// Errors: those of `pi_agent_prompt`, and `INVALID_JSON`.
/// Thread-safety: may be called from any thread but not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_prompt_messages(
    agent: *mut pi_agent,
    messages_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let shared = shared(agent)?;
        let input = messages_input(messages_json)?;
        shared.run_blocking("pi_agent_prompt_messages", input)
    }
}

/// The input of a text prompt with images.
pub(crate) fn images_input(
    text: *const c_char,
    images_json: *const c_char,
) -> Result<RunInput, pi_error> {
    let text = arg_str(text, "text")?;
    let images: Vec<ImageContent> = arg_json(images_json, "images_json")?;
    Ok(RunInput::text_with_images(text, images))
}

/// The input of a prompt made of messages (one message, or an array).
pub(crate) fn messages_input(messages_json: *const c_char) -> Result<RunInput, pi_error> {
    let name = "messages_json";
    let value: Value = parse_json(arg_str(messages_json, name)?, name)?;
    let messages: Vec<AgentMessage> = if value.is_array() {
        serde_json::from_value(value)
    } else {
        serde_json::from_value(value).map(|message| vec![message])
    }
    .map_err(|error| pi_error::invalid_json(name, &error))?;
    Ok(RunInput::Prompt(messages))
}

/// Continues from the transcript and blocks until the run has ended: from a user, tool-result
/// or custom message it calls the model again; from an assistant message it runs the queued
/// steering (else follow-up) messages.
///
/// Errors: `NULL_ARGUMENT`, `ALREADY_RUNNING`, `CANNOT_CONTINUE` (pi's messages: "No messages
/// to continue from", "Cannot continue from message role: assistant"), `CALLED_FROM_CALLBACK`,
/// `RUN_FAILED`.
/// Thread-safety: may be called from any thread but not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_continue(agent: *mut pi_agent) -> *mut pi_error {
    ffi_fallible! {
        let shared = shared(agent)?;
        shared.run_blocking("pi_agent_continue", RunInput::Continue)
    }
}

/// Aborts the active run, if any (no-op when idle or NULL). Returns at once; the run ends
/// promptly: the model call ends `aborted`, running tools and hooks get an aborted error result
/// (the run stops waiting for their callbacks), and `agent_end` is emitted.
///
/// Thread-safety: may be called from any thread, also from any callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_abort(agent: *mut pi_agent) {
    act(agent, |agent| agent.shared.agent.abort())
}

/// Whether the active run has been aborted (pi's `agent.signal.aborted`): `true` from
/// `pi_agent_abort` (or a `pi_agent_run_free` before the end) until the run has ended; `false`
/// when idle or when `agent` is NULL. Lets event callbacks and long-running C code see the
/// abort.
///
/// Thread-safety: may be called from any thread, also from any callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_is_aborted(agent: *const pi_agent) -> bool {
    ffi_boundary! {
        opt_ref(agent)
            .and_then(|agent| agent.shared.agent.signal())
            .is_some_and(|signal| signal.is_cancelled())
    }
}

/// Blocks until no run is active.
///
/// Errors: `NULL_ARGUMENT`, `CALLED_FROM_CALLBACK` (from an event callback, or from a tool or
/// hook callback of this agent).
/// Thread-safety: may be called from any thread but not from this agent's callbacks.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_wait_for_idle(agent: *mut pi_agent) -> *mut pi_error {
    ffi_fallible! {
        let shared = shared(agent)?;
        if current_scope() == Scope::Callback(shared.key()) {
            return Err(pi_error::new(
                pi_error_kind::CalledFromCallback,
                "`pi_agent_wait_for_idle` cannot be called from a tool or hook callback of the \
                 same agent: it would wait for itself",
            ));
        }
        block_on("pi_agent_wait_for_idle", shared.agent.wait_for_idle())
    }
}
