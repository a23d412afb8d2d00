//! Turns streamed `chat.completion.chunk` objects into [`StreamWriter`] calls.
//!
//! As in pi, a response has at most one text block and one thinking block, plus one tool-call
//! block per stream `index`; text arriving after a tool call goes on in the same text block, and
//! every block is closed at the end of the stream in content order.

use serde::Deserialize;
use serde_json::Value;

use super::request::REASONING_FIELDS;
use crate::ai::error::{ProviderError, record_stop};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::partial_json::PartialJsonParser;
use crate::ai::providers::lenient::{Array, Object, Str, U64};
use crate::ai::types::{StopReason, Usage};

/// One tool call being streamed.
#[derive(Debug)]
struct ToolSlot {
    stream_index: Option<u64>,
    id: String,
    content_index: usize,
}

/// What happened to the response as a whole.
#[derive(Debug, Default)]
pub(super) struct ChunkState {
    text: Option<usize>,
    thinking: Option<usize>,
    tools: Vec<ToolSlot>,
    /// A `finish_reason` arrived.
    pub(super) finish_seen: bool,
    /// `data: [DONE]` arrived.
    pub(super) done_seen: bool,
}

/// Maps an upstream `finish_reason`; anything unknown is an error that names the reason.
pub(crate) fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" => (StopReason::Stop, None),
        "length" => (StopReason::Length, None),
        "tool_calls" | "function_call" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

/// An `error` object sent inside the stream (OpenRouter and gateways do): classified by its
/// `code` or `type` (a string or an HTTP-style number).
fn upstream_error(message: String, error: &Value) -> ProviderError {
    let code = error.get("code");
    let status = code
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code));
    let name = code
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str));
    ProviderError::upstream(message, name, status)
}

/// Normalised usage from an OpenAI-style usage object (pi's `parseChunkUsage`).
pub(crate) fn parse_usage(usage: &Value, model: &Model) -> Usage {
    let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64);
    let prompt = number("/prompt_tokens").unwrap_or(0);
    let completion = number("/completion_tokens").unwrap_or(0);
    let cached = number("/prompt_tokens_details/cached_tokens")
        .or_else(|| number("/prompt_cache_hit_tokens"))
        .unwrap_or(0);
    let cache_write = number("/prompt_tokens_details/cache_write_tokens").unwrap_or(0);
    // OpenRouter counts cache writes inside `cached_tokens`.
    let cache_read = if cache_write > 0 {
        cached.saturating_sub(cache_write)
    } else {
        cached
    };
    let mut out = Usage {
        input: prompt.saturating_sub(cache_read + cache_write),
        output: completion,
        cache_read,
        cache_write,
        ..Usage::default()
    };
    out.total_tokens = out.input + out.output + out.cache_read + out.cache_write;
    model.calculate_cost(&mut out);
    out
}

/// Parses one SSE `data` payload. Servers sometimes send control characters raw inside strings;
/// those are accepted, anything else that is not JSON is an error the stream reports.
pub(super) fn parse_chunk(data: &str) -> Result<Value, ProviderError> {
    match serde_json::from_str(data) {
        Ok(value) => Ok(value),
        Err(error) => {
            let mut parser = PartialJsonParser::new();
            parser.push(data);
            if parser.is_complete() && !parser.has_error() {
                Ok(parser.into_value())
            } else {
                let mut end = data.len().min(200);
                while !data.is_char_boundary(end) {
                    end -= 1;
                }
                Err(ProviderError::Decode(format!(
                    "Malformed chunk from provider ({error}): {}",
                    &data[..end]
                )))
            }
        }
    }
}

/// The parts of a `chat.completion.chunk` the stream reads, borrowed from the SSE data (see
/// [`lenient`](crate::ai::providers::lenient): a field of another type reads as absent). The
/// rare whole-JSON fields are boxed: every chunk moves these structs around while parsing, and
/// a `Value` inline would make each move several hundred bytes.
#[derive(Debug, Default, Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    id: Str<'a>,
    #[serde(default, borrow)]
    model: Str<'a>,
    #[serde(default, borrow)]
    choices: Array<Object<Choice<'a>>>,
    #[serde(default)]
    usage: Option<Box<Value>>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

#[derive(Debug, Default, Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    finish_reason: Str<'a>,
    #[serde(default, borrow)]
    delta: Object<Delta<'a>>,
    #[serde(default)]
    usage: Option<Box<Value>>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Str<'a>,
    #[serde(default, borrow)]
    reasoning_content: Str<'a>,
    #[serde(default, borrow)]
    reasoning: Str<'a>,
    #[serde(default, borrow)]
    reasoning_text: Str<'a>,
    #[serde(default, borrow)]
    tool_calls: Array<Object<ToolCallDelta<'a>>>,
    #[serde(default)]
    reasoning_details: Option<Box<Value>>,
}

impl Delta<'_> {
    /// The reasoning text and the field it came in, in [`REASONING_FIELDS`] order.
    fn reasoning(&self) -> Option<(&'static str, &str)> {
        let fields = [
            &self.reasoning_content,
            &self.reasoning,
            &self.reasoning_text,
        ];
        REASONING_FIELDS
            .into_iter()
            .zip(fields)
            .find_map(|(name, field)| field.get().filter(|t| !t.is_empty()).map(|t| (name, t)))
    }
}

#[derive(Debug, Default, Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: U64,
    #[serde(default, borrow)]
    id: Str<'a>,
    #[serde(default, borrow)]
    function: Object<FunctionDelta<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Str<'a>,
    #[serde(default, borrow)]
    arguments: Str<'a>,
}

impl ChunkState {
    /// Applies one SSE `data` payload.
    pub(super) async fn handle(
        &mut self,
        data: &str,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<(), ProviderError> {
        if data.trim() == "[DONE]" {
            self.done_seen = true;
            return Ok(());
        }
        // The typed read borrows from `data`; input it refuses (a duplicated key, raw control
        // characters) goes through the forgiving `Value` parse and is read the same way.
        let value;
        let chunk = match serde_json::from_str::<Object<Chunk<'_>>>(data) {
            Ok(chunk) => chunk,
            Err(_) => {
                value = parse_chunk(data)?;
                Object::<Chunk<'_>>::deserialize(&value).unwrap_or_default()
            }
        };
        let Some(chunk) = chunk.0 else {
            return Ok(());
        };
        if let Some(error) = &chunk.error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            return Err(upstream_error(message, error));
        }
        if writer.message().response_id.is_none()
            && let Some(id) = chunk.id.get()
        {
            writer.message_mut().response_id = Some(id.to_owned());
        }
        if writer.message().response_model.is_none()
            && let Some(name) = chunk.model.get()
            && !name.is_empty()
            && name != model.id
        {
            writer.message_mut().response_model = Some(name.to_owned());
        }
        let empty = Choice::default();
        let choice = chunk
            .choices
            .items()
            .first()
            .map(|choice| choice.0.as_ref().unwrap_or(&empty));
        let usage = chunk.usage.as_ref().filter(|u| u.is_object()).or_else(|| {
            choice
                .and_then(|c| c.usage.as_ref())
                .filter(|u| u.is_object())
        });
        if let Some(usage) = usage {
            writer.message_mut().usage = parse_usage(usage, model);
        }
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(reason) = choice.finish_reason.get() {
            self.finish_seen = true;
            record_stop(writer.message_mut(), map_finish_reason(reason), reason);
        }
        let Some(delta) = &choice.delta.0 else {
            return Ok(());
        };
        if let Some((field, text)) = delta.reasoning() {
            let index = match self.thinking {
                Some(index) => index,
                None => {
                    let index = writer.thinking_start().await;
                    if let Some(block) = writer.thinking_block_mut(index) {
                        block.thinking_signature = Some(field.to_owned());
                    }
                    self.thinking = Some(index);
                    index
                }
            };
            writer.thinking_delta(index, text).await;
        }
        if let Some(text) = delta.content.get().filter(|t| !t.is_empty()) {
            let index = match self.text {
                Some(index) => index,
                None => {
                    let index = writer.text_start().await;
                    self.text = Some(index);
                    index
                }
            };
            writer.text_delta(index, text).await;
        }
        let no_call = ToolCallDelta::default();
        for call in delta.tool_calls.items() {
            // A tool call that is not an object still counts, as an empty one (pi reads it so).
            self.tool_call_delta(call.0.as_ref().unwrap_or(&no_call), writer)
                .await;
        }
        if let Some(details) = delta.reasoning_details.as_deref().and_then(Value::as_array) {
            for detail in details {
                if detail.get("type").and_then(Value::as_str) != Some("reasoning.encrypted") {
                    continue;
                }
                let Some(id) = detail.get("id").and_then(Value::as_str) else {
                    continue;
                };
                if let Some(slot) = self.tools.iter().find(|slot| slot.id == id) {
                    let index = slot.content_index;
                    if let Some(call) = writer.tool_call_mut(index) {
                        call.thought_signature = Some(detail.to_string());
                    }
                }
            }
        }
        Ok(())
    }

    async fn tool_call_delta(&mut self, call: &ToolCallDelta<'_>, writer: &mut StreamWriter) {
        let stream_index = call.index.0;
        let id = call.id.get().unwrap_or("");
        let function = call.function.0.as_ref();
        let name = function.and_then(|f| f.name.get()).unwrap_or("");
        let arguments = function.and_then(|f| f.arguments.get()).unwrap_or("");
        let existing = self
            .tools
            .iter()
            .position(|slot| stream_index.is_some() && slot.stream_index == stream_index)
            .or_else(|| {
                (!id.is_empty())
                    .then(|| self.tools.iter().position(|slot| slot.id == id))
                    .flatten()
            })
            .or_else(|| {
                // A chunk with neither index nor id continues the last call instead of opening
                // a ghost call with no id and no name (pi issue #4854).
                (stream_index.is_none() && id.is_empty())
                    .then(|| self.tools.len().checked_sub(1))
                    .flatten()
            });
        let content_index = match existing {
            Some(position) => {
                let slot = &mut self.tools[position];
                if slot.id.is_empty() && !id.is_empty() {
                    slot.id = id.to_owned();
                }
                let content_index = slot.content_index;
                if let Some(block) = writer.tool_call_mut(content_index) {
                    if block.id.is_empty() && !id.is_empty() {
                        block.id = id.to_owned();
                    }
                    if block.name.is_empty() && !name.is_empty() {
                        block.name = name.to_owned();
                    }
                }
                content_index
            }
            None => {
                let content_index = writer.tool_call_start(id, name).await;
                self.tools.push(ToolSlot {
                    stream_index,
                    id: id.to_owned(),
                    content_index,
                });
                content_index
            }
        };
        writer.tool_call_delta(content_index, arguments).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_like_pi() {
        let model = Model::new("openai-completions", "openrouter", "m", "");
        let usage = parse_usage(
            &json!({"prompt_tokens": 100, "completion_tokens": 20,
                    "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 10}}),
            &model,
        );
        assert_eq!(
            (
                usage.input,
                usage.output,
                usage.cache_read,
                usage.cache_write
            ),
            (40, 20, 50, 10)
        );
        assert_eq!(usage.total_tokens, 120);
    }

    #[test]
    fn finish_reasons_are_total() {
        assert_eq!(map_finish_reason("tool_calls").0, StopReason::ToolUse);
        let (reason, message) = map_finish_reason("content_filter");
        assert_eq!(reason, StopReason::Error);
        assert_eq!(
            message.as_deref(),
            Some("Provider finish_reason: content_filter")
        );
        assert_eq!(map_finish_reason("brand_new").0, StopReason::Error);
    }
}
