//! `Secret`: a token or key that serialises as a plain JSON string but never prints.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ai::options::ApiKey;

/// An OAuth access or refresh token, or a stored API key. Serialises as the plain string (so
/// `auth.json` keeps pi's shape), but its `Debug` and `Display` never show the value, so it
/// cannot leak into logs or error messages by accident; call [`Secret::expose`] at the one
/// place that sends it.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `true` for an empty value.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value as an [`ApiKey`] for [`StreamOptions`](crate::ai::StreamOptions).
    pub fn to_api_key(&self) -> ApiKey {
        ApiKey::new(self.0.clone())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}
