//! Turns the events of a request with an output schema into a typed answer's events: the
//! forced tool's call becomes a text block, each text delta of the answer is followed by an
//! `object_delta` with the value parsed so far (one incremental parser, each byte read once),
//! and the final message is parsed and validated once.

use std::collections::VecDeque;

use super::OutputSchema;
use super::typed::parse_output;
use crate::ai::error::ErrorKind;
use crate::ai::event::AssistantMessageEvent;
use crate::ai::partial_json::PartialJsonParser;
use crate::ai::types::{AssistantContent, AssistantMessage, StopReason, TextContent};
use crate::ai::validation::{CompiledToolSchema, ValidationError};

/// The answer's state while its events pass (see the module docs).
#[derive(Debug)]
pub(crate) struct OutputTracker {
    name: String,
    /// The schema went as a forced tool: its calls are the answer.
    forced_tool: bool,
    compiled: CompiledToolSchema,
    parser: PartialJsonParser,
    /// The forced tool's calls seen, by content index, with their raw JSON text.
    converted: Vec<(usize, String)>,
}

impl OutputTracker {
    /// A tracker for `schema`; `forced_tool` when the request carries it as a tool.
    pub(crate) fn new(schema: &OutputSchema, forced_tool: bool) -> Self {
        Self {
            name: schema.name.clone(),
            forced_tool,
            compiled: CompiledToolSchema::for_output(schema.name.clone(), &schema.schema),
            parser: PartialJsonParser::new(),
            converted: Vec::new(),
        }
    }

    fn raw(&mut self, content_index: usize) -> Option<&mut String> {
        self.converted
            .iter_mut()
            .find(|(index, _)| *index == content_index)
            .map(|(_, raw)| raw)
    }

    /// Feeds the answer's parser and queues the text delta and its `object_delta`.
    fn answer_delta(
        &mut self,
        content_index: usize,
        delta: String,
        out: &mut VecDeque<AssistantMessageEvent>,
    ) {
        self.parser.push(&delta);
        let changed = !delta.trim().is_empty();
        out.push_back(AssistantMessageEvent::TextDelta {
            content_index,
            delta,
        });
        if changed && !self.parser.has_error() {
            let object = self.parser.value();
            if !object.is_null() {
                out.push_back(AssistantMessageEvent::ObjectDelta {
                    content_index,
                    object,
                });
            }
        }
    }

    /// Maps one provider event onto the events the caller sees (queued on `out`).
    pub(crate) fn map(
        &mut self,
        event: AssistantMessageEvent,
        out: &mut VecDeque<AssistantMessageEvent>,
    ) {
        match event {
            AssistantMessageEvent::ToolCallStart {
                content_index,
                tool_name,
                ..
            } if tool_name == self.name => {
                self.converted.push((content_index, String::new()));
                out.push_back(AssistantMessageEvent::TextStart { content_index });
            }
            AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta,
            } if self.raw(content_index).is_some() => {
                if let Some(raw) = self.raw(content_index) {
                    raw.push_str(&delta);
                }
                self.answer_delta(content_index, delta, out);
            }
            AssistantMessageEvent::ToolCallEnd {
                content_index,
                tool_call,
            } if self.raw(content_index).is_some() => {
                // A provider that sends the arguments whole (no deltas) sends them here.
                if self.raw(content_index).is_some_and(|raw| raw.is_empty()) {
                    let whole = tool_call.arguments.to_string();
                    if let Some(raw) = self.raw(content_index) {
                        raw.clone_from(&whole);
                    }
                    self.answer_delta(content_index, whole, out);
                }
                let content = self.raw(content_index).cloned().unwrap_or_default();
                out.push_back(AssistantMessageEvent::TextEnd {
                    content_index,
                    content,
                    content_signature: None,
                });
            }
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            } if !self.forced_tool => self.answer_delta(content_index, delta, out),
            AssistantMessageEvent::Done { reason, message } => {
                out.push_back(self.finish(reason, message))
            }
            other => out.push_back(other),
        }
    }

    /// The final event: the forced tool's call turned into text, then the answer parsed and
    /// validated. A turn that still calls other tools is not the answer and passes as is.
    fn finish(
        &mut self,
        reason: StopReason,
        mut message: AssistantMessage,
    ) -> AssistantMessageEvent {
        let mut reason = reason;
        if !self.converted.is_empty() {
            let converted = std::mem::take(&mut self.converted);
            let content = std::mem::take(&mut message.content);
            message.content = content
                .into_iter()
                .enumerate()
                .filter_map(|(index, block)| {
                    if let Some((_, raw)) = converted.iter().find(|(i, _)| *i == index) {
                        return Some(AssistantContent::Text(TextContent::new(raw.clone())));
                    }
                    match block {
                        // Text around the forced call is commentary, not the answer.
                        AssistantContent::Text(_) => None,
                        other => Some(other),
                    }
                })
                .collect();
            if reason == StopReason::ToolUse && message.tool_calls().next().is_none() {
                reason = StopReason::Stop;
                message.stop_reason = StopReason::Stop;
            }
        }
        if message.tool_calls().next().is_some() {
            return AssistantMessageEvent::Done { reason, message };
        }
        match self.check(&message) {
            Ok(()) => AssistantMessageEvent::Done { reason, message },
            Err(report) => {
                message.stop_reason = StopReason::Error;
                message.error_message = Some(report);
                message.error_kind = Some(ErrorKind::InvalidOutput);
                AssistantMessageEvent::Error {
                    reason: StopReason::Error,
                    error: message,
                }
            }
        }
    }

    /// `Ok` when the message's text is JSON the schema accepts, else the report.
    fn check(&self, message: &AssistantMessage) -> Result<(), String> {
        let text = message.text();
        let cut = if message.stop_reason == StopReason::Length {
            " (the answer was cut off at the output-token limit)"
        } else {
            ""
        };
        let value = parse_output(&text).map_err(|error| {
            format!(
                "Validation failed for output \"{}\": the answer is not JSON ({error}){cut}\n\nReceived output:\n{text}",
                self.name
            )
        })?;
        self.compiled.validate(&value).map_err(|error| match error {
            ValidationError::InvalidArguments { report, .. } => format!("{report}{cut}"),
            other => other.to_string(),
        })
    }
}
