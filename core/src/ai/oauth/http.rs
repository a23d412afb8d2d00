//! Requests to authorization servers: a timeout on each, a bounded body, and errors that
//! never quote a successful body (it holds tokens).

use std::time::Duration;

use reqwest::RequestBuilder;
use serde_json::Value;

use super::error::OAuthError;
use crate::ai::providers::http::{client, transport_error_message};

/// Token endpoints answer with a few hundred bytes; anything past this is not one.
const MAX_BODY_BYTES: usize = 256 * 1024;

/// How much of a non-JSON error body an error message quotes.
const MAX_ERROR_EXCERPT: usize = 300;

/// The shared client, for building a request.
pub(crate) fn http() -> reqwest::Client {
    client()
}

/// Sends `request` (to `url`, for messages) and returns the JSON body of a 2xx response.
pub(crate) async fn fetch_json(
    request: RequestBuilder,
    url: &str,
    timeout: Duration,
) -> Result<Value, OAuthError> {
    let (status, body) = send(request, url, timeout).await?;
    if !status.is_success() {
        return Err(OAuthError::Http {
            url: url.to_owned(),
            status: status.as_u16(),
            message: error_detail(&body),
        });
    }
    serde_json::from_slice(&body).map_err(|_| invalid(url, "the body is not JSON"))
}

/// Sends `request` and reports whether it got a 2xx status (for best-effort calls).
pub(crate) async fn succeeds(request: RequestBuilder, url: &str, timeout: Duration) -> bool {
    matches!(send(request, url, timeout).await, Ok((status, _)) if status.is_success())
}

/// An [`OAuthError::InvalidResponse`] for `url`.
pub(crate) fn invalid(url: &str, message: impl Into<String>) -> OAuthError {
    OAuthError::InvalidResponse {
        url: url.to_owned(),
        message: message.into(),
    }
}

/// The string field `key` of a JSON object.
pub(crate) fn string_field<'a>(json: &'a Value, key: &str) -> Option<&'a str> {
    json.get(key).and_then(Value::as_str)
}

/// The number field `key` of a JSON object.
pub(crate) fn number_field(json: &Value, key: &str) -> Option<f64> {
    json.get(key).and_then(Value::as_f64)
}

/// Reads the fields an answer must have, noting each one missing or of the wrong type; then
/// [`check`](Self::check) refuses the answer naming them all, in the order read. What a read
/// returns for a missing field (`""`, `0.0`) is never used past a failed `check`.
pub(crate) struct Fields<'a> {
    json: &'a Value,
    missing: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    /// A reader of `json`'s fields.
    pub(crate) fn new(json: &'a Value) -> Self {
        Self {
            json,
            missing: Vec::new(),
        }
    }

    /// The string field `key`.
    pub(crate) fn string(&mut self, key: &'static str) -> &'a str {
        self.read(key, string_field(self.json, key))
    }

    /// The string field `key`, where an empty string counts as missing.
    pub(crate) fn non_empty_string(&mut self, key: &'static str) -> &'a str {
        let value = string_field(self.json, key).filter(|value| !value.is_empty());
        self.read(key, value)
    }

    /// The number field `key`.
    pub(crate) fn number(&mut self, key: &'static str) -> f64 {
        self.read(key, number_field(self.json, key))
    }

    fn read<T: Default>(&mut self, key: &'static str, value: Option<T>) -> T {
        if value.is_none() {
            self.missing.push(key);
        }
        value.unwrap_or_default()
    }

    /// `Ok` when every field read was there, else an [`OAuthError::InvalidResponse`] for `url`:
    /// `"missing or invalid fields: a, b"`.
    pub(crate) fn check(self, url: &str) -> Result<(), OAuthError> {
        if self.missing.is_empty() {
            return Ok(());
        }
        let message = format!("missing or invalid fields: {}", self.missing.join(", "));
        Err(invalid(url, message))
    }
}

async fn send(
    request: RequestBuilder,
    url: &str,
    timeout: Duration,
) -> Result<(reqwest::StatusCode, Vec<u8>), OAuthError> {
    let transport = |err: &reqwest::Error| OAuthError::Transport {
        url: url.to_owned(),
        message: transport_error_message(err),
    };
    let mut response = request
        .timeout(timeout)
        .send()
        .await
        .map_err(|err| transport(&err))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|err| transport(&err))? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(OAuthError::Transport {
                url: url.to_owned(),
                message: format!("the response body exceeds {MAX_BODY_BYTES} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, body))
}

/// What an error body says: OAuth's `error` and `error_description` (RFC 6749 §5.2), a
/// `message`, or a short excerpt of a body that is not JSON.
fn error_detail(body: &[u8]) -> String {
    if let Ok(json) = serde_json::from_slice::<Value>(body) {
        let code = json
            .get("error")
            .and_then(|error| error.as_str().or_else(|| string_field(error, "message")));
        let description = string_field(&json, "error_description")
            .or_else(|| string_field(&json, "message"))
            .filter(|d| Some(*d) != code);
        match (code, description) {
            (Some(code), Some(description)) => return format!("{code}: {description}"),
            (Some(text), None) | (None, Some(text)) => return text.to_owned(),
            (None, None) => {}
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty response body)".to_owned();
    }
    crate::text::prefix(text, MAX_ERROR_EXCERPT).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_detail_prefers_oauth_fields() {
        assert_eq!(
            error_detail(
                br#"{"error":"invalid_grant","error_description":"Refresh token revoked"}"#
            ),
            "invalid_grant: Refresh token revoked"
        );
        assert_eq!(error_detail(br#"{"error":{"message":"bad"}}"#), "bad");
        assert_eq!(error_detail(br#"{"message":"Not Found"}"#), "Not Found");
        assert_eq!(error_detail(b"  "), "(empty response body)");
        assert_eq!(error_detail(&[b'x'; 1000]).len(), MAX_ERROR_EXCERPT);
    }

    #[test]
    fn fields_name_every_absent_one_in_order() {
        let json = serde_json::json!({"a": "x", "b": "", "n": 1.5, "c": 2});
        let mut fields = Fields::new(&json);
        assert_eq!(fields.string("a"), "x");
        assert_eq!(fields.string("b"), "");
        assert_eq!(fields.number("n"), 1.5);
        fields.check("u").unwrap();

        let mut fields = Fields::new(&json);
        fields.string("c");
        fields.non_empty_string("a");
        fields.non_empty_string("b");
        fields.number("a");
        match fields.check("u").unwrap_err() {
            OAuthError::InvalidResponse { url, message } => {
                assert_eq!(url, "u");
                assert_eq!(message, "missing or invalid fields: c, b, a");
            }
            other => panic!("{other:?}"),
        }
    }
}
