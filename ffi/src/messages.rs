//! Helpers on messages and tool calls: hand-off of a transcript to another model (pi's
//! `transformMessages`), tool-call validation (pi's `validateToolCall`) and the parser of
//! incomplete JSON used for streamed tool arguments (pi's `parseStreamingJson`).

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_void};

use pi_agent::ai::{
    Message, Tool, ToolCall, ValidationError, parse_streaming_json, transform_messages_borrowed,
    validate_tool_call,
};

use crate::args::{Out, arg_json, arg_ref, arg_str, write_json};
use crate::error::{pi_error, pi_error_kind};
use crate::model::pi_model;
use crate::string::pi_str;

/// Renames a tool-call id for the target model (pi's `normalizeToolCallId`), called for each
/// tool call of an assistant message from another model. Return NULL to keep `id`, or a
/// NUL-terminated UTF-8 id that stays valid until the callback is called again or
/// `pi_transform_messages_json` returns (e.g. a buffer in `user_data`). Tool results are
/// renamed to match. It runs on the thread that called `pi_transform_messages_json`.
pub type pi_normalize_tool_call_id_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, id: pi_str) -> *const c_char>;

/// Rewrites a transcript for `target` (pi's `transformMessages`): thinking from other models
/// becomes text (or is dropped when empty), images the model cannot take become placeholder
/// text, tool-call ids are renamed with `normalize_tool_call_id` (nullable), and tool calls
/// without a result get pi's "No result provided" error result. `messages_json` is a JSON
/// array of pi LLM messages; the result, the same kind of array, is written to
/// `*messages_json_out` (free it with `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8` (also for an id the callback returned),
/// `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
// `user_data` is never dereferenced here, only handed back to the C callback.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub extern "C" fn pi_transform_messages_json(
    messages_json: *const c_char,
    target: *const pi_model,
    normalize_tool_call_id: pi_normalize_tool_call_id_callback,
    user_data: *mut c_void,
    messages_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let messages: Vec<Message> =
            arg_json(messages_json, "messages_json")?;
        let target = arg_ref(target, "target")?;
        let out = Out::new(messages_json_out, "messages_json_out")?;
        let bad_id = RefCell::new(None);
        let rename = |id: &str| -> String {
            let Some(callback) = normalize_tool_call_id else {
                return id.to_owned();
            };
            // SAFETY: the C caller passed this callback with this `user_data`; `id` outlives
            // the call.
            let renamed = unsafe { callback(user_data, pi_str::new(id)) };
            if renamed.is_null() {
                return id.to_owned();
            }
            // SAFETY: per the callback's contract, a non-NULL result is a NUL-terminated
            // string that stays valid until the callback is called again.
            match unsafe { CStr::from_ptr(renamed) }.to_str() {
                Ok(renamed) => renamed.to_owned(),
                Err(error) => {
                    bad_id.borrow_mut().get_or_insert_with(|| error.to_string());
                    id.to_owned()
                }
            }
        };
        let normalize = normalize_tool_call_id.map(|_| &rename as &dyn Fn(&str) -> String);
        let transformed = transform_messages_borrowed(&messages, &target.model, normalize);
        if let Some(error) = bad_id.into_inner() {
            return Err(pi_error::new(
                pi_error_kind::InvalidUtf8,
                format!("a tool-call id from `normalize_tool_call_id` is not valid UTF-8: {error}"),
            ));
        }
        out.write_json(&transformed, "messages")
    }
}

/// Validates a tool call against the tools (pi's `validateToolCall`): finds the tool by name,
/// checks the arguments against its JSON Schema (with pi's type coercions, e.g. `"5"` to `5`
/// for a number) and writes the arguments to use as JSON to `*arguments_json_out` (free it with
/// `pi_string_free`). `tools_json` is a JSON array of pi `Tool`s
/// (`[{"name","description","parameters"}]`); `tool_call_json` a pi tool call
/// (`{"type":"toolCall","id":...,"name":...,"arguments":{...}}`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `NOT_FOUND` (no tool with that
/// name: pi's message `Tool "x" not found`), `VALIDATION_FAILED` (pi's validation report, what
/// the model reads; also for a tool schema that cannot be used).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_validate_tool_call(
    tools_json: *const c_char,
    tool_call_json: *const c_char,
    arguments_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let tools: Vec<Tool> = arg_json(tools_json, "tools_json")?;
        let call: ToolCall =
            arg_json(tool_call_json, "tool_call_json")?;
        let out = Out::new(arguments_json_out, "arguments_json_out")?;
        let arguments = validate_tool_call(&tools, &call).map_err(|error| {
            let kind = match error {
                ValidationError::ToolNotFound { .. } => pi_error_kind::NotFound,
                _ => pi_error_kind::ValidationFailed,
            };
            pi_error::new(kind, error.to_string())
        })?;
        out.write_json(&arguments, "arguments")
    }
}

/// Parses JSON that may be cut off, as streamed tool arguments are (pi's
/// `parseStreamingJson`): complete what is there as far as it goes (`{"a":1,"b":"te` gives
/// `{"a":1,"b":"te"}`), `{}` for nothing usable. Writes the value as JSON to `*json_out` (free
/// it with `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_parse_streaming_json(
    partial_json: *const c_char,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let text = arg_str(partial_json, "partial_json")?;
        write_json(json_out, &parse_streaming_json(text), "value")
    }
}
