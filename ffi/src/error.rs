//! `pi_error`: the error object fallible functions return, its stable `pi_error_kind`, and
//! [`ffi_fallible!`], the boundary of the functions that return one.

use std::ptr;

use pi_agent::agent::AgentError;

use crate::boundary::{Fallback, free, into_handle, opt_ref, panic_message, take_handle};
use crate::string::{pi_str, view};

/// Runs a body returning `Result<(), pi_error>` (so `?` works) inside the boundary and converts
/// it to the `pi_error *` result (NULL on success); a panic becomes a `PI_ERROR_KIND_PANIC`
/// error.
macro_rules! ffi_fallible {
    ($($body:tt)*) => {
        $crate::error::into_c_result(::std::panic::catch_unwind(
            ::std::panic::AssertUnwindSafe(
                || -> ::std::result::Result<(), $crate::error::pi_error> { $($body)* },
            ),
        ))
    };
}

/// What kind of error a `pi_error` is. The values are stable: they never change meaning and
/// retired values are never reused.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pi_error_kind {
    /// A pointer argument that must not be NULL was NULL.
    NullArgument = 1,
    /// A string argument was not valid UTF-8.
    InvalidUtf8 = 2,
    /// A JSON argument was not valid JSON, or not of the expected shape.
    InvalidJson = 3,
    /// Another argument was not acceptable (e.g. an unknown subscription id).
    InvalidArgument = 4,
    /// What was looked up does not exist (e.g. no catalog model with that provider and id, or
    /// no tool with that name).
    NotFound = 5,
    /// A tool call's arguments do not match the tool's JSON Schema (pi's validation message,
    /// see `pi_validate_tool_call`).
    ValidationFailed = 6,
    /// A model request failed (`pi_complete_structured_json`); the message is the failed
    /// assistant message's `errorMessage`.
    RequestFailed = 7,
    /// The agent is already running (pi's "Agent is already processing ..." messages).
    AlreadyRunning = 100,
    /// `pi_agent_continue` found nothing to continue from (pi's messages).
    CannotContinue = 101,
    /// A blocking function was called from a callback, where it would block a runtime thread
    /// or wait for itself.
    CalledFromCallback = 102,
    /// An agent run ended abnormally (a bug in pi-agent; the transcript was repaired).
    RunFailed = 103,
    /// An OAuth login or token refresh failed (the message never contains a token).
    OAuthFailed = 104,
    /// The operation was cancelled (e.g. `pi_oauth_login_cancel`, or a login callback that
    /// returned non-zero).
    Cancelled = 105,
    /// An MCP server could not be started or reached, or failed a request (the message names
    /// the server and says why).
    Mcp = 106,
    /// A durable session's store failed (the session stopped; reopen it to resume), another
    /// writer wrote the same session, or a request id was reused for another kind of request.
    Session = 107,
    /// The durable session is open in another handle or process (`pi_session_open` and
    /// `pi_session_delete` are refused until that one is freed).
    SessionInUse = 108,
    /// The async runtime could not be started, or another internal failure.
    Runtime = 200,
    /// pi-agent panicked; the panic was caught at the C boundary.
    Panic = 201,
}

/// An error returned by a fallible function. Free it with `pi_error_free`.
///
/// Immutable: it may be read from any thread, and freed once by its owner.
#[derive(Clone, Debug)]
pub struct pi_error {
    kind: pi_error_kind,
    message: String,
}

impl pi_error {
    pub(crate) fn new(kind: pi_error_kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn null_argument(name: &str) -> Self {
        Self::new(
            pi_error_kind::NullArgument,
            format!("`{name}` must not be NULL"),
        )
    }

    pub(crate) fn invalid_json(name: &str, error: &serde_json::Error) -> Self {
        Self::new(
            pi_error_kind::InvalidJson,
            format!("`{name}` is not valid: {error}"),
        )
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(pi_error_kind::NotFound, message)
    }

    pub(crate) fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(pi_error_kind::InvalidArgument, message)
    }

    pub(crate) fn panic(message: String) -> Self {
        Self::new(pi_error_kind::Panic, message)
    }

    pub(crate) fn runtime(message: impl Into<String>) -> Self {
        Self::new(pi_error_kind::Runtime, message)
    }

    pub(crate) fn from_agent(error: AgentError) -> Self {
        let kind = match error {
            AgentError::AlreadyProcessingPrompt
            | AgentError::AlreadyProcessingContinue
            | AgentError::TranscriptBusy => pi_error_kind::AlreadyRunning,
            AgentError::NothingToContinue
            | AgentError::EmptyContext
            | AgentError::ContinueFromAssistant => pi_error_kind::CannotContinue,
            AgentError::NoRuntime => pi_error_kind::Runtime,
            _ => pi_error_kind::RunFailed,
        };
        Self::new(kind, error.to_string())
    }

    pub(crate) fn into_raw(self) -> *mut pi_error {
        into_handle(self)
    }

    /// Takes back an error made by [`pi_error::into_raw`] (NULL gives `None`).
    pub(crate) fn from_raw(error: *mut pi_error) -> Option<pi_error> {
        take_handle(error).map(|error| *error)
    }
}

impl Fallback for *mut pi_error {
    fn on_panic(message: String) -> Self {
        pi_error::panic(message).into_raw()
    }
}

impl Fallback for pi_error_kind {
    fn on_panic(_: String) -> Self {
        pi_error_kind::Panic
    }
}

/// The `pi_error *` for the outcome of an [`ffi_fallible!`] body.
pub(crate) fn into_c_result(outcome: std::thread::Result<Result<(), pi_error>>) -> *mut pi_error {
    match outcome {
        Ok(Ok(())) => ptr::null_mut(),
        Ok(Err(error)) => error.into_raw(),
        Err(payload) => pi_error::panic(panic_message(&*payload)).into_raw(),
    }
}

/// The message of an error (for tests).
#[cfg(test)]
pub(crate) fn message_of(error: &pi_error) -> &str {
    &error.message
}

/// Serializes a value for an owned `char *` result.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(
    value: &T,
    what: &str,
) -> Result<String, pi_error> {
    serde_json::to_string(value).map_err(|error| pi_error::invalid_json(what, &error))
}

/// Parses a JSON object argument (settings, options, a model: they may hold credentials)
/// into `T`, refusing an array where an object goes. The error never quotes a value: a key or
/// token given in the wrong place (`"headers": "Bearer ..."`) would otherwise be in it.
pub(crate) fn parse_object<T: serde::de::DeserializeOwned>(
    json: &str,
    name: &str,
) -> Result<T, pi_error> {
    pi_agent::ai::strict_json::from_str(json).map_err(|error| {
        pi_error::new(
            pi_error_kind::InvalidJson,
            format!(
                "`{name}` is not valid: {}",
                pi_agent::ai::strict_json::error_without_values(&error)
            ),
        )
    })
}

/// Parses a JSON argument into `T`, naming the argument in the error.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    json: &str,
    name: &str,
) -> Result<T, pi_error> {
    serde_json::from_str(json).map_err(|error| pi_error::invalid_json(name, &error))
}

/// The kind of `error` (`PI_ERROR_KIND_NULL_ARGUMENT` when `error` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_error_get_kind(error: *const pi_error) -> pi_error_kind {
    ffi_boundary! {
        opt_ref(error).map_or(pi_error_kind::NullArgument, |error| error.kind)
    }
}

/// The message of `error` (empty when `error` is NULL). Valid until `pi_error_free(error)`.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_error_message(error: *const pi_error) -> pi_str {
    view(error, |error| pi_str::new(&error.message))
}

/// Frees an error. NULL is a no-op.
///
/// Thread-safety: call once, when no other thread uses `error`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_error_free(error: *mut pi_error) {
    free(error, drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(error: *mut pi_error) -> String {
        let view = pi_error_message(error);
        // SAFETY: `pi_error_message` returns a view of `len` valid bytes.
        let bytes = unsafe { std::slice::from_raw_parts(view.data.cast::<u8>(), view.len) };
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn panics_and_errors_become_error_objects() {
        let error: *mut pi_error = ffi_fallible! {
            panic!("boom");
        };
        assert_eq!(pi_error_get_kind(error), pi_error_kind::Panic);
        assert_eq!(message(error), "panic in pi-agent: boom");
        pi_error_free(error);

        let error = into_c_result(Ok(Err(pi_error::null_argument("text"))));
        assert_eq!(pi_error_get_kind(error), pi_error_kind::NullArgument);
        assert_eq!(message(error), "`text` must not be NULL");
        pi_error_free(error);
        assert!(into_c_result(Ok(Ok(()))).is_null());
    }
}
