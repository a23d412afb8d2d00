//! The events of an agent run as C sees them: `pi_agent_event`, the
//! `pi_agent_event_callback` that receives them, and the subscribed listener that delivers
//! them.

use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use pi_agent::agent::AgentEvent;
use pi_agent::ai::AssistantMessageEvent;

use crate::boundary::lock;
use crate::runtime::{Scope, ScopeGuard, current_scope};
use crate::stream::pi_stream_event_kind;
use crate::string::pi_str;
use crate::user_data::UserData;

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
    /// An event kind newer than this header: read its `json` (`type` names it).
    Other = 99,
}

/// One agent event, as passed to a `pi_agent_event_callback` or filled in by
/// `pi_agent_run_next`. Everything in it is valid until the callback returns (or until the
/// next call on the run).
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
    /// The whole event as pi-shaped JSON, e.g. `{"type":"message_end","message":{...}}`. A
    /// `message_update` carries the delta (`assistantMessageEvent`), and pi's `message` (the
    /// whole message so far) only for subscriptions made with `pi_agent_subscribe_with_partial`.
    pub json: pi_str,
    /// Whether the run had been aborted when the event was delivered (pi's
    /// `agent.signal.aborted`; the events of an aborted run still arrive, up to `agent_end`).
    pub aborted: bool,
}

/// Receives the events of every run of an agent, synchronously and in pi's order, on a runtime
/// thread (one event at a time). The run waits for the callback, so keep it short. It may call
/// non-blocking functions of the agent (`pi_agent_abort`, `pi_agent_is_aborted`,
/// `pi_agent_messages_json`, `pi_agent_steer_text`, `pi_agent_unsubscribe`, ...) but no
/// blocking ones (they fail with `CALLED_FROM_CALLBACK`).
pub type pi_agent_event_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const pi_agent_event)>;

/// The text an event is shown to C with, owned while the `pi_agent_event` that points into it
/// is in use.
#[derive(Default)]
pub(crate) struct EventText {
    json: String,
    delta: String,
}

impl EventText {
    /// Writes `event`'s JSON and delta here and returns the C view of it (valid while `self`
    /// is neither changed nor dropped). With `include_partial`, a `message_update` also carries
    /// pi's `message` (core's `AgentEvent::to_json(true)`).
    pub(crate) fn view(
        &mut self,
        event: &AgentEvent,
        include_partial: bool,
        aborted: bool,
    ) -> pi_agent_event {
        self.json = if include_partial && matches!(event, AgentEvent::MessageUpdate { .. }) {
            event.to_json(true).to_string()
        } else {
            serde_json::to_string(event).unwrap_or_default()
        };
        self.delta.clear();
        let (message_event_kind, content_index) = match event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => {
                self.delta
                    .push_str(assistant_message_event.delta().unwrap_or(""));
                (
                    pi_stream_event_kind::of(assistant_message_event),
                    assistant_message_event.content_index().unwrap_or(0),
                )
            }
            _ => (pi_stream_event_kind::None, 0),
        };
        pi_agent_event {
            kind: agent_event_kind(event),
            message_event_kind,
            content_index,
            delta: pi_str::new(&self.delta),
            json: pi_str::new(&self.json),
            aborted,
        }
    }
}

/// A subscribed C callback. Deliveries hold `lock`, so that unsubscribing from another thread
/// waits for a delivery in progress before `user_data` is freed.
pub(crate) struct Listener {
    callback: unsafe extern "C" fn(*mut c_void, *const pi_agent_event),
    user_data: UserData,
    include_partial: bool,
    lock: Mutex<()>,
    /// Set when the callback unsubscribes itself: released after it returns.
    release_after_delivery: AtomicBool,
}

impl Listener {
    pub(crate) fn new(
        callback: unsafe extern "C" fn(*mut c_void, *const pi_agent_event),
        user_data: UserData,
        include_partial: bool,
    ) -> Self {
        Self {
            callback,
            user_data,
            include_partial,
            lock: Mutex::new(()),
            release_after_delivery: AtomicBool::new(false),
        }
    }

    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Calls the C callback with `event`; `aborted` is the state of the run's signal.
    pub(crate) fn deliver(&self, event: &AgentEvent, aborted: bool) {
        let _delivering = lock(&self.lock);
        let Some(user_data) = self.user_data.get() else {
            return;
        };
        let mut text = EventText::default();
        let c_event = text.view(event, self.include_partial, aborted);
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
    pub(crate) fn release(&self) {
        if current_scope() == Scope::Event(self.key()) {
            self.release_after_delivery.store(true, Ordering::Release);
            return;
        }
        let _idle = lock(&self.lock);
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
        _ => pi_agent_event_kind::Other,
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
            AssistantMessageEvent::ObjectDelta { .. } => Self::ObjectDelta,
            _ => Self::Other,
        }
    }
}
