//! Per-request options shared by every provider, and the secret wrapper for API keys.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::model::Model;

/// An API key. Its `Debug` and `Display` never show the secret, so it cannot leak into logs,
/// errors or events by accident; call [`ApiKey::expose`] at the one place that sends it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The secret itself, for the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `true` for an empty key.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self::new(key)
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self::new(key)
    }
}

/// How hard a reasoning model should think (pi's `ThinkingLevel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// The least.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high (only models that list it support it).
    Xhigh,
}

impl ThinkingLevel {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }
}

/// How long a provider should keep a prompt cache (pi's `cacheRetention`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetention {
    /// No cache markers.
    None,
    /// The provider's default (about five minutes).
    #[default]
    Short,
    /// Extended retention (an hour, or 24 h where offered).
    Long,
}

impl CacheRetention {
    /// The retention to use: the request's, else `PI_CACHE_RETENTION=long` from the
    /// environment, else short (pi's rule).
    pub fn resolve(requested: Option<CacheRetention>) -> CacheRetention {
        requested.unwrap_or_else(|| match std::env::var("PI_CACHE_RETENTION").as_deref() {
            Ok("long") => CacheRetention::Long,
            _ => CacheRetention::Short,
        })
    }
}

/// Inspects or replaces a provider's request body before it is sent (pi's `onPayload`):
/// return `Some(body)` to send that body instead.
pub type OnPayload = dyn Fn(&Value, &Model) -> Option<Value> + Send + Sync;

/// Sees the HTTP status and headers once a response arrives, before its body is read (pi's
/// `onResponse`). Header names are lowercase.
pub type OnResponse = dyn Fn(u16, &BTreeMap<String, String>, &Model) + Send + Sync;

/// A callback field that `Debug` can print without showing the closure.
pub struct Callback<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Clone for Callback<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: ?Sized> fmt::Debug for Callback<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<callback>")
    }
}

/// Default number of retries of a request that failed before any byte of the answer.
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// Default cap on a single retry delay, including a server's `Retry-After`.
pub const DEFAULT_MAX_RETRY_DELAY_MS: u64 = 60_000;
/// Default time to wait for a response's headers, per attempt (10 minutes, as the OpenAI and
/// Anthropic SDKs).
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 600_000;
/// Default time a streamed body may send nothing before the request fails (10 minutes: long
/// enough for a slow local model or a long silent reasoning phase).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 600_000;
/// Default cap on one SSE line or event (16 MiB: room for an inline image or a huge tool call).
pub const DEFAULT_MAX_EVENT_BYTES: u64 = 16 << 20;
/// Default cap on the part of an error body that is read (256 KiB).
pub const DEFAULT_MAX_ERROR_BODY_BYTES: u64 = 256 << 10;

/// Token budgets per thinking level for budget-based providers (Anthropic's non-adaptive
/// models, Gemini 2.x); a level left `None` keeps the provider's default (pi's
/// `ThinkingBudgets`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThinkingBudgets {
    /// Budget for `minimal`.
    pub minimal: Option<u64>,
    /// Budget for `low`.
    pub low: Option<u64>,
    /// Budget for `medium`.
    pub medium: Option<u64>,
    /// Budget for `high` (and `xhigh`).
    pub high: Option<u64>,
}

impl ThinkingBudgets {
    /// The custom budget for `level`, if set.
    pub fn get(&self, level: ThinkingLevel) -> Option<u64> {
        match level {
            ThinkingLevel::Minimal => self.minimal,
            ThinkingLevel::Low => self.low,
            ThinkingLevel::Medium => self.medium,
            ThinkingLevel::High | ThinkingLevel::Xhigh => self.high,
        }
    }
}

/// Options for one request. Every field is optional; `Default` sends nothing extra.
///
/// Its `Debug` output hides credential headers (see `ai/redact.rs`).
#[derive(Clone, Default)]
pub struct StreamOptions {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Output-token cap.
    pub max_tokens: Option<u64>,
    /// Cancels the request; the stream then ends with an `error` event whose reason is `aborted`.
    pub signal: Option<CancellationToken>,
    /// Overrides the key found in the environment.
    pub api_key: Option<ApiKey>,
    /// Extra HTTP headers, applied last so they override the model's.
    pub headers: BTreeMap<String, String>,
    /// Session id, used for prompt-cache keys.
    pub session_id: Option<String>,
    /// Reasoning level for reasoning models (`None` = provider default / off).
    pub reasoning: Option<ThinkingLevel>,
    /// Passed through as the request's `tool_choice`.
    pub tool_choice: Option<serde_json::Value>,
    /// Custom thinking budgets for budget-based providers.
    pub thinking_budgets: Option<ThinkingBudgets>,
    /// Prompt-cache retention (default: `PI_CACHE_RETENTION`, else short).
    pub cache_retention: Option<CacheRetention>,
    /// Retries of a request that failed before the first byte of its answer (408, 409, 429,
    /// 5xx, connection errors). Default [`DEFAULT_MAX_RETRIES`]; `Some(0)` disables them.
    pub max_retries: Option<u32>,
    /// Cap on one retry delay (default [`DEFAULT_MAX_RETRY_DELAY_MS`]). A server asking to wait
    /// longer (`Retry-After`) makes the request fail at once, with the server's delay in the
    /// message, instead of sleeping.
    pub max_retry_delay_ms: Option<u64>,
    /// Timeout until the response headers arrive, per attempt (redirects included). `None` =
    /// [`DEFAULT_REQUEST_TIMEOUT_MS`]; `Some(0)` = no timeout.
    pub request_timeout_ms: Option<u64>,
    /// Timeout between two chunks of a streamed body; a stalled stream then fails. `None` =
    /// [`DEFAULT_IDLE_TIMEOUT_MS`]; `Some(0)` = no timeout.
    pub idle_timeout_ms: Option<u64>,
    /// See [`OnPayload`].
    pub on_payload: Option<Callback<OnPayload>>,
    /// See [`OnResponse`].
    pub on_response: Option<Callback<OnResponse>>,
    /// Cap on one SSE line or event; a larger one ends the stream with an error. `None` =
    /// [`DEFAULT_MAX_EVENT_BYTES`].
    pub max_event_bytes: Option<u64>,
    /// Cap on the part of an error response's body that is read (the rest is dropped). `None` =
    /// [`DEFAULT_MAX_ERROR_BODY_BYTES`].
    pub max_error_body_bytes: Option<u64>,
}

impl StreamOptions {
    /// `true` once the caller has cancelled.
    pub fn is_aborted(&self) -> bool {
        self.signal
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_never_prints() {
        let options = StreamOptions {
            api_key: Some(ApiKey::new("sk-secret-123")),
            ..StreamOptions::default()
        };
        let shown = format!("{options:?} {}", ApiKey::new("sk-secret-123"));
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
}
