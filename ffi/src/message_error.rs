//! Why a model call or a run failed, in a form a C program can act on: the `errorKind`,
//! `httpStatus`, `retryAfterMs` and `runLimit` of a failed assistant message, read from its
//! JSON or, for an agent's last run, from the agent itself.

use std::ffi::c_char;

use pi_agent::ai::{ErrorKind, MessageError, RunLimit};

use crate::args::{Out, arg_assistant_message};
use crate::boundary::opt_ref;
use crate::error::pi_error;
use crate::string::pi_str;

/// What kind of failure ended a model call (a failed message's `errorKind`). The values are
/// stable; new kinds may be added, so treat an unknown value as `NONE`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pi_message_error_kind {
    /// No kind: the message did not fail, or its failure fits no kind (or it came from pi).
    None = 0,
    /// `rate_limit`: too many requests or tokens (HTTP 429); wait `retry_after_ms` when given.
    RateLimit = 1,
    /// `auth`: the credentials were refused (HTTP 401/403) or none were found.
    Auth = 2,
    /// `not_found`: the model or endpoint does not exist (HTTP 404).
    NotFound = 3,
    /// `bad_request`: the provider refused the request (HTTP 400/422, ...); a retry won't help.
    BadRequest = 4,
    /// `server`: the provider failed or is overloaded (HTTP 5xx, overloaded error events).
    Server = 5,
    /// `network`: the connection could not be made, was reset, or the body was cut off.
    Network = 6,
    /// `timeout`: a time limit ran out (response headers, a silent stream, a watchdog).
    Timeout = 7,
    /// `decode`: the response could not be read (a malformed chunk, a truncated stream).
    Decode = 8,
    /// `aborted`: the caller aborted the request.
    Aborted = 9,
    /// `context_overflow`: the prompt does not fit the context window; compact and retry.
    ContextOverflow = 10,
    /// `refusal`: the model or the provider's filter declined to answer.
    Refusal = 11,
    /// `invalid_output`: the answer does not match the requested output schema; the message's
    /// error text is the validation report.
    InvalidOutput = 12,
    /// `run_limit`: the agent ended the run at one of its run limits (`run_limit` says which).
    RunLimit = 13,
}

impl pi_message_error_kind {
    fn of(kind: Option<ErrorKind>) -> Self {
        match kind {
            Some(ErrorKind::RateLimit) => Self::RateLimit,
            Some(ErrorKind::Auth) => Self::Auth,
            Some(ErrorKind::NotFound) => Self::NotFound,
            Some(ErrorKind::BadRequest) => Self::BadRequest,
            Some(ErrorKind::Server) => Self::Server,
            Some(ErrorKind::Network) => Self::Network,
            Some(ErrorKind::Timeout) => Self::Timeout,
            Some(ErrorKind::Decode) => Self::Decode,
            Some(ErrorKind::Aborted) => Self::Aborted,
            Some(ErrorKind::ContextOverflow) => Self::ContextOverflow,
            Some(ErrorKind::Refusal) => Self::Refusal,
            Some(ErrorKind::InvalidOutput) => Self::InvalidOutput,
            Some(ErrorKind::RunLimit) => Self::RunLimit,
            // A kind added to core before this enum follows reads as no kind.
            _ => Self::None,
        }
    }

    /// The core kind of a C value (`None` for `NONE` and values this version does not know).
    fn kind(value: u32) -> Option<ErrorKind> {
        ErrorKind::ALL
            .into_iter()
            .find(|kind| Self::of(Some(*kind)) as u32 == value)
    }
}

/// Which run limit ended a run (`runLimit`; the limits are the `limits` of the agent's
/// settings JSON). New limits may be added; treat an unknown value as `NONE`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pi_run_limit {
    /// No run limit ended the run.
    None = 0,
    /// `maxTurns`: the number of model calls.
    MaxTurns = 1,
    /// `maxToolCalls`: the number of tool calls.
    MaxToolCalls = 2,
    /// `maxInputTokens`: input tokens, cached ones included.
    MaxInputTokens = 3,
    /// `maxOutputTokens`: output tokens.
    MaxOutputTokens = 4,
    /// `maxTotalTokens`: all tokens.
    MaxTotalTokens = 5,
    /// `maxCostUsd`: the cost in USD.
    MaxCostUsd = 6,
}

impl pi_run_limit {
    fn of(limit: Option<RunLimit>) -> Self {
        match limit {
            Some(RunLimit::MaxTurns) => Self::MaxTurns,
            Some(RunLimit::MaxToolCalls) => Self::MaxToolCalls,
            Some(RunLimit::MaxInputTokens) => Self::MaxInputTokens,
            Some(RunLimit::MaxOutputTokens) => Self::MaxOutputTokens,
            Some(RunLimit::MaxTotalTokens) => Self::MaxTotalTokens,
            Some(RunLimit::MaxCostUsd) => Self::MaxCostUsd,
            // A limit added to core before this enum follows reads as none.
            _ => Self::None,
        }
    }
}

/// The machine-readable failure of an assistant message.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pi_message_error {
    /// The kind (`NONE` when the message has none).
    pub kind: pi_message_error_kind,
    /// The HTTP status of the failed response (`httpStatus`); 0 when there was none.
    pub http_status: u32,
    /// The delay the server asked for before a retry, in milliseconds (`retryAfterMs`); -1
    /// when it named none.
    pub retry_after_ms: i64,
    /// Whether the same request may succeed later (`rate_limit`, `server`, `network`,
    /// `timeout`). The library has already retried those within `maxRetries`.
    pub transient: bool,
    /// The run limit that ended the run (kind `RUN_LIMIT`); `NONE` otherwise.
    pub run_limit: pi_run_limit,
}

impl pi_message_error {
    /// No failure.
    const NONE: Self = Self {
        kind: pi_message_error_kind::None,
        http_status: 0,
        retry_after_ms: -1,
        transient: false,
        run_limit: pi_run_limit::None,
    };

    fn of(error: &MessageError) -> Self {
        Self {
            kind: pi_message_error_kind::of(error.kind),
            http_status: error.http_status.map_or(0, u32::from),
            retry_after_ms: error
                .retry_after_ms
                .map_or(-1, |ms| i64::try_from(ms).unwrap_or(i64::MAX)),
            transient: error.is_transient(),
            run_limit: pi_run_limit::of(error.run_limit),
        }
    }
}

/// Reads the failure fields of a pi-shaped assistant message (e.g. the last message of a
/// failed run, or the `error` of a stream's error event) into `*error_out`: its `errorKind`,
/// `httpStatus` and `retryAfterMs`. The text stays in `errorMessage`. A message without them
/// (one that did not fail, or one saved by pi) gives `kind` `NONE`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (also for a message whose `role`
/// is not `assistant`).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_message_error_info(
    assistant_message_json: *const c_char,
    error_out: *mut pi_message_error,
) -> *mut pi_error {
    ffi_fallible! {
        let message = arg_assistant_message(assistant_message_json, "assistant_message_json")?;
        let out = Out::new(error_out, "error_out")?;
        // The fields as written, whatever the stop reason (a message edited by hand, too).
        out.write(pi_message_error {
            kind: pi_message_error_kind::of(message.error_kind),
            http_status: message.http_status.map_or(0, u32::from),
            retry_after_ms: message
                .retry_after_ms
                .map_or(-1, |ms| i64::try_from(ms).unwrap_or(i64::MAX)),
            transient: message.error_kind.is_some_and(ErrorKind::is_transient),
            run_limit: pi_run_limit::of(message.run_limit),
        });
        Ok(())
    }
}

/// Whether the agent's last run failed (its last message has `stopReason` `error` or
/// `aborted`: a model failure, an abort, a failing hook, a run limit), and, when `error_out` is
/// not NULL, its kind, HTTP status, retry delay and run limit in `*error_out` (all `NONE` / 0 /
/// -1 when it did not fail). The text is `pi_agent_error_message`. No JSON to parse; cleared
/// when a run starts. `false` when `agent` is NULL.
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_last_error(
    agent: *const crate::agent::pi_agent,
    error_out: *mut pi_message_error,
) -> bool {
    ffi_boundary! {
        let error = opt_ref(agent).and_then(|agent| agent.shared.agent.last_error());
        if let Ok(out) = Out::new(error_out, "error_out") {
            out.write(error.as_ref().map_or(pi_message_error::NONE, pi_message_error::of));
        }
        error.is_some()
    }
}

/// The JSON name of `limit` (a `pi_run_limit` value) as `runLimit` spells it (`"maxTurns"`,
/// ...); empty for `NONE` and values this version does not know. Static: valid forever.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_run_limit_name(limit: u32) -> pi_str {
    ffi_boundary! {
        RunLimit::ALL
            .into_iter()
            .find(|known| pi_run_limit::of(Some(*known)) as u32 == limit)
            .map_or(pi_str::EMPTY, |known| pi_str::new(known.as_str()))
    }
}

/// The JSON name of `kind` (a `pi_message_error_kind` value) as `errorKind` spells it
/// (`"rate_limit"`, ...); empty for `NONE` and values this version does not know. Static:
/// valid forever.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_message_error_kind_name(kind: u32) -> pi_str {
    ffi_boundary! {
        pi_message_error_kind::kind(kind).map_or(pi_str::EMPTY, |kind| pi_str::new(kind.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_kind_has_a_c_value_and_its_name() {
        for kind in ErrorKind::ALL {
            let c = pi_message_error_kind::of(Some(kind));
            assert_ne!(c, pi_message_error_kind::None, "{kind}");
            assert_eq!(pi_message_error_kind::kind(c as u32), Some(kind));
        }
        assert_eq!(pi_message_error_kind::kind(0), None);
        assert_eq!(pi_message_error_kind::kind(999), None);
    }
}
