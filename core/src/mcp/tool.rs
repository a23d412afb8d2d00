//! [`McpTool`]: one of a server's tools as an agent tool.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, CustomResult, RequestId, ServerResult, Tool as McpToolInfo,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::Value;

use super::content::{map_result, map_result_json};
use super::error::McpError;
use super::session::McpServer;
use crate::agent::{AgentTool, AgentToolResult, ToolCallContext, ToolError, ToolSpec};

/// A tool of an MCP server. Its arguments are validated against the server's `inputSchema`
/// by the agent like any tool's; a call is a `tools/call` request on the server's session.
pub struct McpTool {
    server: McpServer,
    /// The name the model calls it by (with the configured prefix), and the server's title as
    /// its label.
    spec: ToolSpec,
    info: Arc<McpToolInfo>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.server.name())
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    pub(crate) fn new(server: McpServer, info: McpToolInfo) -> Self {
        let prefix = server.config().tool_prefix.clone().unwrap_or_default();
        let name = format!("{prefix}{}", info.name);
        let description = info
            .description
            .as_deref()
            .or(info.title.as_deref())
            .unwrap_or_default()
            .to_owned();
        let parameters = Value::Object(info.input_schema.as_ref().clone());
        let mut spec = ToolSpec::new(name, description, parameters);
        spec.label.clone_from(&info.title);
        Self {
            server,
            spec,
            info: Arc::new(info),
        }
    }

    /// The tool as the server describes it (its own name, schemas, annotations).
    pub fn info(&self) -> &McpToolInfo {
        &self.info
    }

    /// The server it belongs to.
    pub fn server(&self) -> &McpServer {
        &self.server
    }
}

/// Sends `notifications/cancelled` for a request still in flight when the call ends early:
/// dropped by the agent on abort, or given up at the timeout.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    reason: &'static str,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let notification = ClientNotification::CancelledNotification(CancelledNotification::new(
            CancelledNotificationParam::new(Some(id), Some(self.reason.to_owned())),
        ));
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.send_notification(notification).await;
            });
        }
    }
}

async fn call(
    server: McpServer,
    remote: String,
    output_schema: Option<Value>,
    call: ToolCallContext,
) -> Result<AgentToolResult, McpError> {
    let method = "tools/call";
    let peer = server.peer().await?;
    let mut params = CallToolRequestParams::new(remote);
    match call.arguments {
        Value::Object(arguments) => params = params.with_arguments(arguments),
        Value::Null => {}
        other => {
            return Err(McpError::Protocol {
                server: server.name().to_owned(),
                message: format!("tool arguments must be an object, got {other}"),
            });
        }
    }
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let timeout = server.config().call_timeout();
    let deadline = tokio::time::Instant::now() + timeout;
    let timed_out = || McpError::Timeout {
        server: server.name().to_owned(),
        method: method.into(),
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
    };
    // The limit covers handing the request to the transport too: a transport stuck on a dead
    // server must not hold the call.
    let sent = tokio::time::timeout_at(
        deadline,
        peer.send_request_with_option(request, PeerRequestOptions::no_options()),
    )
    .await;
    let handle = match sent {
        Ok(Ok(handle)) => handle,
        Ok(Err(error)) => return Err(server.request_error(method, error).await),
        Err(_) => {
            server.session_failed(true).await;
            return Err(timed_out());
        }
    };
    let _progress = server
        .inner
        .shared
        .route_progress(handle.progress_token.clone(), call.updates.clone());
    let mut cancel = CancelOnDrop {
        peer,
        id: Some(handle.id.clone()),
        reason: "aborted",
    };
    let answer = match tokio::time::timeout_at(deadline, handle.rx).await {
        Ok(answer) => answer,
        Err(_) => {
            cancel.reason = "timeout";
            let peer = cancel.peer.clone();
            // The cancellation goes now, before the server is asked whether it still answers.
            drop(cancel);
            server.after_timeout(&peer).await;
            return Err(timed_out());
        }
    };
    cancel.id = None;
    match answer {
        Ok(Ok(ServerResult::CallToolResult(result))) => {
            map_result(server.name(), result, output_schema.as_ref())
        }
        // A result the MCP library could not read whole (a content block it does not know):
        // read here, block by block.
        Ok(Ok(ServerResult::CustomResult(CustomResult(value))))
            if value.get("content").is_some_and(Value::is_array) =>
        {
            map_result_json(server.name(), value, output_schema.as_ref())
        }
        Ok(Ok(_)) => Err(McpError::Protocol {
            server: server.name().to_owned(),
            message: format!("{method}: unexpected answer"),
        }),
        Ok(Err(error)) => Err(server.request_error(method, error).await),
        Err(_) => Err(server
            .request_error(method, ServiceError::TransportClosed)
            .await),
    }
}

impl AgentTool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn execute(
        &self,
        context: ToolCallContext,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let server = self.server.clone();
        let remote = self.info.name.to_string();
        let output_schema = self
            .info
            .output_schema
            .as_ref()
            .map(|schema| Value::Object(schema.as_ref().clone()));
        Box::pin(async move {
            let named = server.clone();
            call(server, remote, output_schema, context)
                .await
                .map_err(|error| {
                    ToolError::new(error.redacted(&named.config().redactor()).to_string())
                })
        })
    }
}
