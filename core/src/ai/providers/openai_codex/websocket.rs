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

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::{FutureExt as _, SinkExt as _, StreamExt as _};
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::events::{CodexError, handle_text};
use super::request::TOOL_CALL_PROVIDERS;
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::{StreamOptions, Transport};
use crate::ai::providers::http::Limits;
use crate::ai::providers::openai_responses::request::convert_input_with;
use crate::ai::providers::openai_responses::response::{Pricing, ResponseState};
use crate::ai::types::{Context, Message as ChatMessage};

/// How long a cached socket may stay idle.
pub(crate) const SESSION_IDLE_TTL: Duration = Duration::from_secs(5 * 60);

/// How long connecting (TCP, then TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A byte stream a WebSocket runs over (TCP, or TLS over TCP).
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// An open WebSocket.
pub(crate) type Socket = WebSocketStream<Pin<Box<dyn Io>>>;

/// pi's debug statistics of one session's WebSocket use
/// (`getOpenAICodexWebSocketDebugStats`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenAICodexWebSocketStats {
    /// Requests sent over a WebSocket.
    pub requests: u64,
    /// Connections opened.
    pub connections_created: u64,
    /// Requests that reused the session's cached connection.
    pub connections_reused: u64,
    /// Requests in a mode that may continue from the previous response.
    pub cached_context_requests: u64,
    /// Requests with `store: true` (Codex refuses those; always 0 from this library).
    pub store_true_requests: u64,
    /// Requests that sent the whole input.
    pub full_context_requests: u64,
    /// Requests that sent only new input with `previous_response_id`.
    pub delta_requests: u64,
    /// Input items of the last request.
    pub last_input_items: u64,
    /// Input items of the last delta request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_delta_input_items: Option<u64>,
    /// `previous_response_id` of the last delta request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_previous_response_id: Option<String>,
    /// WebSocket failures.
    pub websocket_failures: u64,
    /// Requests that went over SSE after a WebSocket failure.
    pub sse_fallbacks: u64,
    /// The last WebSocket failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_websocket_error: Option<String>,
    /// Whether the session now goes straight to SSE.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub websocket_fallback_active: Option<bool>,
}

/// What the previous request of a session sent and got, for `previous_response_id`.
#[derive(Clone, Debug)]
struct Continuation {
    request_body: Value,
    response_id: String,
    response_items: Vec<Value>,
}

/// A session's cached socket.
struct Session {
    /// `None` while a request uses it.
    socket: Option<Socket>,
    continuation: Option<Continuation>,
    /// Bumped whenever the entry is checked out, so that an old idle timer does nothing.
    generation: u64,
    idle_timer: Option<tokio::task::AbortHandle>,
}

#[derive(Default)]
struct Registry {
    sessions: HashMap<String, Session>,
    /// Sessions whose WebSocket failed: they go straight to SSE.
    fallback: HashSet<String>,
    stats: HashMap<String, OpenAICodexWebSocketStats>,
    next_generation: u64,
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The statistics of `session_id` (pi's `getOpenAICodexWebSocketDebugStats`).
pub(crate) fn stats(session_id: &str) -> Option<OpenAICodexWebSocketStats> {
    registry().stats.get(session_id).cloned()
}

/// Forgets the statistics and the SSE fallback of `session_id`, or of every session (pi's
/// `resetOpenAICodexWebSocketDebugStats`).
pub(crate) fn reset_stats(session_id: Option<&str>) {
    let mut registry = registry();
    match session_id {
        Some(id) => {
            registry.stats.remove(id);
            registry.fallback.remove(id);
        }
        None => {
            registry.stats.clear();
            registry.fallback.clear();
        }
    }
}

/// Closes the cached socket of `session_id`, or every cached socket (pi's
/// `closeOpenAICodexWebSocketSessions`, also its session-resource cleanup).
pub(crate) fn close_sessions(session_id: Option<&str>) {
    let closed: Vec<Session> = {
        let mut registry = registry();
        match session_id {
            Some(id) => registry.sessions.remove(id).into_iter().collect(),
            None => registry.sessions.drain().map(|(_, s)| s).collect(),
        }
    };
    for session in closed {
        if let Some(timer) = session.idle_timer {
            timer.abort();
        }
        if let Some(socket) = session.socket {
            close_quietly(socket, "debug_close");
        }
    }
}

fn close_quietly(mut socket: Socket, reason: &'static str) {
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::spawn(async move {
            let frame = CloseFrame {
                code: CloseCode::Normal,
                reason: reason.into(),
            };
            let _ = tokio::time::timeout(Duration::from_secs(5), socket.close(Some(frame))).await;
        });
    }
}

fn with_stats(session_id: Option<&str>, update: impl FnOnce(&mut OpenAICodexWebSocketStats)) {
    if let Some(id) = session_id {
        update(registry().stats.entry(id.to_owned()).or_default());
    }
}

/// Whether the session's WebSocket failed before, so that it goes straight to SSE; counts the
/// fallback.
pub(crate) fn take_sse_fallback(session_id: Option<&str>) -> bool {
    let Some(id) = session_id else {
        return false;
    };
    let mut registry = registry();
    if !registry.fallback.contains(id) {
        return false;
    }
    let stats = registry.stats.entry(id.to_owned()).or_default();
    stats.sse_fallbacks += 1;
    stats.websocket_fallback_active = Some(true);
    true
}

/// Records a WebSocket failure: the session goes to SSE from now on.
pub(crate) fn record_failure(session_id: Option<&str>, error: &str, falls_back: bool) {
    let Some(id) = session_id else {
        return;
    };
    let mut registry = registry();
    registry.fallback.insert(id.to_owned());
    let stats = registry.stats.entry(id.to_owned()).or_default();
    stats.websocket_failures += 1;
    stats.last_websocket_error = Some(error.to_owned());
    stats.websocket_fallback_active = Some(true);
    if falls_back {
        stats.sse_fallbacks += 1;
    }
}

/// A socket checked out for one request.
struct Lease {
    socket: Socket,
    /// The session whose cache it belongs to (`None`: closed after the request).
    cached_for: Option<String>,
    generation: u64,
    reused: bool,
    continuation: Option<Continuation>,
}

/// The session's cached socket if it is free and still open, else a new connection (cached for
/// the session unless its socket is busy).
async fn acquire(
    url: &str,
    headers: &[(String, String)],
    session_id: Option<&str>,
    limits: &Limits,
) -> Result<Lease, CodexError> {
    let Some(id) = session_id else {
        let socket = connect(url, headers, limits).await?;
        return Ok(Lease {
            socket,
            cached_for: None,
            generation: 0,
            reused: false,
            continuation: None,
        });
    };
    let (checkout, stale) = {
        let mut registry = registry();
        registry.next_generation += 1;
        let generation = registry.next_generation;
        let taken = registry.sessions.get_mut(id).map(|session| {
            if let Some(timer) = session.idle_timer.take() {
                timer.abort();
            }
            (session.socket.take(), session.continuation.clone())
        });
        match taken {
            None => (Checkout::Fresh, None),
            // Another request of the session is using it: this one gets its own connection.
            Some((None, _)) => (Checkout::Busy, None),
            Some((Some(mut socket), continuation)) => {
                if is_still_open(&mut socket) {
                    if let Some(session) = registry.sessions.get_mut(id) {
                        session.generation = generation;
                    }
                    let lease = Lease {
                        socket,
                        cached_for: Some(id.to_owned()),
                        generation,
                        reused: true,
                        continuation,
                    };
                    (Checkout::Cached(lease), None)
                } else {
                    registry.sessions.remove(id);
                    (Checkout::Fresh, Some(socket))
                }
            }
        }
    };
    if let Some(socket) = stale {
        close_quietly(socket, "stale");
    }
    match checkout {
        Checkout::Cached(lease) => Ok(lease),
        Checkout::Busy => Ok(Lease {
            socket: connect(url, headers, limits).await?,
            cached_for: None,
            generation: 0,
            reused: false,
            continuation: None,
        }),
        Checkout::Fresh => {
            let socket = connect(url, headers, limits).await?;
            let mut registry = registry();
            registry.next_generation += 1;
            let generation = registry.next_generation;
            // A request of the same session may have cached a socket meanwhile: this one is
            // then not cached.
            if registry.sessions.contains_key(id) {
                return Ok(Lease {
                    socket,
                    cached_for: None,
                    generation: 0,
                    reused: false,
                    continuation: None,
                });
            }
            registry.sessions.insert(
                id.to_owned(),
                Session {
                    socket: None,
                    continuation: None,
                    generation,
                    idle_timer: None,
                },
            );
            Ok(Lease {
                socket,
                cached_for: Some(id.to_owned()),
                generation,
                reused: false,
                continuation: None,
            })
        }
    }
}

/// What [`acquire`] found in the session cache.
enum Checkout {
    /// The session's socket, free and open.
    Cached(Lease),
    /// The session's socket is in use.
    Busy,
    /// No socket (or a closed one): connect and cache.
    Fresh,
}

/// Whether an idle socket is still usable: nothing but pings arrived while it was idle.
fn is_still_open(socket: &mut Socket) -> bool {
    loop {
        match socket.next().now_or_never() {
            // Nothing waiting: open.
            None => return true,
            Some(Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)))) => {}
            // Closed, failed, or an unexpected message on an idle connection.
            Some(_) => return false,
        }
    }
}

/// Returns a leased socket: back to its session's cache (with the continuation for the next
/// request) when `keep`, else closed.
fn release(lease: Lease, keep: Option<Option<Continuation>>) {
    release_with_ttl(lease, keep, SESSION_IDLE_TTL);
}

/// [`release`] with the idle time after which a cached socket is closed.
fn release_with_ttl(lease: Lease, keep: Option<Option<Continuation>>, ttl: Duration) {
    let Some(id) = lease.cached_for else {
        close_quietly(lease.socket, "done");
        return;
    };
    let mut registry = registry();
    let ours = registry
        .sessions
        .get(&id)
        .is_some_and(|session| session.generation == lease.generation && session.socket.is_none());
    match keep {
        Some(continuation) if ours => {
            let generation = lease.generation;
            let timer_id = id.clone();
            let timer = tokio::spawn(async move {
                tokio::time::sleep(ttl).await;
                let expired = {
                    let mut registry = self::registry();
                    let idle = registry.sessions.get(&timer_id).is_some_and(|session| {
                        session.generation == generation && session.socket.is_some()
                    });
                    if idle {
                        registry.sessions.remove(&timer_id)
                    } else {
                        None
                    }
                };
                if let Some(socket) = expired.and_then(|session| session.socket) {
                    close_quietly(socket, "idle_timeout");
                }
            });
            if let Some(session) = registry.sessions.get_mut(&id) {
                session.socket = Some(lease.socket);
                session.continuation = continuation;
                session.idle_timer = Some(timer.abort_handle());
            }
        }
        _ => {
            if ours {
                registry.sessions.remove(&id);
            }
            drop(registry);
            close_quietly(lease.socket, "done");
        }
    }
}

/// Whether an HTTP proxy configured in the environment applies to `url` (then the WebSocket
/// transport is skipped).
pub(crate) fn proxied(url: &str) -> bool {
    proxied_with(url, |name| std::env::var(name).ok())
}

fn proxied_with(url: &str, var: impl Fn(&str) -> Option<String>) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let first = |names: &[&str]| {
        names
            .iter()
            .filter_map(|name| var(name))
            .find(|value| !value.trim().is_empty())
    };
    let proxy = match parsed.scheme() {
        "wss" => first(&["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]),
        _ => first(&["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]),
    };
    if proxy.is_none() {
        return false;
    }
    let bypassed = first(&["NO_PROXY", "no_proxy"]).is_some_and(|list| {
        list.split(',').map(str::trim).any(|entry| {
            let entry = entry.trim_start_matches('.').to_ascii_lowercase();
            let entry = entry.split(':').next().unwrap_or("");
            entry == "*"
                || (!entry.is_empty() && (host == entry || host.ends_with(&format!(".{entry}"))))
        })
    });
    !bypassed
}

/// The TLS configuration of `wss://` connections: the webpki roots, HTTP/1.1 only.
static TLS: LazyLock<Result<Arc<rustls::ClientConfig>, String>> = LazyLock::new(|| {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|error| error.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
});

fn ws_error(error: &WsError) -> String {
    match error {
        WsError::Http(response) => format!(
            "WebSocket handshake failed: HTTP {}",
            response.status().as_u16()
        ),
        WsError::ConnectionClosed | WsError::AlreadyClosed => "WebSocket closed".to_owned(),
        WsError::Capacity(why) => format!("WebSocket message too large: {why}"),
        other => format!("WebSocket error: {other}"),
    }
}

/// Opens a WebSocket to `url` with `headers`.
async fn connect(
    url: &str,
    headers: &[(String, String)],
    limits: &Limits,
) -> Result<Socket, CodexError> {
    let transport = |message: String| CodexError::Transport(message);
    let parsed = reqwest::Url::parse(url).map_err(|e| transport(format!("Invalid URL: {e}")))?;
    let tls = match parsed.scheme() {
        "wss" => true,
        "ws" => false,
        other => return Err(transport(format!("Unsupported WebSocket scheme `{other}`"))),
    };
    let host = parsed
        .host_str()
        .ok_or_else(|| transport("The WebSocket URL has no host".to_owned()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = parsed
        .port_or_known_default()
        .unwrap_or(if tls { 443 } else { 80 });
    let mut request = url
        .into_client_request()
        .map_err(|error| transport(ws_error(&error)))?;
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| transport(format!("Invalid HTTP header name `{name}`")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| transport(format!("Invalid value for HTTP header `{name}`")))?;
        request.headers_mut().insert(name, value);
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(limits.max_event_bytes))
        .max_frame_size(Some(limits.max_event_bytes));
    let open = async {
        let tcp = tokio::time::timeout(
            CONNECT_TIMEOUT,
            tokio::net::TcpStream::connect((host.as_str(), port)),
        )
        .await
        .map_err(|_| transport("Connection error: timed out connecting".to_owned()))?
        .map_err(|error| transport(format!("Connection error: {error}")))?;
        let _ = tcp.set_nodelay(true);
        let io: Pin<Box<dyn Io>> = if tls {
            let config = TLS.as_ref().map_err(|error| transport(error.clone()))?;
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|_| transport(format!("Invalid TLS server name `{host}`")))?;
            let stream = tokio::time::timeout(
                CONNECT_TIMEOUT,
                tokio_rustls::TlsConnector::from(Arc::clone(config)).connect(name, tcp),
            )
            .await
            .map_err(|_| transport("Connection error: TLS handshake timed out".to_owned()))?
            .map_err(|error| transport(format!("Connection error: {error}")))?;
            Box::pin(stream)
        } else {
            Box::pin(tcp)
        };
        tokio_tungstenite::client_async_with_config(request, io, Some(config))
            .await
            .map(|(socket, _)| socket)
            .map_err(|error| transport(ws_error(&error)))
    };
    match limits.request_timeout {
        Some(timeout) => tokio::time::timeout(timeout, open)
            .await
            .unwrap_or_else(|_| {
                Err(transport(format!(
                    "WebSocket handshake timed out after {} ms",
                    timeout.as_millis()
                )))
            }),
        None => open.await,
    }
}

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
    use tokio_tungstenite::tungstenite::protocol::Role;

    /// A socket over an in-memory pipe (the far end is returned to keep it open).
    async fn pipe_socket() -> (Socket, tokio::io::DuplexStream) {
        let (near, far) = tokio::io::duplex(1024);
        let io: Pin<Box<dyn Io>> = Box::pin(near);
        (
            WebSocketStream::from_raw_socket(io, Role::Client, None).await,
            far,
        )
    }

    fn cached_lease(id: &str, socket: Socket) -> Lease {
        let mut registry = registry();
        registry.next_generation += 1;
        let generation = registry.next_generation;
        registry.sessions.insert(
            id.to_owned(),
            Session {
                socket: None,
                continuation: None,
                generation,
                idle_timer: None,
            },
        );
        Lease {
            socket,
            cached_for: Some(id.to_owned()),
            generation,
            reused: false,
            continuation: None,
        }
    }

    fn cached(id: &str) -> bool {
        registry()
            .sessions
            .get(id)
            .is_some_and(|session| session.socket.is_some())
    }

    #[tokio::test]
    async fn an_idle_socket_is_closed_after_its_ttl_and_a_reused_one_is_not() {
        let (socket, _far) = pipe_socket().await;
        release_with_ttl(
            cached_lease("unit-idle", socket),
            Some(None),
            Duration::from_millis(20),
        );
        assert!(cached("unit-idle"));
        // Wait (bounded) for the idle timer.
        let expired = async {
            while registry().sessions.contains_key("unit-idle") {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), expired)
            .await
            .expect("the idle socket is closed");

        // Checked out again before the timer fires: the old timer leaves it alone (were it to
        // fire late, the assertion below would pass vacuously, never fail spuriously).
        let (socket, _far2) = pipe_socket().await;
        release_with_ttl(
            cached_lease("unit-busy", socket),
            Some(None),
            Duration::from_millis(20),
        );
        let lease = {
            let mut registry = registry();
            let session = registry.sessions.get_mut("unit-busy").unwrap();
            session.generation += 1000;
            Lease {
                socket: session.socket.take().unwrap(),
                cached_for: Some("unit-busy".into()),
                generation: session.generation,
                reused: true,
                continuation: None,
            }
        };
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(
            registry().sessions.contains_key("unit-busy"),
            "still checked out"
        );
        release(lease, None);
        assert!(
            !registry().sessions.contains_key("unit-busy"),
            "a failed lease is dropped"
        );
    }

    #[test]
    fn proxies_apply_unless_bypassed() {
        let env = |vars: Vec<(&'static str, &'static str)>| {
            move |name: &str| {
                vars.iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        let url = "wss://chatgpt.com/backend-api/codex/responses";
        assert!(!proxied_with(url, env(vec![])));
        assert!(proxied_with(
            url,
            env(vec![("HTTPS_PROXY", "http://proxy:3128")])
        ));
        assert!(proxied_with(
            url,
            env(vec![("all_proxy", "socks5://p:1080")])
        ));
        assert!(!proxied_with(
            url,
            env(vec![("HTTP_PROXY", "http://proxy:3128")])
        ));
        for bypass in [
            "chatgpt.com",
            ".chatgpt.com",
            "*",
            "example.org, chatgpt.com:443",
        ] {
            let vars = vec![("HTTPS_PROXY", "http://proxy:3128"), ("NO_PROXY", bypass)];
            assert!(!proxied_with(url, env(vars)), "{bypass}");
        }
        assert!(proxied_with(
            "ws://127.0.0.1:9/codex/responses",
            env(vec![("http_proxy", "http://proxy:3128")])
        ));
    }

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
