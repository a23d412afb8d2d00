//! `OAuthCredentials`: what a login returns and a refresh replaces (pi's `OAuthCredentials`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::secret::Secret;

/// Credentials from an OAuth login, in pi's JSON shape: `{"refresh", "access", "expires", ...}`,
/// where `expires` is a Unix time in milliseconds and any further keys are provider-specific
/// (`enterpriseUrl` for GitHub Copilot, `accountId` for OpenAI Codex) and kept as they are.
///
/// `Debug` shows the expiry and the names of the extra keys, never a token or an extra value.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthCredentials {
    /// The refresh token (for GitHub Copilot: the GitHub access token).
    pub refresh: Secret,
    /// The access token: what [`get_api_key`](super::OAuthProvider::get_api_key) returns.
    pub access: Secret,
    /// When `access` stops working, in Unix milliseconds (providers subtract a safety margin).
    #[serde(deserialize_with = "millis")]
    pub expires: i64,
    /// Provider-specific fields, kept in the order they were read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OAuthCredentials {
    /// Credentials with no extra fields.
    pub fn new(access: impl Into<Secret>, refresh: impl Into<Secret>, expires: i64) -> Self {
        Self {
            refresh: refresh.into(),
            access: access.into(),
            expires,
            extra: Map::new(),
        }
    }

    /// Whether the access token must be refreshed at `now_ms` (pi: `Date.now() >= expires`).
    pub fn is_expired(&self, now_ms: i64) -> bool {
        now_ms >= self.expires
    }

    /// A string extra field.
    pub fn extra_str(&self, key: &str) -> Option<&str> {
        self.extra.get(key).and_then(Value::as_str)
    }

    /// GitHub Copilot's `enterpriseUrl` (the GitHub Enterprise domain), if any.
    pub fn enterprise_url(&self) -> Option<&str> {
        self.extra_str("enterpriseUrl")
    }

    /// OpenAI Codex's `accountId` (the ChatGPT account), if any.
    pub fn account_id(&self) -> Option<&str> {
        self.extra_str("accountId")
    }
}

impl fmt::Debug for OAuthCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthCredentials")
            .field("refresh", &self.refresh)
            .field("access", &self.access)
            .field("expires", &self.expires)
            .field("extra", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Reads `expires` from any JSON number: pi computes it with floating-point arithmetic, so a
/// file may hold `1.7e12` or a fraction.
fn millis<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let number = serde_json::Number::deserialize(deserializer)?;
    if let Some(value) = number.as_i64() {
        return Ok(value);
    }
    match number.as_f64() {
        Some(value) if value.is_finite() => Ok(float_to_millis(value)),
        _ => Err(serde::de::Error::custom("`expires` is out of range")),
    }
}

/// Rounds a millisecond count held in a float (`as` saturates at the `i64` range).
pub(crate) fn float_to_millis(value: f64) -> i64 {
    value.round() as i64
}

/// The expiry, in Unix milliseconds, of a token that lives `seconds` from `now` (a server's
/// `expires_in`), `margin_ms` early. Saturating: a server's absurd lifetime (`1e300`, or
/// negative) is the far future or the past, never an overflow (a panic in a debug build, a
/// wrapped expiry that is always past in a release one).
pub(crate) fn expiry_after(now: i64, seconds: f64, margin_ms: i64) -> i64 {
    now.saturating_add(float_to_millis(seconds * 1000.0))
        .saturating_sub(margin_ms)
}
