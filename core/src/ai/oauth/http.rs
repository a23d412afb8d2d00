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

/// `"missing or invalid fields: a, b"` for the `(name, present)` pairs that are absent, or
/// `None` when all are present.
pub(crate) fn missing_fields(fields: &[(&str, bool)]) -> Option<String> {
    let missing: Vec<&str> = fields
        .iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| *name)
        .collect();
    (!missing.is_empty()).then(|| format!("missing or invalid fields: {}", missing.join(", ")))
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
    fn missing_fields_lists_absent_names() {
        assert_eq!(missing_fields(&[("a", true), ("b", true)]), None);
        assert_eq!(
            missing_fields(&[("a", false), ("b", true), ("c", false)]).as_deref(),
            Some("missing or invalid fields: a, c")
        );
    }
}
