//! The session cache: one socket per session id, checked out by one request at a time, closed
//! after five idle minutes; the SSE fallback of sessions whose WebSocket failed; and pi's debug
//! statistics.

use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::{FutureExt as _, StreamExt as _};
use serde::Serialize;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::Socket;
use super::connect::connect;
use crate::ai::providers::http::Limits;
use crate::ai::providers::openai_codex::events::CodexError;

/// How long a cached socket may stay idle.
pub(crate) const SESSION_IDLE_TTL: Duration = Duration::from_secs(5 * 60);

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
pub(super) struct Continuation {
    /// The previous request's full body.
    pub(super) request_body: Value,
    /// The previous answer's id.
    pub(super) response_id: String,
    /// The previous answer as input items.
    pub(super) response_items: Vec<Value>,
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

pub(super) fn with_stats(
    session_id: Option<&str>,
    update: impl FnOnce(&mut OpenAICodexWebSocketStats),
) {
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
pub(super) struct Lease {
    /// The socket.
    pub(super) socket: Socket,
    /// The session whose cache it belongs to (`None`: closed after the request).
    pub(super) cached_for: Option<String>,
    /// The session entry's generation when checked out.
    generation: u64,
    /// Whether the socket served an earlier request.
    pub(super) reused: bool,
    /// The session's previous request and answer.
    pub(super) continuation: Option<Continuation>,
}

/// The session's cached socket if it is free and still open, else a new connection (cached for
/// the session unless its socket is busy).
pub(super) async fn acquire(
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
pub(super) fn release(lease: Lease, keep: Option<Option<Continuation>>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::WebSocketStream;
    use tokio_tungstenite::tungstenite::protocol::Role;

    use std::pin::Pin;

    use super::super::Io;

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
}
