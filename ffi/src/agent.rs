//! `pi_agent`: a stateful, tool-using agent (pi's `Agent`): its lifetime, C tools, hooks,
//! event subscriptions and runs. Its state (transcript, queues, settings, snapshots) is in
//! `agent_state.rs`.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ::pi_agent::agent::{Agent, AgentOptions, Subscription};
use serde_json::Value;

use crate::boundary::{Out, arg_opt_str, arg_ref, arg_str, into_handle, opt_ref, take_handle};
use crate::error::{parse_json, pi_error, pi_error_kind};
use crate::event::{Listener, pi_agent_event_callback};
use crate::hook::{
    self, HookSite, pi_after_tool_call_callback, pi_before_tool_call_callback,
    pi_should_stop_after_turn_callback, pi_transform_context_callback,
};
use crate::model::pi_model;
use crate::options::agent_settings;
use crate::runtime::{Scope, block_on, current_scope};
use crate::tool::{CTool, CallsInFlight, pi_tool_callback};
use crate::user_data::{Registrations, UserData, pi_free_callback};

/// A stateful agent (pi's `Agent`): a transcript, tools, and a model it calls in a loop until
/// the model stops asking for tools.
///
/// Thread-safe: every function may be called from any thread, concurrently, except
/// `pi_agent_free` (once, when no other call on the agent is in progress). Blocking functions
/// (`pi_agent_prompt`, `pi_agent_continue`, `pi_agent_wait_for_idle`) must not be called from
/// an event callback.
pub struct pi_agent {
    pub(crate) agent: Agent,
    calls: Arc<CallsInFlight>,
    /// The `user_data` of every tool and hook (see [`Registrations`]).
    registrations: Registrations,
    subscriptions: Mutex<HashMap<u64, (Subscription, Arc<Listener>)>>,
    next_subscription: AtomicU64,
}

impl pi_agent {
    /// Wraps a core agent.
    pub(crate) fn new(agent: Agent) -> Self {
        Self {
            agent,
            calls: Arc::default(),
            registrations: Registrations::default(),
            subscriptions: Mutex::default(),
            next_subscription: AtomicU64::new(1),
        }
    }

    /// Identifies this agent in callback scopes.
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn subscriptions(&self) -> MutexGuard<'_, HashMap<u64, (Subscription, Arc<Listener>)>> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn hook_site(&self) -> HookSite {
        HookSite {
            calls: Arc::clone(&self.calls),
            agent_key: self.key(),
        }
    }
}

/// Creates an agent for `model` (copied) with `system_prompt` (may be empty, not NULL).
/// `options_json` may be NULL, or an object with any of:
/// - the agent's state: `toolExecution` (`"parallel"`, the default, or `"sequential"`),
///   `thinkingLevel` (`"off"`, the default, `"minimal"`, `"low"`, `"medium"`, `"high"`,
///   `"xhigh"`), `steeringMode` / `followUpMode` (`"one-at-a-time"`, the default, or `"all"`),
///   `messages` (a pi transcript to start from);
/// - its watchdogs: `streamIdleTimeoutMs` (a model stream that sends nothing for this long
///   ends the turn with an error), `toolTimeoutMs` (a tool call still running after this long
///   gets an error result);
/// - the options of every model call: those of `pi_stream_open` (`apiKey`, `temperature`,
///   `maxTokens`, `headers`, `sessionId`, `thinkingBudgets`, `toolChoice`, `cacheRetention`,
///   `maxRetries`, `maxRetryDelayMs`, `requestTimeoutMs`, `idleTimeoutMs`) except
///   `reasoning`, which the agent sets from `thinkingLevel`.
///
/// Unknown keys are rejected. On success `*agent_out` receives the agent; free it with
/// `pi_agent_free`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_new(
    model: *const pi_model,
    system_prompt: *const c_char,
    options_json: *const c_char,
    agent_out: *mut *mut pi_agent,
) -> *mut pi_error {
    ffi_fallible! {
        let model = arg_ref(model, "model")?;
        let system_prompt = arg_str(system_prompt, "system_prompt")?;
        let settings = agent_settings(arg_opt_str(options_json, "options_json")?)?;
        let out = Out::new(agent_out, "agent_out")?;
        let agent = Agent::new(AgentOptions {
            system_prompt: system_prompt.to_owned(),
            model: Some(model.model.clone()),
            messages: settings.messages,
            settings: ::pi_agent::agent::AgentSettings {
                thinking_level: settings.thinking_level.into(),
                tool_execution: settings.tool_execution,
                steering_mode: settings.steering_mode,
                follow_up_mode: settings.follow_up_mode,
                stream_options: settings.run.stream_options,
                stream_idle_timeout_ms: settings.run.stream_idle_timeout.map(crate::options::millis),
                tool_timeout_ms: settings.run.tool_timeout.map(crate::options::millis),
            },
            ..AgentOptions::default()
        });
        out.write(into_handle(pi_agent::new(agent)));
        Ok(())
    }
}

/// Frees an agent. An active run is aborted first. Then it waits until the run has ended and
/// every tool and hook callback has returned, and calls the `free_user_data` of each of the
/// agent's tools, hooks and subscriptions not freed yet; so once it returns, no callback of
/// this agent runs any more. NULL is a no-op. It should not be called from a callback; if it
/// is (from an event callback, or a tool or hook callback of this agent), it cannot wait, and
/// each `free_user_data` is called later, on a runtime thread, when the last running callback
/// has returned.
///
/// Thread-safety: call once, when no other call on the agent is in progress.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_free(agent: *mut pi_agent) {
    ffi_boundary! {
        let Some(agent) = take_handle(agent) else {
            return;
        };
        agent.agent.abort();
        let can_wait = match current_scope() {
            Scope::Outside => true,
            Scope::Callback(key) => key != agent.key(),
            Scope::Event(_) => false,
        };
        for (_, (subscription, listener)) in agent.subscriptions().drain() {
            subscription.unsubscribe();
            listener.release();
        }
        if can_wait {
            let _ = block_on("pi_agent_free", agent.agent.wait_for_idle());
            agent.calls.wait_until_idle();
        }
        agent.agent.set_tools(Vec::new());
        agent.agent.update_hooks(|hooks| *hooks = Default::default());
        if can_wait {
            agent.registrations.release_all();
        } else {
            // Each `user_data` is freed when its last running callback returns.
            agent.registrations.forget_all();
        }
    }
}

/// Adds a tool implemented in C, replacing a tool with the same name (for later runs).
/// `parameters_json_schema` is the JSON Schema of the arguments object, e.g.
/// `{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`;
/// arguments are validated against it before `callback` runs. See `pi_tool_callback` for how
/// and where the callback runs. `free_user_data` (nullable) is called with `user_data` exactly
/// once, when no callback of the tool runs any more: once the tool was replaced or removed and
/// no run uses it (on the thread of a later `pi_agent_add_tool`, `pi_agent_remove_tool`,
/// `pi_agent_set_*` hook call, or when `pi_agent_prompt` / `pi_agent_continue` return), else
/// by `pi_agent_free`. On error nothing is registered and `free_user_data` is not called.
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
        let agent = arg_ref(agent, "agent")?;
        let name = arg_str(name, "name")?;
        let description = arg_str(description, "description")?;
        let schema = arg_str(parameters_json_schema, "parameters_json_schema")?;
        let callback = callback.ok_or_else(|| pi_error::null_argument("callback"))?;
        let parameters: Value = parse_json(schema, "parameters_json_schema")?;
        let tool = CTool::new(
            name.to_owned(),
            description.to_owned(),
            parameters,
            callback,
            agent.registrations.register(user_data, free_user_data),
            Arc::clone(&agent.calls),
            agent.key(),
        );
        agent.agent.add_tool(Arc::new(tool));
        agent.registrations.prune();
        Ok(())
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
        let agent = arg_ref(agent, "agent")?;
        let name = arg_str(name, "name")?;
        let removed = agent.agent.remove_tool(name);
        agent.registrations.prune();
        if removed {
            Ok(())
        } else {
            Err(pi_error::not_found(format!("no tool named `{name}`")))
        }
    }
}

/// Sets the `before_tool_call` hook (see `pi_before_tool_call_callback`), replacing the one
/// set before; a NULL `callback` removes it (`user_data` and `free_user_data` are then
/// ignored). The change applies from the next run: a run keeps the hooks it started with.
/// `free_user_data` (nullable) is called with `user_data` exactly once, when no run uses the
/// hook any more after it was replaced or removed, or by `pi_agent_free` (on the threads
/// described at `pi_agent_add_tool`).
///
/// Errors: `NULL_ARGUMENT` (for `agent`; then `free_user_data` is not called).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_before_tool_call(
    agent: *mut pi_agent,
    callback: pi_before_tool_call_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let hook = callback.map(|callback| {
            let user_data = agent.registrations.register(user_data, free_user_data);
            hook::before_tool_call(callback, user_data, agent.hook_site())
        });
        agent.agent.update_hooks(|hooks| hooks.before_tool_call = hook);
        agent.registrations.prune();
        Ok(())
    }
}

/// Sets the `after_tool_call` hook (see `pi_after_tool_call_callback`), replacing the one set
/// before; a NULL `callback` removes it. Applies from the next run; `user_data` and
/// `free_user_data` as for `pi_agent_set_before_tool_call`.
///
/// Errors: `NULL_ARGUMENT` (for `agent`).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_after_tool_call(
    agent: *mut pi_agent,
    callback: pi_after_tool_call_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let hook = callback.map(|callback| {
            let user_data = agent.registrations.register(user_data, free_user_data);
            hook::after_tool_call(callback, user_data, agent.hook_site())
        });
        agent.agent.update_hooks(|hooks| hooks.after_tool_call = hook);
        agent.registrations.prune();
        Ok(())
    }
}

/// Sets the `should_stop_after_turn` hook (see `pi_should_stop_after_turn_callback`),
/// replacing the one set before; a NULL `callback` removes it. Applies from the next run;
/// `user_data` and `free_user_data` as for `pi_agent_set_before_tool_call`.
///
/// Errors: `NULL_ARGUMENT` (for `agent`).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_should_stop_after_turn(
    agent: *mut pi_agent,
    callback: pi_should_stop_after_turn_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let hook = callback.map(|callback| {
            let user_data = agent.registrations.register(user_data, free_user_data);
            hook::should_stop_after_turn(callback, user_data, agent.hook_site())
        });
        agent.agent.update_hooks(|hooks| hooks.should_stop_after_turn = hook);
        agent.registrations.prune();
        Ok(())
    }
}

/// Sets the `transform_context` hook (see `pi_transform_context_callback`), replacing the one
/// set before; a NULL `callback` removes it. Applies from the next run; `user_data` and
/// `free_user_data` as for `pi_agent_set_before_tool_call`.
///
/// Errors: `NULL_ARGUMENT` (for `agent`).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_transform_context(
    agent: *mut pi_agent,
    callback: pi_transform_context_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let hook = callback.map(|callback| {
            let user_data = agent.registrations.register(user_data, free_user_data);
            hook::transform_context(callback, user_data, agent.hook_site())
        });
        agent.agent.update_hooks(|hooks| hooks.transform_context = hook);
        agent.registrations.prune();
        Ok(())
    }
}

/// Subscribes `callback` to the events of all later runs (see `pi_agent_event_callback`) and
/// writes the subscription id to `*subscription_out`. `free_user_data` (nullable) is called
/// with `user_data` exactly once, by `pi_agent_unsubscribe` or `pi_agent_free`, when no
/// delivery is in progress. On error nothing is registered and `free_user_data` is not called.
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
        let agent = arg_ref(agent, "agent")?;
        let callback = callback.ok_or_else(|| pi_error::null_argument("callback"))?;
        let out = Out::new(subscription_out, "subscription_out")?;
        let listener = Arc::new(Listener::new(callback, UserData::new(user_data, free_user_data)));
        let id = agent.next_subscription.fetch_add(1, Ordering::Relaxed);
        let delivering = Arc::clone(&listener);
        let subscription = agent.agent.subscribe(move |event| delivering.deliver(event));
        agent.subscriptions().insert(id, (subscription, listener));
        out.write(id);
        Ok(())
    }
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
        let agent = arg_ref(agent, "agent")?;
        let removed = agent.subscriptions().remove(&subscription);
        let (subscription, listener) = removed.ok_or_else(|| {
            pi_error::invalid_argument(format!("no subscription with id {subscription}"))
        })?;
        subscription.unsubscribe();
        listener.release();
        Ok(())
    }
}

/// Sends `text` as a user message and blocks until the run has ended. Model failures and
/// aborts are not errors: they end the run with an assistant message whose `stopReason` is
/// `error` or `aborted` (see `pi_agent_error_message`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `ALREADY_RUNNING` (pi's message: "Agent is already
/// processing a prompt. Use steer() or followUp() to queue messages, or wait for
/// completion."), `CALLED_FROM_CALLBACK` (from an event callback), `RUN_FAILED`.
/// Thread-safety: may be called from any thread but not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_prompt(agent: *mut pi_agent, text: *const c_char) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let text = arg_str(text, "text")?;
        let outcome = block_on("pi_agent_prompt", agent.agent.prompt(text))?;
        agent.registrations.prune();
        outcome.map(drop).map_err(pi_error::from_agent)
    }
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
        let agent = arg_ref(agent, "agent")?;
        let outcome = block_on("pi_agent_continue", agent.agent.continue_run())?;
        agent.registrations.prune();
        outcome.map(drop).map_err(pi_error::from_agent)
    }
}

/// Aborts the active run, if any (no-op when idle or NULL). Returns at once; the run ends
/// promptly: the model call ends `aborted`, running tools get an aborted error result, and
/// `agent_end` is emitted.
///
/// Thread-safety: may be called from any thread, also from any callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_abort(agent: *mut pi_agent) {
    ffi_boundary! {
        if let Some(agent) = opt_ref(agent) {
            agent.agent.abort();
        }
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
        let agent = arg_ref(agent, "agent")?;
        if current_scope() == Scope::Callback(agent.key()) {
            return Err(pi_error::new(
                pi_error_kind::CalledFromCallback,
                "`pi_agent_wait_for_idle` cannot be called from a tool or hook callback of the \
                 same agent: it would wait for itself",
            ));
        }
        block_on("pi_agent_wait_for_idle", agent.agent.wait_for_idle())
    }
}
