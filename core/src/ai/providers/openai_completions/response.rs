//! Turns streamed `chat.completion.chunk` objects into [`StreamWriter`] calls.
//!
//! As in pi, a response has at most one text block and one thinking block, plus one tool-call
//! block per stream `index`; text arriving after a tool call goes on in the same text block, and
//! every block is closed at the end of the stream in content order.

use serde_json::Value;

use super::request::REASONING_FIELDS;
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::partial_json::PartialJsonParser;
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
pub fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
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

/// Normalised usage from an OpenAI-style usage object (pi's `parseChunkUsage`).
pub fn parse_usage(usage: &Value, model: &Model) -> Usage {
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
pub(super) fn parse_chunk(data: &str) -> Result<Value, String> {
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
                Err(format!(
                    "Malformed chunk from provider ({error}): {}",
                    &data[..end]
                ))
            }
        }
    }
}

impl ChunkState {
    /// Applies one SSE `data` payload.
    pub(super) async fn handle(
        &mut self,
        data: &str,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<(), String> {
        if data.trim() == "[DONE]" {
            self.done_seen = true;
            return Ok(());
        }
        let chunk = parse_chunk(data)?;
        let Some(object) = chunk.as_object() else {
            return Ok(());
        };
        if let Some(error) = object.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            return Err(message);
        }
        if writer.message().response_id.is_none()
            && let Some(id) = object.get("id").and_then(Value::as_str)
        {
            writer.message_mut().response_id = Some(id.to_owned());
        }
        if writer.message().response_model.is_none()
            && let Some(name) = object.get("model").and_then(Value::as_str)
            && !name.is_empty()
            && name != model.id
        {
            writer.message_mut().response_model = Some(name.to_owned());
        }
        let choice = object
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first());
        let usage = object.get("usage").filter(|u| u.is_object()).or_else(|| {
            choice
                .and_then(|c| c.get("usage"))
                .filter(|u| u.is_object())
        });
        if let Some(usage) = usage {
            writer.message_mut().usage = parse_usage(usage, model);
        }
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_seen = true;
            let (stop_reason, error_message) = map_finish_reason(reason);
            let message = writer.message_mut();
            message.stop_reason = stop_reason;
            message.error_message = error_message;
        }
        let Some(delta) = choice.get("delta").filter(|d| d.is_object()) else {
            return Ok(());
        };
        for field in REASONING_FIELDS {
            if let Some(text) = delta
                .get(field)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
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
                break;
            }
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
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
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.tool_call_delta(call, writer).await;
            }
        }
        if let Some(details) = delta.get("reasoning_details").and_then(Value::as_array) {
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

    async fn tool_call_delta(&mut self, call: &Value, writer: &mut StreamWriter) {
        let stream_index = call.get("index").and_then(Value::as_u64);
        let id = call.get("id").and_then(Value::as_str).unwrap_or("");
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let arguments = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("");
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
