//! `MessageAccumulator`: folds [`AssistantMessageEvent`]s into an [`AssistantMessage`].
//!
//! One piece of code serves both ends of a stream: the provider side builds its final message
//! with it, and the consumer side keeps the partial view that pi would have put into every
//! event. Applying an event costs time proportional to the event (text is appended in place,
//! tool-argument fragments go into an incremental JSON parser); only [`snapshot`] pays for a
//! copy of the whole message, and only when somebody asks.
//!
//! [`snapshot`]: MessageAccumulator::snapshot

use serde_json::Value;

use super::event::AssistantMessageEvent;
use super::partial_json::PartialJsonParser;
use super::types::{AssistantContent, AssistantMessage, TextContent, ThinkingContent, ToolCall};

/// Builds an assistant message from its events.
#[derive(Debug, Default)]
pub struct MessageAccumulator {
    message: AssistantMessage,
    /// Incremental parsers of the tool calls still streaming, by content index.
    open_arguments: Vec<Option<PartialJsonParser>>,
    finished: bool,
}

impl MessageAccumulator {
    /// An accumulator starting from `message` (normally the empty message of a `start` event).
    pub fn new(message: AssistantMessage) -> Self {
        Self {
            message,
            open_arguments: Vec::new(),
            finished: false,
        }
    }

    /// Folds one event in. Events for blocks that do not exist are ignored rather than trusted.
    pub fn apply(&mut self, event: &AssistantMessageEvent) {
        match event {
            AssistantMessageEvent::Start { partial } => {
                // Over the message held: its strings are reused (see `AssistantMessage`'s Clone).
                self.message.clone_from(partial);
                self.open_arguments.clear();
            }
            AssistantMessageEvent::TextStart { content_index } => {
                self.open_block(
                    *content_index,
                    AssistantContent::Text(TextContent::default()),
                );
            }
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            } => {
                if let Some(AssistantContent::Text(text)) =
                    self.message.content.get_mut(*content_index)
                {
                    text.text.push_str(delta);
                }
            }
            AssistantMessageEvent::TextEnd {
                content_index,
                content,
                content_signature,
            } => {
                if let Some(AssistantContent::Text(text)) =
                    self.message.content.get_mut(*content_index)
                {
                    if text.text.len() != content.len() {
                        text.text.clone_from(content);
                    }
                    if content_signature.is_some() {
                        text.text_signature.clone_from(content_signature);
                    }
                }
            }
            AssistantMessageEvent::ThinkingStart { content_index } => {
                self.open_block(
                    *content_index,
                    AssistantContent::Thinking(ThinkingContent::default()),
                );
            }
            AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            } => {
                if let Some(AssistantContent::Thinking(thinking)) =
                    self.message.content.get_mut(*content_index)
                {
                    thinking.thinking.push_str(delta);
                }
            }
            AssistantMessageEvent::ThinkingEnd {
                content_index,
                content,
                content_signature,
            } => {
                if let Some(AssistantContent::Thinking(thinking)) =
                    self.message.content.get_mut(*content_index)
                {
                    if thinking.thinking.len() != content.len() {
                        thinking.thinking.clone_from(content);
                    }
                    if content_signature.is_some() {
                        thinking.thinking_signature.clone_from(content_signature);
                    }
                }
            }
            AssistantMessageEvent::ToolCallStart {
                content_index,
                id,
                tool_name,
            } => {
                let call = ToolCall {
                    id: id.clone(),
                    name: tool_name.clone(),
                    arguments: super::types::empty_object(),
                    thought_signature: None,
                };
                if self.open_block(*content_index, AssistantContent::ToolCall(call)) {
                    if self.open_arguments.len() <= *content_index {
                        self.open_arguments.resize_with(*content_index + 1, || None);
                    }
                    self.open_arguments[*content_index] = Some(PartialJsonParser::new());
                }
            }
            AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta,
            } => {
                if let Some(Some(parser)) = self.open_arguments.get_mut(*content_index) {
                    parser.push(delta);
                }
            }
            AssistantMessageEvent::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                if let Some(slot) = self.open_arguments.get_mut(*content_index) {
                    *slot = None;
                }
                if let Some(block @ AssistantContent::ToolCall(_)) =
                    self.message.content.get_mut(*content_index)
                {
                    *block = AssistantContent::ToolCall(tool_call.clone());
                }
            }
            // The text deltas already carried the answer; the object is a view of them.
            AssistantMessageEvent::ObjectDelta { .. } => {}
            AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => {
                self.message.clone_from(message);
                self.open_arguments.clear();
                self.finished = true;
            }
        }
    }

    /// Like [`apply`](Self::apply) for a terminal event, but takes the final message by value
    /// instead of cloning it.
    pub fn finish_with(&mut self, message: AssistantMessage) {
        self.message = message;
        self.open_arguments.clear();
        self.finished = true;
    }

    /// Pushes a block at `index` when the index is the next free slot; returns whether it did.
    fn open_block(&mut self, index: usize, block: AssistantContent) -> bool {
        if index == self.message.content.len() {
            self.message.content.push(block);
            true
        } else {
            false
        }
    }

    /// The message as far as it has arrived, with best-effort arguments for tool calls that are
    /// still streaming. Costs a copy of the message.
    pub fn snapshot(&self) -> AssistantMessage {
        let mut message = self.message.clone();
        for (index, parser) in self.open_arguments.iter().enumerate() {
            if let (Some(parser), Some(AssistantContent::ToolCall(call))) =
                (parser, message.content.get_mut(index))
            {
                call.arguments = object_or_empty(parser.value());
            }
        }
        message
    }

    /// The message without the arguments of still-open tool calls (no copy).
    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// Mutable access for providers (usage, response id, stop reason...).
    pub fn message_mut(&mut self) -> &mut AssistantMessage {
        &mut self.message
    }

    /// The current best-effort arguments of the tool call at `index`, if it is still open.
    pub fn open_arguments(&self, index: usize) -> Option<Value> {
        self.open_arguments
            .get(index)
            .and_then(Option::as_ref)
            .map(|parser| object_or_empty(parser.value()))
    }

    /// Takes the parser of an open tool call (the provider does this when it ends the call).
    pub(crate) fn take_arguments(&mut self, index: usize) -> Option<PartialJsonParser> {
        self.open_arguments.get_mut(index).and_then(Option::take)
    }

    /// Whether a terminal event has been applied.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The message, consuming the accumulator.
    pub fn into_message(self) -> AssistantMessage {
        self.message
    }
}

/// Tool arguments are an object; anything else the model produced counts as no arguments.
pub(crate) fn object_or_empty(value: Value) -> Value {
    if value.is_object() {
        value
    } else {
        super::types::empty_object()
    }
}
