//! Why a model call failed, in a form a program can act on: [`ErrorKind`] (the `errorKind`
//! field of a failed [`AssistantMessage`](super::AssistantMessage)) and [`ProviderError`], the
//! error a provider's request ends with before it becomes that message.
//!
//! The text stays pi's (`errorMessage`); the kind, the HTTP status (`httpStatus`) and the delay
//! a server asked for (`retryAfterMs`) are extra fields pi does not have, so transcripts still
//! load in pi.

pub(crate) use super::error_kind::{ErrorKind, RunLimit};
use super::options::PayloadError;
use super::overflow::is_overflow_text;
use super::types::{AssistantMessage, StopReason};

/// A failed assistant message as an error a program can `?` (the opt-in to raising; by
/// default failures are data, as in pi). Its `Display` is the message's `errorMessage`.
///
/// ```
/// use pi_agent::ai::{AssistantMessage, ErrorKind, StopReason};
///
/// let failed = AssistantMessage {
///     stop_reason: StopReason::Error,
///     error_message: Some("429 slow down".into()),
///     error_kind: Some(ErrorKind::RateLimit),
///     retry_after_ms: Some(2000),
///     ..AssistantMessage::default()
/// };
/// let error = failed.into_result().unwrap_err();
/// assert_eq!(error.kind, Some(ErrorKind::RateLimit));
/// assert_eq!(error.retry_after_ms, Some(2000));
/// assert_eq!(error.to_string(), "429 slow down");
/// ```
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct MessageError {
    /// The text (`errorMessage`; a generic text when the message had none).
    pub message: String,
    /// The kind (`errorKind`), when one fits.
    pub kind: Option<ErrorKind>,
    /// Whether the message was aborted (`stopReason: "aborted"`) rather than failed.
    pub aborted: bool,
    /// The HTTP status of the failed response (`httpStatus`).
    pub http_status: Option<u16>,
    /// The delay the server asked for, in milliseconds (`retryAfterMs`).
    pub retry_after_ms: Option<u64>,
    /// The run limit that ended the run (`runLimit`), for kind `run_limit`.
    pub run_limit: Option<RunLimit>,
}

impl MessageError {
    /// The failure of `message`, if its stop reason is `error` or `aborted`.
    pub fn of(message: &AssistantMessage) -> Option<Self> {
        if !message.stop_reason.is_failure() {
            return None;
        }
        let aborted = message.stop_reason == StopReason::Aborted;
        Some(Self {
            message: message.error_message.clone().unwrap_or_else(|| {
                if aborted {
                    "Request was aborted".to_owned()
                } else {
                    "The model call failed".to_owned()
                }
            }),
            kind: message
                .error_kind
                .or_else(|| aborted.then_some(ErrorKind::Aborted)),
            aborted,
            http_status: message.http_status,
            retry_after_ms: message.retry_after_ms,
            run_limit: message.run_limit,
        })
    }

    /// Whether the same request may succeed later (see [`ErrorKind::is_transient`]).
    pub fn is_transient(&self) -> bool {
        self.kind.is_some_and(ErrorKind::is_transient)
    }
}

impl AssistantMessage {
    /// The failure of this message, if its stop reason is `error` or `aborted`.
    pub fn error(&self) -> Option<MessageError> {
        MessageError::of(self)
    }

    /// The message, or its failure as an error (for `complete(...).await.into_result()?`).
    pub fn into_result(self) -> Result<AssistantMessage, MessageError> {
        match MessageError::of(&self) {
            Some(error) => Err(error),
            None => Ok(self),
        }
    }
}

/// Records an upstream stop on the message being built: the stop reason and, for one that is
/// not a normal end, the error text from `mapped` (a provider's `map_*_reason`) and the kind
/// `upstream` names (`refusal` for the refusal and content-filter reasons).
pub(crate) fn record_stop(
    message: &mut AssistantMessage,
    mapped: (StopReason, Option<String>),
    upstream: &str,
) {
    let (stop_reason, error_message) = mapped;
    message.stop_reason = stop_reason;
    message.error_kind = error_message
        .as_ref()
        .and_then(|_| ErrorKind::from_stop_reason(upstream));
    message.error_message = error_message;
}

/// Why a provider's request failed. Its `Display` is the failed message's `errorMessage`
/// (pi's text); [`kind`](Self::kind), [`http_status`](Self::http_status) and
/// [`retry_after_ms`](Self::retry_after_ms) fill `errorKind`, `httpStatus` and `retryAfterMs`.
///
/// A provider's run function returns it to [`StreamWriter::drive`](super::StreamWriter::drive);
/// a plain `String` converts to [`ProviderError::Other`] with no kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The server answered with an error status (after the retries allowed).
    #[error("{message}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// `"<status> <provider's message>"`, or the provider's own wording.
        message: String,
        /// The delay the server asked for (`retry-after-ms`, `retry-after`), when it named one.
        retry_after_ms: Option<u64>,
    },
    /// No response, or its body broke off: connecting failed, the connection was reset.
    #[error("{0}")]
    Network(String),
    /// A time limit ran out.
    #[error("{0}")]
    Timeout(String),
    /// The response could not be read as its protocol says.
    #[error("{0}")]
    Decode(String),
    /// The caller aborted the request.
    #[error("Request was aborted")]
    Aborted,
    /// The provider reported a failure inside a successful response: an error event, a failed
    /// response status, a stop reason that is not a normal end.
    #[error("{message}")]
    Upstream {
        /// The provider's message.
        message: String,
        /// What the provider's error code or stop reason says, when it says.
        kind: Option<ErrorKind>,
        /// The HTTP-style status the provider put in the error, if any.
        status: Option<u16>,
    },
    /// A failure another layer already described: a message whose stop reason is a failure
    /// (a faux response, a custom stream function's message), an `error` event a proxy relayed.
    /// Its fields are taken as given.
    #[error("{message}")]
    Reported {
        /// The message (`errorMessage`).
        message: String,
        /// The kind given (`errorKind`), if any.
        kind: Option<ErrorKind>,
        /// The HTTP status given (`httpStatus`), if any.
        status: Option<u16>,
        /// The retry delay given (`retryAfterMs`), if any.
        retry_after_ms: Option<u64>,
    },
    /// Anything else: a request that could not be made (a missing key, an invalid header, a
    /// configuration error), or a custom provider's message.
    #[error("{message}")]
    Other {
        /// The message.
        message: String,
        /// The kind, when one fits (`auth` for a missing key).
        kind: Option<ErrorKind>,
    },
}

impl ProviderError {
    /// A failed HTTP response.
    pub fn http(status: u16, message: impl Into<String>, retry_after_ms: Option<u64>) -> Self {
        Self::Http {
            status,
            message: message.into(),
            retry_after_ms,
        }
    }

    /// A failure of another kind (see [`ProviderError::Other`]).
    pub fn other(message: impl Into<String>, kind: Option<ErrorKind>) -> Self {
        Self::Other {
            message: message.into(),
            kind,
        }
    }

    /// An error the provider sent inside the stream: classified by its `code` (an error type
    /// or code such as `overloaded_error`) and its `status` when present.
    pub fn upstream(message: impl Into<String>, code: Option<&str>, status: Option<u16>) -> Self {
        let kind = code
            .and_then(ErrorKind::from_code)
            .or_else(|| status.and_then(ErrorKind::from_status));
        Self::Upstream {
            message: message.into(),
            kind,
            status,
        }
    }

    /// What kind of failure this is. A message that reports a context overflow makes an HTTP
    /// or upstream error a `context_overflow` (unless it is a rate limit, an auth failure or a
    /// refusal).
    pub fn kind(&self) -> Option<ErrorKind> {
        let (base, message) = match self {
            Self::Http {
                status, message, ..
            } => (ErrorKind::from_status(*status), message),
            Self::Network(_) => return Some(ErrorKind::Network),
            Self::Timeout(_) => return Some(ErrorKind::Timeout),
            Self::Decode(_) => return Some(ErrorKind::Decode),
            Self::Aborted => return Some(ErrorKind::Aborted),
            Self::Upstream { message, kind, .. }
            | Self::Reported { message, kind, .. }
            | Self::Other { message, kind } => (*kind, message),
        };
        let may_be_overflow =
            matches!(base, None | Some(ErrorKind::BadRequest | ErrorKind::Server));
        if may_be_overflow && is_overflow_text(message) {
            return Some(ErrorKind::ContextOverflow);
        }
        base
    }

    /// The HTTP status of the failed response, when there was one.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::Http { status, .. } => Some(*status),
            Self::Upstream { status, .. } | Self::Reported { status, .. } => *status,
            _ => None,
        }
    }

    /// The delay the server asked for before a retry, in milliseconds, when it named one.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            Self::Http { retry_after_ms, .. } | Self::Reported { retry_after_ms, .. } => {
                *retry_after_ms
            }
            _ => None,
        }
    }
}

impl ProviderError {
    /// The same error with its text rewritten by `f` (to hide credentials a server echoed).
    pub(crate) fn map_message(self, f: impl FnOnce(&str) -> String) -> Self {
        match self {
            Self::Http {
                status,
                message,
                retry_after_ms,
            } => Self::http(status, f(&message), retry_after_ms),
            Self::Network(message) => Self::Network(f(&message)),
            Self::Timeout(message) => Self::Timeout(f(&message)),
            Self::Decode(message) => Self::Decode(f(&message)),
            Self::Aborted => Self::Aborted,
            Self::Upstream {
                message,
                kind,
                status,
            } => Self::Upstream {
                message: f(&message),
                kind,
                status,
            },
            Self::Reported {
                message,
                kind,
                status,
                retry_after_ms,
            } => Self::Reported {
                message: f(&message),
                kind,
                status,
                retry_after_ms,
            },
            Self::Other { message, kind } => Self::other(f(&message), kind),
        }
    }
}

impl From<String> for ProviderError {
    fn from(message: String) -> Self {
        Self::other(message, None)
    }
}

impl From<&str> for ProviderError {
    fn from(message: &str) -> Self {
        Self::other(message, None)
    }
}

/// A failed `on_payload`: the request is not sent.
impl From<PayloadError> for ProviderError {
    fn from(error: PayloadError) -> Self {
        Self::other(error.0, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_kinds() {
        let kind = |status, text: &str| ProviderError::http(status, text, None).kind();
        assert_eq!(kind(401, "401 bad key"), Some(ErrorKind::Auth));
        assert_eq!(kind(403, "403 no"), Some(ErrorKind::Auth));
        assert_eq!(kind(404, "404 no model"), Some(ErrorKind::NotFound));
        assert_eq!(kind(400, "400 bad"), Some(ErrorKind::BadRequest));
        assert_eq!(kind(422, "422 bad"), Some(ErrorKind::BadRequest));
        assert_eq!(
            kind(
                400,
                "400 prompt is too long: 210000 tokens > 200000 maximum"
            ),
            Some(ErrorKind::ContextOverflow)
        );
        assert_eq!(
            kind(413, "413 status code (no body)"),
            Some(ErrorKind::ContextOverflow)
        );
        assert_eq!(
            kind(429, "429 rate limit: too many tokens"),
            Some(ErrorKind::RateLimit)
        );
        assert_eq!(kind(500, "500 oops"), Some(ErrorKind::Server));
        assert_eq!(kind(529, "529 overloaded"), Some(ErrorKind::Server));
        assert_eq!(kind(302, "302 moved"), None);
    }

    #[test]
    fn upstream_codes_map_to_kinds() {
        let kind = |code: &str| ProviderError::upstream("m", Some(code), None).kind();
        assert_eq!(kind("overloaded_error"), Some(ErrorKind::Server));
        assert_eq!(kind("rate_limit_error"), Some(ErrorKind::RateLimit));
        assert_eq!(kind("RESOURCE_EXHAUSTED"), Some(ErrorKind::RateLimit));
        assert_eq!(kind("authentication_error"), Some(ErrorKind::Auth));
        assert_eq!(kind("invalid_request_error"), Some(ErrorKind::BadRequest));
        assert_eq!(
            kind("context_length_exceeded"),
            Some(ErrorKind::ContextOverflow)
        );
        assert_eq!(kind("server_error"), Some(ErrorKind::Server));
        assert_eq!(kind("ThrottlingException"), Some(ErrorKind::RateLimit));
        assert_eq!(kind("ResourceNotFoundException"), Some(ErrorKind::NotFound));
        assert_eq!(kind("request_too_large"), Some(ErrorKind::ContextOverflow));
        assert_eq!(kind("something_new"), None);
        let by_status = ProviderError::upstream("m", None, Some(503));
        assert_eq!(by_status.kind(), Some(ErrorKind::Server));
        assert_eq!(by_status.http_status(), Some(503));
        assert_eq!(
            ErrorKind::from_stop_reason("content_filter"),
            Some(ErrorKind::Refusal)
        );
        assert_eq!(
            ErrorKind::from_stop_reason("SAFETY"),
            Some(ErrorKind::Refusal)
        );
        assert_eq!(ErrorKind::from_stop_reason("brand_new"), None);
    }

    #[test]
    fn display_is_the_message_and_names_round_trip() {
        assert_eq!(
            ProviderError::http(429, "429 slow down", Some(2000)).to_string(),
            "429 slow down"
        );
        assert_eq!(ProviderError::Aborted.to_string(), "Request was aborted");
        assert_eq!(ProviderError::from("plain").kind(), None);
        for kind in ErrorKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(ErrorKind::from_name(kind.as_str()), Some(kind));
        }
    }
}
