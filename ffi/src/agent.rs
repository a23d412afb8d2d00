//! `pi_agent`: a stateful, tool-using agent (pi's `Agent`), its event subscriptions and C tools.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ::pi_agent::agent::{Agent, AgentEvent, AgentMessage, AgentOptions, Subscription};
use ::pi_agent::ai::{AssistantMessageEvent, UserMessage};
use serde_json::Value;

use crate::boundary::{Out, arg_opt_str, arg_ref, arg_str, into_handle, opt_ref, take_handle};
use crate::error::{parse_json, pi_error, pi_error_kind};
use crate::model::pi_model;
use crate::options::agent_settings;
use crate::runtime::{Scope, ScopeGuard, block_on, current_scope};
use crate::stream::pi_stream_event_kind;
use crate::string::{into_c_string, pi_str};
use crate::tool::{CTool, CallsInFlight, ToolCallback, pi_tool_callback};
use crate::user_data::{UserData, pi_free_callback};

/// A stateful agent (pi's `Agent`): a transcript, tools, and a model it calls in a loop until
/// the model stops asking for tools.
///
/// Thread-safe: every function may be called from any thread, concurrently, except
/// `pi_agent_free` (once, when no other call on the agent is in progress). Blocking functions
/// (`pi_agent_prompt`, `pi_agent_continue`, `pi_agent_wait_for_idle`) must not be called from
/// an event callback.
pub struct pi_agent {
    agent: Agent,
    calls: Arc<CallsInFlight>,
    tools: Mutex<Vec<Arc<ToolCallback>>>,
    subscriptions: Mutex<HashMap<u64, (Subscription, Arc<Listener>)>>,
    next_subscription: AtomicU64,
}

impl pi_agent {
    /// Identifies this agent in callback scopes.
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn subscriptions(&self) -> MutexGuard<'_, HashMap<u64, (Subscription, Arc<Listener>)>> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// What an agent event is (pi's `AgentEvent` `type`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pi_agent_event_kind {
    /// `agent_start`: the run started.
    AgentStart = 1,
    /// `agent_end`: the run ended; `messages` are the messages it added.
    AgentEnd = 2,
    /// `turn_start`: one model call (and its tool calls) starts.
    TurnStart = 3,
    /// `turn_end`: the turn's assistant `message` and `toolResults`.
    TurnEnd = 4,
    /// `message_start`: a user, assistant or tool-result `message` begins.
    MessageStart = 5,
    /// `message_update`: the assistant message grew (`assistantMessageEvent`).
    MessageUpdate = 6,
    /// `message_end`: the `message` is complete and in the transcript.
    MessageEnd = 7,
    /// `tool_execution_start`: a tool call is about to run.
    ToolExecutionStart = 8,
    /// `tool_execution_update`: a tool reported progress.
    ToolExecutionUpdate = 9,
    /// `tool_execution_end`: a tool call finished (`isError` says how).
    ToolExecutionEnd = 10,
}

/// One agent event, as passed to a `pi_agent_event_callback`. Everything in it is valid until
/// the callback returns.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pi_agent_event {
    /// The event kind.
    pub kind: pi_agent_event_kind,
    /// For `MESSAGE_UPDATE`: the kind of the assistant-message event behind it (e.g.
    /// `PI_STREAM_EVENT_KIND_TEXT_DELTA`); `PI_STREAM_EVENT_KIND_NONE` for other events.
    pub message_event_kind: pi_stream_event_kind,
    /// For `MESSAGE_UPDATE` block events: the content block index; else 0.
    pub content_index: usize,
    /// For `MESSAGE_UPDATE` delta events: the new text (or tool-call JSON fragment); else
    /// empty. Readable without parsing `json`.
    pub delta: pi_str,
    /// The whole event as pi-shaped JSON, e.g. `{"type":"message_end","message":{...}}`.
    pub json: pi_str,
}

/// Receives the events of every run of an agent, synchronously and in pi's order, on a runtime
/// thread (one event at a time). The run waits for the callback, so keep it short. It may call
/// non-blocking functions of the agent (`pi_agent_abort`, `pi_agent_messages_json`,
/// `pi_agent_steer_text`, `pi_agent_unsubscribe`, ...) but no blocking ones (they fail with
/// `CALLED_FROM_CALLBACK`).
pub type pi_agent_event_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const pi_agent_event)>;

/// A subscribed C callback. Deliveries hold `lock`, so that unsubscribing from another thread
/// waits for a delivery in progress before `user_data` is freed.
struct Listener {
    callback: unsafe extern "C" fn(*mut c_void, *const pi_agent_event),
    user_data: UserData,
    lock: Mutex<()>,
    /// Set when the callback unsubscribes itself: released after it returns.
    release_after_delivery: AtomicBool,
}

impl Listener {
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn deliver(&self, event: &AgentEvent) {
        let _delivering = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(user_data) = self.user_data.get() else {
            return;
        };
        // The same JSON as `event.to_json(false)`, written directly so that the keys keep their
        // declaration order (`type` first) instead of a `Value` map's sorted order.
        let json = serde_json::to_string(event).unwrap_or_default();
        let (message_event_kind, content_index, delta) = match event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => (
                pi_stream_event_kind::of(assistant_message_event),
                assistant_message_event.content_index().unwrap_or(0),
                assistant_message_event.delta().unwrap_or(""),
            ),
            _ => (pi_stream_event_kind::None, 0, ""),
        };
        let c_event = pi_agent_event {
            kind: agent_event_kind(event),
            message_event_kind,
            content_index,
            delta: pi_str::new(delta),
            json: pi_str::new(&json),
        };
        {
            let _scope = ScopeGuard::enter(Scope::Event(self.key()));
            // SAFETY: callback and `user_data` were registered together by the C caller;
            // `c_event` and the strings it points to outlive the call.
            unsafe { (self.callback)(user_data, &c_event) }
        }
        if self.release_after_delivery.load(Ordering::Acquire) {
            self.user_data.release();
        }
    }

    /// Frees `user_data` once no delivery is in progress (after the current one, when called
    /// from this listener's own callback).
    fn release(&self) {
        if current_scope() == Scope::Event(self.key()) {
            self.release_after_delivery.store(true, Ordering::Release);
            return;
        }
        let _idle = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.user_data.release();
    }
}

fn agent_event_kind(event: &AgentEvent) -> pi_agent_event_kind {
    match event {
        AgentEvent::AgentStart => pi_agent_event_kind::AgentStart,
        AgentEvent::AgentEnd { .. } => pi_agent_event_kind::AgentEnd,
        AgentEvent::TurnStart => pi_agent_event_kind::TurnStart,
        AgentEvent::TurnEnd { .. } => pi_agent_event_kind::TurnEnd,
        AgentEvent::MessageStart { .. } => pi_agent_event_kind::MessageStart,
        AgentEvent::MessageUpdate { .. } => pi_agent_event_kind::MessageUpdate,
        AgentEvent::MessageEnd { .. } => pi_agent_event_kind::MessageEnd,
        AgentEvent::ToolExecutionStart { .. } => pi_agent_event_kind::ToolExecutionStart,
        AgentEvent::ToolExecutionUpdate { .. } => pi_agent_event_kind::ToolExecutionUpdate,
        AgentEvent::ToolExecutionEnd { .. } => pi_agent_event_kind::ToolExecutionEnd,
    }
}

/// Creates an agent for `model` (copied) with `system_prompt` (may be empty, not NULL).
/// `options_json` may be NULL, or an object with any of: `toolExecution` (`"parallel"`, the
/// default, or `"sequential"`), `thinkingLevel` (`"off"`, `"minimal"`, `"low"`, `"medium"`,
/// `"high"`, `"xhigh"`), `steeringMode` / `followUpMode` (`"one-at-a-time"`, the default, or
/// `"all"`), `messages` (a pi transcript to start from), and the options of every model call:
/// those of `pi_stream_open` except `reasoning` (e.g. `apiKey`, `temperature`, `maxTokens`,
/// `headers`, `sessionId`). Unknown keys are rejected.
/// On success `*agent_out` receives the agent; free it with `pi_agent_free`.
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
            thinking_level: settings.thinking_level,
            messages: settings.messages,
            tool_execution: settings.tool_execution,
            steering_mode: settings.steering_mode,
            follow_up_mode: settings.follow_up_mode,
            stream_options: settings.stream_options,
            ..AgentOptions::default()
        });
        out.write(into_handle(pi_agent {
            agent,
            calls: Arc::default(),
            tools: Mutex::default(),
            subscriptions: Mutex::default(),
            next_subscription: AtomicU64::new(1),
        }));
        Ok(())
    }
}

/// Frees an agent. An active run is aborted first. Then it waits until the run has ended and
/// every tool callback has returned, and calls the `free_user_data` of each of the agent's
/// tools and subscriptions; so once it returns, no callback of this agent runs any more. NULL
/// is a no-op. It should not be called from a callback; if it is (from an event callback, or a
/// tool callback of this agent), it cannot wait, and each `free_user_data` is called later, on
/// a runtime thread, when the last running callback has returned.
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
            Scope::Tool(key) => key != agent.key(),
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
        let tools = std::mem::take(&mut *agent.tools.lock().unwrap_or_else(PoisonError::into_inner));
        if can_wait {
            for tool in &tools {
                tool.user_data.release();
            }
        }
        // Otherwise each `user_data` is freed when its last running callback returns.
    }
}

/// Adds a tool implemented in C, replacing a tool with the same name (for later runs).
/// `parameters_json_schema` is the JSON Schema of the arguments object, e.g.
/// `{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`;
/// arguments are validated against it before `callback` runs. See `pi_tool_callback` for how
/// and where the callback runs. `free_user_data` (nullable) is called with `user_data` exactly
/// once, by `pi_agent_free`, after the last callback returned. On error nothing is registered
/// and `free_user_data` is not called.
///
/// Errors: `NULL_ARGUMENT` (also for a NULL `callback`), `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread, also during a run (the run keeps the tools it
/// started with).
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
        let (tool, registered) = CTool::new(
            name.to_owned(),
            description.to_owned(),
            parameters,
            callback,
            UserData::new(user_data, free_user_data),
            Arc::clone(&agent.calls),
            agent.key(),
        );
        agent.tools.lock().unwrap_or_else(PoisonError::into_inner).push(registered);
        agent.agent.add_tool(Arc::new(tool));
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
        let listener = Arc::new(Listener {
            callback,
            user_data: UserData::new(user_data, free_user_data),
            lock: Mutex::new(()),
            release_after_delivery: AtomicBool::new(false),
        });
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
            pi_error::new(
                pi_error_kind::InvalidArgument,
                format!("no subscription with id {subscription}"),
            )
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
        block_on("pi_agent_prompt", agent.agent.prompt(text))?.map_err(pi_error::from_agent)
    }
}

/// Continues from the transcript and blocks until the run has ended: from a user or tool-result
/// message it calls the model again; from an assistant message it runs the queued steering
/// (else follow-up) messages.
///
/// Errors: `NULL_ARGUMENT`, `ALREADY_RUNNING`, `CANNOT_CONTINUE` (pi's messages: "No messages
/// to continue from", "Cannot continue from message role: assistant"), `CALLED_FROM_CALLBACK`,
/// `RUN_FAILED`.
/// Thread-safety: may be called from any thread but not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_continue(agent: *mut pi_agent) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        block_on("pi_agent_continue", agent.agent.continue_run())?.map_err(pi_error::from_agent)
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
/// Errors: `NULL_ARGUMENT`, `CALLED_FROM_CALLBACK` (from an event callback, or from a tool
/// callback of this agent).
/// Thread-safety: may be called from any thread but not from this agent's callbacks.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_wait_for_idle(agent: *mut pi_agent) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        if current_scope() == Scope::Tool(agent.key()) {
            return Err(pi_error::new(
                pi_error_kind::CalledFromCallback,
                "`pi_agent_wait_for_idle` cannot be called from a tool callback of the same \
                 agent: it would wait for itself",
            ));
        }
        block_on("pi_agent_wait_for_idle", agent.agent.wait_for_idle())
    }
}

/// Clears the transcript, the steering and follow-up queues and the error message. Does not
/// abort a run. No-op when `agent` is NULL.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_reset(agent: *mut pi_agent) {
    ffi_boundary! {
        if let Some(agent) = opt_ref(agent) {
            agent.agent.reset();
        }
    }
}

/// Writes the transcript as a pi-shaped JSON array of messages to `*json_out` (free it with
/// `pi_string_free`). During a run it holds the messages completed so far.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_messages_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let out = Out::new(json_out, "json_out")?;
        let json = serde_json::to_string(&agent.agent.messages())
            .map_err(|error| pi_error::invalid_json("messages", &error))?;
        out.write(into_c_string(json));
        Ok(())
    }
}

/// Replaces the transcript with a pi-shaped JSON array of messages (takes effect for the next
/// run).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_messages_json(
    agent: *mut pi_agent,
    messages_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let json = arg_str(messages_json, "messages_json")?;
        let messages: Vec<AgentMessage> = parse_json(json, "messages_json")?;
        agent.agent.set_messages(messages);
        Ok(())
    }
}

/// Queues `text` as a user message to inject after the current turn's tool calls (pi's
/// `steer`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_steer_text(agent: *mut pi_agent, text: *const c_char) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let text = arg_str(text, "text")?;
        agent.agent.steer(UserMessage::text(text));
        Ok(())
    }
}

/// Queues `text` as a user message to run when the agent would otherwise stop (pi's
/// `followUp`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_follow_up_text(
    agent: *mut pi_agent,
    text: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let text = arg_str(text, "text")?;
        agent.agent.follow_up(UserMessage::text(text));
        Ok(())
    }
}

/// Whether a run is active (`false` when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_is_streaming(agent: *const pi_agent) -> bool {
    ffi_boundary! {
        opt_ref(agent).is_some_and(|agent| agent.agent.is_streaming())
    }
}

/// The error message of the last failed turn as a new string (free it with `pi_string_free`),
/// or NULL when there is none (or `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_error_message(agent: *const pi_agent) -> *mut c_char {
    ffi_boundary! {
        opt_ref(agent)
            .and_then(|agent| agent.agent.error_message())
            .map_or(std::ptr::null_mut(), into_c_string)
    }
}

impl pi_stream_event_kind {
    /// The kind of a provider event.
    pub(crate) fn of(event: &AssistantMessageEvent) -> Self {
        match event {
            AssistantMessageEvent::Start { .. } => Self::Start,
            AssistantMessageEvent::TextStart { .. } => Self::TextStart,
            AssistantMessageEvent::TextDelta { .. } => Self::TextDelta,
            AssistantMessageEvent::TextEnd { .. } => Self::TextEnd,
            AssistantMessageEvent::ThinkingStart { .. } => Self::ThinkingStart,
            AssistantMessageEvent::ThinkingDelta { .. } => Self::ThinkingDelta,
            AssistantMessageEvent::ThinkingEnd { .. } => Self::ThinkingEnd,
            AssistantMessageEvent::ToolCallStart { .. } => Self::ToolcallStart,
            AssistantMessageEvent::ToolCallDelta { .. } => Self::ToolcallDelta,
            AssistantMessageEvent::ToolCallEnd { .. } => Self::ToolcallEnd,
            AssistantMessageEvent::Done { .. } => Self::Done,
            AssistantMessageEvent::Error { .. } => Self::Error,
        }
    }
}
