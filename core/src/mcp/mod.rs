//! Tools from Model Context Protocol servers, built on the official Rust SDK (`rmcp`).
//!
//! [`McpServer::connect`] starts a server as a child process (stdio) or opens a Streamable
//! HTTP session, and completes `initialize`; [`McpServer::tools`] lists its tools (all pages)
//! as [`AgentTool`](crate::agent::AgentTool)s, and [`McpServer::attach`] adds them to an
//! [`Agent`](crate::agent::Agent) and keeps them current when the server announces a change.
//!
//! ```no_run
//! use pi_agent::agent::{Agent, AgentOptions};
//! use pi_agent::mcp::{McpServer, McpServerConfig};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::connect(McpServerConfig::stdio(
//!     "everything",
//!     "npx",
//!     ["-y", "@modelcontextprotocol/server-everything"],
//! ))
//! .await?;
//! println!("{:?}", server.info());
//! let agent = Agent::new(AgentOptions { tools: server.tools().await?, ..AgentOptions::default() });
//! # Ok(())
//! # }
//! ```
//!
//! Failure is data: a server that fails to start again, exits or hangs during a call, or
//! answers with a JSON-RPC error gives that call an error result naming the server and why,
//! and the run goes on. The next call starts a new session (with backoff, see [`McpServer`]).
//! A call that outlives its limit (`callTimeoutMs`) or is aborted with the agent sends the
//! server `notifications/cancelled`. Progress notifications become `tool_execution_update`
//! events.

mod config;
mod connection;
mod content;
mod error;
mod handler;
mod http_client;
mod server;
mod session;
mod tool;

pub use self::config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, HttpConfig, INHERITED_ENV, McpServerConfig,
    McpTransport, StdioConfig,
};
pub use self::error::McpError;
pub use self::session::{McpServer, McpServerInfo};
pub use self::tool::McpTool;
/// MCP's own description of a tool (name, schemas, annotations), as the server lists it.
pub use rmcp::model::Tool as McpToolInfo;
