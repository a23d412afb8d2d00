//! HTTP plumbing shared by the HTTP providers: one pooled client, runtime checks, and turning a
//! failed response into a readable message.

use std::sync::LazyLock;
use std::time::Duration;

use serde_json::Value;

/// The process-wide client: connections are pooled across requests and providers.
pub fn client() -> &'static reqwest::Client {
    static CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    });
    &CLIENT
}

/// The message of a stream started outside a tokio runtime.
pub const NO_RUNTIME: &str = "pi-agent providers must be called from within a tokio runtime";

/// Whether we are inside a tokio runtime that can run a provider task.
pub fn has_runtime() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

/// The provider's own message from an error body, in the shapes vendors use
/// (`{"error":{"message":..}}`, `{"error":".."}`, `{"message":..}`, `{"detail":..}`), else the
/// raw body (truncated).
pub fn error_body_message(body: &str) -> String {
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
    let mut end = trimmed.len().min(2_000);
    while !trimmed.is_char_boundary(end) {
        end -= 1;
    }
    trimmed[..end].to_owned()
}

/// `"<status> <provider message>"`, the shape pi's SDK errors have.
pub fn http_error_message(status: reqwest::StatusCode, body: &str) -> String {
    format!("{} {}", status.as_u16(), error_body_message(body))
}

/// A transport error without the URL (which may carry a key in a query string).
pub fn transport_error_message(error: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut message = if error.is_connect() {
        "Connection error: could not connect to the provider".to_owned()
    } else if error.is_timeout() {
        "Request timed out".to_owned()
    } else if error.is_body() || error.is_decode() {
        "Connection error: the response body was cut off".to_owned()
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
