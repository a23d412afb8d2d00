//! The localhost server that receives the browser's redirect after an authorization-code
//! login (pi's `startCallbackServer` / `startLocalOAuthServer`).
//!
//! It listens on 127.0.0.1 only, serves one path (everything else is a 404), reads at most
//! [`MAX_REQUEST_BYTES`] of each request with a timeout, answers each with a small HTML page,
//! and stops listening when [`CallbackServer::shutdown`] runs or the value is dropped.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::error::OAuthError;
use super::page::{error_page, success_page};

/// A request head longer than this is refused: a redirect carries a code and a state.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// How long one connection may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections served at once; more are closed unanswered.
const MAX_CONNECTIONS: usize = 16;

/// A code delivered by the browser.
#[derive(Clone, Debug)]
pub(crate) struct CallbackCode {
    /// The authorization code.
    pub(crate) code: String,
    /// The `state` it came with (already checked).
    pub(crate) state: Option<String>,
}

/// The answer to one callback request.
pub(crate) struct CallbackReply {
    /// HTTP status.
    pub(crate) status: u16,
    /// The HTML page.
    pub(crate) page: String,
    /// The code, when this request completes the login.
    pub(crate) code: Option<CallbackCode>,
}

impl CallbackReply {
    /// A refusal with an error page (`status` 400 or 404); the login keeps waiting.
    pub(crate) fn rejected(status: u16, message: &str, details: Option<&str>) -> Self {
        Self {
            status,
            page: error_page(message, details),
            code: None,
        }
    }

    /// The request that completes the login: a success page saying `message`, and the code.
    pub(crate) fn accepted(message: &str, code: &str, state: &str) -> Self {
        Self {
            status: 200,
            page: success_page(message),
            code: Some(CallbackCode {
                code: code.to_owned(),
                state: Some(state.to_owned()),
            }),
        }
    }
}

/// Judges the query of a request to the callback path (the flow checks `state` here).
pub(crate) type CallbackCheck = dyn Fn(&Query) -> CallbackReply + Send + Sync;

/// A request's query parameters, decoded, in order.
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    /// The first value of `name` (URLSearchParams' `get`).
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// A running callback server.
pub(crate) struct CallbackServer {
    port: u16,
    codes: mpsc::Receiver<CallbackCode>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl CallbackServer {
    /// Listens on `127.0.0.1:port` (0 picks a free port) and serves `path` with `check`.
    pub(crate) async fn bind(
        port: u16,
        path: &str,
        check: Arc<CallbackCheck>,
    ) -> Result<Self, OAuthError> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .map_err(|err| OAuthError::CallbackServer {
                port,
                message: err.to_string(),
            })?;
        let bound = listener
            .local_addr()
            .map_err(|err| OAuthError::CallbackServer {
                port,
                message: err.to_string(),
            })?
            .port();
        // One slot: the first accepted code settles the login, later ones are ignored.
        let (sender, codes) = mpsc::channel(1);
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve(
            listener,
            path.to_owned(),
            check,
            sender,
            stop.clone(),
        ));
        Ok(Self {
            port: bound,
            codes,
            stop,
            task: Some(task),
        })
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Waits for the browser to deliver a code. `None` only if the server stopped.
    pub(crate) async fn next_code(&mut self) -> Option<CallbackCode> {
        self.codes.recv().await
    }

    /// Stops listening and waits until the socket is closed.
    pub(crate) async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for CallbackServer {
    fn drop(&mut self) {
        // A login future dropped mid-wait cannot await `shutdown`; the task still stops.
        self.stop.cancel();
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn serve(
    listener: TcpListener,
    path: String,
    check: Arc<CallbackCheck>,
    codes: mpsc::Sender<CallbackCode>,
    stop: CancellationToken,
) {
    let path: Arc<str> = path.into();
    // Dropped (aborting every connection) when this task ends.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors, say: pause rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                if connections.len() >= MAX_CONNECTIONS {
                    continue;
                }
                connections.spawn(handle(
                    stream,
                    Arc::clone(&path),
                    Arc::clone(&check),
                    codes.clone(),
                ));
            }
        }
    }
}

async fn handle(
    mut stream: TcpStream,
    path: Arc<str>,
    check: Arc<CallbackCheck>,
    codes: mpsc::Sender<CallbackCode>,
) {
    let reply = match tokio::time::timeout(REQUEST_TIMEOUT, read_target(&mut stream)).await {
        Ok(Some(target)) => route(&target, &path, &*check),
        Ok(None) => CallbackReply::rejected(400, "Malformed request.", None),
        Err(_) => return,
    };
    if let Some(code) = reply.code {
        let _ = codes.try_send(code);
    }
    let response = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n{}",
        reply.status,
        reason(reply.status),
        reply.page.len(),
        reply.page
    );
    let _ = tokio::time::timeout(REQUEST_TIMEOUT, async {
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// Reads the request head and returns the request target, or `None` for a malformed or
/// oversized request.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0_u8; 1024];
    loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if buffer.windows(4).any(|w| w == b"\r\n\r\n") || buffer.windows(2).any(|w| w == b"\n\n") {
            break;
        }
        if buffer.len() > MAX_REQUEST_BYTES {
            return None;
        }
    }
    let head = std::str::from_utf8(&buffer).ok()?;
    let line = head.lines().next()?;
    let mut parts = line.split_whitespace();
    let (_method, target) = (parts.next()?, parts.next()?);
    Some(target.to_owned())
}

fn route(target: &str, path: &str, check: &CallbackCheck) -> CallbackReply {
    let parsed = url::Url::parse("http://localhost/").and_then(|base| base.join(target));
    match parsed {
        Ok(url) if url.path() == path => check(&Query(url.query_pairs().into_owned().collect())),
        _ => CallbackReply::rejected(404, "Callback route not found.", None),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Internal Server Error",
    }
}
