//! `is_context_overflow`: core's check of whether a failed (or suspiciously empty) response
//! means that the prompt no longer fits the model's context window.

use pi_agent::ai::AssistantMessage;
use pyo3::prelude::*;

use crate::convert::parse;

/// Whether `message` (an assistant message dict) reports a context overflow: an error whose
/// text is a known overflow message, or, given the model's `context_window`, a response whose
/// input exceeded it (pi's `isContextOverflow`).
#[pyfunction]
#[pyo3(signature = (message, context_window = None))]
pub(crate) fn is_context_overflow(
    message: &Bound<'_, PyAny>,
    context_window: Option<u64>,
) -> PyResult<bool> {
    let message: AssistantMessage = parse(message, "assistant message")?;
    Ok(pi_agent::ai::is_context_overflow(&message, context_window))
}
