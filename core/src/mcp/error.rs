//! What can go wrong with an MCP server, as one enum.

use crate::ai::redact::Redactor;

/// Why connecting to or talking with an MCP server failed. Its message names the server, so
/// a tool result built from it tells the model (and the user) which server and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The configuration cannot be used (a bad URL, header or an empty command).
    #[error("MCP server \"{server}\": invalid configuration: {message}")]
    Config {
        /// The server's name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The server could not be started or did not complete `initialize`.
    #[error("MCP server \"{server}\" failed to start: {message}")]
    Start {
        /// The server's name.
        server: String,
        /// Why.
        message: String,
    },
    /// A reconnection is not tried yet: the last attempt failed recently.
    #[error(
        "MCP server \"{server}\" is unavailable (next reconnection in {retry_in_ms} ms): {message}"
    )]
    Backoff {
        /// The server's name.
        server: String,
        /// How long until the next attempt.
        retry_in_ms: u64,
        /// Why the last attempt failed.
        message: String,
    },
    /// The connection ended (the process exited, the HTTP session went away).
    #[error("MCP server \"{server}\" closed the connection: {message}")]
    Closed {
        /// The server's name.
        server: String,
        /// What is known about why (e.g. the end of the process's stderr).
        message: String,
    },
    /// The server answered a request with a JSON-RPC error.
    #[error("MCP server \"{server}\" answered {method} with error {code}: {message}")]
    Rpc {
        /// The server's name.
        server: String,
        /// The request's method.
        method: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The server did not answer in time.
    #[error("MCP server \"{server}\" did not answer {method} within {timeout_ms} ms")]
    Timeout {
        /// The server's name.
        server: String,
        /// The request's method.
        method: String,
        /// The limit that passed.
        timeout_ms: u64,
    },
    /// Any other protocol or transport failure.
    #[error("MCP server \"{server}\": {message}")]
    Protocol {
        /// The server's name.
        server: String,
        /// What happened.
        message: String,
    },
    /// The tool ran and reported failure (`isError: true`): its own text, for the model.
    #[error("{message}")]
    ToolFailed {
        /// The server's name.
        server: String,
        /// The tool's text.
        message: String,
    },
    /// Called outside a tokio runtime.
    #[error("MCP servers must be used from within a tokio runtime")]
    NoRuntime,
}

impl McpError {
    /// This error with `redactor`'s secrets hidden in its texts. Applied where an error leaves
    /// the module (a public call, a tool's error result): the texts quote servers, their
    /// stderr and the HTTP library, any of which may repeat a credential.
    pub(crate) fn redacted(mut self, redactor: &Redactor) -> Self {
        if let Some(message) = self.message_mut() {
            *message = redactor.redact(message);
        }
        self
    }

    /// The free text of the error, if it has one (the server's name and the method are the
    /// configuration's own words).
    fn message_mut(&mut self) -> Option<&mut String> {
        match self {
            Self::Config { message, .. }
            | Self::Start { message, .. }
            | Self::Backoff { message, .. }
            | Self::Closed { message, .. }
            | Self::Rpc { message, .. }
            | Self::Protocol { message, .. }
            | Self::ToolFailed { message, .. } => Some(message),
            Self::Timeout { .. } | Self::NoRuntime => None,
        }
    }
}
