//! `AssistantMessageEvent`: the one event protocol every provider's stream is turned into.
//!
//! Contract (pi's, made a guarantee here): a stream yields zero or one `start`, then per block
//! `*_start`, `*_delta`…, `*_end` (blocks of different kinds may interleave), and exactly one
//! terminal `done` or `error` as its last event. Failures never escape as `Err`: they end the
//! stream with `error`, whose message has `stopReason` `error` or `aborted` and `errorMessage`
//! set, and keeps the partial content received so far.
//!
//! Unlike pi, events do **not** carry a copy of the growing message (`partial`): deltas are
//! carried as deltas. The partial message is available on demand from
//! [`AssistantMessageEventStream::partial`](super::event_stream::AssistantMessageEventStream::partial),
//! which folds exactly the events yielded so far.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{AssistantMessage, SharedString, StopReason, ToolCall};

/// One step of a streamed assistant response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum AssistantMessageEvent {
    /// The request succeeded; `partial` is the empty message with api, provider, model and
    /// timestamp filled in.
    Start {
        /// The message so far (no content yet).
        partial: AssistantMessage,
    },
    /// A text block opens at `content_index`.
    TextStart {
        /// Index of the block in `message.content`.
        content_index: usize,
    },
    /// More text for the block.
    TextDelta {
        /// Index of the block.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The text block is complete.
    TextEnd {
        /// Index of the block.
        content_index: usize,
        /// The block's whole text.
        content: SharedString,
        /// The block's `textSignature`, if the provider gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_signature: Option<String>,
    },
    /// A thinking block opens.
    ThinkingStart {
        /// Index of the block.
        content_index: usize,
    },
    /// More reasoning text.
    ThinkingDelta {
        /// Index of the block.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The thinking block is complete.
    ThinkingEnd {
        /// Index of the block.
        content_index: usize,
        /// The block's whole reasoning text.
        content: SharedString,
        /// The block's `thinkingSignature`, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_signature: Option<String>,
    },
    /// A tool call opens. Unlike pi (which has only the index here), the id and tool name are
    /// carried so that consumers need no partial message to show them.
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        /// Index of the block.
        content_index: usize,
        /// The call id (may be empty if the provider sends it later).
        id: String,
        /// The tool name (may be empty if the provider sends it later).
        tool_name: String,
    },
    /// A raw fragment of the arguments' JSON (may be empty).
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        /// Index of the block.
        content_index: usize,
        /// The JSON fragment.
        delta: String,
    },
    /// The tool call is complete; `tool_call.arguments` is the parsed (not validated) object.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        /// Index of the block.
        content_index: usize,
        /// The finished call.
        tool_call: ToolCall,
    },
    /// The answer's JSON as parsed so far, after each text delta of the answer: only in a
    /// request with an [`OutputSchema`](super::OutputSchema). Open strings, arrays and objects
    /// are closed; nothing is validated until the end.
    ObjectDelta {
        /// Index of the text block the answer is in.
        content_index: usize,
        /// The partial value.
        object: Value,
    },
    /// Terminal: the response is complete. `reason` equals `message.stop_reason`.
    Done {
        /// `stop`, `length` or `toolUse`.
        reason: StopReason,
        /// The final message.
        message: AssistantMessage,
    },
    /// Terminal: the request failed or was aborted.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The partial message, with `stop_reason` = `reason` and `error_message` set.
        error: AssistantMessage,
    },
}

impl AssistantMessageEvent {
    /// The `type` tag, as pi spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Start { .. } => "start",
            Self::TextStart { .. } => "text_start",
            Self::TextDelta { .. } => "text_delta",
            Self::TextEnd { .. } => "text_end",
            Self::ThinkingStart { .. } => "thinking_start",
            Self::ThinkingDelta { .. } => "thinking_delta",
            Self::ThinkingEnd { .. } => "thinking_end",
            Self::ToolCallStart { .. } => "toolcall_start",
            Self::ToolCallDelta { .. } => "toolcall_delta",
            Self::ToolCallEnd { .. } => "toolcall_end",
            Self::ObjectDelta { .. } => "object_delta",
            Self::Done { .. } => "done",
            Self::Error { .. } => "error",
        }
    }

    /// `true` for `done` and `error`.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Done { .. } | Self::Error { .. })
    }

    /// The block index for block events.
    pub fn content_index(&self) -> Option<usize> {
        match self {
            Self::TextStart { content_index }
            | Self::TextDelta { content_index, .. }
            | Self::TextEnd { content_index, .. }
            | Self::ThinkingStart { content_index }
            | Self::ThinkingDelta { content_index, .. }
            | Self::ThinkingEnd { content_index, .. }
            | Self::ToolCallStart { content_index, .. }
            | Self::ToolCallDelta { content_index, .. }
            | Self::ToolCallEnd { content_index, .. }
            | Self::ObjectDelta { content_index, .. } => Some(*content_index),
            _ => None,
        }
    }

    /// The text of a `*_delta` event.
    pub fn delta(&self) -> Option<&str> {
        match self {
            Self::TextDelta { delta, .. }
            | Self::ThinkingDelta { delta, .. }
            | Self::ToolCallDelta { delta, .. } => Some(delta),
            _ => None,
        }
    }

    /// The final message of a terminal event.
    pub fn terminal_message(&self) -> Option<&AssistantMessage> {
        match self {
            Self::Done { message, .. } => Some(message),
            Self::Error { error, .. } => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_names_are_pis() {
        let event = AssistantMessageEvent::ToolCallDelta {
            content_index: 2,
            delta: "{\"a".into(),
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"a"})
        );
        let event = AssistantMessageEvent::TextEnd {
            content_index: 0,
            content: "hi".into(),
            content_signature: None,
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"type": "text_end", "contentIndex": 0, "content": "hi"})
        );
    }
}
