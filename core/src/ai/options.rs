//! Per-request options shared by every provider, and the secret wrapper for API keys.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

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

/// Options for one request. Every field is optional; `Default` sends nothing extra.
#[derive(Clone, Debug, Default)]
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
