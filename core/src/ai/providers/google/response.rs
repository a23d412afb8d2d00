//! Turns streamed `GenerateContentResponse` objects into [`StreamWriter`] calls (pi's stream
//! loop in `google.ts` and `mapStopReason` / `retainThoughtSignature` in `google-shared.ts`).
//!
//! Blocks are strictly sequential: a text part continues the open block of its kind, a part of
//! the other kind closes it and opens a new one, and a function call (which always arrives
//! whole) closes it and is emitted as `toolcall_start`, one `toolcall_delta` with the full JSON
//! of its arguments, and `toolcall_end`.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::ai::error::{ErrorKind, ProviderError, record_stop};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::partial_json::parse_json_lenient;
use crate::ai::types::{AssistantContent, StopReason, Usage, now_ms};

/// Counter for the ids of function calls that arrive without one (unique per process).
static TOOL_CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The block being streamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpenBlock {
    Text(usize),
    Thinking(usize),
}

/// What happened to the response as a whole.
#[derive(Debug, Default)]
pub(super) struct ChunkState {
    open: Option<OpenBlock>,
    /// A candidate `finishReason` or a prompt `blockReason` arrived.
    pub(super) finished: bool,
}

/// Maps a Gemini `finishReason`. `STOP` and `MAX_TOKENS` are the only successful ends; every
/// other reason (safety, recitation, malformed function call, ones added later) is an error
/// whose message names it (pi loses the reason, quirk #14). `finish_message` is Gemini's own
/// explanation when it sends one.
pub(crate) fn map_finish_reason(
    reason: &str,
    finish_message: Option<&str>,
) -> (StopReason, Option<String>) {
    match reason {
        "STOP" => (StopReason::Stop, None),
        "MAX_TOKENS" => (StopReason::Length, None),
        other => {
            let mut message = format!("Provider finishReason: {other}");
            if let Some(detail) = finish_message.filter(|m| !m.is_empty()) {
                message.push_str(": ");
                message.push_str(detail);
            }
            (StopReason::Error, Some(message))
        }
    }
}

/// Normalised usage from a `usageMetadata` object. `input` excludes cached tokens, `output`
/// includes thinking tokens, and `totalTokens` is the sum of the four counts (pi copies
/// `totalTokenCount`, which also counts tool-use prompt tokens).
pub(crate) fn parse_usage(metadata: &Value, model: &Model) -> Usage {
    let count = |key: &str| metadata.get(key).and_then(Value::as_u64).unwrap_or(0);
    let cached = count("cachedContentTokenCount");
    let mut usage = Usage {
        input: count("promptTokenCount").saturating_sub(cached),
        output: count("candidatesTokenCount").saturating_add(count("thoughtsTokenCount")),
        cache_read: cached,
        cache_write: 0,
        ..Usage::default()
    };
    usage.total_tokens = usage.sum_of_counts();
    model.calculate_cost(&mut usage);
    usage
}

/// An error object sent inside the stream, as `"<code> <message>"`, classified by its
/// `status` (`RESOURCE_EXHAUSTED`, ...) and its HTTP-style `code`.
fn stream_error(error: &Value) -> ProviderError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    let code = error.get("code").and_then(Value::as_u64);
    let message = match code {
        Some(code) => format!("{code} {message}"),
        None => message,
    };
    let status = code
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code));
    ProviderError::upstream(message, error.get("status").and_then(Value::as_str), status)
}

/// Parses one SSE `data` payload (a lone surrogate escape reads as U+FFFD, see
/// [`parse_json_lenient`]).
fn parse_chunk(data: &str) -> Result<Value, ProviderError> {
    parse_json_lenient(data).map_err(|error| {
        ProviderError::Decode(format!(
            "Malformed chunk from provider ({error}): {}",
            crate::text::prefix(data, 200)
        ))
    })
}

impl ChunkState {
    /// Applies one SSE `data` payload.
    pub(super) async fn handle(
        &mut self,
        data: &str,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<(), ProviderError> {
        if data.trim().is_empty() {
            return Ok(());
        }
        let chunk = parse_chunk(data)?;
        // A stream may also carry an array of responses, or an array holding an error.
        let chunks = match chunk {
            Value::Array(items) => items,
            other => vec![other],
        };
        for chunk in &chunks {
            self.handle_response(chunk, writer, model).await?;
        }
        Ok(())
    }

    async fn handle_response(
        &mut self,
        chunk: &Value,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<(), ProviderError> {
        let Some(object) = chunk.as_object() else {
            return Ok(());
        };
        if let Some(error) = object.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(error));
        }
        if writer.message().response_id.is_none()
            && let Some(id) = object
                .get("responseId")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
        {
            writer.message_mut().response_id = Some(id.to_owned());
        }
        if writer.message().response_model.is_none()
            && let Some(version) = object
                .get("modelVersion")
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
            && version != model.id
            && version.strip_prefix("models/") != Some(model.id.as_str())
        {
            writer.message_mut().response_model = Some(version.to_owned());
        }
        let candidate = object
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|candidates| candidates.first());
        if let Some(parts) = candidate
            .and_then(|c| c.pointer("/content/parts"))
            .and_then(Value::as_array)
        {
            for part in parts {
                self.handle_part(part, writer).await;
            }
        }
        if let Some(reason) = candidate
            .and_then(|c| c.get("finishReason"))
            .and_then(Value::as_str)
        {
            self.finished = true;
            let finish_message = candidate
                .and_then(|c| c.get("finishMessage"))
                .and_then(Value::as_str);
            let mut mapped = map_finish_reason(reason, finish_message);
            // pi's rule (quirk #15): any tool call makes the turn `toolUse`, whatever the
            // finish reason says.
            if writer.message().tool_calls().next().is_some() {
                mapped = (StopReason::ToolUse, None);
            }
            record_stop(writer.message_mut(), mapped, reason);
        }
        if let Some(block) = chunk
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            // The prompt itself was refused: no candidates come (pi reports an empty `stop`).
            self.finished = true;
            let mut text = format!("Prompt blocked by provider: {block}");
            if let Some(detail) = chunk
                .pointer("/promptFeedback/blockReasonMessage")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
            {
                text.push_str(": ");
                text.push_str(detail);
            }
            let message = writer.message_mut();
            message.stop_reason = StopReason::Error;
            message.error_message = Some(text);
            // Whatever the reason (`SAFETY`, `BLOCKLIST`, `OTHER`, ...), the provider declined
            // to answer this prompt.
            message.error_kind = Some(ErrorKind::Refusal);
        }
        if let Some(metadata) = object.get("usageMetadata").filter(|u| u.is_object()) {
            writer.message_mut().usage = parse_usage(metadata, model);
        }
        Ok(())
    }

    async fn handle_part(&mut self, part: &Value, writer: &mut StreamWriter) {
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        if let Some(text) = part.get("text").and_then(Value::as_str)
            // An empty part with no signature carries nothing; pi would open an empty block.
            && (!text.is_empty() || signature.is_some())
        {
            // Only `thought: true` marks thinking; a signature may sit on any part.
            let thinking = part.get("thought").and_then(Value::as_bool) == Some(true);
            let index = match (self.open, thinking) {
                (Some(OpenBlock::Thinking(index)), true)
                | (Some(OpenBlock::Text(index)), false) => index,
                _ => {
                    self.close_block(writer).await;
                    if thinking {
                        let index = writer.thinking_start().await;
                        self.open = Some(OpenBlock::Thinking(index));
                        index
                    } else {
                        let index = writer.text_start().await;
                        self.open = Some(OpenBlock::Text(index));
                        index
                    }
                }
            };
            // Keep the last non-empty signature of the block (later parts may omit it).
            if let Some(signature) = signature {
                match writer.message_mut().content.get_mut(index) {
                    Some(AssistantContent::Thinking(block)) => {
                        block.thinking_signature = Some(signature.to_owned());
                    }
                    Some(AssistantContent::Text(block)) => {
                        block.text_signature = Some(signature.to_owned());
                    }
                    _ => {}
                }
            }
            if !text.is_empty() {
                if thinking {
                    writer.thinking_delta(index, text).await;
                } else {
                    writer.text_delta(index, text).await;
                }
            }
        }
        if let Some(call) = part.get("functionCall").filter(|c| c.is_object()) {
            self.close_block(writer).await;
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            let provided = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty());
            let id = match provided {
                Some(id) if !writer.message().tool_calls().any(|c| c.id == id) => id.to_owned(),
                _ => {
                    let n = TOOL_CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
                    format!("{name}_{}_{n}", now_ms())
                }
            };
            let arguments = match call.get("args") {
                Some(args) if !args.is_null() => args.to_string(),
                _ => "{}".to_owned(),
            };
            let index = writer.tool_call_start(id, name).await;
            if let Some(signature) = signature
                && let Some(block) = writer.tool_call_mut(index)
            {
                block.thought_signature = Some(signature.to_owned());
            }
            writer.tool_call_delta(index, arguments).await;
            writer.tool_call_end(index).await;
        }
    }

    /// Closes the open text or thinking block, if any.
    pub(super) async fn close_block(&mut self, writer: &mut StreamWriter) {
        match self.open.take() {
            Some(OpenBlock::Text(index)) => writer.text_end(index).await,
            Some(OpenBlock::Thinking(index)) => writer.thinking_end(index).await,
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finish_reasons_are_total_and_named() {
        assert_eq!(map_finish_reason("STOP", None), (StopReason::Stop, None));
        assert_eq!(map_finish_reason("MAX_TOKENS", None).0, StopReason::Length);
        for reason in [
            "SAFETY",
            "RECITATION",
            "MALFORMED_FUNCTION_CALL",
            "FINISH_REASON_UNSPECIFIED",
            "SOMETHING_NEW",
        ] {
            let (stop, message) = map_finish_reason(reason, None);
            assert_eq!(stop, StopReason::Error);
            assert_eq!(message.unwrap(), format!("Provider finishReason: {reason}"));
        }
        assert_eq!(
            map_finish_reason(
                "MALFORMED_FUNCTION_CALL",
                Some("Malformed function call: x")
            )
            .1
            .unwrap(),
            "Provider finishReason: MALFORMED_FUNCTION_CALL: Malformed function call: x"
        );
    }

    #[test]
    fn usage_excludes_cache_from_input_and_counts_thoughts_as_output() {
        let model = Model::new(super::super::API, "google", "gemini-2.5-flash", "");
        let usage = parse_usage(
            &json!({"promptTokenCount": 1000, "cachedContentTokenCount": 600,
                    "candidatesTokenCount": 50, "thoughtsTokenCount": 200,
                    "toolUsePromptTokenCount": 7, "totalTokenCount": 1257}),
            &model,
        );
        assert_eq!(usage.token_counts(), [400, 250, 600, 0]);
        assert_eq!(usage.total_tokens, 1250);
    }
}
