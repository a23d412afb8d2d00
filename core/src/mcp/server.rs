//! Connecting to a server, and its tools in agents: [`McpServer::connect`] opens the first
//! session; [`McpServer::tools`] wraps what the server lists as [`McpTool`]s, and
//! [`McpServer::attach`] keeps an agent's table current as the server's list changes. The
//! session itself (requests, failures, backoff) is [`super::session`]'s.

use std::sync::{Arc, PoisonError};

use super::config::McpServerConfig;
use super::connection::connect;
use super::error::McpError;
use super::handler::{Handler, Shared};
use super::session::McpServer;
use super::tool::McpTool;
use crate::agent::{Agent, AgentTool};

/// How long after a failed re-listing the watcher tries again.
const REFRESH_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

impl McpServer {
    /// Starts the server (or opens the HTTP session) and completes `initialize`. A server that
    /// cannot be reached is an error here; later failures become error tool results.
    pub async fn connect(config: McpServerConfig) -> Result<Self, McpError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(McpError::NoRuntime);
        }
        let shared = Arc::new(Shared::default());
        let connection = connect(
            &config,
            Handler {
                shared: Arc::clone(&shared),
            },
        )
        .await
        .map_err(|error| error.redacted(&config.redactor()))?;
        let server = Self::open(config, shared, connection);
        server.watch_tool_list();
        Ok(server)
    }

    /// The server's tools as agent tools: prefixed and filtered as configured.
    pub async fn tools(&self) -> Result<Vec<Arc<dyn AgentTool>>, McpError> {
        let listed = self.list_tools().await?;
        let config = &self.inner.config;
        Ok(listed
            .into_iter()
            .filter(|tool| {
                config
                    .include_tools
                    .as_ref()
                    .is_none_or(|names| names.iter().any(|name| name == tool.name.as_ref()))
            })
            .map(|tool| Arc::new(McpTool::new(self.clone(), tool)) as Arc<dyn AgentTool>)
            .collect())
    }

    /// Adds the server's tools to `agent` (replacing tools of the same names), and keeps them
    /// current: when the server sends `notifications/tools/list_changed`, the agent's table is
    /// updated. A run uses the table it started with, so a change takes effect from the next
    /// run: never in the middle of a batch of tool calls.
    pub async fn attach(&self, agent: &Agent) -> Result<(), McpError> {
        let tools = self.tools().await?;
        let names = install(agent, &[], tools);
        self.inner
            .attached
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((agent.downgrade(), names));
        // A change announced while the tools were listed found no agent to update: this one
        // gets it now.
        if self.tools_changed() {
            self.refresh_attached().await?;
        }
        Ok(())
    }

    /// Re-lists the tools and updates every attached agent.
    pub async fn refresh_attached(&self) -> Result<(), McpError> {
        let tools = self.tools().await?;
        let mut attached = self
            .inner
            .attached
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        attached.retain_mut(|(weak, names)| match weak.upgrade() {
            Some(agent) => {
                *names = install(&agent, names, tools.clone());
                true
            }
            None => false,
        });
        Ok(())
    }

    fn watch_tool_list(&self) {
        let weak = Arc::downgrade(&self.inner);
        let stop = self.inner.stop.clone();
        let shared = Arc::clone(&self.inner.shared);
        tokio::spawn(async move {
            loop {
                let changed = shared.tools_changed_notify.notified();
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = changed => {}
                }
                let Some(inner) = weak.upgrade() else { return };
                let server = McpServer { inner };
                let has_agents = !server
                    .inner
                    .attached
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_empty();
                if has_agents && server.refresh_attached().await.is_err() {
                    // The old tools stay (their calls report the server's state), and the
                    // change is listed again a little later.
                    let shared = Arc::clone(&server.inner.shared);
                    drop(server);
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(REFRESH_RETRY) => {}
                    }
                    shared.tools_changed_notify.notify_one();
                }
            }
        });
    }
}

/// Replaces the tools named `old` in `agent` with `tools`; returns the new names.
fn install(agent: &Agent, old: &[String], tools: Vec<Arc<dyn AgentTool>>) -> Vec<String> {
    let names: Vec<String> = tools.iter().map(|tool| tool.name().to_owned()).collect();
    let mut table: Vec<Arc<dyn AgentTool>> = agent
        .tools()
        .into_iter()
        .filter(|tool| {
            let name = tool.name();
            !old.iter().any(|old| old == name) && !names.iter().any(|new| new == name)
        })
        .collect();
    table.extend(tools);
    agent.set_tools(table);
    names
}
