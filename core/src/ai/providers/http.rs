//! HTTP plumbing shared by the HTTP providers: one pooled client (reqwest for HTTPS, proxies
//! and a program's own client; the library's own HTTP/1.1 client, [`h1`], for plain `http://`),
//! sending with retries, redirects and time limits ([`send`]), reading a streamed body within
//! its limits ([`SseEvents`], or any [`FrameDecoder`] in [`BodyFrames`]), and turning a failed
//! response into a readable message.
//!
//! # Limits (issue 9: never hang, never crash, never leak a key)
//!
//! Every request runs within bounds taken from its
//! [`StreamOptions`](crate::ai::options::StreamOptions) (`None` = the default,
//! `Some(0)` = no limit for the two timeouts):
//!
//! | Bound | Default | On breach |
//! |---|---|---|
//! | connecting | 30 s | `Connection error: ...` (retried) |
//! | response headers, per attempt (`request_timeout_ms`) | 60 s | `Request timed out after N ms ...` (retried) |
//! | silence between body chunks (`idle_timeout_ms`) | 10 min | `Stream idle timeout: no data for N ms` |
//! | one SSE line or event (`max_event_bytes`) | 16 MiB | `... larger than N bytes (max_event_bytes) ...` |
//! | error body read (`max_error_body_bytes`) | 256 KiB, and 30 s | `<status> <what arrived> (error body cut ...)` |
//! | retry delay, `Retry-After` included (`max_retry_delay_ms`) | 60 s | fails at once, naming the server's delay |
//! | redirects | 10 | `Too many redirects ...` |
//!
//! A redirect to another origin (scheme, host or port) keeps only the headers known to carry no
//! credential (an allow-list: `content-type`, `accept`, `user-agent`, `anthropic-version`, ...;
//! see [`is_known_safe_header`](crate::ai::is_known_safe_header)) and drops every other one.
//! Every message and diagnostic a request produces has the credentials it sent replaced by
//! `<redacted>`, whatever the server echoes.

mod body;
mod deadline;
mod driver;
mod h1;
mod headers;
mod idle;
mod limits;
mod redirect;
mod retry;
mod url_parts;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::ai::error::ProviderError;

pub(crate) use self::body::{BodyFrames, FrameDecoder, SseEvents, read_error_body};
pub(crate) use self::driver::{Flow, PreparedRequest, Reply, Wire, api_provider, start};
pub(crate) use self::headers::Headers;
pub(crate) use self::limits::Limits;
pub(crate) use self::retry::{RetryPolicy, error_body_text, send_once};
pub(crate) use self::url_parts::{host_label, path_segment, path_segments};

/// Idle connections kept per host between requests.
const MAX_IDLE_PER_HOST: usize = 32;

/// How long an idle connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(30);

/// The longest a connection takes to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How many nested `fork`s get a fresh client (see [`forget_connections_after_fork`]).
const FORK_GENERATIONS: usize = 64;

/// Which of [`CLIENTS`] is this process's: bumped in a forked child. No lock: a lock held by
/// another thread at the fork would stay locked in the child forever.
static GENERATION: AtomicUsize = AtomicUsize::new(0);

/// The library's own clients, one per fork generation: connections are pooled across requests
/// and providers. Redirects are followed by [`send`], which drops credentials on a change of
/// origin; the client itself follows none.
static CLIENTS: [OnceLock<reqwest::Client>; FORK_GENERATIONS] =
    [const { OnceLock::new() }; FORK_GENERATIONS];

/// For a process that was forked after it used the library: forgets the connection pool the
/// parent left behind (its connections are the parent's sockets, driven by the parent's
/// runtime threads, which the child does not have), so the next request connects afresh. Call
/// it in the child, before any request (the Python binding does, from `os.register_at_fork`).
/// Cheap, lock-free; does nothing when no request was made yet. After 63 nested forks that
/// each used the library, the last client stays. A client set with [`set_http_client`] is
/// the program's and is kept: set a fresh one in the child.
pub fn forget_connections_after_fork() {
    let generation = GENERATION.load(Ordering::Acquire);
    let used = CLIENTS[generation].get().is_some() || h1::pool_used(generation);
    if used && generation + 1 < FORK_GENERATIONS {
        GENERATION.store(generation + 1, Ordering::Release);
    }
}

/// The library's client of this process.
fn default_client() -> &'static reqwest::Client {
    CLIENTS[GENERATION.load(Ordering::Acquire)].get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // Bounded idle pool: a burst of thousands of streams to one host must not leave
            // thousands of idle sockets (and their buffers) behind it.
            .pool_max_idle_per_host(MAX_IDLE_PER_HOST)
            .pool_idle_timeout(POOL_IDLE)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// The program's client, when it set one ([`set_http_client`]).
static CUSTOM_CLIENT: RwLock<Option<reqwest::Client>> = RwLock::new(None);

/// The client every built-in provider, the agent proxy and the OAuth flows send with: the
/// program's ([`set_http_client`]), else the library's. (A `reqwest::Client` is a handle:
/// cloning it shares its connection pool.)
pub(crate) fn client() -> reqwest::Client {
    let custom = CUSTOM_CLIENT.read().unwrap_or_else(PoisonError::into_inner);
    custom.as_ref().unwrap_or_else(|| default_client()).clone()
}

/// Whether the program set its own client.
fn custom_client_set() -> bool {
    CUSTOM_CLIENT
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some()
}

/// Makes the built-in providers (and the agent proxy and OAuth flows) send their HTTP requests
/// with `client` from now on: its proxy, TLS roots and certificates, timeouts, pool and
/// default headers. `None` goes back to the library's own client. Requests already started
/// keep the client they started with. The OpenAI Codex WebSocket transport has its own
/// connection and does not use it.
///
/// Build it with `redirect(reqwest::redirect::Policy::none())`: the library follows
/// redirects itself so that credentials never reach another origin, and a client that
/// follows them first would bypass that. Use the `reqwest` the library re-exports
/// ([`pi_agent::reqwest`](crate::reqwest)) so that the versions match. The library's retries,
/// request and idle timeouts and size limits still apply on top of the client's own.
pub fn set_http_client(client: Option<reqwest::Client>) {
    *CUSTOM_CLIENT
        .write()
        .unwrap_or_else(PoisonError::into_inner) = client;
}

/// The provider's own message from an error body, in the shapes vendors use
/// (`{"error":{"message":..}}`, `{"error":".."}`, `{"message":..}`, `{"detail":..}`), else the
/// raw body (truncated).
pub(crate) fn error_body_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        let candidates = [
            json.pointer("/error/message"),
            json.get("error").filter(|v| v.is_string()),
            json.get("message"),
            json.get("detail"),
            json.pointer("/0/error/message"),
        ];
        for candidate in candidates.into_iter().flatten() {
            if let Some(text) = candidate.as_str() {
                let mut message = text.to_owned();
                // OpenRouter puts the upstream's words here.
                if let Some(raw) = json.pointer("/error/metadata/raw").and_then(Value::as_str) {
                    message.push('\n');
                    message.push_str(raw);
                }
                return message;
            }
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty response body)".to_owned();
    }
    crate::text::prefix(trimmed, 2_000).to_owned()
}

/// `"<status> <provider message>"`, the shape pi's SDK errors have.
pub(crate) fn http_error_message(status: reqwest::StatusCode, body: &str) -> String {
    format!("{} {}", status.as_u16(), error_body_message(body))
}

/// A transport error as a [`ProviderError`]: `timeout` when a time limit of the client ran out,
/// else `network` (see [`transport_error_message`]).
pub(crate) fn transport_error(error: &reqwest::Error) -> ProviderError {
    let message = transport_error_message(error);
    if error.is_timeout() {
        ProviderError::Timeout(message)
    } else {
        ProviderError::Network(message)
    }
}

/// A transport error without the URL's path and query (which may carry a key): a connect
/// failure names the host and port it tried.
pub(crate) fn transport_error_message(error: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut message = if error.is_connect() {
        match error
            .url()
            .and_then(|url| Some((url.host_str()?.to_owned(), url.port_or_known_default()?)))
        {
            Some((host, port)) => could_not_connect(&host, port),
            None => "Connection error: could not connect to the provider".to_owned(),
        }
    } else if error.is_timeout() {
        "Request timed out".to_owned()
    } else if error.is_body() || error.is_decode() {
        BODY_CUT_OFF.to_owned()
    } else {
        "Connection error".to_owned()
    };
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !text.is_empty() && !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The start of every failed body's message (both HTTP clients word it so).
const BODY_CUT_OFF: &str = "Connection error: the response body was cut off";

/// The start of every connect failure's message (both HTTP clients word it so).
fn could_not_connect(host: &str, port: u16) -> String {
    format!("Connection error: could not connect to the provider at {host}:{port}")
}

/// Local servers (Ollama, llama.cpp, LM Studio, vLLM on this machine) need no key.
pub(crate) fn is_loopback(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("http://")
        .or_else(|| base_url.strip_prefix("https://"))
        .unwrap_or(base_url);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']').next().map_or(host, |h| &h[1..])
    } else {
        host.split(':').next().unwrap_or(host)
    };
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// Replaces `{VAR}` placeholders (upper-case names) in a base URL with environment variables,
/// as Cloudflare base URLs need (pi's `resolveCloudflareBaseUrl`); `provider` names the
/// provider in the error for a variable that is not set.
pub(crate) fn expand_env_placeholders(url: &str, provider: &str) -> Result<String, ProviderError> {
    if !url.contains('{') {
        return Ok(url.to_owned());
    }
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}').filter(|&close| {
            let name = &after[..close];
            name.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        });
        match close {
            Some(close) => {
                let name = &after[..close];
                match std::env::var(name) {
                    // One encoded path segment (issue 17): an account id cannot move the URL.
                    Ok(value) if !value.is_empty() => out.push_str(&path_segment(name, &value)?),
                    _ => {
                        return Err(ProviderError::other(
                            format!("{name} is required for provider {provider} but is not set."),
                            None,
                        ));
                    }
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_vendor_messages() {
        assert_eq!(
            error_body_message(r#"{"error":{"message":"Invalid API key","type":"auth"}}"#),
            "Invalid API key"
        );
        assert_eq!(error_body_message(r#"{"error":"busy"}"#), "busy");
        assert_eq!(error_body_message("gateway down"), "gateway down");
        assert_eq!(error_body_message(""), "(empty response body)");
    }
}
