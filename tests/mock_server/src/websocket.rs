//! WebSocket mode: a `GET` with `Upgrade: websocket` (the openai-codex-responses transport)
//! is answered from the same script as every other request.
//!
//! - The upgrade is accepted only when the next scripted reply is a WebSocket reply (has `ws`);
//!   otherwise it is refused with HTTP 400 and nothing is popped (so a client that falls back
//!   to SSE finds its SSE reply next). A WebSocket reply with `ws_reject: <status>` is popped and
//!   refuses the upgrade with that status (and its `body`, default a JSON error).
//! - Once accepted, every text (or binary) message the client sends is recorded (method `WS`,
//!   the upgrade's path and headers, the message's JSON as the body) and answered by the next
//!   scripted reply, which must be a WebSocket reply; the connection then stays open for the
//!   next message. The upgrade itself is recorded too (method `GET`).
//!
//! Reply keys:
//!
//! - `ws`: the messages to send, in order; a string is sent as it is, anything else as compact
//!   JSON (text frames);
//! - `delay_ms`: sleep before each message;
//! - `ws_stall_after`: after that many messages, send nothing more for `stall_ms` (default 60 s)
//!   or until the client goes away;
//! - `ws_close`: after the messages, close with `{"code": n, "reason": "..."}` (`true`: 1000);
//! - `ws_drop_after`: after that many messages, drop the TCP connection without a close frame;
//! - `ws_reject` (+ `body`, `headers`): refuse the upgrade instead.

use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};

use crate::http::{self, Request};
use crate::{RecordedRequest, Shared};

/// Every key a WebSocket reply may carry (besides `_comment`-style keys).
const KNOWN_KEYS: &[&str] = &[
    "ws",
    "delay_ms",
    "ws_stall_after",
    "stall_ms",
    "ws_close",
    "ws_drop_after",
    "ws_reject",
    "body",
    "headers",
];

/// Whether `reply` is a WebSocket reply.
pub(crate) fn is_ws_reply(reply: &Value) -> bool {
    reply.get("ws").is_some() || reply.get("ws_reject").is_some()
}

/// Whether `request` asks for a WebSocket.
pub(crate) fn is_upgrade(request: &Request) -> bool {
    request.method == "GET"
        && request
            .header("upgrade")
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// A checked WebSocket reply.
#[derive(Debug)]
struct WsReply {
    messages: Vec<String>,
    delay: Duration,
    stall_after: Option<usize>,
    stall: Duration,
    close: Option<(u16, String)>,
    drop_after: Option<usize>,
    reject: Option<u16>,
    body: Option<Value>,
}

fn count(obj: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{key}` must be a non-negative integer, got {v}")),
    }
}

fn parse(reply: &Value) -> Result<WsReply, String> {
    let Value::Object(obj) = reply else {
        return Err(format!("a reply must be a JSON object, got {reply}"));
    };
    for key in obj.keys() {
        if !key.starts_with('_') && !KNOWN_KEYS.contains(&key.as_str()) {
            return Err(format!("unknown key `{key}` in a WebSocket reply"));
        }
    }
    let messages = match obj.get("ws") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .collect(),
        Some(other) => return Err(format!("`ws` must be an array of messages, got {other}")),
    };
    let close = match obj.get("ws_close") {
        None | Some(Value::Null | Value::Bool(false)) => None,
        Some(Value::Bool(true)) => Some((1000, String::new())),
        Some(Value::Object(frame)) => {
            let code = count(frame, "code")?.unwrap_or(1000);
            let code = u16::try_from(code).map_err(|_| format!("bad close code {code}"))?;
            let reason = frame
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            Some((code, reason))
        }
        Some(other) => return Err(format!("`ws_close` must be an object, got {other}")),
    };
    let reject = match count(obj, "ws_reject")? {
        None => None,
        Some(status @ 100..=999) => Some(status as u16),
        Some(status) => return Err(format!("`ws_reject` {status} is not an HTTP status")),
    };
    if reject.is_none() && obj.contains_key("body") {
        return Err("`body` only goes with `ws_reject`".into());
    }
    let as_usize = |key: &str| -> Result<Option<usize>, String> {
        count(obj, key)?
            .map(|n| usize::try_from(n).map_err(|_| format!("`{key}` is too large")))
            .transpose()
    };
    Ok(WsReply {
        messages,
        delay: Duration::from_millis(count(obj, "delay_ms")?.unwrap_or(0)),
        stall_after: as_usize("ws_stall_after")?,
        stall: Duration::from_millis(count(obj, "stall_ms")?.unwrap_or(60_000)),
        close,
        drop_after: as_usize("ws_drop_after")?,
        reject,
        body: obj.get("body").cloned(),
    })
}

/// Checks a WebSocket reply without serving it.
pub(crate) fn validate(reply: &Value) -> Result<(), String> {
    parse(reply).map(|_| ())
}

/// Serves one upgrade request and, if accepted, the connection's messages.
pub(crate) async fn serve(mut stream: TcpStream, request: Request, shared: &Shared) {
    let recorded = RecordedRequest {
        method: request.method.clone(),
        path: request.target.clone(),
        headers: request.headers.clone(),
        body: Value::Null,
    };
    let accepted = {
        let mut state = shared.lock();
        state.log.push(recorded.clone());
        match state.queue.front() {
            Some(front) if is_ws_reply(front) => {
                let reply = parse(front);
                if matches!(&reply, Ok(r) if r.reject.is_some()) {
                    state.queue.pop_front();
                    state.served += 1;
                }
                Some(reply)
            }
            _ => None,
        }
    };
    let refuse = |status: u16, body: Value| {
        let body = body.to_string();
        let mut head = http::head(
            status,
            &[
                ("Content-Type".into(), "application/json".into()),
                ("Content-Length".into(), body.len().to_string()),
                ("Connection".into(), "close".into()),
            ],
        );
        head.extend_from_slice(body.as_bytes());
        head
    };
    let response = match &accepted {
        None => Some(refuse(
            400,
            json!({"error": {"message": "mock server: no WebSocket reply scripted",
                             "type": "invalid_request_error"}}),
        )),
        Some(Err(error)) => Some(refuse(
            500,
            json!({"error": {"message": format!("mock server: invalid WebSocket reply: {error}"),
                             "type": "server_error"}}),
        )),
        Some(Ok(reply)) => reply.reject.map(|status| {
            refuse(
                status,
                reply.body.clone().unwrap_or_else(|| {
                    json!({"error": {"message": "mock server: WebSocket upgrade refused",
                                     "type": "server_error"}})
                }),
            )
        }),
    };
    if let Some(bytes) = response {
        let _ = stream.write_all(&bytes).await;
        let _ = stream.shutdown().await;
        return;
    }
    let Some(key) = request.header("sec-websocket-key") else {
        return;
    };
    let head = http::head(
        101,
        &[
            ("Upgrade".into(), "websocket".into()),
            ("Connection".into(), "Upgrade".into()),
            (
                "Sec-WebSocket-Accept".into(),
                derive_accept_key(key.as_bytes()),
            ),
        ],
    );
    if stream.write_all(&head).await.is_err() {
        return;
    }
    let mut socket = WebSocketStream::from_raw_socket(stream, Role::Server, None).await;
    while let Some(Ok(message)) = socket.next().await {
        let text = match message {
            Message::Text(text) => text.to_string(),
            Message::Binary(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Message::Close(_) => return,
            _ => continue,
        };
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        let reply = {
            let mut state = shared.lock();
            state.log.push(RecordedRequest {
                method: "WS".into(),
                body,
                ..recorded.clone()
            });
            match state.queue.front() {
                Some(front) if is_ws_reply(front) => {
                    state.served += 1;
                    state.queue.pop_front()
                }
                _ => None,
            }
        };
        let Some(Ok(reply)) = reply.as_ref().map(parse) else {
            let frame = CloseFrame {
                code: CloseCode::Error,
                reason: "mock server: no WebSocket reply scripted".into(),
            };
            let _ = socket.close(Some(frame)).await;
            return;
        };
        if !send_reply(&mut socket, &reply).await {
            return;
        }
    }
}

/// Sends one reply; `false` once the connection is over.
async fn send_reply(socket: &mut WebSocketStream<TcpStream>, reply: &WsReply) -> bool {
    for (index, text) in reply.messages.iter().enumerate() {
        if reply.drop_after == Some(index) {
            return false;
        }
        if reply.stall_after == Some(index) {
            stall(socket, reply.stall).await;
        }
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        if socket.send(Message::text(text.clone())).await.is_err() {
            return false;
        }
    }
    let sent = reply.messages.len();
    if reply.drop_after.is_some_and(|n| n >= sent) {
        return false;
    }
    if reply.stall_after.is_some_and(|n| n >= sent) {
        stall(socket, reply.stall).await;
    }
    if let Some((code, reason)) = &reply.close {
        let frame = CloseFrame {
            code: CloseCode::from(*code),
            reason: reason.clone().into(),
        };
        let _ = socket.close(Some(frame)).await;
        return false;
    }
    true
}

/// Waits `duration`, or until the client closes the connection.
async fn stall(socket: &mut WebSocketStream<TcpStream>, duration: Duration) {
    let gone = async {
        while let Some(Ok(message)) = socket.next().await {
            if matches!(message, Message::Close(_)) {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(duration, gone).await;
}
