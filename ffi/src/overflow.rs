//! Context-overflow detection (pi's `isContextOverflow`).

use std::ffi::c_char;

use pi_agent::ai::AssistantMessage;
use pi_agent::ai::is_context_overflow;
use serde_json::Value;

use crate::args::{Out, arg_str};
use crate::error::{parse_json, pi_error, pi_error_kind};

/// Writes to `*overflow_out` whether a response failed (or was silently truncated) because the
/// prompt no longer fits the model's context window (pi's `isContextOverflow`), so that the
/// application can compact the transcript and retry. `assistant_message_json` is a pi-shaped
/// assistant message, e.g. the last message of a failed run; `context_window` is the model's
/// (`contextWindow` in the model JSON; 0 when unknown, which limits the check to the error
/// text).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (also for a message whose `role`
/// is not `assistant`).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_is_context_overflow(
    assistant_message_json: *const c_char,
    context_window: u64,
    overflow_out: *mut bool,
) -> *mut pi_error {
    ffi_fallible! {
        let name = "assistant_message_json";
        let value: Value = parse_json(arg_str(assistant_message_json, name)?, name)?;
        let out = Out::new(overflow_out, "overflow_out")?;
        if let Some(role) = value.get("role").filter(|role| *role != "assistant") {
            return Err(pi_error::new(
                pi_error_kind::InvalidJson,
                format!("`{name}` is not valid: expected role `assistant`, found {role}"),
            ));
        }
        let message: AssistantMessage = serde_json::from_value(value)
            .map_err(|error| pi_error::invalid_json(name, &error))?;
        out.write(is_context_overflow(&message, Some(context_window)));
        Ok(())
    }
}
