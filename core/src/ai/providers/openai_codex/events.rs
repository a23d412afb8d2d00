//! Codex's stream events on top of the Responses ones (pi's `mapCodexEvents` and
//! `parseErrorResponse`), the same for SSE and WebSocket:
//!
//! - `error` ends the stream with `Codex error: <message | code | the event>`;
//! - `response.failed` with `<message>` (or `Codex response failed`);
//! - `response.done`, `response.completed` and `response.incomplete` all complete the response
//!   (as `response.completed` with the status, when it is one the API defines);
//! - everything else goes to the shared Responses decoder.

use std::sync::LazyLock;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::super::openai_responses::response::ResponseState;
use crate::ai::error::ProviderError;
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::partial_json::parse_json_lenient;

/// The statuses a completed response may carry (others are dropped, as pi does).
const STATUSES: [&str; 6] = [
    "completed",
    "incomplete",
    "failed",
    "cancelled",
    "queued",
    "in_progress",
];

/// Why a Codex stream ended badly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CodexError {
    /// The API said so (an `error` or `response.failed` event): never retried over SSE.
    Api(ProviderError),
    /// The server sent something that is not Codex's protocol: never retried over SSE.
    Protocol(String),
    /// The connection failed or closed early.
    Transport(String),
}

impl CodexError {
    /// The error the stream ends with: a protocol error is `decode`, a transport error
    /// `timeout` when a time limit ran out, else `network`.
    pub(crate) fn into_error(self) -> ProviderError {
        match self {
            Self::Api(error) => error,
            Self::Protocol(message) => ProviderError::Decode(message),
            Self::Transport(message) => transport_error(message),
        }
    }
}

/// A transport failure's error: `timeout` when a time limit ran out, else `network`.
pub(crate) fn transport_error(message: String) -> ProviderError {
    if message.contains("timed out") || message.contains("idle timeout") {
        ProviderError::Timeout(message)
    } else {
        ProviderError::Network(message)
    }
}

/// Parses one event's JSON (`what` names the transport in the error).
/// A lone surrogate escape reads as U+FFFD (see [`parse_json_lenient`]).
pub(crate) fn parse(data: &str, what: &str) -> Result<Value, CodexError> {
    parse_json_lenient(data)
        .map_err(|error| CodexError::Protocol(format!("Invalid Codex {what} JSON: {error}")))
}

/// Maps one event: `Ok(None)` for an event without a type (ignored), the event to decode
/// otherwise.
pub(crate) fn map_event(mut event: Value) -> Result<Option<Value>, CodexError> {
    let Some(kind) = event.get("type").and_then(Value::as_str).map(str::to_owned) else {
        return Ok(None);
    };
    match kind.as_str() {
        "error" => {
            let field = |name: &str| {
                event
                    .get(name)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
            };
            let text = field("message")
                .or_else(|| field("code"))
                .unwrap_or_else(|| event.to_string());
            Err(CodexError::Api(ProviderError::upstream(
                format!("Codex error: {text}"),
                field("code").as_deref(),
                None,
            )))
        }
        "response.failed" => {
            let message = event
                .pointer("/response/error/message")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("Codex response failed");
            let code = event
                .pointer("/response/error/code")
                .and_then(Value::as_str);
            Err(CodexError::Api(ProviderError::upstream(
                message, code, None,
            )))
        }
        "response.done" | "response.completed" | "response.incomplete" => {
            event["type"] = Value::from("response.completed");
            if let Some(response) = event.get_mut("response").and_then(Value::as_object_mut) {
                let known = response
                    .get("status")
                    .and_then(Value::as_str)
                    .is_some_and(|status| STATUSES.contains(&status));
                if !known {
                    response.shift_remove("status");
                }
            }
            Ok(Some(event))
        }
        _ => Ok(Some(event)),
    }
}

/// Decodes one event's JSON text into `state`; `Ok(true)` once the response is complete.
pub(crate) async fn handle_text(
    state: &mut ResponseState,
    data: &str,
    what: &str,
    writer: &mut StreamWriter,
    model: &Model,
) -> Result<bool, CodexError> {
    let event = parse(data, what)?;
    let Some(event) = map_event(event)? else {
        return Ok(false);
    };
    // Only the first event of a WebSocket answer starts the stream; over SSE `start` was sent
    // when the response arrived.
    writer.start().await;
    state
        .handle_value(&event, None, writer, model)
        .await
        .map_err(CodexError::Api)?;
    Ok(state.finished)
}

static USAGE_LIMIT_CODE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)usage_limit_reached|usage_not_included|rate_limit_exceeded")
        .expect("a valid pattern")
});

static RETRYABLE_TEXT: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)rate.?limit|overloaded|service.?unavailable|upstream.?connect|connection.?refused",
    )
    .expect("a valid pattern")
});

/// The `error` object of an error body, if it is JSON with one.
fn error_object(body: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(body).ok()?;
    value.get("error").filter(|e| e.is_object()).cloned()
}

/// The error code (or type) of an error body.
fn error_code(error: &Value) -> String {
    ["code", "type"]
        .iter()
        .filter_map(|key| error.get(*key).and_then(Value::as_str))
        .find(|code| !code.is_empty())
        .unwrap_or("")
        .to_owned()
}

/// Whether pi's Codex loop retries a failed response: 429 and 5xx gateway statuses, or a body
/// that reads like an overload; never a plan's exhausted quota (`usage_limit_reached`,
/// `usage_not_included`), which no retry within minutes can fix.
pub(crate) fn is_retryable(status: u16, body: &str) -> bool {
    let quota = error_object(body).is_some_and(|error| {
        let code = error_code(&error);
        code.eq_ignore_ascii_case("usage_limit_reached")
            || code.eq_ignore_ascii_case("usage_not_included")
    });
    !quota && (matches!(status, 429 | 500 | 502 | 503 | 504) || RETRYABLE_TEXT.is_match(body))
}

/// pi's message for a failed response (`parseErrorResponse`): the usage-limit sentence for a
/// 429 or a usage-limit code (with the plan and the minutes until the limit resets), else the
/// API's message, else the body, else the status text.
pub(crate) fn error_message(status: reqwest::StatusCode, body: &str) -> String {
    let raw = body.trim();
    let fallback = || {
        if raw.is_empty() {
            status
                .canonical_reason()
                .unwrap_or("Request failed")
                .to_owned()
        } else {
            crate::text::prefix(raw, 2_000).to_owned()
        }
    };
    let Some(error) = error_object(body) else {
        return fallback();
    };
    let code = error_code(&error);
    if USAGE_LIMIT_CODE.is_match(&code) || status.as_u16() == 429 {
        let plan = error
            .get("plan_type")
            .and_then(Value::as_str)
            .map(|plan| format!(" ({} plan)", plan.to_lowercase()))
            .unwrap_or_default();
        let when = error
            .get("resets_at")
            .and_then(Value::as_f64)
            .filter(|at| *at != 0.0)
            .map(|at| {
                let now_ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_millis() as f64);
                let minutes = ((at * 1000.0 - now_ms) / 60_000.0).round().max(0.0);
                format!(" Try again in ~{minutes} min.")
            })
            .unwrap_or_default();
        return format!("You have hit your ChatGPT usage limit{plan}.{when}")
            .trim()
            .to_owned();
    }
    error
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map_or_else(fallback, str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_map_like_pi() {
        assert_eq!(map_event(json!({"no": "type"})), Ok(None));
        assert_eq!(
            map_event(json!({"type": "error", "code": "server_error", "message": "boom"})),
            Err(CodexError::Api(ProviderError::upstream(
                "Codex error: boom",
                Some("server_error"),
                None
            )))
        );
        assert_eq!(
            map_event(json!({"type": "error", "code": "bad"})),
            Err(CodexError::Api(ProviderError::upstream(
                "Codex error: bad",
                Some("bad"),
                None
            )))
        );
        assert_eq!(
            map_event(json!({"type": "error"})),
            Err(CodexError::Api(ProviderError::upstream(
                r#"Codex error: {"type":"error"}"#,
                None,
                None
            )))
        );
        assert_eq!(
            map_event(json!({"type": "response.failed", "response": {"error": {"message": "no"}}})),
            Err(CodexError::Api(ProviderError::upstream("no", None, None)))
        );
        assert_eq!(
            map_event(json!({"type": "response.failed"})),
            Err(CodexError::Api(ProviderError::upstream(
                "Codex response failed",
                None,
                None
            )))
        );
        let done =
            map_event(json!({"type": "response.done", "response": {"status": "weird", "id": "r"}}))
                .unwrap()
                .unwrap();
        assert_eq!(
            done,
            json!({"type": "response.completed", "response": {"id": "r"}})
        );
        let incomplete =
            map_event(json!({"type": "response.incomplete", "response": {"status": "incomplete"}}))
                .unwrap()
                .unwrap();
        assert_eq!(incomplete["response"]["status"], "incomplete");
    }

    #[test]
    fn usage_limits_and_messages() {
        let status = |n| reqwest::StatusCode::from_u16(n).unwrap();
        let limit = json!({"error": {"code": "usage_limit_reached", "plan_type": "PLUS",
                                     "message": "limit"}})
        .to_string();
        assert_eq!(
            error_message(status(429), &limit),
            "You have hit your ChatGPT usage limit (plus plan)."
        );
        let far = (SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 600) as f64;
        let soon = json!({"error": {"type": "rate_limit_exceeded", "resets_at": far}}).to_string();
        let message = error_message(status(400), &soon);
        assert!(
            message.starts_with("You have hit your ChatGPT usage limit. Try again in ~"),
            "{message}"
        );
        assert_eq!(
            error_message(status(500), r#"{"error":{"message":"boom"}}"#),
            "boom"
        );
        assert_eq!(
            error_message(status(502), "<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_message(status(503), ""), "Service Unavailable");

        assert!(is_retryable(429, "{}"));
        assert!(is_retryable(503, ""));
        assert!(is_retryable(400, "upstream connect error"));
        assert!(!is_retryable(400, "bad request"));
        assert!(!is_retryable(401, r#"{"error":{"message":"expired"}}"#));
        assert!(!is_retryable(429, &limit));
    }
}
