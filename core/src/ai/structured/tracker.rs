//! Turns the events of a request with an output schema into a typed answer's events: the
//! forced tool's call becomes a text block, each text delta of the answer is followed by an
//! `object_delta` with the value parsed so far (one incremental parser, each byte read once),
//! and the final message is parsed and validated once.
//!
//! A snapshot of the partial value costs its size, so one per delta would make a large answer
//! quadratic. Below [`EVERY_DELTA_BELOW`] bytes every delta gets one; beyond, a snapshot comes
//! once the answer has grown by an eighth since the last, and a last one when the answer's
//! block ends: the snapshots then cost at most about nine times the answer's size in all.

use std::collections::VecDeque;

use super::OutputSchema;
use super::typed::parse_output;
use super::unwrap::Unwrap;
use crate::ai::error::ErrorKind;
use crate::ai::event::AssistantMessageEvent;
use crate::ai::partial_json::PartialJsonParser;
use crate::ai::types::{AssistantContent, AssistantMessage, StopReason, TextContent};
use crate::ai::validation::{CompiledToolSchema, ValidationError};

/// Why a final answer is not the typed output: the message's `errorMessage` (kind
/// `invalid_output`). Like pi's report it quotes the answer, which is the model's text.
#[derive(Debug, thiserror::Error)]
enum OutputError<'a> {
    /// The text does not parse as JSON.
    #[error(
        "Validation failed for output \"{name}\": the answer is not JSON ({error}){}\n\nReceived output:\n{text}",
        cut_note(*.truncated)
    )]
    NotJson {
        /// The schema's name.
        name: &'a str,
        /// The parser's complaint.
        error: serde_json::Error,
        /// The answer.
        text: String,
        /// The answer stopped at the output-token limit.
        truncated: bool,
    },
    /// The model stopped inside the wrapped value: what arrived may read as a value (`12` of
    /// `1234`) but is not the answer.
    #[error(
        "Validation failed for output \"{name}\": the answer ended inside its value{}\n\nReceived output:\n{text}",
        cut_note(*.truncated)
    )]
    Cut {
        /// The schema's name.
        name: &'a str,
        /// The answer so far.
        text: String,
        /// The answer stopped at the output-token limit.
        truncated: bool,
    },
    /// The JSON does not match the schema; `report` is pi's.
    #[error("{report}{}", cut_note(*.truncated))]
    Rejected {
        /// The validator's report.
        report: String,
        /// The answer stopped at the output-token limit.
        truncated: bool,
    },
    /// The schema itself could not be applied (too deep, invalid).
    #[error(transparent)]
    Unchecked(ValidationError),
}

/// The note added when a failed answer was cut off, since that is the likely cause.
fn cut_note(truncated: bool) -> &'static str {
    if truncated {
        " (the answer was cut off at the output-token limit)"
    } else {
        ""
    }
}

/// Answers up to this size get an `object_delta` after every delta.
pub(crate) const EVERY_DELTA_BELOW: usize = 4096;

/// The answer's state while its events pass (see the module docs).
#[derive(Debug)]
pub(crate) struct OutputTracker {
    name: String,
    /// The schema went as a forced tool: its calls are the answer.
    forced_tool: bool,
    compiled: CompiledToolSchema,
    parser: PartialJsonParser,
    /// The forced tool's calls seen, by content index, with their JSON text (as shown).
    converted: Vec<(usize, String)>,
    /// The forced tool's calls whose arguments came in deltas, by content index.
    streamed: Vec<usize>,
    /// The answer travels wrapped (`{"response": VALUE}`): each answer block's unwrapping, by
    /// content index. `None` when it is not wrapped.
    unwrapping: Option<Vec<(usize, Unwrap)>>,
    /// The parser's byte count at the next snapshot due, and at the last one sent.
    next_snapshot_at: usize,
    last_snapshot_at: usize,
}

impl OutputTracker {
    /// A tracker for `schema`; `forced_tool` when the request carries it as a tool, `wrapped`
    /// when it asks for `{"response": VALUE}` (see the module `unwrap`).
    pub(crate) fn new(schema: &OutputSchema, forced_tool: bool, wrapped: bool) -> Self {
        Self {
            name: schema.name.clone(),
            forced_tool,
            compiled: CompiledToolSchema::for_output(schema.name.clone(), &schema.schema),
            parser: PartialJsonParser::new(),
            converted: Vec::new(),
            streamed: Vec::new(),
            unwrapping: wrapped.then(Vec::new),
            next_snapshot_at: 0,
            last_snapshot_at: 0,
        }
    }

    /// Starts the answer over (the forced tool's call replaces any text before it).
    fn restart(&mut self) {
        self.parser = PartialJsonParser::new();
        self.next_snapshot_at = 0;
        self.last_snapshot_at = 0;
    }

    /// Queues the value parsed so far, if there is one.
    fn snapshot(&mut self, content_index: usize, out: &mut VecDeque<AssistantMessageEvent>) {
        let bytes = self.parser.bytes_received();
        self.last_snapshot_at = bytes;
        self.next_snapshot_at = if bytes < EVERY_DELTA_BELOW {
            0
        } else {
            bytes + bytes / 8
        };
        if self.parser.has_error() {
            return;
        }
        let object = self.parser.value();
        if !object.is_null() {
            out.push_back(AssistantMessageEvent::ObjectDelta {
                content_index,
                object,
            });
        }
    }

    /// At the end of the answer's block: the last snapshot, if deltas came since one was sent.
    fn final_snapshot(&mut self, content_index: usize, out: &mut VecDeque<AssistantMessageEvent>) {
        if self.parser.bytes_received() > self.last_snapshot_at {
            self.snapshot(content_index, out);
        }
    }

    fn raw(&mut self, content_index: usize) -> Option<&mut String> {
        self.converted
            .iter_mut()
            .find(|(index, _)| *index == content_index)
            .map(|(_, raw)| raw)
    }

    /// What of the model's `delta` in block `content_index` the caller sees: all of it, or,
    /// when the answer travels wrapped, the value's part.
    fn shown(&mut self, content_index: usize, delta: String) -> String {
        let Some(blocks) = &mut self.unwrapping else {
            return delta;
        };
        let at = match blocks.iter().position(|(index, _)| *index == content_index) {
            Some(at) => at,
            None => {
                blocks.push((content_index, Unwrap::new()));
                blocks.len() - 1
            }
        };
        blocks[at].1.push(&delta)
    }

    /// The end of block `content_index`'s answer text: what of it the unwrapping still holds.
    fn shown_rest(&mut self, content_index: usize) -> String {
        self.unwrapping
            .iter_mut()
            .flatten()
            .find(|(index, _)| *index == content_index)
            .map(|(_, unwrap)| unwrap.finish())
            .unwrap_or_default()
    }

    /// The text of block `content_index` as the caller saw it, when it was unwrapped.
    fn unwrapped_text(&self, content_index: usize) -> Option<&str> {
        self.unwrapping
            .iter()
            .flatten()
            .find(|(index, _)| *index == content_index)
            .map(|(_, unwrap)| unwrap.shown())
    }

    /// Feeds the answer's parser and queues the text delta and its `object_delta` (nothing
    /// for an empty delta: the wrapper's own text, which the caller does not see).
    fn answer_delta(
        &mut self,
        content_index: usize,
        delta: String,
        out: &mut VecDeque<AssistantMessageEvent>,
    ) {
        if delta.is_empty() {
            return;
        }
        self.parser.push(&delta);
        let changed = !delta.trim().is_empty();
        out.push_back(AssistantMessageEvent::TextDelta {
            content_index,
            delta,
        });
        if changed && self.parser.bytes_received() >= self.next_snapshot_at {
            self.snapshot(content_index, out);
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
                // The answer is the call's arguments, not whatever text came before.
                self.restart();
                self.converted.push((content_index, String::new()));
                out.push_back(AssistantMessageEvent::TextStart { content_index });
            }
            AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta,
            } if self.raw(content_index).is_some() => {
                // An empty delta (Anthropic's for a call without arguments) carries nothing: the
                // arguments at the call's end are its text then.
                if !delta.is_empty() && !self.streamed.contains(&content_index) {
                    self.streamed.push(content_index);
                }
                self.call_text(content_index, delta, out);
            }
            AssistantMessageEvent::ToolCallEnd {
                content_index,
                tool_call,
            } if self.raw(content_index).is_some() => {
                // A provider that sends the arguments whole (no deltas) sends them here.
                if !self.streamed.contains(&content_index) {
                    self.call_text(content_index, tool_call.arguments.to_string(), out);
                }
                let rest = self.shown_rest(content_index);
                self.call_text_shown(content_index, rest, out);
                self.final_snapshot(content_index, out);
                let content = self.raw(content_index).cloned().unwrap_or_default();
                out.push_back(AssistantMessageEvent::TextEnd {
                    content_index,
                    content: content.into(),
                    content_signature: None,
                });
            }
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
                // With the forced tool, text is the answer only while no call of it has come (a
                // model that may choose, under thinking, can answer in text).
            } if !self.forced_tool || self.converted.is_empty() => {
                let delta = self.shown(content_index, delta);
                self.answer_delta(content_index, delta, out);
            }
            AssistantMessageEvent::TextEnd {
                content_index,
                content,
                content_signature,
            } if !self.forced_tool || self.converted.is_empty() => {
                let rest = self.shown_rest(content_index);
                self.answer_delta(content_index, rest, out);
                self.final_snapshot(content_index, out);
                let content = match self.unwrapped_text(content_index) {
                    Some(shown) => shown.to_owned().into(),
                    None => content,
                };
                out.push_back(AssistantMessageEvent::TextEnd {
                    content_index,
                    content,
                    content_signature,
                });
            }
            AssistantMessageEvent::Done {
                reason,
                mut message,
            } => {
                self.texts_as_shown(&mut message);
                out.push_back(self.finish(reason, message))
            }
            AssistantMessageEvent::Error { reason, mut error } => {
                // A failed or aborted answer keeps what arrived, as text too: the caller saw
                // only text events, and the transcript must not hold a call of the output tool
                // that nothing answers.
                self.texts_as_shown(&mut error);
                self.calls_to_text(&mut error);
                out.push_back(AssistantMessageEvent::Error { reason, error });
            }
            other => out.push_back(other),
        }
    }

    /// One piece of the forced tool's arguments: kept and shown as far as the caller sees it.
    fn call_text(
        &mut self,
        content_index: usize,
        delta: String,
        out: &mut VecDeque<AssistantMessageEvent>,
    ) {
        let shown = self.shown(content_index, delta);
        self.call_text_shown(content_index, shown, out);
    }

    fn call_text_shown(
        &mut self,
        content_index: usize,
        shown: String,
        out: &mut VecDeque<AssistantMessageEvent>,
    ) {
        if let Some(raw) = self.raw(content_index) {
            raw.push_str(&shown);
        }
        self.answer_delta(content_index, shown, out);
    }

    /// With a wrapped answer, the message's text blocks hold what the caller saw of them: the
    /// value (a block whose end never came is finished here, its rest not streamed).
    fn texts_as_shown(&mut self, message: &mut AssistantMessage) {
        let Some(blocks) = &mut self.unwrapping else {
            return;
        };
        for (index, unwrap) in blocks.iter_mut() {
            let rest = unwrap.finish();
            // A call of the output tool cut short keeps what arrived of it (held back so far).
            if let Some((_, raw)) = self.converted.iter_mut().find(|(i, _)| i == index) {
                raw.push_str(&rest);
                continue;
            }
            if let Some(AssistantContent::Text(text)) = message.content.get_mut(*index) {
                text.text = unwrap.shown().to_owned().into();
            }
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
        if self.calls_to_text(&mut message)
            && reason == StopReason::ToolUse
            && message.tool_calls().next().is_none()
        {
            reason = StopReason::Stop;
            message.stop_reason = StopReason::Stop;
        }
        if message.tool_calls().next().is_some() {
            return AssistantMessageEvent::Done { reason, message };
        }
        match self.check(&message) {
            Ok(()) => AssistantMessageEvent::Done { reason, message },
            Err(report) => {
                message.stop_reason = StopReason::Error;
                message.error_message = Some(report.to_string());
                message.error_kind = Some(ErrorKind::InvalidOutput);
                AssistantMessageEvent::Error {
                    reason: StopReason::Error,
                    error: message,
                }
            }
        }
    }

    /// Turns the forced tool's call in `message` into a text block of its arguments: the last
    /// call, when the model made several (parallel calls), as the object deltas followed the
    /// last; earlier calls and the text around them are commentary and go. Returns whether
    /// there were any.
    fn calls_to_text(&mut self, message: &mut AssistantMessage) -> bool {
        let Some(&(answer, _)) = self.converted.last() else {
            return false;
        };
        let converted = std::mem::take(&mut self.converted);
        let content = std::mem::take(&mut message.content);
        message.content = content
            .into_iter()
            .enumerate()
            .filter_map(|(index, block)| {
                if let Some((_, raw)) = converted.iter().find(|(i, _)| *i == index) {
                    return (index == answer)
                        .then(|| AssistantContent::Text(TextContent::new(raw.clone())));
                }
                match block {
                    // Text around the forced call is commentary, not the answer.
                    AssistantContent::Text(_) => None,
                    other => Some(other),
                }
            })
            .collect();
        true
    }

    /// `Ok` when the message's text is JSON the schema accepts, else the report.
    fn check(&self, message: &AssistantMessage) -> Result<(), OutputError<'_>> {
        let text = message.text();
        let truncated = message.stop_reason == StopReason::Length;
        let cut = self
            .unwrapping
            .iter()
            .flatten()
            .any(|(_, unwrap)| unwrap.cut());
        if cut {
            return Err(OutputError::Cut {
                name: &self.name,
                text,
                truncated,
            });
        }
        let value = match parse_output(&text) {
            Ok(value) => value,
            Err(error) => {
                return Err(OutputError::NotJson {
                    name: &self.name,
                    error,
                    text,
                    truncated,
                });
            }
        };
        self.compiled.validate(&value).map_err(|error| match error {
            ValidationError::InvalidArguments { report, .. } => {
                OutputError::Rejected { report, truncated }
            }
            other => OutputError::Unchecked(other),
        })
    }
}

/// Validates a final answer that no tracker saw (an agent's own stream function, which does
/// not go through `ai::stream`): as a tracker's last step, a message that ended without tool
/// calls and without failing becomes an `invalid_output` error when its text is not a value the
/// schema accepts.
pub(crate) fn check_final_answer(schema: &OutputSchema, message: &mut AssistantMessage) {
    if message.stop_reason.is_failure() || message.tool_calls().next().is_some() {
        return;
    }
    let tracker = OutputTracker::new(schema, false, false);
    if let Err(report) = tracker.check(message) {
        let report = report.to_string();
        message.stop_reason = StopReason::Error;
        message.error_message = Some(report);
        message.error_kind = Some(ErrorKind::InvalidOutput);
    }
}
