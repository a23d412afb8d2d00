//! Starting one session with a server: spawn the child (or open the HTTP session) and complete
//! `initialize`, within the start-up limit.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::service::{RoleClient, RunningService, serve_client};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncReadExt;

use super::config::{HttpConfig, INHERITED_ENV, McpServerConfig, McpTransport, StdioConfig};
use super::error::McpError;
use super::handler::Handler;
use super::http_client::PiHttpClient;

/// How much of a child's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// The end of a child's stderr: what a crashing server usually says about why.
#[derive(Debug, Default)]
pub(crate) struct StderrTail(Mutex<Vec<u8>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        tail.extend_from_slice(bytes);
        if tail.len() > STDERR_TAIL {
            let cut = tail.len() - STDERR_TAIL;
            tail.drain(..cut);
        }
    }

    /// The kept text, trimmed; empty when the child said nothing.
    pub(crate) fn text(&self) -> String {
        let tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&tail).trim().to_owned()
    }
}

/// One live session.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, Handler>,
    /// The child's stderr (stdio servers).
    pub(crate) stderr: Option<Arc<StderrTail>>,
    /// The child's process id (stdio servers).
    pub(crate) pid: Option<u32>,
    /// Kills the child's process group when the connection goes (stdio servers).
    pub(crate) group: Option<GroupKill>,
}

/// How long a graceful close may take before what is left is killed. The transport gives the
/// child 3 s after closing its stdin, then terminates it; but a child that stopped reading its
/// stdin holds the close for ever (the close waits for a write stuck on the full pipe).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(8);

/// A stdio server's process group (the child leads its own), killed when this is dropped:
/// after a graceful close (what it left running), and when the connection goes without one
/// (its runtime shut down, or no runtime). Dropping the child kills only the child itself, and
/// `npx` runs the real server as a child of its own.
pub(crate) struct GroupKill(u32);

impl Drop for GroupKill {
    fn drop(&mut self) {
        // Never 0 (our own group) or 1: only the group the child leads.
        #[cfg(unix)]
        if let Ok(group) = i32::try_from(self.0)
            && group > 1
        {
            // SAFETY: a plain system call on a process group id; an error (the group is gone
            // already) changes nothing.
            unsafe {
                libc::killpg(group, libc::SIGKILL);
            }
        }
    }
}

impl Connection {
    /// Ends the session: gracefully (stdin closed, the child waited for, then terminated)
    /// within [`CLOSE_TIMEOUT`], then its process group is killed.
    pub(crate) async fn shut_down(self) {
        let Self { service, group, .. } = self;
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, service.cancel()).await;
        // Whatever the close left running, or could not end, goes now.
        drop(group);
    }

    /// What to add to an error message about this session's end.
    pub(crate) fn stderr_note(&self) -> String {
        match self.stderr.as_ref().map(|tail| tail.text()) {
            Some(text) if !text.is_empty() => format!("; its stderr ended with: {text}"),
            _ => String::new(),
        }
    }
}

fn start_error(config: &McpServerConfig, message: impl Into<String>) -> McpError {
    McpError::Start {
        server: config.name.clone(),
        message: message.into(),
    }
}

/// Connects and initializes.
pub(crate) async fn connect(
    config: &McpServerConfig,
    handler: Handler,
) -> Result<Connection, McpError> {
    let timeout = config.connect_timeout();
    let started = tokio::time::timeout(timeout, async {
        match &config.transport {
            McpTransport::Stdio(stdio) => connect_stdio(config, stdio, handler).await,
            McpTransport::Http(http) => connect_http(config, http, handler).await,
        }
    })
    .await;
    started.unwrap_or_else(|_| {
        Err(start_error(
            config,
            format!(
                "initialize did not complete within {} ms",
                timeout.as_millis()
            ),
        ))
    })
}

async fn connect_stdio(
    config: &McpServerConfig,
    stdio: &StdioConfig,
    handler: Handler,
) -> Result<Connection, McpError> {
    if stdio.command.is_empty() {
        return Err(McpError::Config {
            server: config.name.clone(),
            message: "the command is empty".into(),
        });
    }
    let mut command = tokio::process::Command::new(&stdio.command);
    if !stdio.inherit_env {
        command.env_clear();
        for name in INHERITED_ENV {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
    }
    command.args(&stdio.args).envs(&stdio.env);
    if let Some(cwd) = &stdio.cwd {
        command.current_dir(cwd);
    }
    let mut command = process_wrap::tokio::CommandWrap::from(command);
    // Its own process group, so that ending it also ends what it started (`npx` runs the
    // server as a child of its own); and killed if the transport is dropped without a close.
    command
        .wrap(process_wrap::tokio::ProcessGroup::leader())
        .wrap(process_wrap::tokio::KillOnDrop);
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| start_error(config, format!("cannot run {:?}: {error}", stdio.command)))?;
    let pid = transport.id();
    // From here on, however this ends (a failed `initialize` included), the group goes too.
    let group = pid.map(GroupKill);
    let tail = Arc::new(StderrTail::default());
    if let Some(mut stderr) = stderr {
        let tail = Arc::clone(&tail);
        // Drained so a chatty server never blocks on a full pipe; ends with the child.
        tokio::spawn(async move {
            let mut buffer = [0u8; 1024];
            while let Ok(read @ 1..) = stderr.read(&mut buffer).await {
                tail.push(&buffer[..read]);
            }
        });
    }
    match serve_client(handler, transport).await {
        Ok(service) => Ok(Connection {
            service,
            stderr: Some(tail),
            pid,
            group,
        }),
        Err(error) => {
            // Give the reader a moment to catch what the child printed before it died.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let said = tail.text();
            let note = if said.is_empty() {
                String::new()
            } else {
                format!("; its stderr ended with: {said}")
            };
            Err(start_error(config, format!("{error}{note}")))
        }
    }
}

async fn connect_http(
    config: &McpServerConfig,
    http: &HttpConfig,
    handler: Handler,
) -> Result<Connection, McpError> {
    let url = url::Url::parse(&http.url).map_err(|error| McpError::Config {
        server: config.name.clone(),
        message: format!("invalid URL: {error}"),
    })?;
    let mut headers = HashMap::new();
    for (name, value) in &http.headers {
        let bad = |what: &str| McpError::Config {
            server: config.name.clone(),
            message: format!("invalid header {what} {name:?}"),
        };
        let name_value = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
        let mut header_value = HeaderValue::from_str(value).map_err(|_| bad("value for"))?;
        header_value.set_sensitive(true);
        headers.insert(name_value, header_value);
    }
    let mut transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
    transport_config.custom_headers = headers;
    let transport = StreamableHttpClientTransport::with_client(
        PiHttpClient(crate::ai::providers::http::client()),
        transport_config,
    );
    let service = serve_client(handler, transport)
        .await
        .map_err(|error| start_error(config, error.to_string()))?;
    Ok(Connection {
        service,
        stderr: None,
        pid: None,
        group: None,
    })
}
