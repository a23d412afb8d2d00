//! Context-overflow detection (pi's `isContextOverflow`).

use std::ffi::c_char;

use pi_agent::ai::is_context_overflow;

use crate::args::{Out, arg_assistant_message};
use crate::error::pi_error;

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
        let message = arg_assistant_message(assistant_message_json, "assistant_message_json")?;
        let out = Out::new(overflow_out, "overflow_out")?;
        out.write(is_context_overflow(&message, Some(context_window)));
        Ok(())
    }
}
