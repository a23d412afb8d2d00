//! A [`StreamFn`] that routes model calls through the application's own server (pi's
//! `streamProxy`): `POST {proxy_url}/api/stream`, answered with SSE events that carry deltas
//! but no `partial` message; the client rebuilds the message.
//!
//! Differences from pi: a server that closes the stream without `done` or `error` ends the
//! stream with an error instead of hanging, and `done`'s extra fields (`responseId`) are kept.

use std::sync::Arc;

use serde_json::{Value, json};

use super::config::StreamFn;
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::event_stream::{AssistantMessageEventStream, StreamWriter, channel};
use crate::ai::model::Model;
use crate::ai::options::{ApiKey, StreamOptions};
use crate::ai::providers::http;
use crate::ai::types::{Context, StopReason, Usage};

/// Where the proxy is and how to authenticate.
#[derive(Clone, Debug)]
pub struct ProxyOptions {
    /// Base URL of the proxy; requests go to `{proxy_url}/api/stream`.
    pub proxy_url: String,
    /// Sent as `Authorization: Bearer <token>`.
    pub auth_token: Option<ApiKey>,
}

/// A [`StreamFn`] that sends every model call through the proxy.
pub fn proxy_stream_fn(proxy: ProxyOptions) -> StreamFn {
    let proxy = Arc::new(proxy);
    Arc::new(move |model, context, options| stream_proxy(model, context, options, &proxy))
}

/// Streams one model call through the proxy.
pub fn stream_proxy(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    proxy: &ProxyOptions,
) -> AssistantMessageEventStream {
    if !http::has_runtime() {
        return AssistantMessageEventStream::failed(model, StopReason::Error, http::NO_RUNTIME);
    }
    let body = json!({
        "model": model,
        "context": context,
        "options": {
            "temperature": options.temperature,
            "maxTokens": options.max_tokens,
            "reasoning": options.reasoning,
            "sessionId": options.session_id,
            "headers": options.headers,
        },
    });
    let (writer, stream) = channel(model, options.signal.clone());
    let url = format!("{}/api/stream", proxy.proxy_url.trim_end_matches('/'));
    let token = proxy.auth_token.clone();
    let options = options.clone();
    tokio::spawn(writer.drive(async move |writer| run(writer, url, token, body, &options).await));
    stream
}

async fn run(
    writer: &mut StreamWriter,
    url: String,
    token: Option<ApiKey>,
    body: Value,
    options: &StreamOptions,
) -> Result<(), ProviderError> {
    let mut request = http::client()
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(&body).unwrap_or_default());
    if let Some(token) = &token {
        request = request.bearer_auth(token.expose());
    }
    let response = http::send_once(writer, request, options).await?;
    let status = response.status();
    if !status.is_success() {
        let text = http::error_body_text(response, options).await;
        let detail = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| {
                format!(
                    "{} {}",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                )
            });
        return Err(ProviderError::http(
            status.as_u16(),
            format!("Proxy error: {}", detail.trim()),
            None,
        ));
    }
    read_stream(writer, http::SseEvents::new(response, options)).await
}

/// Reads a proxy's event stream to its end (fuzzing feeds bytes here, without a network).
pub(crate) async fn read_stream(
    writer: &mut StreamWriter,
    mut events: http::SseEvents,
) -> Result<(), ProviderError> {
    while let Some(event) = events.next().await? {
        if let Some(end) = apply(writer, &event.data).await? {
            return end;
        }
    }
    Err(events.incomplete("Proxy closed the stream before the response was complete"))
}

fn usage_of(event: &Value) -> Option<Usage> {
    event
        .get("usage")
        .and_then(|u| serde_json::from_value(u.clone()).ok())
}

/// Applies one proxy event; `Some` when the stream is over.
async fn apply(
    writer: &mut StreamWriter,
    data: &str,
) -> Result<Option<Result<(), ProviderError>>, ProviderError> {
    let event: Value = serde_json::from_str(data)
        .map_err(|error| ProviderError::Decode(format!("Malformed proxy event: {error}")))?;
    let index = event
        .get("contentIndex")
        .and_then(Value::as_u64)
        .map(|i| i as usize);
    let text = |key: &str| {
        event
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let expect_index = |kind: &str| {
        index.ok_or_else(|| {
            ProviderError::Decode(format!("proxy event {kind} without contentIndex"))
        })
    };
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
    let check = |writer: &StreamWriter, index: usize, wanted: &str| -> Result<(), ProviderError> {
        let actual = writer
            .message()
            .content
            .get(index)
            .map(|block| match block {
                crate::ai::types::AssistantContent::Text(_) => "text",
                crate::ai::types::AssistantContent::Thinking(_) => "thinking",
                crate::ai::types::AssistantContent::ToolCall(_) => "toolCall",
            });
        if actual == Some(wanted) {
            Ok(())
        } else {
            Err(ProviderError::Decode(format!(
                "proxy event {kind} for a block that is not {wanted}"
            )))
        }
    };
    match kind {
        "start" => writer.start().await,
        "text_start" => {
            writer.text_start().await;
        }
        "text_delta" => {
            let index = expect_index(kind)?;
            check(writer, index, "text")?;
            writer.text_delta(index, text("delta")).await;
        }
        "text_end" => {
            let index = expect_index(kind)?;
            check(writer, index, "text")?;
            if let Some(signature) = event.get("contentSignature").and_then(Value::as_str)
                && let Some(crate::ai::types::AssistantContent::Text(block)) =
                    writer.message_mut().content.get_mut(index)
            {
                block.text_signature = Some(signature.to_owned());
            }
            writer.text_end(index).await;
        }
        "thinking_start" => {
            writer.thinking_start().await;
        }
        "thinking_delta" => {
            let index = expect_index(kind)?;
            check(writer, index, "thinking")?;
            writer.thinking_delta(index, text("delta")).await;
        }
        "thinking_end" => {
            let index = expect_index(kind)?;
            check(writer, index, "thinking")?;
            if let Some(signature) = event.get("contentSignature").and_then(Value::as_str)
                && let Some(block) = writer.thinking_block_mut(index)
            {
                block.thinking_signature = Some(signature.to_owned());
            }
            writer.thinking_end(index).await;
        }
        "toolcall_start" => {
            writer.tool_call_start(text("id"), text("toolName")).await;
        }
        "toolcall_delta" => {
            let index = expect_index(kind)?;
            check(writer, index, "toolCall")?;
            writer.tool_call_delta(index, text("delta")).await;
        }
        "toolcall_end" => {
            let index = expect_index(kind)?;
            check(writer, index, "toolCall")?;
            writer.tool_call_end(index).await;
        }
        "done" => {
            let message = writer.message_mut();
            message.stop_reason =
                serde_json::from_value(event["reason"].clone()).unwrap_or(StopReason::Stop);
            if let Some(usage) = usage_of(&event) {
                message.usage = usage;
            }
            if let Some(id) = event.get("responseId").and_then(Value::as_str) {
                message.response_id = Some(id.to_owned());
            }
            return Ok(Some(Ok(())));
        }
        "error" => {
            if let Some(usage) = usage_of(&event) {
                writer.message_mut().usage = usage;
            }
            let message = event
                .get("errorMessage")
                .and_then(Value::as_str)
                .unwrap_or("Proxy reported an error")
                .to_owned();
            // A proxy built on this library may pass the error's kind, status and retry
            // delay on (pi's proxy sends only the text).
            let kind = event
                .get("errorKind")
                .and_then(Value::as_str)
                .and_then(ErrorKind::from_name);
            let status = event
                .get("httpStatus")
                .and_then(Value::as_u64)
                .and_then(|status| u16::try_from(status).ok());
            let error = match status {
                Some(status) => ProviderError::http(
                    status,
                    message,
                    event.get("retryAfterMs").and_then(Value::as_u64),
                ),
                None => ProviderError::Upstream {
                    message,
                    kind,
                    status: None,
                },
            };
            return Ok(Some(Err(error)));
        }
        // Unknown events are skipped, as pi does.
        _ => {}
    }
    Ok(None)
}
