//! Scripted OpenAI-compatible HTTP server on 127.0.0.1 for pi-agent's tests.
//!
//! The server speaks HTTP/1.1 by hand so that tests control every byte that
//! goes on the wire: chunk boundaries, delays, dropped connections and
//! stalls. Connections are kept alive, as real servers keep them: requests are answered one
//! after another on a connection until the client closes it or sends `connection: close`; a
//! reply that scripts a drop or a stall ends its connection.
//!
//! Rust tests use [`MockServer`] in-process; C and Python tests spawn the
//! `pi-mock-server` binary, which prints
//! `{"url":"http://127.0.0.1:PORT/v1","port":PORT}` on one stdout line and
//! serves until its stdin reaches EOF.
//!
//! # Routes
//!
//! - any `POST` outside `/_mock/` (e.g. `…/chat/completions`, `…/messages`,
//!   `…/responses`, `…:streamGenerateContent?alt=sse`, `/api/stream`): the
//!   request is recorded, the next scripted reply is popped and served. An
//!   empty queue answers HTTP 500 with
//!   `{"error":{"message":"mock server: no scripted reply left","type":"server_error"}}`.
//! - `POST /_mock/replies` (a JSON array of replies, or one reply): appends
//!   them, answers `{"queued":N}`; an invalid reply answers 400 and queues
//!   nothing.
//! - `GET /_mock/requests`: the JSON array of [`RecordedRequest`]s.
//! - `GET /_mock/pending`: `{"pending":N}`.
//! - `GET /_mock/connections`: `{"connections":N}`, the connections accepted (a client that
//!   keeps its connections alive opens one for many requests).
//! - `POST /_mock/reset`: clears the queue, the request log and the connection count.
//! - `GET` with `Upgrade: websocket`: a WebSocket (see shape 6 below); the
//!   upgrade is recorded as `GET`, each message the client sends as `WS`.
//! - any other method: 404 with a JSON error body (recorded).
//!
//! Control routes (`/_mock/…`) are never recorded.
//!
//! # Reply format
//!
//! One JSON object per request; see the [`reply`] module for builders.
//! Keys starting with `_` are ignored (comments); any other unknown key makes
//! the reply invalid ([`MockServer::push`] panics, `/_mock/replies` answers
//! 400).
//!
//! 1. **Fixed HTTP response** (chosen when `body` is present, or when `status`
//!    is >= 400 and none of `text`/`reasoning`/`tool_calls`/`chunks`/`sse` is
//!    present): `{"status": 401, "body": <JSON value or raw string>,
//!    "headers": {"retry-after": "2"}}`. Status defaults to 200 when only
//!    `body` is given, the body defaults to an OpenAI-style error object.
//!    Sent with `Content-Type: application/json` and `Content-Length`.
//! 2. **Generated chat completion stream**: `text`, `reasoning`,
//!    `reasoning_field` (default `reasoning_content`), `tool_calls`
//!    (`[{"id", "name", "arguments": <JSON value or raw string>}]`),
//!    `finish_reason` (default `tool_calls`/`stop`; JSON `null` omits the
//!    finish chunk), `usage` (object, `true` for the default, `false`/`null`
//!    for none), `id` (default `chatcmpl-mock-<n>`, n counting served chat
//!    requests from 1), `model` (default: the request's `model`, else
//!    `mock-model`), `created` (default 1700000000), `delta_size` (chars per
//!    delta, default 4, 0 = whole string), `done: false` (omit
//!    `data: [DONE]`), `status` (default 200).
//! 3. **Raw chunks**: `"chunks": [...]`, each object sent as
//!    `data: <compact json>\n\n` (a string element is sent as
//!    `data: <string>\n\n`), then `data: [DONE]\n\n` unless `"done": false`.
//! 4. **Raw SSE**: `"sse": "text"` or `"sse": ["piece", ...]`, sent verbatim.
//!    An array element may also be a *piece object*, for bodies no test wants
//!    to spell out:
//!    - `{"repeat": "<text>", "bytes": N}`: N bytes of `<text>` repeated (the
//!      last copy cut short), generated while writing, in writes of about
//!      64 KiB: a 1 GB line never exists in the server's memory;
//!    - `{"hex": "1f8b08..."}`: raw bytes (binary garbage, gzip data, invalid
//!      UTF-8); ASCII whitespace between the digits is ignored.
//!
//!    With a `repeat` piece, `split`/`split_random` are refused. The `sse`
//!    shape takes any `status` and `headers`, so an oversized or binary
//!    *error* body is `{"status": 500, "sse": [{"repeat": "x", "bytes": N}],
//!    "headers": {"content-type": "application/json"}}` (chunked framing).
//! 5. **Raw bytes**: `"bytes_b64": "<base64>"` or `"bytes_b64": ["<base64>", ...]`,
//!    each piece decoded and sent verbatim as one write (binary bodies such as
//!    AWS eventstream frames), with `Content-Type: application/octet-stream`
//!    unless `headers` sets another (e.g.
//!    `{"content-type": "application/vnd.amazon.eventstream"}`).
//!
//! 6. **WebSocket** (`"ws": [...]`): answers one message on a WebSocket (the
//!    openai-codex-responses transport); an upgrade is accepted only when such a
//!    reply is next. See the `websocket` module for its keys (`ws_close`,
//!    `ws_drop_after`, `ws_stall_after`, `ws_reject`, `delay_ms`).
//!
//! Any shape may carry `headers` (an object; values that are not strings are
//! rendered as compact JSON) which override `Content-Type`/`Cache-Control`
//! and are otherwise appended. `Content-Length`, `Transfer-Encoding` and
//! `Connection` are managed by the server and may not be scripted.
//!
//! # Transport shaping
//!
//! Applies to the body bytes before framing (HTTP chunks for shapes 2–5,
//! plain bytes after `Content-Length` for shape 1). By default each SSE
//! event (each `sse` or `bytes_b64` array element; the whole body for shape 1) is one write
//! / one HTTP chunk.
//!
//! - `"split": n`: pieces of n bytes (anywhere, even inside UTF-8).
//! - `"split_random": seed`: pieces of 1..=16 bytes; the length of each piece
//!   is `1 + splitmix64() % 16` with splitmix64 seeded by `seed`.
//! - `"delay_ms": ms`: sleep between pieces.
//! - `"drop_after_bytes": n`: write only the first n body bytes, then close
//!   the socket without the terminating zero chunk (even when n is larger
//!   than the body).
//! - `"stall_after_bytes": n`, `"stall_ms": ms`: after n body bytes, stop
//!   writing for `stall_ms` (default 60 s) or until the client disconnects,
//!   then continue. With n >= the body length the stall happens just before
//!   the terminating chunk.
//! - `"head_stall_ms": ms`: before the status line, wait `ms` or until the
//!   client disconnects (a server that accepted the request and says
//!   nothing).
//! - `"end_delay_ms": ms`: write the terminating zero chunk `ms` after the
//!   last piece, as a server that sends it apart does; unlike the faults
//!   above, the connection stays kept alive.
//!
//! # Fault recipes
//!
//! | Fault | Reply |
//! |---|---|
//! | stall before the headers | `"head_stall_ms": 60000` |
//! | stall right after the headers | `"stall_after_bytes": 0` |
//! | stall mid-body | `"stall_after_bytes": n` |
//! | stall after the terminal event | `"stall_after_bytes"` >= the body length (the stall comes before the terminating chunk) |
//! | the body's end written apart, late | `"end_delay_ms": 50` (the connection is kept alive) |
//! | error status whose body stalls | `{"status": 500, "body": "...", "stall_after_bytes": 5}` |
//! | hostile headers | `"headers": {"retry-after": "inf"}` (any value without CR/LF) |
//! | a line / error body too large | a `repeat` piece of `sse` |
//! | gzip or binary body | a `hex` piece of `sse`, plus e.g. `"headers": {"content-encoding": "gzip"}` |
//! | redirect to another origin | start a second `MockServer` (another port is another origin) and push [`reply::redirect`]`(307, <its URL>)` to the first; the second records the headers that arrived |
//! | a path-hostile model id (`../../admin?x#`) | any reply; the request is served whatever its path, and [`RecordedRequest::path`] is the target exactly as sent (nothing decoded or normalised), so a test sees whether the id stayed one encoded segment |
//! | a lone surrogate escape (`\ud800`) | [`reply::lone_surrogate_text`] (OpenAI chunks), or the same escape inside any API's `sse` events |
//! | deep tool-call arguments | [`reply::deep_tool_call`]`(id, name, depth)` (sent as a raw string, so any depth) |
//! | a large result or event | a `repeat` piece of `sse` (generated while writing) |
//! | a server that never sends its headers | `"head_stall_ms": 60000` with a short `request_timeout_ms` on the client |

mod body;
mod http;
mod raw_bytes;
pub mod reply;
mod script;
mod server;
mod websocket;

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One request received by the mock server (control routes excluded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Request target as sent, including any query string, e.g.
    /// `/v1/chat/completions`.
    pub path: String,
    /// Header names lowercased, values trimmed, in the order received.
    pub headers: Vec<(String, String)>,
    /// Parsed JSON body; `Value::String` of the raw (lossy UTF-8) body if it
    /// is not JSON; `Null` if empty.
    pub body: Value,
}

impl RecordedRequest {
    /// First value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Mutable state shared between the handle and the connection tasks.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) queue: VecDeque<Value>,
    pub(crate) log: Vec<RecordedRequest>,
    /// Number of replies popped so far (used for default completion ids).
    pub(crate) served: u64,
    /// Connections accepted.
    pub(crate) connections: u64,
}

/// Shared handle on [`State`].
#[derive(Debug, Default)]
pub(crate) struct Shared(Mutex<State>);

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state inconsistent
        // in a way that matters to a test fixture.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Checks that `reply` is a valid scripted reply, returning a description of
/// the problem if it is not.
pub fn validate_reply(reply: &Value) -> Result<(), String> {
    script::validate(reply)
}

/// A scripted OpenAI Chat Completions server on 127.0.0.1.
///
/// Serving happens in tokio tasks of the runtime that called
/// [`MockServer::start`]; dropping the `MockServer` stops accepting and ends
/// open connections.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept_task: JoinHandle<()>,
    // Dropping the sender wakes every connection task, which then exits.
    _shutdown: watch::Sender<()>,
}

impl MockServer {
    /// Binds 127.0.0.1 on a free port and starts serving.
    pub async fn start() -> std::io::Result<MockServer> {
        Self::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await
    }

    /// Binds `addr` (port 0 picks a free port) and starts serving.
    pub async fn bind(addr: SocketAddr) -> std::io::Result<MockServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let (tx, rx) = watch::channel(());
        let accept_task = tokio::spawn(server::accept_loop(listener, Arc::clone(&shared), rx));
        Ok(MockServer {
            addr,
            shared,
            accept_task,
            _shutdown: tx,
        })
    }

    /// `http://127.0.0.1:PORT/v1`, suitable as an OpenAI base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends one scripted reply to the FIFO queue.
    ///
    /// # Panics
    ///
    /// If the reply is invalid (see [`validate_reply`]), so that a typo in a
    /// test script fails loudly where it is written.
    pub fn push(&self, reply: Value) {
        if let Err(e) = script::validate(&reply) {
            panic!("pi-mock-server: invalid scripted reply {reply}: {e}");
        }
        self.shared.lock().queue.push_back(reply);
    }

    /// Appends several scripted replies, in order.
    ///
    /// # Panics
    ///
    /// If any reply is invalid; the replies before it stay queued.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Value>) {
        for reply in replies {
            self.push(reply);
        }
    }

    /// Snapshot of the requests received so far (control routes excluded).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().log.clone()
    }

    /// Number of scripted replies not yet consumed.
    pub fn pending(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// How many connections the server accepted (like `GET /_mock/connections`).
    pub fn connections(&self) -> u64 {
        self.shared.lock().connections
    }

    /// Clears the reply queue, the request log and the connection count (like
    /// `POST /_mock/reset`).
    pub fn reset(&self) {
        let mut state = self.shared.lock();
        *state = State::default();
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

#[cfg(test)]
mod tests;
