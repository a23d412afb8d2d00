//! The exceptions for failed model calls and runs (`ModelError` and one subclass per
//! [`ErrorKind`]), raised only when the caller opts in: by default a failure is a message, as
//! in pi.

use std::collections::HashMap;

use pi_agent::ai::{AssistantMessage, ErrorKind, MessageError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule, PyType};

use crate::convert::serde_to_py;
use crate::errors::PiError;

/// The classes by name, made once.
static CLASSES: PyOnceLock<HashMap<String, Py<PyType>>> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&HashMap<String, Py<PyType>>> {
    CLASSES.get_or_try_init(py, || {
        let module = py.import("pi_agent._model_errors")?;
        let made = module.getattr("make")?.call1((py.get_type::<PiError>(),))?;
        made.extract::<HashMap<String, Py<PyType>>>()
    })
}

/// Adds the classes to the module (at import).
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    for (name, class) in classes(module.py())? {
        module.add(name.as_str(), class.bind(module.py()))?;
    }
    Ok(())
}

/// The class for a kind (`ModelError` for none).
fn class_name(kind: Option<ErrorKind>) -> &'static str {
    match kind {
        Some(ErrorKind::RateLimit) => "RateLimitError",
        Some(ErrorKind::Auth) => "AuthenticationError",
        Some(ErrorKind::NotFound) => "NotFoundError",
        Some(ErrorKind::BadRequest) => "BadRequestError",
        Some(ErrorKind::Server) => "ServerError",
        Some(ErrorKind::Network) => "NetworkError",
        Some(ErrorKind::Timeout) => "ModelTimeoutError",
        Some(ErrorKind::Decode) => "DecodeError",
        Some(ErrorKind::Aborted) => "AbortedError",
        Some(ErrorKind::ContextOverflow) => "ContextOverflowError",
        Some(ErrorKind::Refusal) => "RefusalError",
        Some(ErrorKind::RunLimit) => "RunLimitExceeded",
        Some(ErrorKind::InvalidOutput) => "InvalidOutputError",
        // A kind added to core before this list follows: the base class.
        _ => "ModelError",
    }
}

/// The exception for `message`'s failure.
pub(crate) fn model_error(error: &MessageError, message: &AssistantMessage) -> PyErr {
    Python::attach(|py| {
        let made = (|| {
            let class = classes(py)?
                .get(class_name(error.kind))
                .or_else(|| classes(py).ok()?.get("ModelError"))
                .ok_or_else(|| PiError::new_err("the model-error classes are missing"))?;
            let keywords = PyDict::new(py);
            keywords.set_item("message", serde_to_py(py, message)?)?;
            keywords.set_item("kind", error.kind.map(ErrorKind::as_str))?;
            keywords.set_item("http_status", error.http_status)?;
            keywords.set_item("retry_after_ms", error.retry_after_ms)?;
            keywords.set_item("run_limit", error.run_limit.map(|limit| limit.as_str()))?;
            class.bind(py).call((&error.message,), Some(&keywords))
        })();
        match made {
            Ok(instance) => PyErr::from_value(instance),
            Err(failure) => failure,
        }
    })
}

/// `Err` with the exception for `message`'s failure when it failed, else `Ok`.
pub(crate) fn check(message: &AssistantMessage) -> PyResult<()> {
    match MessageError::of(message) {
        Some(error) => Err(model_error(&error, message)),
        None => Ok(()),
    }
}

/// Raises the exception for a failed assistant message (`stopReason` `error` or `aborted`):
/// `RateLimitError`, `AuthenticationError`, `ContextOverflowError`, `RunLimitExceeded`, ...
/// (all `ModelError`s), and returns the message unchanged otherwise:
/// `message = pi_agent.raise_for_error(pi_agent.complete_sync(model, context))`.
#[pyfunction]
pub(crate) fn raise_for_error<'py>(message: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let parsed: AssistantMessage = crate::convert::parse(&message, "assistant message")?;
    check(&parsed)?;
    Ok(message)
}
