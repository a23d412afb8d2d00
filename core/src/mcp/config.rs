//! How to reach an MCP server and which of its tools to expose: [`McpServerConfig`].
//!
//! Its JSON form (the one the C and Python bindings pass) is pi-style camelCase:
//!
//! ```json
//! {"name": "everything", "transport": "stdio", "command": "npx",
//!  "args": ["@modelcontextprotocol/server-everything"], "env": {"DEBUG": "1"},
//!  "toolPrefix": "ev_", "includeTools": ["echo", "add"], "callTimeoutMs": 60000}
//! {"name": "remote", "transport": "http", "url": "http://127.0.0.1:3001/mcp",
//!  "headers": {"Authorization": "Bearer ..."}}
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ai::is_credential_header;
use crate::ai::redact::{Redactor, url_without_user_info};

/// The default limit for one tool call (the TypeScript SDK's default request timeout).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The default limit for starting a server and completing `initialize`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The host's variables a stdio server inherits unless it inherits them all
/// ([`StdioConfig::inherit_env`]).
pub const INHERITED_ENV: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    // The network as the host reaches it (a server run by `npx` downloads itself first).
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    // Windows.
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMFILES",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
];

/// A child process speaking MCP on its stdin/stdout.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StdioConfig {
    /// The program (looked up on `PATH`).
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for the server, on top of what it inherits (see `inherit_env`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Whether the server inherits the host's whole environment. By default it gets only the
    /// variables every program needs ([`INHERITED_ENV`]: `PATH`, `HOME`, the locale, ...), as
    /// the official MCP SDKs do: the host's API keys and cloud credentials do not reach a
    /// third-party server unless given in `env` or inherited on purpose.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inherit_env: bool,
    /// Its working directory (default: the host's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
}

impl StdioConfig {
    /// The values of credential-named flags among the arguments (`--api-key=…`,
    /// `--token …`).
    fn add_argument_secrets(&self, redactor: &mut Redactor) {
        let mut next_is_secret = false;
        for arg in &self.args {
            if std::mem::take(&mut next_is_secret) {
                redactor.add(arg);
                continue;
            }
            let Some(flag) = arg.strip_prefix('-') else {
                continue;
            };
            match flag.split_once('=') {
                Some((name, value)) if is_credential_header(name) => redactor.add(value),
                Some(_) => {}
                None => next_is_secret = is_credential_header(flag),
            }
        }
    }
}

// Environment values are often credentials: only the names are shown; so are credential
// flags' values among the arguments.
impl std::fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut redactor = Redactor::default();
        self.add_argument_secrets(&mut redactor);
        let args: Vec<String> = self.args.iter().map(|arg| redactor.redact(arg)).collect();
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("inherit_env", &self.inherit_env)
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// A Streamable HTTP endpoint.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpConfig {
    /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    pub url: String,
    /// Headers sent with every request (e.g. `Authorization: Bearer ...`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

// Header values (bearer tokens) are never shown; the URL loses its query, which may hold one,
// and its user and password.
impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = url_without_user_info(self.url.split(['?', '#']).next().unwrap_or_default());
        f.debug_struct("HttpConfig")
            .field("url", &url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// How the server is reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum McpTransport {
    /// A child process on stdin/stdout.
    Stdio(StdioConfig),
    /// Streamable HTTP.
    Http(HttpConfig),
}

/// One MCP server: how to reach it, and how its tools become agent tools.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    /// The name errors and tool descriptions use for it.
    pub name: String,
    /// How it is reached.
    #[serde(flatten)]
    pub transport: McpTransport,
    /// Put in front of every tool name (e.g. `"fs_"`), to keep two servers' tools apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_prefix: Option<String>,
    /// Only these tools (by the server's names) are exposed; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_tools: Option<Vec<String>>,
    /// The limit for one tool call, in milliseconds (default 60 000). When it passes, the
    /// server gets `notifications/cancelled` and the call an error result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout_ms: Option<u64>,
    /// The limit for starting the server and completing `initialize`, in milliseconds
    /// (default 30 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_ms: Option<u64>,
}

impl McpServerConfig {
    /// The secrets this configuration holds, to hide them in every error about the server
    /// (a server or an HTTP library may quote them back): the values of credential headers and
    /// of credential-named environment variables (by [`crate::ai::is_credential_header`]'s
    /// words: `GITHUB_TOKEN`, `API_KEY`), and the URL's user info and query values.
    pub(crate) fn redactor(&self) -> Redactor {
        let mut redactor = Redactor::default();
        match &self.transport {
            McpTransport::Stdio(stdio) => {
                for (name, value) in &stdio.env {
                    if is_credential_header(name) {
                        redactor.add(value);
                    }
                    // A URL's password, whatever the variable's name (`DATABASE_URL`).
                    if let Ok(url) = url::Url::parse(value)
                        && let Some(password) = url.password()
                    {
                        redactor.add(password);
                    }
                }
                stdio.add_argument_secrets(&mut redactor);
            }
            McpTransport::Http(http) => {
                for (name, value) in &http.headers {
                    redactor.add_header(name, value);
                }
                if let Ok(url) = url::Url::parse(&http.url) {
                    redactor.add(url.username());
                    redactor.add(url.password().unwrap_or_default());
                    for (_, value) in url.query_pairs() {
                        redactor.add(&value);
                    }
                }
                // The query as written too (percent-escapes and all), as error texts quote it.
                if let Some((_, query)) = http.url.split_once('?') {
                    for pair in query.split(['&', '#']) {
                        redactor.add(pair.split_once('=').map_or(pair, |(_, value)| value));
                    }
                }
            }
        }
        redactor
    }

    /// A server started as `command args...`.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self::new(
            name,
            McpTransport::Stdio(StdioConfig {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                ..StdioConfig::default()
            }),
        )
    }

    /// A server at a Streamable HTTP endpoint.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http(HttpConfig {
                url: url.into(),
                headers: BTreeMap::new(),
            }),
        )
    }

    /// A server reached through `transport`, with the default options.
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            tool_prefix: None,
            include_tools: None,
            call_timeout_ms: None,
            connect_timeout_ms: None,
        }
    }

    /// Adds an environment variable (stdio) or a header (HTTP).
    #[must_use]
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        match &mut self.transport {
            McpTransport::Stdio(stdio) => {
                stdio.env.insert(name.into(), value.into());
            }
            McpTransport::Http(http) => {
                http.headers.insert(name.into(), value.into());
            }
        }
        self
    }

    /// Lets a stdio server inherit the host's whole environment (see
    /// [`StdioConfig::inherit_env`]); no effect on an HTTP server.
    #[must_use]
    pub fn with_inherited_env(mut self) -> Self {
        if let McpTransport::Stdio(stdio) = &mut self.transport {
            stdio.inherit_env = true;
        }
        self
    }

    /// Sets the tool name prefix.
    #[must_use]
    pub fn with_tool_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.tool_prefix = Some(prefix.into());
        self
    }

    /// Exposes only these tools.
    #[must_use]
    pub fn with_include_tools(
        mut self,
        names: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.include_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the per-call limit.
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout_ms = Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// The per-call limit.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout_ms
            .map_or(DEFAULT_CALL_TIMEOUT, Duration::from_millis)
    }

    /// The start-up limit.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout_ms
            .map_or(DEFAULT_CONNECT_TIMEOUT, Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_form_is_camel_case_and_secrets_stay_out_of_debug() {
        let config: McpServerConfig = serde_json::from_value(serde_json::json!({
            "name": "fs", "transport": "stdio", "command": "npx", "args": ["-y", "x"],
            "env": {"TOKEN": "s3cret"}, "toolPrefix": "fs_", "includeTools": ["read"],
            "callTimeoutMs": 5000
        }))
        .unwrap();
        assert_eq!(config.call_timeout(), Duration::from_secs(5));
        assert_eq!(config.connect_timeout(), DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(config.tool_prefix.as_deref(), Some("fs_"));
        assert!(!format!("{config:?}").contains("s3cret"));
        let http = McpServerConfig::http("r", "https://us3cret:ps3cret@h/mcp?key=qs3cret")
            .with_env("Authorization", "Bearer hs3cret");
        let shown = format!("{http:?}");
        assert!(
            ["hs3cret", "qs3cret", "us3cret", "ps3cret"]
                .iter()
                .all(|secret| !shown.contains(secret)),
            "{shown}"
        );
        assert!(shown.contains("@h/mcp"), "{shown}");
        let json = serde_json::to_value(&http).unwrap();
        assert_eq!(json["transport"], "http");
        assert_eq!(json["headers"]["Authorization"], "Bearer hs3cret");
        let unknown = serde_json::from_value::<McpServerConfig>(serde_json::json!({
            "name": "x", "transport": "stdio", "command": "c", "argz": []
        }));
        assert!(unknown.is_err());
    }

    #[test]
    fn the_redactor_knows_every_secret_of_the_configuration() {
        let http = McpServerConfig::http(
            "r",
            "https://user-0123456789:pass-0123456789@h/mcp?key=query%2Fsecret-01&page=2",
        )
        .with_env("Authorization", "Bearer header-secret-01")
        .with_env("X-Trace", "not-a-secret-at-all");
        let shown = http.redactor().redact(
            "user-0123456789 pass-0123456789 query%2Fsecret-01 query/secret-01 \
             header-secret-01 not-a-secret-at-all page=2",
        );
        assert_eq!(
            shown,
            "<redacted> <redacted> <redacted> <redacted> <redacted> not-a-secret-at-all page=2"
        );
        let stdio = McpServerConfig::stdio(
            "s",
            "server",
            [
                "--verbose",
                "--api-key=arg-secret-01",
                "--token",
                "arg-secret-02",
                "plain-argument",
            ],
        )
        .with_env("GITHUB_TOKEN", "ghp-0123456789")
        .with_env("DATABASE_URL", "postgres://app:db-secret-01@db/app")
        .with_env("LOG_LEVEL", "verbose-logging");
        let shown = stdio.redactor().redact(
            "ghp-0123456789 verbose-logging db-secret-01 arg-secret-01 arg-secret-02 plain-argument",
        );
        assert_eq!(
            shown,
            "<redacted> verbose-logging <redacted> <redacted> <redacted> plain-argument"
        );
        let debug = format!("{stdio:?}");
        assert!(
            !debug.contains("arg-secret") && debug.contains("plain-argument"),
            "{debug}"
        );
    }
}
