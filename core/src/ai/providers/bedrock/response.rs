//! Turns ConverseStream messages (`messageStart`, `contentBlockStart`/`Delta`/`Stop`,
//! `messageStop`, `metadata`, and exceptions) into [`StreamWriter`] calls, and words failures
//! the way pi does (`Throttling error: ...`), so retry and overflow classifiers that match pi's
//! messages keep working.

use std::collections::BTreeMap;

use serde_json::Value;

use super::eventstream::Message;
use crate::ai::error::{ProviderError, record_stop};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::providers::http;
use crate::ai::types::StopReason;

/// The message of a stream that ended before `messageStop` without a transport error.
pub(crate) const ENDED_BEFORE_MESSAGE_STOP: &str = "Bedrock stream ended before messageStop";

/// pi's human-readable prefix for an AWS exception name, else the name itself.
fn exception_prefix(name: &str) -> &str {
    match name {
        "InternalServerException" => "Internal server error",
        "ModelStreamErrorException" => "Model stream error",
        "ValidationException" => "Validation error",
        "ThrottlingException" => "Throttling error",
        "ServiceUnavailableException" => "Service unavailable",
        other => other,
    }
}

/// `"<prefix>: <message>"` for an AWS exception (`ThrottlingException` or the stream's
/// `throttlingException`).
pub(crate) fn format_exception(name: &str, message: &str) -> String {
    let mut chars = name.chars();
    let name = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
        None => "UnknownError".to_owned(),
    };
    format!("{}: {message}", exception_prefix(&name))
}

/// The `message` (or `Message`) of an AWS error body.
fn body_message(body: &str) -> Option<String> {
    let json: Value = serde_json::from_str(body).ok()?;
    ["message", "Message"]
        .iter()
        .find_map(|key| json.get(key).and_then(Value::as_str))
        .map(str::to_owned)
}

/// A failed HTTP response: the exception named by `x-amzn-errortype` (or the body's `__type`)
/// with pi's prefix, else the shared `"<status> <message>"` shape.
pub(crate) fn format_http_error(
    status: reqwest::StatusCode,
    headers: &reqwest::header::HeaderMap,
    body: &str,
) -> String {
    let from_header = headers
        .get("x-amzn-errortype")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let from_body = || {
        let json: Value = serde_json::from_str(body).ok()?;
        json.get("__type")
            .or_else(|| json.get("code"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    // `ValidationException:http://internal.amazon.com/coral/...` or `com.amazon...#Name`.
    let name = from_header.or_else(from_body).map(|raw| {
        let raw = raw.split(':').next().unwrap_or(&raw);
        raw.rsplit('#').next().unwrap_or(raw).to_owned()
    });
    match name.filter(|name| !name.is_empty()) {
        Some(name) => {
            let message = body_message(body).unwrap_or_else(|| http::error_body_message(body));
            format_exception(&name, &message)
        }
        None => http::http_error_message(status, body),
    }
}

/// Maps Bedrock's `stopReason`. Anything that is not a normal end is an error naming the reason.
pub(crate) fn map_stop_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "end_turn" | "stop_sequence" => (StopReason::Stop, None),
        "max_tokens" | "model_context_window_exceeded" => (StopReason::Length, None),
        "tool_use" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider stop_reason: {other}")),
        ),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall,
}

#[derive(Clone, Copy, Debug)]
struct OpenBlock {
    content_index: usize,
    kind: BlockKind,
}

/// The state of one response stream.
#[derive(Debug, Default)]
pub(super) struct EventState {
    /// Open blocks by upstream `contentBlockIndex`.
    open: BTreeMap<u64, OpenBlock>,
    /// `messageStop` arrived.
    pub(super) stopped: bool,
    /// `metadata` (the usage) arrived: after `messageStop`, the stream's last frame.
    pub(super) metadata: bool,
}

/// A lone surrogate escape reads as U+FFFD (issue 17), as on every API.
fn parse_payload(kind: &str, payload: &[u8]) -> Result<Value, ProviderError> {
    let parsed = match std::str::from_utf8(payload) {
        Ok(text) => crate::ai::partial_json::parse_json_lenient(text),
        Err(_) => serde_json::from_slice(payload),
    };
    parsed.map_err(|error| {
        let text = String::from_utf8_lossy(&payload[..payload.len().min(500)]).into_owned();
        ProviderError::Decode(format!(
            "Could not parse Bedrock event {kind}: {error}; payload={text}"
        ))
    })
}

fn block_index(event: &Value) -> Option<u64> {
    event.get("contentBlockIndex").and_then(Value::as_u64)
}

impl EventState {
    /// Applies one eventstream message.
    pub(super) async fn handle(
        &mut self,
        message: &Message,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<(), ProviderError> {
        match message.header_str(":message-type") {
            Some("event") => {}
            Some("exception") => {
                let name = message
                    .header_str(":exception-type")
                    .unwrap_or("UnknownError");
                let text = body_message(&String::from_utf8_lossy(&message.payload))
                    .unwrap_or_else(|| String::from_utf8_lossy(&message.payload).into_owned());
                return Err(ProviderError::upstream(
                    format_exception(name, &text),
                    Some(name),
                    None,
                ));
            }
            Some("error") => {
                let code = message.header_str(":error-code").unwrap_or("UnknownError");
                let text = message.header_str(":error-message").unwrap_or("");
                return Err(ProviderError::upstream(
                    format!("{code}: {text}"),
                    Some(code),
                    None,
                ));
            }
            // Message types added later.
            _ => return Ok(()),
        }
        let Some(kind) = message.header_str(":event-type") else {
            return Ok(());
        };
        let known = [
            "messageStart",
            "contentBlockStart",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata",
        ];
        if !known.contains(&kind) {
            return Ok(());
        }
        let event = parse_payload(kind, &message.payload)?;
        match kind {
            "messageStart" => {
                if event.get("role").and_then(Value::as_str) != Some("assistant") {
                    return Err(ProviderError::Decode(
                        "Unexpected assistant message start but got user message start instead"
                            .to_owned(),
                    ));
                }
                writer.start().await;
            }
            "contentBlockStart" => self.block_start(&event, writer).await,
            "contentBlockDelta" => self.block_delta(&event, writer).await,
            "contentBlockStop" => {
                if let Some(index) = block_index(&event)
                    && let Some(block) = self.open.remove(&index)
                {
                    close(block, writer).await;
                }
            }
            "messageStop" => {
                self.stopped = true;
                let reason = event
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                record_stop(writer.message_mut(), map_stop_reason(reason), reason);
                // Blocks the server never closed are complete once the message is.
                for (_, block) in std::mem::take(&mut self.open) {
                    close(block, writer).await;
                }
            }
            "metadata" => {
                self.metadata = true;
                metadata(&event, writer, model);
            }
            _ => {}
        }
        Ok(())
    }

    async fn block_start(&mut self, event: &Value, writer: &mut StreamWriter) {
        // Only tool calls are announced; text and reasoning blocks start with their first delta.
        let (Some(index), Some(tool)) = (block_index(event), event.pointer("/start/toolUse"))
        else {
            return;
        };
        writer.start().await;
        let field = |key: &str| tool.get(key).and_then(Value::as_str).unwrap_or("");
        let content_index = writer
            .tool_call_start(field("toolUseId"), field("name"))
            .await;
        let opened = OpenBlock {
            content_index,
            kind: BlockKind::ToolCall,
        };
        if let Some(previous) = self.open.insert(index, opened) {
            close(previous, writer).await;
        }
    }

    async fn block_delta(&mut self, event: &Value, writer: &mut StreamWriter) {
        let (Some(index), Some(delta)) = (block_index(event), event.get("delta")) else {
            return;
        };
        let open = self.open.get(&index).copied();
        if let Some(text) = delta.get("text").and_then(Value::as_str) {
            let block = match open {
                Some(block) => block,
                None => self.open_block(index, BlockKind::Text, writer).await,
            };
            if block.kind == BlockKind::Text {
                writer.text_delta(block.content_index, text).await;
            }
        } else if let Some(input) = delta.pointer("/toolUse/input") {
            if let Some(block) = open.filter(|block| block.kind == BlockKind::ToolCall) {
                let input = input.as_str().unwrap_or("");
                writer.tool_call_delta(block.content_index, input).await;
            }
        } else if let Some(reasoning) = delta.get("reasoningContent") {
            let block = match open {
                Some(block) => block,
                None => self.open_block(index, BlockKind::Thinking, writer).await,
            };
            if block.kind != BlockKind::Thinking {
                return;
            }
            if let Some(text) = reasoning
                .get("text")
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
            {
                writer.thinking_delta(block.content_index, text).await;
            }
            if let Some(signature) = reasoning
                .get("signature")
                .and_then(Value::as_str)
                .filter(|signature| !signature.is_empty())
                && let Some(thinking) = writer.thinking_block_mut(block.content_index)
            {
                thinking
                    .thinking_signature
                    .get_or_insert_with(String::new)
                    .push_str(signature);
            }
            // `redactedContent` is dropped, as pi drops it.
        }
        // Citations and delta kinds added later are ignored.
    }

    async fn open_block(
        &mut self,
        index: u64,
        kind: BlockKind,
        writer: &mut StreamWriter,
    ) -> OpenBlock {
        writer.start().await;
        let content_index = match kind {
            BlockKind::Text => writer.text_start().await,
            BlockKind::Thinking => {
                let content_index = writer.thinking_start().await;
                // pi's block starts with an empty signature, so its JSON always has the field.
                if let Some(thinking) = writer.thinking_block_mut(content_index) {
                    thinking.thinking_signature = Some(String::new());
                }
                content_index
            }
            BlockKind::ToolCall => writer.tool_call_start("", "").await,
        };
        let block = OpenBlock {
            content_index,
            kind,
        };
        self.open.insert(index, block);
        block
    }
}

async fn close(block: OpenBlock, writer: &mut StreamWriter) {
    match block.kind {
        BlockKind::Text => writer.text_end(block.content_index).await,
        BlockKind::Thinking => writer.thinking_end(block.content_index).await,
        BlockKind::ToolCall => writer.tool_call_end(block.content_index).await,
    }
}

fn metadata(event: &Value, writer: &mut StreamWriter, model: &Model) {
    let Some(usage) = event.get("usage") else {
        return;
    };
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let out = &mut writer.message_mut().usage;
    out.input = count("inputTokens");
    out.output = count("outputTokens");
    out.cache_read = count("cacheReadInputTokens");
    out.cache_write = count("cacheWriteInputTokens");
    // Always the sum, as on every other API (README "Differences from pi" 16): Bedrock's own
    // `totalTokens` is the same sum when it comes, and pi's fallback without it left the cache
    // out.
    out.total_tokens = out
        .input
        .saturating_add(out.output)
        .saturating_add(out.cache_read)
        .saturating_add(out.cache_write);
    model.calculate_cost(out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn the_total_is_the_sum_with_or_without_bedrocks_own() {
        use serde_json::json;
        let model = Model::new("bedrock-converse-stream", "amazon-bedrock", "m", "http://x");
        for usage in [
            json!({"inputTokens": 4, "outputTokens": 3, "cacheReadInputTokens": 100}),
            json!({"inputTokens": 4, "outputTokens": 3, "cacheReadInputTokens": 100,
                   "totalTokens": 107}),
        ] {
            let (mut writer, _stream) = crate::ai::event_stream::channel(&model, None);
            metadata(&json!({"usage": usage}), &mut writer, &model);
            assert_eq!(writer.message().usage.total_tokens, 107, "{usage}");
        }
    }

    #[test]
    fn a_lone_surrogate_escape_is_replaced_not_fatal() {
        let value = parse_payload(
            "contentBlockDelta",
            br#"{"contentBlockIndex":0,"delta":{"text":"h\ud800i"}}"#,
        )
        .unwrap();
        assert_eq!(value["delta"]["text"], "h\u{FFFD}i");
        assert!(parse_payload("x", b"{\"a\":1} trailing").is_err());
    }

    #[test]
    fn exceptions_get_pis_prefixes() {
        assert_eq!(
            format_exception("throttlingException", "Too many requests"),
            "Throttling error: Too many requests"
        );
        assert_eq!(
            format_exception("ValidationException", "Input is too long"),
            "Validation error: Input is too long"
        );
        assert_eq!(
            format_exception("modelStreamErrorException", "x"),
            "Model stream error: x"
        );
        assert_eq!(
            format_exception("AccessDeniedException", "no"),
            "AccessDeniedException: no"
        );
    }

    #[test]
    fn http_errors_use_the_error_type_header() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-amzn-errortype",
            HeaderValue::from_static(
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            ),
        );
        let status = reqwest::StatusCode::TOO_MANY_REQUESTS;
        assert_eq!(
            format_http_error(status, &headers, r#"{"message":"Too many tokens"}"#),
            "Throttling error: Too many tokens"
        );
        let body = r#"{"__type":"com.amazon.coral.service#UnrecognizedClientException","Message":"bad token"}"#;
        assert_eq!(
            format_http_error(reqwest::StatusCode::FORBIDDEN, &HeaderMap::new(), body),
            "UnrecognizedClientException: bad token"
        );
        assert_eq!(
            format_http_error(
                reqwest::StatusCode::BAD_GATEWAY,
                &HeaderMap::new(),
                "gateway down"
            ),
            "502 gateway down"
        );
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(map_stop_reason("end_turn").0, StopReason::Stop);
        assert_eq!(map_stop_reason("stop_sequence").0, StopReason::Stop);
        assert_eq!(map_stop_reason("max_tokens").0, StopReason::Length);
        assert_eq!(
            map_stop_reason("model_context_window_exceeded").0,
            StopReason::Length
        );
        assert_eq!(map_stop_reason("tool_use").0, StopReason::ToolUse);
        assert_eq!(
            map_stop_reason("guardrail_intervened"),
            (
                StopReason::Error,
                Some("Provider stop_reason: guardrail_intervened".into())
            )
        );
    }
}
