//! A [`StreamFn`] that routes model calls through the application's own server (pi's
//! `streamProxy`): `POST {proxy_url}/api/stream`, answered with SSE events that carry deltas
//! but no `partial` message; the client rebuilds the message.
//!
//! Differences from pi: a server that closes the stream without `done` or `error` ends the
//! stream with an error instead of hanging, `done`'s extra fields (`responseId`) are kept, and
//! the request's options carry `outputSchema` and `toolChoice` when they are set.
//!
//! The same event decoding serves stream functions written in other languages:
//! [`stream_from_events`] turns any source of pi-shaped events into a stream, and
//! [`stream_message`] replays a finished message as one.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::config::StreamFn;
use super::error::message_error;
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::event_stream::{AssistantMessageEventStream, StreamWriter, channel};
use crate::ai::model::Model;
use crate::ai::options::{ApiKey, StreamOptions};
use crate::ai::remote::{RemoteEvents, post_for_events};
use crate::ai::thinking::ThinkingLevel;
use crate::ai::types::{AssistantContent, AssistantMessage, Context, StopReason, Usage};

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
    if let Some(failed) = AssistantMessageEventStream::outside_runtime(model) {
        return failed;
    }
    let mut body = json!({
        "model": model,
        "context": context,
        "options": {
            "temperature": options.temperature,
            "maxTokens": options.max_tokens,
            "reasoning": options.reasoning.and_then(ThinkingLevel::enabled),
            "sessionId": options.session_id,
            "headers": options.headers,
        },
    });
    // Beyond pi's body, and only when set (a pi proxy sees the body it knows): a typed
    // answer's schema and the tool choice, which a proxy that streams with this library reads
    // as options of the same names, so that the model is asked for them rather than only
    // checked afterwards.
    if let Some(extra) = body["options"].as_object_mut() {
        if let Some(schema) = &options.output_schema {
            extra.insert("outputSchema".into(), json!(schema));
        }
        if let Some(choice) = &options.tool_choice {
            extra.insert("toolChoice".into(), json!(choice));
        }
    }
    let (writer, stream) = channel(model, options.signal.clone());
    let url = format!("{}/api/stream", proxy.proxy_url.trim_end_matches('/'));
    let token = proxy.auth_token.clone();
    let options = options.clone();
    stream
        .driving(|| writer.drive(async move |writer| run(writer, url, token, body, &options).await))
}

async fn run(
    writer: &mut StreamWriter,
    url: String,
    token: Option<ApiKey>,
    body: Value,
    options: &StreamOptions,
) -> Result<(), ProviderError> {
    let events = post_for_events(
        writer,
        &url,
        token.as_ref(),
        &body,
        options,
        |status, text| {
            let detail = serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| {
                    format!(
                        "{} {}",
                        status.as_u16(),
                        status.canonical_reason().unwrap_or("")
                    )
                });
            ProviderError::http(
                status.as_u16(),
                format!("Proxy error: {}", detail.trim()),
                None,
            )
        },
    )
    .await?;
    read_stream(writer, events).await
}

message_error! {
    /// Why a source of events given to [`stream_from_events`] failed (a binding's iterator
    /// raised): the message becomes the `errorMessage` of the stream's `error` event.
    EventSourceError
}

impl From<EventSourceError> for ProviderError {
    fn from(error: EventSourceError) -> Self {
        Self::other(error.0, None)
    }
}

/// A stream built from pi-shaped events coming from any source (e.g. a binding's stream
/// function): `start`, `text_*`, `thinking_*`, `toolcall_*` with their `contentIndex`, then
/// `done` (with `reason`, and `usage` either at the top as the proxy sends it or in `message`
/// as [`AssistantMessageEvent`](crate::ai::AssistantMessageEvent) has it) or `error` (with
/// `errorMessage`, or the `error` message). `partial` fields are ignored: the message is
/// rebuilt from the deltas. An `Err` item, a malformed event or a source that ends without
/// `done`/`error` ends the stream with an `error`; `signal` aborts it. Call inside a tokio
/// runtime.
pub fn stream_from_events(
    model: &Model,
    signal: Option<CancellationToken>,
    mut events: BoxStream<'static, Result<Value, EventSourceError>>,
) -> AssistantMessageEventStream {
    if let Some(failed) = AssistantMessageEventStream::outside_runtime(model) {
        return failed;
    }
    let (writer, stream) = channel(model, signal);
    tokio::spawn(writer.drive(async move |writer| {
        while let Some(event) = events.next().await {
            if let Some(end) = apply_event(writer, &event?).await? {
                return end;
            }
        }
        Err(ProviderError::Decode(
            "The event source ended before the response was complete".to_owned(),
        ))
    }));
    stream
}

/// Streams a finished `message` as a provider would have (`start`, one delta per block,
/// `done`, or `error` when its stop reason is a failure), keeping its signatures, usage and
/// response fields: what a stream function that computed a whole message at once returns.
/// Call inside a tokio runtime.
pub fn stream_message(
    model: &Model,
    signal: Option<CancellationToken>,
    message: AssistantMessage,
) -> AssistantMessageEventStream {
    if let Some(failed) = AssistantMessageEventStream::outside_runtime(model) {
        return failed;
    }
    let (writer, stream) = channel(model, signal);
    tokio::spawn(writer.drive(async move |writer| {
        let AssistantMessage {
            content,
            usage,
            stop_reason,
            response_id,
            response_model,
            diagnostics,
            error_message,
            error_kind,
            http_status,
            retry_after_ms,
            ..
        } = message;
        writer.start().await;
        for block in content {
            match block {
                AssistantContent::Text(text) => {
                    let index = writer.text_start().await;
                    writer.text_delta(index, text.text).await;
                    if let Some(AssistantContent::Text(block)) =
                        writer.message_mut().content.get_mut(index)
                    {
                        block.text_signature = text.text_signature;
                    }
                    writer.text_end(index).await;
                }
                AssistantContent::Thinking(thinking) => {
                    let index = writer.thinking_start().await;
                    writer.thinking_delta(index, thinking.thinking).await;
                    if let Some(block) = writer.thinking_block_mut(index) {
                        block.thinking_signature = thinking.thinking_signature;
                        block.redacted = thinking.redacted;
                    }
                    writer.thinking_end(index).await;
                }
                AssistantContent::ToolCall(call) => {
                    let index = writer.tool_call_start(call.id, call.name).await;
                    writer
                        .tool_call_delta(index, call.arguments.to_string())
                        .await;
                    if let Some(block) = writer.tool_call_mut(index) {
                        block.thought_signature = call.thought_signature;
                    }
                    writer.tool_call_end(index).await;
                }
            }
        }
        let out = writer.message_mut();
        out.usage = usage;
        out.stop_reason = stop_reason;
        out.response_id = response_id;
        out.response_model = response_model;
        out.diagnostics = diagnostics;
        out.error_message = error_message;
        out.error_kind = error_kind;
        out.http_status = http_status;
        out.retry_after_ms = retry_after_ms;
        // `done` turns a failure stop reason into the `error` event.
        Ok(())
    }));
    stream
}

/// Reads a proxy's event stream to its end (fuzzing feeds bytes here, without a network).
pub(crate) async fn read_stream(
    writer: &mut StreamWriter,
    mut events: RemoteEvents,
) -> Result<(), ProviderError> {
    while let Some(event) = events.next().await? {
        if let Some(end) = apply(writer, &event.data).await? {
            // As a provider's answer: the connection is kept once the body has ended.
            if end.is_ok() && !writer.is_closed() {
                events.read_to_end().await;
            }
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
    // A lone surrogate escape reads as U+FFFD (issue 17), as on every API.
    let event: Value = crate::ai::partial_json::parse_json_lenient(data)
        .map_err(|error| ProviderError::Decode(format!("Malformed proxy event: {error}")))?;
    apply_event(writer, &event).await
}

/// Applies one decoded event; `Some` when the stream is over.
async fn apply_event(
    writer: &mut StreamWriter,
    event: &Value,
) -> Result<Option<Result<(), ProviderError>>, ProviderError> {
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
            // The proxy's form has the fields at the top; a full event carries the message.
            let full = event.get("message");
            let message = writer.message_mut();
            message.stop_reason =
                serde_json::from_value(event["reason"].clone()).unwrap_or(StopReason::Stop);
            if let Some(usage) = usage_of(event).or_else(|| full.and_then(usage_of)) {
                message.usage = usage;
            }
            if let Some(id) = event
                .get("responseId")
                .or_else(|| full.and_then(|m| m.get("responseId")))
                .and_then(Value::as_str)
            {
                message.response_id = Some(id.to_owned());
            }
            return Ok(Some(Ok(())));
        }
        "error" => {
            let full = event.get("error");
            if let Some(usage) = usage_of(event).or_else(|| full.and_then(usage_of)) {
                writer.message_mut().usage = usage;
            }
            let message = event
                .get("errorMessage")
                .or_else(|| full.and_then(|m| m.get("errorMessage")))
                .and_then(Value::as_str)
                .unwrap_or("Proxy reported an error")
                .to_owned();
            // A proxy or stream function built on this library may pass the error's kind,
            // status and retry delay on (pi's proxy sends only the text).
            let field = |key: &str| {
                event
                    .get(key)
                    .or_else(|| full.and_then(|m| m.get(key)))
                    .filter(|v| !v.is_null())
            };
            let status = field("httpStatus")
                .and_then(Value::as_u64)
                .and_then(|status| u16::try_from(status).ok());
            let kind = field("errorKind")
                .and_then(Value::as_str)
                .and_then(ErrorKind::from_name)
                .or_else(|| status.and_then(ErrorKind::from_status));
            let error = ProviderError::Reported {
                message,
                kind,
                status,
                retry_after_ms: field("retryAfterMs").and_then(Value::as_u64),
            };
            return Ok(Some(Err(error)));
        }
        // Unknown events are skipped, as pi does.
        _ => {}
    }
    Ok(None)
}
