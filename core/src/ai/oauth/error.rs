//! `OAuthError`: every way a login, a refresh or the credentials file can fail.
//!
//! No variant carries a token: HTTP error bodies are reduced to the server's `error` and
//! `error_description` (or a short excerpt), and a successful response is never quoted.

use std::path::PathBuf;

/// A failed OAuth operation. Messages are safe to show and log: they never contain a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// No OAuth provider is registered under this id.
    #[error("unknown OAuth provider `{id}`")]
    UnknownProvider {
        /// The id asked for.
        id: String,
    },
    /// The login's cancellation token fired.
    #[error("login cancelled")]
    Cancelled,
    /// A wait for the user (browser callback, pasted code, prompt answer) ran out of time.
    #[error("timed out waiting for {what}")]
    TimedOut {
        /// What was awaited.
        what: &'static str,
    },
    /// A pasted redirect URL or code carried another login's `state`.
    #[error("OAuth state mismatch")]
    StateMismatch,
    /// Neither the browser nor the user supplied an authorization code.
    #[error("missing authorization code")]
    MissingCode,
    /// The localhost callback server could not listen.
    #[error("cannot start the OAuth callback server on 127.0.0.1:{port}: {message}")]
    CallbackServer {
        /// The port asked for.
        port: u16,
        /// The system's reason.
        message: String,
    },
    /// A request did not get a response (connection, timeout, body read).
    #[error("request to `{url}` failed: {message}")]
    Transport {
        /// The endpoint.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// An endpoint answered with a non-success status (for a token endpoint: a revoked or
    /// invalid refresh token, a wrong code or verifier, ...).
    #[error("`{url}` returned HTTP {status}: {message}")]
    Http {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's `error` and `error_description`, or a short excerpt of its body.
        message: String,
    },
    /// An endpoint answered with JSON that lacks what the flow needs.
    #[error("invalid response from `{url}`: {message}")]
    InvalidResponse {
        /// The endpoint.
        url: String,
        /// What is missing or malformed (never the body itself).
        message: String,
    },
    /// GitHub's device flow ended with an error (`access_denied`, `expired_token`, ...).
    #[error("device flow failed: {error}{}", description.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    DeviceFlow {
        /// The OAuth error code.
        error: String,
        /// GitHub's explanation, if any.
        description: Option<String>,
    },
    /// The device code expired before the user authorised it.
    #[error("{}", if *slow_down {
        "device flow timed out after one or more slow_down responses. This is often caused by clock drift in WSL or VM environments. Please sync or restart the VM clock and try again"
    } else {
        "device flow timed out"
    })]
    DeviceFlowTimedOut {
        /// Whether GitHub asked us to slow down on the way (a hint at clock drift).
        slow_down: bool,
    },
    /// The GitHub Enterprise answer is not a URL or domain.
    #[error("invalid GitHub Enterprise URL/domain")]
    InvalidEnterpriseDomain,
    /// The OpenAI access token carries no ChatGPT account id.
    #[error("failed to extract accountId from token")]
    MissingAccountId,
    /// The system has no randomness to make a PKCE verifier or state.
    #[error("cannot generate random bytes: {message}")]
    Random {
        /// The system's reason.
        message: String,
    },
    /// A host callback (prompt, manual code input, selector) failed.
    #[error("{message}")]
    Callback {
        /// The host's message.
        message: String,
    },
    /// Refreshing expired credentials failed (pi's `Failed to refresh OAuth token for ...`).
    #[error("failed to refresh OAuth token for `{provider}`: {cause}")]
    RefreshFailed {
        /// The provider id.
        provider: String,
        /// Why.
        cause: Box<OAuthError>,
    },
    /// The credentials file could not be read or written.
    #[error("cannot {action} `{}`: {cause}", path.display())]
    AuthFile {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's reason.
        cause: std::io::Error,
    },
    /// The credentials file is not a pi-style `auth.json` map.
    #[error("`{}` is not a valid auth file: {cause}", path.display())]
    AuthFileFormat {
        /// The file.
        path: PathBuf,
        /// Where parsing failed (serde_json reports positions, not content).
        cause: serde_json::Error,
    },
}

impl OAuthError {
    /// A host callback failure with `message`.
    pub fn callback(message: impl Into<String>) -> Self {
        Self::Callback {
            message: message.into(),
        }
    }
}
