//! `AgentEvent`: the one event stream an agent run emits, in pi's order and with pi's names.

use serde::Serialize;
use serde_json::Value;

use super::message::AgentMessage;
use super::tool::AgentToolResult;
use crate::ai::event::AssistantMessageEvent;
use crate::ai::event_stream::PartialMessage;
use crate::ai::types::{Message, ToolResultMessage};

/// One step of an agent run.
///
/// `message_update` carries the provider event (a delta), not a copy of the growing message:
/// call [`PartialMessage::snapshot`] on its `partial` (or `Agent::streaming_message`) when you
/// need the whole message so far.
#[derive(Clone, Debug, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum AgentEvent {
    /// The run started.
    AgentStart,
    /// The run ended; `messages` are the messages this run added.
    AgentEnd {
        /// New messages of this run.
        messages: Vec<AgentMessage>,
    },
    /// A turn (one LLM call and its tool calls) started.
    TurnStart,
    /// A turn ended.
    TurnEnd {
        /// The turn's assistant message.
        message: AgentMessage,
        /// The turn's tool results, in the assistant's call order.
        tool_results: Vec<ToolResultMessage>,
    },
    /// A message (user, assistant, tool result or custom) begins.
    MessageStart {
        /// The message (for an assistant message: as it starts, without content).
        message: AgentMessage,
    },
    /// The assistant message grew.
    MessageUpdate {
        /// The provider event behind this update.
        assistant_message_event: AssistantMessageEvent,
        /// Live view of the message so far (not serialised; see the type's docs).
        #[serde(skip)]
        partial: PartialMessage,
    },
    /// A message is complete and has been appended to the transcript.
    MessageEnd {
        /// The final message.
        message: AgentMessage,
    },
    /// A tool call is about to be prepared and run.
    ToolExecutionStart {
        /// The call id.
        tool_call_id: String,
        /// The tool name.
        tool_name: String,
        /// The raw arguments from the model (not validated).
        args: Value,
    },
    /// A tool reported progress.
    ToolExecutionUpdate {
        /// The call id.
        tool_call_id: String,
        /// The tool name.
        tool_name: String,
        /// The raw arguments.
        args: Value,
        /// What the tool reported.
        partial_result: AgentToolResult,
    },
    /// A tool call finished (successfully or not).
    ToolExecutionEnd {
        /// The call id.
        tool_call_id: String,
        /// The tool name.
        tool_name: String,
        /// The result the model will see.
        result: AgentToolResult,
        /// Whether it is an error result.
        is_error: bool,
    },
}

impl AgentEvent {
    /// The `type` tag, as pi spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::AgentStart => "agent_start",
            Self::AgentEnd { .. } => "agent_end",
            Self::TurnStart => "turn_start",
            Self::TurnEnd { .. } => "turn_end",
            Self::MessageStart { .. } => "message_start",
            Self::MessageUpdate { .. } => "message_update",
            Self::MessageEnd { .. } => "message_end",
            Self::ToolExecutionStart { .. } => "tool_execution_start",
            Self::ToolExecutionUpdate { .. } => "tool_execution_update",
            Self::ToolExecutionEnd { .. } => "tool_execution_end",
        }
    }

    /// The event as pi-shaped JSON. With `include_partial`, a `message_update` also carries
    /// `message`: a snapshot of the message so far, exactly as pi sends it (this costs a copy
    /// of the message per update, which is why it is opt-in).
    pub fn to_json(&self, include_partial: bool) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if include_partial
            && let Self::MessageUpdate { partial, .. } = self
            && let Some(object) = value.as_object_mut()
        {
            let message =
                serde_json::to_value(Message::Assistant(partial.snapshot())).unwrap_or(Value::Null);
            object.insert("message".to_owned(), message);
        }
        value
    }
}
