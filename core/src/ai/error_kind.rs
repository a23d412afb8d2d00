//! The kinds of failure a program can act on: [`ErrorKind`] (`errorKind` on a failed message)
//! and [`RunLimit`] (`runLimit`, which limit ended an agent run). A leaf: the message types and
//! the errors both name them.

use serde::{Deserialize, Deserializer, Serialize};

/// What kind of failure ended a model call (`errorKind` in a failed message's JSON).
///
/// New kinds may be added; a transcript with a kind this version does not know loads with no
/// kind. A failure that fits none of them (an unknown api, a provider-specific configuration
/// error, an unknown stop reason) has no kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// Too many requests or tokens (HTTP 429, a `rate_limit` error event): wait and retry;
    /// `retryAfterMs` says how long when the server said.
    RateLimit,
    /// The credentials were refused (HTTP 401/403) or none were found.
    Auth,
    /// The model or endpoint does not exist (HTTP 404).
    NotFound,
    /// The provider refused the request as malformed (HTTP 400/413/422, an invalid header):
    /// retrying the same request will not help.
    BadRequest,
    /// The provider failed or is overloaded (HTTP 5xx, 529, `overloaded` error events).
    Server,
    /// The connection could not be made, was reset, or the body was cut off.
    Network,
    /// A time limit ran out: the response headers, a silent stream, an agent watchdog.
    Timeout,
    /// The response could not be read: a malformed chunk, an event too large, a body that is
    /// not an event stream, or a stream that ended before the protocol's end.
    Decode,
    /// The caller aborted the request.
    Aborted,
    /// The prompt does not fit the model's context window (the texts
    /// [`is_context_overflow`](super::is_context_overflow) knows): compact and retry.
    ContextOverflow,
    /// The model or the provider's filter declined to answer (Anthropic `refusal`, OpenAI
    /// `content_filter`, Gemini `SAFETY`, Bedrock `guardrail_intervened`, ...).
    Refusal,
    /// The answer does not match the requested output schema (an
    /// [`OutputSchema`](super::OutputSchema) request): not JSON, or JSON the schema rejects.
    /// `errorMessage` is the validation report; re-asking with it may help.
    InvalidOutput,
    /// Not a model failure: the agent ended the run because one of its run limits was reached
    /// (`runLimit` on the message names which; see `RunLimits` in the agent layer).
    RunLimit,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 13] = [
        Self::RateLimit,
        Self::Auth,
        Self::NotFound,
        Self::BadRequest,
        Self::Server,
        Self::Network,
        Self::Timeout,
        Self::Decode,
        Self::Aborted,
        Self::ContextOverflow,
        Self::Refusal,
        Self::InvalidOutput,
        Self::RunLimit,
    ];

    /// The wire name (`"rate_limit"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimit => "rate_limit",
            Self::Auth => "auth",
            Self::NotFound => "not_found",
            Self::BadRequest => "bad_request",
            Self::Server => "server",
            Self::Network => "network",
            Self::Timeout => "timeout",
            Self::Decode => "decode",
            Self::Aborted => "aborted",
            Self::ContextOverflow => "context_overflow",
            Self::Refusal => "refusal",
            Self::InvalidOutput => "invalid_output",
            Self::RunLimit => "run_limit",
        }
    }

    /// The kind with this wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// Whether the same request may succeed later: `rate_limit`, `server`, `network` and
    /// `timeout`. (The library has already retried those within `max_retries`.)
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            Self::RateLimit | Self::Server | Self::Network | Self::Timeout
        )
    }

    /// The kind of an HTTP error status, before looking at the message.
    pub fn from_status(status: u16) -> Option<Self> {
        Some(match status {
            401 | 403 => Self::Auth,
            404 => Self::NotFound,
            408 => Self::Timeout,
            429 => Self::RateLimit,
            400..=499 => Self::BadRequest,
            500..=599 => Self::Server,
            _ => return None,
        })
    }

    /// The kind an upstream error code or type names (`rate_limit_error`, `overloaded_error`,
    /// `RESOURCE_EXHAUSTED`, `context_length_exceeded`, ...), if it names one.
    pub(crate) fn from_code(code: &str) -> Option<Self> {
        // Compared as lower-case letters and digits only: `rate_limit_error`,
        // `RateLimitError` and `ThrottlingException` read alike.
        let code: String = code
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let has = |words: &[&str]| words.iter().any(|word| code.contains(word));
        Some(
            if has(&["contextlength", "contextwindow", "toolong", "toolarge"]) {
                Self::ContextOverflow
            } else if has(&["ratelimit", "resourceexhausted", "throttl", "quota"]) {
                Self::RateLimit
            } else if has(&["auth", "permission", "apikey", "forbidden", "denied"]) {
                Self::Auth
            } else if has(&["notfound"]) {
                Self::NotFound
            } else if has(&[
                "overloaded",
                "server",
                "internal",
                "unavailable",
                "apierror",
            ]) {
                Self::Server
            } else if has(&["timeout", "timedout", "deadline"]) {
                Self::Timeout
            } else if has(&["contentfilter", "safety", "refusal", "guardrail"]) {
                Self::Refusal
            } else if has(&["invalid", "badrequest", "argument", "validation"]) {
                Self::BadRequest
            } else {
                return None;
            },
        )
    }

    /// The kind of an upstream stop reason that is not a normal end, if it is a refusal
    /// (`refusal`, `content_filter`, `SAFETY`, `RECITATION`, `guardrail_intervened`, ...).
    pub(crate) fn from_stop_reason(reason: &str) -> Option<Self> {
        let reason = reason.to_ascii_lowercase();
        let refusals = [
            "refusal",
            "content_filter",
            "safety",
            "recitation",
            "blocklist",
            "prohibited",
            "spii",
            "guardrail",
            "sensitive",
        ];
        refusals
            .iter()
            .any(|word| reason.contains(word))
            .then_some(Self::Refusal)
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which run limit ended an agent run (`runLimit` on the run's last message, whose
/// `errorKind` is `run_limit`). The wire names are the limits' option names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum RunLimit {
    /// The number of model calls (`maxTurns`).
    MaxTurns,
    /// The number of tool calls (`maxToolCalls`).
    MaxToolCalls,
    /// Input tokens, cached ones included (`maxInputTokens`).
    MaxInputTokens,
    /// Output tokens (`maxOutputTokens`).
    MaxOutputTokens,
    /// All tokens (`maxTotalTokens`).
    MaxTotalTokens,
    /// The cost in USD (`maxCostUsd`).
    MaxCostUsd,
}

impl RunLimit {
    /// Every limit, in declaration order.
    pub const ALL: [RunLimit; 6] = [
        Self::MaxTurns,
        Self::MaxToolCalls,
        Self::MaxInputTokens,
        Self::MaxOutputTokens,
        Self::MaxTotalTokens,
        Self::MaxCostUsd,
    ];

    /// The wire name, which is the option's name (`"maxTurns"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxTurns => "maxTurns",
            Self::MaxToolCalls => "maxToolCalls",
            Self::MaxInputTokens => "maxInputTokens",
            Self::MaxOutputTokens => "maxOutputTokens",
            Self::MaxTotalTokens => "maxTotalTokens",
            Self::MaxCostUsd => "maxCostUsd",
        }
    }

    /// The limit with this wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|limit| limit.as_str() == name)
    }
}

impl std::fmt::Display for RunLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reads `runLimit` leniently, like [`lenient_kind`].
pub(crate) fn lenient_run_limit<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<RunLimit>, D::Error> {
    let name = Option::<String>::deserialize(deserializer)?;
    Ok(name.as_deref().and_then(RunLimit::from_name))
}

/// Reads `errorKind` leniently: a kind this version does not know is no kind, so that a
/// transcript written by a newer version still loads.
pub(crate) fn lenient_kind<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ErrorKind>, D::Error> {
    let name = Option::<String>::deserialize(deserializer)?;
    Ok(name.as_deref().and_then(ErrorKind::from_name))
}
