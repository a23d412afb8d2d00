//! The WebSocket transport of `openai-codex-responses` (pi's `processWebSocketStream` and its
//! session cache).
//!
//! One request is one `{"type":"response.create", ...body}` text message; the answer is the
//! same JSON events as over SSE, one per message, up to the completing one. The connection then
//! stays open:
//!
//! - With a session id, the socket is **cached per session** and reused by the next request of
//!   that session; it is closed after five idle minutes, when a request on it fails or is
//!   aborted, and by [`close_sessions`]. A request that finds the session's socket busy gets a
//!   socket of its own. A cached socket the server has closed meanwhile is replaced.
//! - In `websocket-cached` and `auto` mode, a request that repeats the previous request of the
//!   session with more input (the previous input, the previous answer's items, then new items)
//!   sends only the new items with `previous_response_id` (the server keeps the context of its
//!   connection).
//!
//! Connections use our own TCP and TLS (rustls with the webpki roots, ring), the request's
//! timeouts (30 s to connect, `request_timeout_ms` for the handshake, `idle_timeout_ms` between
//! messages) and `max_event_bytes` as the largest message. WebSockets do not go through HTTP
//! proxies: when `HTTPS_PROXY` (`HTTP_PROXY` for `ws://`, or `ALL_PROXY`) applies to the host
//! (see `NO_PROXY`), requests go straight to SSE, which uses the proxy, instead of waiting for
//! a direct connection that may never come.

mod connect;
mod sessions;

use std::pin::Pin;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

pub(crate) use self::connect::proxied;
use self::connect::ws_error;
pub use self::sessions::OpenAICodexWebSocketStats;
use self::sessions::{Continuation, Lease, acquire, release, with_stats};
pub(crate) use self::sessions::{
    close_sessions, record_failure, reset_stats, stats, take_sse_fallback,
};
use super::events::{CodexError, handle_text};
use super::request::TOOL_CALL_PROVIDERS;
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::{StreamOptions, Transport};
use crate::ai::providers::http::Limits;
use crate::ai::providers::openai_responses::request::convert_input_with;
use crate::ai::providers::openai_responses::response::{Pricing, ResponseState};
use crate::ai::types::{Context, Message as ChatMessage};

/// A byte stream a WebSocket runs over (TCP, or TLS over TCP).
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// An open WebSocket.
pub(crate) type Socket = WebSocketStream<Pin<Box<dyn Io>>>;

/// `body` as the delta since the session's previous request, when it continues it: the same
/// request apart from `input`, and an input that starts with the previous input followed by
/// the previous answer's items (pi's `buildCachedWebSocketRequestBody`).
fn continued_body(body: &Value, continuation: &Continuation) -> Option<Value> {
    let without_input = |body: &Value| {
        let mut body = body.clone();
        if let Some(object) = body.as_object_mut() {
            object.shift_remove("input");
            object.shift_remove("previous_response_id");
        }
        body
    };
    if without_input(body) != without_input(&continuation.request_body) {
        return None;
    }
    let input = body.get("input").and_then(Value::as_array)?;
    let previous = continuation
        .request_body
        .get("input")
        .and_then(Value::as_array)?;
    let baseline = previous.len() + continuation.response_items.len();
    if input.len() < baseline
        || input[..previous.len()] != previous[..]
        || input[previous.len()..baseline] != continuation.response_items[..]
    {
        return None;
    }
    let mut delta = body.clone();
    let object = delta.as_object_mut()?;
    object.insert(
        "previous_response_id".into(),
        Value::from(continuation.response_id.clone()),
    );
    object.insert("input".into(), Value::Array(input[baseline..].to_vec()));
    Some(delta)
}

/// Everything one WebSocket request needs.
pub(crate) struct WebSocketRequest<'a> {
    /// `ws://` / `wss://` endpoint.
    pub url: &'a str,
    /// Handshake headers (authentication included).
    pub headers: &'a [(String, String)],
    /// The full request body.
    pub body: &'a Value,
    /// `websocket`, `websocket-cached` or `auto`.
    pub transport: Transport,
    /// The request's options (session id, limits).
    pub options: &'a StreamOptions,
    /// How the cost is priced.
    pub pricing: Pricing,
}

/// What became of a WebSocket request that failed.
pub(crate) struct WebSocketFailure {
    /// Why.
    pub error: CodexError,
    /// Whether events had been streamed (then there is no fallback).
    pub started: bool,
}

/// Sends one request over a (cached) WebSocket and streams its answer into `writer`.
pub(crate) async fn stream(
    writer: &mut StreamWriter,
    model: &Model,
    request: WebSocketRequest<'_>,
) -> Result<(), WebSocketFailure> {
    let limits = Limits::new(request.options);
    let session_id = request.options.session_id.as_deref();
    let not_started = |error| WebSocketFailure {
        error,
        started: false,
    };
    // A cached socket the server dropped while it was idle fails on first use: then one fresh
    // connection is tried before giving up on WebSockets.
    let mut fresh_retry_left = true;
    loop {
        let mut lease = acquire(request.url, request.headers, session_id, &limits)
            .await
            .map_err(not_started)?;
        let use_continuation = matches!(
            request.transport,
            Transport::WebsocketCached | Transport::Auto
        ) && lease.cached_for.is_some();
        let body = use_continuation
            .then_some(lease.continuation.as_ref())
            .flatten()
            .and_then(|continuation| continued_body(request.body, continuation))
            .unwrap_or_else(|| request.body.clone());
        count_request(session_id, &lease, use_continuation, &body);
        let mut message = serde_json::Map::new();
        message.insert("type".into(), Value::from("response.create"));
        if let Value::Object(fields) = &body {
            message.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let text = Value::Object(message).to_string();
        let outcome = async {
            lease
                .socket
                .send(Message::text(text))
                .await
                .map_err(|error| (CodexError::Transport(ws_error(&error)), false))?;
            read(
                &mut lease.socket,
                writer,
                model,
                &limits,
                request.pricing.clone(),
            )
            .await
        }
        .await;
        match outcome {
            Ok(()) if !writer.is_aborted() => {
                let continuation = use_continuation
                    .then(|| writer.message().response_id.clone())
                    .flatten()
                    .map(|response_id| Continuation {
                        request_body: request.body.clone(),
                        response_id,
                        response_items: response_items(model, writer),
                    });
                release(lease, Some(continuation));
                return Ok(());
            }
            Ok(()) => {
                release(lease, None);
                return Ok(());
            }
            Err((CodexError::Transport(_), false)) if lease.reused && fresh_retry_left => {
                fresh_retry_left = false;
                release(lease, None);
            }
            Err((error, started)) => {
                release(lease, None);
                return Err(WebSocketFailure { error, started });
            }
        }
    }
}

/// Counts one request in the session's statistics.
fn count_request(session_id: Option<&str>, lease: &Lease, use_continuation: bool, body: &Value) {
    with_stats(session_id, |stats| {
        stats.requests += 1;
        if lease.reused {
            stats.connections_reused += 1;
        } else {
            stats.connections_created += 1;
        }
        if use_continuation {
            stats.cached_context_requests += 1;
        }
        if body.get("store") == Some(&Value::Bool(true)) {
            stats.store_true_requests += 1;
        }
        let items = body
            .get("input")
            .and_then(Value::as_array)
            .map_or(0, Vec::len) as u64;
        stats.last_input_items = items;
        match body.get("previous_response_id").and_then(Value::as_str) {
            Some(previous) => {
                stats.delta_requests += 1;
                stats.last_delta_input_items = Some(items);
                stats.last_previous_response_id = Some(previous.to_owned());
            }
            None => {
                stats.full_context_requests += 1;
                stats.last_delta_input_items = None;
                stats.last_previous_response_id = None;
            }
        }
    });
}

/// The input items the answer just streamed becomes in the next request (its tool results
/// are the caller's to add).
fn response_items(model: &Model, writer: &StreamWriter) -> Vec<Value> {
    let context = Context {
        system_prompt: None,
        messages: vec![ChatMessage::Assistant(writer.message().clone())],
        tools: None,
    };
    convert_input_with(model, &context, TOOL_CALL_PROVIDERS, false)
        .into_iter()
        .filter(|item| item.get("type").and_then(Value::as_str) != Some("function_call_output"))
        .collect()
}

/// Reads one answer; the error says whether events had been streamed.
async fn read(
    socket: &mut Socket,
    writer: &mut StreamWriter,
    model: &Model,
    limits: &Limits,
    pricing: Pricing,
) -> Result<(), (CodexError, bool)> {
    let mut state = ResponseState::new(pricing);
    loop {
        let started = writer.is_started();
        let next = match limits.idle_timeout {
            Some(idle) => tokio::time::timeout(idle, socket.next())
                .await
                .map_err(|_| {
                    (
                        CodexError::Transport(format!(
                            "Stream idle timeout: no data for {} ms",
                            idle.as_millis()
                        )),
                        started,
                    )
                })?,
            None => socket.next().await,
        };
        let text = match next {
            None => {
                return Err((
                    CodexError::Transport(
                        "WebSocket stream closed before response.completed".to_owned(),
                    ),
                    started,
                ));
            }
            Some(Err(error)) => return Err((CodexError::Transport(ws_error(&error)), started)),
            Some(Ok(Message::Text(text))) => text.to_string(),
            Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
            Some(Ok(Message::Close(frame))) => {
                let detail = frame
                    .map(|frame| {
                        let code = u16::from(frame.code);
                        if frame.reason.is_empty() {
                            if code == 1009 {
                                format!(" {code} message too big")
                            } else {
                                format!(" {code}")
                            }
                        } else {
                            format!(" {code} {}", frame.reason)
                        }
                    })
                    .unwrap_or_default();
                return Err((
                    CodexError::Transport(format!("WebSocket closed{detail}")),
                    started,
                ));
            }
            Some(Ok(_)) => continue,
        };
        if text.trim().is_empty() {
            continue;
        }
        let finished = handle_text(&mut state, &text, "WebSocket", writer, model)
            .await
            .map_err(|error| (error, writer.is_started()))?;
        if finished || writer.is_closed() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn continuation_sends_only_new_items() {
        let previous =
            json!({"model": "m", "input": [{"role": "user", "content": "a"}], "store": false});
        let continuation = Continuation {
            request_body: previous,
            response_id: "resp_1".into(),
            response_items: vec![json!({"type": "message", "id": "msg_1"})],
        };
        let next = json!({"model": "m", "input": [
            {"role": "user", "content": "a"},
            {"type": "message", "id": "msg_1"},
            {"role": "user", "content": "b"}
        ], "store": false});
        let delta = continued_body(&next, &continuation).unwrap();
        assert_eq!(delta["previous_response_id"], "resp_1");
        assert_eq!(delta["input"], json!([{"role": "user", "content": "b"}]));
        // Another setting, or a rewritten history: the full body.
        let mut other = next.clone();
        other["model"] = json!("n");
        assert!(continued_body(&other, &continuation).is_none());
        let mut rewritten = next;
        rewritten["input"][0]["content"] = json!("changed");
        assert!(continued_body(&rewritten, &continuation).is_none());
    }
}
