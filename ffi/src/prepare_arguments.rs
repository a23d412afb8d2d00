//! `prepare_arguments` implemented in C (pi's `prepareArguments`, a tool's argument shim): the
//! callback type, the `pi_prepare_arguments` handle it receives, and the call that runs it.
//! Tools set it with `pi_tool_set_prepare_arguments` (`tool_object.rs`).

use std::ffi::{c_char, c_void};

use pi_agent::agent::ToolError;
use serde_json::Value;

use crate::args::{arg_json, arg_str, method};
use crate::error::pi_error;
use crate::hook_context::{Answer, call_with};
use crate::string::{pi_str, view};
use crate::user_data::UserData;

/// Rewrites the raw arguments of a call before they are validated against the tool's schema
/// (pi's `prepareArguments`, a compatibility shim for models that send an old argument shape).
/// Read them with `pi_prepare_arguments_input_json`; set the arguments to validate instead with
/// `pi_prepare_arguments_set_json` (else they stay as they are), or fail the call with
/// `pi_prepare_arguments_set_error` or a non-zero return ("prepare_arguments callback returned
/// error code N"): the model then gets that error result. It gets the tool's `user_data`;
/// `context` is valid until it returns.
///
/// It runs synchronously on a runtime thread (moved out of the worker pool while it runs), before
/// `before_tool_call`: keep it quick, and do not call blocking functions of its agent.
pub type pi_prepare_arguments_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, context: *mut pi_prepare_arguments) -> i32>;

pub(crate) type PrepareFn = unsafe extern "C" fn(*mut c_void, *mut pi_prepare_arguments) -> i32;

/// The raw arguments of one call, passed to a `pi_prepare_arguments_callback`. Valid until the
/// callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_prepare_arguments {
    input_json: String,
    outcome: Answer<Option<Result<Value, String>>>,
}

/// The arguments as the model sent them, as JSON (not validated; not necessarily an object).
/// Empty when `context` is NULL. Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_prepare_arguments_input_json(context: *const pi_prepare_arguments) -> pi_str {
    view(context, |context| pi_str::new(&context.input_json))
}

/// Sets the arguments to validate and run the tool with (any JSON; the schema decides). The
/// last `pi_prepare_arguments_set_*` call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (nothing changes).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_prepare_arguments_set_json(
    context: *mut pi_prepare_arguments,
    arguments_json: *const c_char,
) -> *mut pi_error {
    method(context, "context", |context| {
        context
            .outcome
            .set(Some(Ok(arg_json(arguments_json, "arguments_json")?)));
        Ok(())
    })
}

/// Fails the call: the tool does not run and the model gets an error result with `message`.
/// The last `pi_prepare_arguments_set_*` call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_prepare_arguments_set_error(
    context: *mut pi_prepare_arguments,
    message: *const c_char,
) -> *mut pi_error {
    method(context, "context", |context| {
        let message = arg_str(message, "message")?;
        context.outcome.set(Some(Err(message.to_owned())));
        Ok(())
    })
}

/// Runs a C `prepare_arguments` callback on `arguments`.
pub(crate) fn prepare_arguments(
    callback: PrepareFn,
    user_data: &UserData,
    arguments: Value,
) -> Result<Value, ToolError> {
    let Some(user_data) = user_data.get() else {
        return Err(ToolError::new("the tool was released"));
    };
    let context = pi_prepare_arguments {
        input_json: arguments.to_string(),
        outcome: Answer::default(),
    };
    let (context, code) = call_with(callback, user_data, context);
    match context.outcome.take() {
        Some(Err(message)) => Err(ToolError::new(message)),
        _ if code != 0 => Err(ToolError::new(format!(
            "prepare_arguments callback returned error code {code}"
        ))),
        Some(Ok(prepared)) => Ok(prepared),
        None => Ok(arguments),
    }
}
