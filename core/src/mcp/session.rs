//! [`McpServer`]: one server's session, kept alive across failures.
//!
//! A session that ends (the child exits, the HTTP session goes away) is noticed by the next
//! request, which starts a new one. Failed starts back off: the first retry is immediate, then
//! the waits double from 500 ms up to 30 s; a request inside a wait fails at once with a
//! [`McpError::Backoff`] instead of waiting, so an agent run never stalls on a dead server.
//!
//! This is the layer a tool call stands on ([`super::tool`]); connecting and handing the
//! server's tools to agents build on it in [`super::server`].

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{ClientRequest, Tool as McpToolInfo};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use super::config::McpServerConfig;
use super::connection::{Connection, connect};
use super::error::McpError;
use super::handler::{Handler, Shared};
use crate::agent::WeakAgent;

/// How long a server has to answer the `ping` that follows a timed-out request.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// How many pages of `tools/list` are read at most: a server whose cursors never end must not
/// keep a listing going (each page has its own time limit, the listing none).
const MAX_TOOL_PAGES: usize = 1_000;
/// How many tools a listing may hold: far more than any model can be offered.
const MAX_TOOLS: usize = 10_000;
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What the server said about itself in `initialize`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    /// Its name (`serverInfo.name`).
    pub name: String,
    /// Its version (`serverInfo.version`).
    pub version: String,
    /// The protocol version both sides agreed on.
    pub protocol_version: String,
    /// Its capabilities, as MCP's JSON (`tools`, `resources`, `prompts`, `logging`, ...).
    pub capabilities: Value,
    /// Its instructions for the model, when it gave some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

struct Session {
    connection: Option<Connection>,
    /// Failed starts in a row.
    failures: u32,
    retry_at: Option<Instant>,
    last_error: String,
}

pub(crate) struct ServerInner {
    pub(crate) config: McpServerConfig,
    pub(crate) shared: Arc<Shared>,
    session: tokio::sync::Mutex<Session>,
    info: Mutex<Option<McpServerInfo>>,
    /// Agents whose tool tables hold this server's tools, with the names they were given
    /// (filled and read by [`super::server`]; held here because the handle owns all state).
    pub(crate) attached: Mutex<Vec<(WeakAgent, Vec<String>)>>,
    /// Ends the tool-list watcher ([`super::server`]) when the handle is dropped.
    pub(crate) stop: tokio_util::sync::CancellationToken,
}

impl Drop for ServerInner {
    fn drop(&mut self) {
        self.stop.cancel();
        // Close gracefully (stdin closed, the child waited for, then terminated, then killed)
        // on the runtime when there is one; otherwise, or when the runtime drops the close
        // unfinished, dropping the connection kills the process group.
        let connection = self.session.get_mut().connection.take();
        if let (Some(connection), Ok(runtime)) = (connection, tokio::runtime::Handle::try_current())
        {
            runtime.spawn(async move {
                connection.shut_down().await;
            });
        }
    }
}

/// A connected MCP server. Cheap to clone (a handle); the session closes when the last clone
/// and the last of its tools are dropped (or at [`McpServer::close`]).
#[derive(Clone)]
pub struct McpServer {
    pub(crate) inner: Arc<ServerInner>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

fn server_info(connection: &Connection) -> Option<McpServerInfo> {
    let info = connection.service.peer_info()?;
    Some(McpServerInfo {
        name: info
            .server_info
            .as_ref()
            .map(|server| server.name.clone())
            .unwrap_or_default(),
        version: info
            .server_info
            .as_ref()
            .map(|server| server.version.clone())
            .unwrap_or_default(),
        protocol_version: info.protocol_version.to_string(),
        capabilities: serde_json::to_value(&info.capabilities).unwrap_or(Value::Null),
        instructions: info.instructions.clone(),
    })
}

impl McpServer {
    /// The handle of a server whose first session is `connection` (see [`McpServer::connect`]).
    pub(crate) fn open(
        config: McpServerConfig,
        shared: Arc<Shared>,
        connection: Connection,
    ) -> Self {
        let info = server_info(&connection);
        Self {
            inner: Arc::new(ServerInner {
                config,
                shared,
                session: tokio::sync::Mutex::new(Session {
                    connection: Some(connection),
                    failures: 0,
                    retry_at: None,
                    last_error: String::new(),
                }),
                info: Mutex::new(info),
                attached: Mutex::new(Vec::new()),
                stop: tokio_util::sync::CancellationToken::new(),
            }),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.inner.config
    }

    /// Its name (from the configuration).
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// What it said about itself in the last `initialize`.
    pub fn info(&self) -> Option<McpServerInfo> {
        self.inner
            .info
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether it sent `notifications/tools/list_changed` since its tools were last listed.
    pub fn tools_changed(&self) -> bool {
        self.inner.shared.tools_changed.load(Ordering::Acquire)
    }

    /// The process id of its child (stdio servers with a live session).
    pub async fn process_id(&self) -> Option<u32> {
        let session = self.inner.session.lock().await;
        session
            .connection
            .as_ref()
            .and_then(|connection| connection.pid)
    }

    /// Closes the session (a stdio server's stdin is closed and the process waited for,
    /// terminated after 3 s, then killed). The next request starts a new session.
    pub async fn close(&self) {
        let connection = self.inner.session.lock().await.connection.take();
        if let Some(connection) = connection {
            connection.shut_down().await;
        }
    }

    /// A live session's peer, starting one if needed (with backoff after failures).
    pub(crate) async fn peer(&self) -> Result<Peer<RoleClient>, McpError> {
        let mut session = self.inner.session.lock().await;
        if let Some(connection) = &session.connection {
            if !connection.service.is_closed() && !connection.service.is_transport_closed() {
                return Ok(connection.service.peer().clone());
            }
            let note = connection.stderr_note();
            session.last_error = format!("the previous session ended{note}");
            session.connection = None;
        }
        let now = Instant::now();
        if let Some(retry_at) = session.retry_at
            && retry_at > now
        {
            return Err(McpError::Backoff {
                server: self.inner.config.name.clone(),
                retry_in_ms: u64::try_from((retry_at - now).as_millis()).unwrap_or(u64::MAX),
                message: session.last_error.clone(),
            });
        }
        let handler = Handler {
            shared: Arc::clone(&self.inner.shared),
        };
        match connect(&self.inner.config, handler).await {
            Ok(connection) => {
                session.failures = 0;
                session.retry_at = None;
                *self
                    .inner
                    .info
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = server_info(&connection);
                let peer = connection.service.peer().clone();
                session.connection = Some(connection);
                // A restarted server may offer other tools: attached agents re-list them.
                self.inner
                    .shared
                    .tools_changed
                    .store(true, Ordering::Release);
                self.inner.shared.tools_changed_notify.notify_one();
                Ok(peer)
            }
            Err(error) => {
                session.failures += 1;
                let wait = FIRST_BACKOFF
                    .saturating_mul(1 << (session.failures - 1).min(6))
                    .min(MAX_BACKOFF);
                session.retry_at = Some(Instant::now() + wait);
                session.last_error = error.to_string();
                Err(error)
            }
        }
    }

    /// After a request timed out: a server that still answers a `ping` (only that request was
    /// slow) keeps its session, other calls in flight included; one that answers nothing any
    /// more (its loop blocked, a dead peer) is ended, and the next request starts a new one.
    pub(crate) async fn after_timeout(&self, peer: &Peer<RoleClient>) {
        let ping = ClientRequest::PingRequest(rmcp::model::PingRequest::default());
        let answered = tokio::time::timeout(PING_TIMEOUT, peer.send_request(ping)).await;
        if !matches!(answered, Ok(Ok(_))) {
            self.session_failed(true).await;
        }
    }

    /// The note about a session that just failed a request (its stderr), and forgets it when
    /// it is over so the next request starts a new one.
    pub(crate) async fn session_failed(&self, broken: bool) -> String {
        let mut session = self.inner.session.lock().await;
        let Some(connection) = &session.connection else {
            return String::new();
        };
        if broken || connection.service.is_closed() || connection.service.is_transport_closed() {
            // The reader may still be catching the last words.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let note = connection.stderr_note();
            session.last_error = format!("the session ended{note}");
            if let Some(connection) = session.connection.take() {
                tokio::spawn(async move {
                    connection.shut_down().await;
                });
            }
            note
        } else {
            String::new()
        }
    }

    /// Maps a request failure onto the server's error.
    pub(crate) async fn request_error(&self, method: &str, error: ServiceError) -> McpError {
        let server = self.inner.config.name.clone();
        match error {
            ServiceError::McpError(data) => McpError::Rpc {
                server,
                method: method.to_owned(),
                code: data.code.0,
                message: data.message.into_owned(),
            },
            ServiceError::Timeout { timeout } => McpError::Timeout {
                server,
                method: method.to_owned(),
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                // A send that failed (a broken pipe, a refused POST) leaves a session that
                // cannot be trusted: the next request starts a new one.
                let broken = !matches!(error, ServiceError::TransportClosed);
                let note = self.session_failed(broken).await;
                McpError::Closed {
                    server,
                    message: format!("during {method}{note}"),
                }
            }
            other => McpError::Protocol {
                server,
                message: format!("{method}: {other}"),
            },
        }
    }

    /// Every tool the server lists (all pages), as MCP describes them. A server whose pages
    /// never end (a cursor it gave before, more than 1,000 pages or 10,000 tools) is a protocol
    /// error, not a listing without end; the whole listing, every page included, is held to
    /// the server's call timeout (a timeout error past it).
    pub async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        self.list_pages()
            .await
            .map_err(|error| error.redacted(&self.inner.config.redactor()))
    }

    /// [`Self::list_tools`] before its error's secrets are hidden. An announced change stays
    /// announced until a listing succeeds (a failed one is retried by the watcher).
    async fn list_pages(&self) -> Result<Vec<McpToolInfo>, McpError> {
        let peer = self.peer().await?;
        let changed = &self.inner.shared.tools_changed;
        let announced = changed.swap(false, Ordering::AcqRel);
        let listed = self.list_all_pages(peer).await;
        if listed.is_err() && announced {
            changed.store(true, Ordering::Release);
        }
        listed
    }

    async fn list_all_pages(&self, peer: Peer<RoleClient>) -> Result<Vec<McpToolInfo>, McpError> {
        let timeout = self.inner.config.call_timeout();
        // One limit for the listing, not one per page: a server that answers each page just
        // in time, with pages that never end, would otherwise hold it for a thousand timeouts.
        let deadline = tokio::time::Instant::now().checked_add(timeout);
        let mut tools = Vec::new();
        let mut cursor = None;
        let mut cursors_seen = HashSet::new();
        let refuse = |why: String| McpError::Protocol {
            server: self.inner.config.name.clone(),
            message: format!("tools/list: {why}"),
        };
        for _page in 0..MAX_TOOL_PAGES {
            let request =
                ClientRequest::ListToolsRequest(rmcp::model::ListToolsRequest::with_param(
                    rmcp::model::PaginatedRequestParams::default().with_cursor(cursor.take()),
                ));
            // Each page within the limit, handing the request to the transport included (a
            // transport stuck on a dead server must not hold the listing).
            let exchange = async {
                match peer
                    .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
                    .await
                {
                    Ok(handle) => handle.await_response().await,
                    Err(error) => Err(error),
                }
            };
            let answer = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, exchange).await,
                None => Ok(exchange.await),
            };
            let Ok(answer) = answer else {
                self.after_timeout(&peer).await;
                return Err(McpError::Timeout {
                    server: self.inner.config.name.clone(),
                    method: "tools/list".into(),
                    timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            };
            match answer {
                Ok(rmcp::model::ServerResult::ListToolsResult(page)) => {
                    tools.extend(page.tools);
                    if tools.len() > MAX_TOOLS {
                        return Err(refuse(format!("more than {MAX_TOOLS} tools")));
                    }
                    match page.next_cursor {
                        Some(next) if !next.is_empty() => {
                            // The cursor's text is the server's and may be long: not quoted.
                            if !cursors_seen.insert(next.clone()) {
                                return Err(refuse(
                                    "the server gave a cursor it gave before".into(),
                                ));
                            }
                            cursor = Some(next);
                        }
                        _ => return Ok(tools),
                    }
                }
                Ok(_) => {
                    return Err(McpError::Protocol {
                        server: self.inner.config.name.clone(),
                        message: "tools/list: unexpected answer".into(),
                    });
                }
                Err(error) => return Err(self.request_error("tools/list", error).await),
            }
        }
        Err(refuse(format!("more than {MAX_TOOL_PAGES} pages")))
    }
}
