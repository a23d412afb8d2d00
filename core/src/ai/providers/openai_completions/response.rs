//! Turns streamed `chat.completion.chunk` objects into [`StreamWriter`] calls.
//!
//! As in pi, a response has at most one text block and one thinking block, plus one tool-call
//! block per stream `index`; text arriving after a tool call goes on in the same text block, and
//! every block is closed at the end of the stream in content order.

use serde::Deserialize;
use serde_json::Value;

use super::chunk::{self, Choice, Chunk, ToolCallDelta};
use crate::ai::error::{ProviderError, record_stop};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::partial_json::PartialJsonParser;
use crate::ai::providers::lenient::Object;
use crate::ai::types::{StopReason, Usage};

/// One tool call being streamed.
#[derive(Debug)]
struct ToolSlot {
    stream_index: Option<u64>,
    /// The id the server sent (empty until it sends one): later deltas are matched on it.
    wire_id: String,
    /// The id the call carries: the wire id, or a generated one when the server sent none or
    /// one another call of this response already has.
    id: String,
    /// The call's name, once known (later deltas are matched on it).
    name: String,
    /// Argument text arrived.
    has_arguments: bool,
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
///
/// Beyond pi's `stop`/`end`/`length`/`tool_calls`/`function_call`, the synonyms servers of the
/// population send for the same three ends are read as such (README, "Differences from pi"):
/// `eos` (Together), `eos_token`/`stop_sequence` (Text Generation Inference), `end_turn`
/// (gateways passing Anthropic's reasons through), `max_tokens`/`model_length` (Mistral's
/// names) and `tool_use`.
pub(crate) fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" | "eos" | "eos_token" | "stop_sequence" | "end_turn" => {
            (StopReason::Stop, None)
        }
        "length" | "max_tokens" | "model_length" => (StopReason::Length, None),
        "tool_calls" | "function_call" | "tool_use" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

/// An `error` object sent inside the stream (OpenRouter and gateways do): classified by its
/// `code` or `type` (a string, or an HTTP-style status as a number or, from LiteLLM, a string
/// of digits).
fn upstream_error(message: String, error: &Value) -> ProviderError {
    let code = error.get("code");
    let status = code
        .and_then(|code| {
            code.as_u64()
                .or_else(|| code.as_str().and_then(|text| text.parse().ok()))
        })
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code));
    let name = code
        .and_then(Value::as_str)
        .filter(|_| status.is_none())
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
    out.total_tokens = out.sum_of_counts();
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
                Err(ProviderError::Decode(format!(
                    "Malformed chunk from provider ({error}): {}",
                    crate::text::prefix(data, 200)
                )))
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
    ) -> Result<(), ProviderError> {
        // Every other frame is an object: only the last one is worth trimming.
        if !data.starts_with('{') && data.trim() == "[DONE]" {
            self.done_seen = true;
            return Ok(());
        }
        // The typed read borrows from `data`; input it refuses (a duplicated key, raw control
        // characters) goes through the forgiving `Value` parse and is read the same way.
        let value;
        let chunk = match chunk::read(data) {
            Some(chunk) => Object(Some(chunk)),
            None => match serde_json::from_str::<Object<Chunk<'_>>>(data) {
                Ok(chunk) => chunk,
                Err(_) => {
                    value = parse_chunk(data)?;
                    Object::<Chunk<'_>>::deserialize(&value).unwrap_or_default()
                }
            },
        };
        let Some(chunk) = chunk.0 else {
            return Ok(());
        };
        if let Some(error) = &chunk.error {
            // `{"message": ...}` (OpenAI, OpenRouter, llama.cpp, LiteLLM, newer vLLM) or a bare
            // string (some gateways).
            let message = match error.as_str() {
                Some(text) => text.to_owned(),
                None => error
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| error.to_string()),
            };
            return Err(upstream_error(message, error));
        }
        if chunk.object.get() == Some("error") {
            let message = chunk.message.get().unwrap_or("An unknown error occurred");
            let error: Value = serde_json::from_str(data).unwrap_or_default();
            return Err(upstream_error(message.to_owned(), &error));
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
            .0
            .as_ref()
            .map(|choice| choice.0.as_ref().unwrap_or(&empty));
        let usage = chunk
            .usage
            .as_deref()
            .filter(|u| u.is_object())
            .or_else(|| {
                choice
                    .and_then(|c| c.usage.as_deref())
                    .filter(|u| u.is_object())
            })
            .or_else(|| {
                chunk
                    .x_groq
                    .as_deref()
                    .and_then(|x| x.get("usage"))
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
                if let Some(slot) = self.tools.iter().find(|slot| slot.wire_id == id) {
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
        let position = match self.find_slot(stream_index, id, name) {
            Some(position) => {
                if self.tools[position].wire_id.is_empty() && !id.is_empty() {
                    // The id of a call that started without one replaces the generated id.
                    let unique = self.unique_id(id, position);
                    let slot = &mut self.tools[position];
                    slot.wire_id = id.to_owned();
                    slot.id = unique;
                    if let Some(block) = writer.tool_call_mut(slot.content_index) {
                        block.id.clone_from(&slot.id);
                    }
                }
                let slot = &mut self.tools[position];
                if slot.name.is_empty() && !name.is_empty() {
                    slot.name = name.to_owned();
                    if let Some(block) = writer.tool_call_mut(slot.content_index) {
                        block.name = name.to_owned();
                    }
                }
                position
            }
            None => {
                let position = self.tools.len();
                let unique = if id.is_empty() {
                    self.generated_id(writer, position)
                } else {
                    self.unique_id(id, position)
                };
                let content_index = writer.tool_call_start(unique.as_str(), name).await;
                self.tools.push(ToolSlot {
                    stream_index,
                    wire_id: id.to_owned(),
                    id: unique,
                    name: name.to_owned(),
                    has_arguments: false,
                    content_index,
                });
                position
            }
        };
        let slot = &mut self.tools[position];
        slot.has_arguments |= !arguments.is_empty();
        writer.tool_call_delta(slot.content_index, arguments).await;
    }

    /// The call a delta continues, or `None` when it opens a new one. Servers differ (see the
    /// README's table of server families): some number every call `0`, some send no `index`,
    /// some send the arguments before the id and name, some repeat the id on every chunk or
    /// change it mid-call.
    fn find_slot(&self, stream_index: Option<u64>, id: &str, name: &str) -> Option<usize> {
        if let Some(index) = stream_index {
            // The latest call on this index, unless the delta names a different call there
            // (parallel calls all numbered `0`, each with its own id and name).
            if let Some(position) = self
                .tools
                .iter()
                .rposition(|slot| slot.stream_index == Some(index))
            {
                return (!self.names_another_call(position, id, name)).then_some(position);
            }
            // A call that started without an index and now has one. Another index with the
            // same id is another call (its id is made unique).
            return (!id.is_empty())
                .then(|| {
                    self.tools
                        .iter()
                        .rposition(|slot| slot.stream_index.is_none() && slot.wire_id == id)
                })
                .flatten();
        }
        if !id.is_empty() {
            if let Some(position) = self.tools.iter().rposition(|slot| slot.wire_id == id) {
                return Some(position);
            }
            // The id and name of a call whose arguments came first.
            let last = self.tools.len().checked_sub(1)?;
            let slot = &self.tools[last];
            let same_call = slot.stream_index.is_none()
                && slot.wire_id.is_empty()
                && (slot.name.is_empty() || name.is_empty() || slot.name == name);
            return same_call.then_some(last);
        }
        // Neither index nor id: the last call goes on (no ghost call, pi #4854), unless a name
        // arrives for a call that already has its name and arguments.
        let last = self.tools.len().checked_sub(1)?;
        let slot = &self.tools[last];
        let another = !name.is_empty() && !slot.name.is_empty() && slot.has_arguments;
        (!another).then_some(last)
    }

    /// A delta on the index of the call at `position` opens another call when it carries a
    /// name and an id that differs from the call's (which has a name already). An id that
    /// changes without a name continues the call (Kimi sends a new id on every chunk).
    fn names_another_call(&self, position: usize, id: &str, name: &str) -> bool {
        let slot = &self.tools[position];
        !name.is_empty()
            && !slot.name.is_empty()
            && !id.is_empty()
            && id != slot.wire_id
            && (!slot.wire_id.is_empty() || name != slot.name || slot.has_arguments)
    }

    /// `wanted`, or `wanted_<position>` (then `_2`, `_3`, ...) when another call of this
    /// response already has that id: a transcript never holds two calls with one id.
    fn unique_id(&self, wanted: &str, position: usize) -> String {
        let taken = |candidate: &str| {
            self.tools
                .iter()
                .enumerate()
                .any(|(other, slot)| other != position && slot.id == candidate)
        };
        if !taken(wanted) {
            return wanted.to_owned();
        }
        let mut candidate = format!("{wanted}_{position}");
        let mut n = 2;
        while taken(&candidate) {
            candidate = format!("{wanted}_{position}_{n}");
            n += 1;
        }
        candidate
    }

    /// An id for a call the server sent without one (an empty `tool_call_id` is refused when
    /// the transcript is replayed). Stable: derived from the response id and the call's
    /// position, so the same stream always gives the same ids, and two responses' calls differ.
    fn generated_id(&self, writer: &StreamWriter, position: usize) -> String {
        let wanted = match writer.message().response_id.as_deref() {
            Some(response) => format!("call_{:08x}_{position}", fnv1a32(response)),
            None => format!("call_{position}"),
        };
        self.unique_id(&wanted, position)
    }
}

/// FNV-1a, 32 bits: a short stable digest (not a security boundary).
fn fnv1a32(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
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
        assert_eq!(usage.token_counts(), [40, 20, 50, 10]);
        assert_eq!(usage.total_tokens, 120);
    }

    #[test]
    fn hostile_counts_saturate_instead_of_overflowing() {
        let model = Model::new("openai-completions", "openrouter", "m", "");
        let usage = parse_usage(
            &json!({"prompt_tokens": 1, "completion_tokens": u64::MAX}),
            &model,
        );
        assert_eq!(usage.total_tokens, u64::MAX);
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
        for (reason, stop) in [
            ("eos", StopReason::Stop),
            ("eos_token", StopReason::Stop),
            ("stop_sequence", StopReason::Stop),
            ("end_turn", StopReason::Stop),
            ("max_tokens", StopReason::Length),
            ("model_length", StopReason::Length),
            ("tool_use", StopReason::ToolUse),
            ("insufficient_system_resource", StopReason::Error),
        ] {
            assert_eq!(map_finish_reason(reason).0, stop, "{reason}");
        }
    }
}
