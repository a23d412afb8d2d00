//! The exception tree, and the mappings from core's [`AgentError`] and session errors to it.
//!
//! Setup mistakes raise; model, network, tool and abort failures never do: they end the run
//! or stream with a message whose `stopReason` is `error` or `aborted` (pi's rule).

use pi_agent::agent::AgentError;
use pi_agent::session::{SessionError as SessionFailure, StoreError};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule, PyType};

create_exception!(
    pi_agent,
    PiError,
    PyException,
    "Base class of every error raised by pi_agent."
);
create_exception!(
    pi_agent,
    AgentBusyError,
    PiError,
    "A prompt or continue was started while the agent is running (pi's message)."
);
create_exception!(
    pi_agent,
    CannotContinueError,
    PiError,
    "`continue_()` found nothing to continue from (empty transcript, or an assistant message \
     last with nothing queued)."
);
create_exception!(
    pi_agent,
    AgentRunError,
    PiError,
    "The agent's run ended abnormally (a bug in pi_agent; the transcript was repaired)."
);

create_exception!(
    pi_agent,
    ToolValidationError,
    PiError,
    "Tool-call arguments do not match the tool's schema (pi's validation report), or the tool \
     is unknown."
);

/// Turns a core agent error into the matching Python exception, with core's (pi's) message.
pub(crate) fn agent_error(error: AgentError) -> PyErr {
    // pi's texts name its TypeScript methods; a Python caller knows them by their Python names.
    let message = error.to_string().replace("followUp()", "follow_up()");
    match error {
        AgentError::AlreadyProcessingPrompt | AgentError::AlreadyProcessingContinue => {
            AgentBusyError::new_err(message)
        }
        AgentError::NothingToContinue
        | AgentError::EmptyContext
        | AgentError::ContinueFromAssistant => CannotContinueError::new_err(message),
        AgentError::TranscriptBusy => AgentBusyError::new_err(message),
        _ => PiError::new_err(message),
    }
}

/// `PiValueError` and `PiTypeError`, made once (they need two bases, see `pi_agent/_errors.py`).
static INPUT_ERRORS: PyOnceLock<(Py<PyType>, Py<PyType>)> = PyOnceLock::new();

fn input_errors(py: Python<'_>) -> PyResult<&(Py<PyType>, Py<PyType>)> {
    INPUT_ERRORS.get_or_try_init(py, || {
        let module = py.import("pi_agent._errors")?;
        let (value, type_) = module
            .getattr("make")?
            .call1((py.get_type::<PiError>(),))?
            .extract::<(Bound<'_, PyType>, Bound<'_, PyType>)>()?;
        Ok((value.unbind(), type_.unbind()))
    })
}

/// Adds `PiValueError` and `PiTypeError` to the module (at import).
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let (value, type_) = input_errors(module.py())?;
    module.add("PiValueError", value.bind(module.py()))?;
    module.add("PiTypeError", type_.bind(module.py()))
}

/// Which builtin an input error also is.
#[derive(Clone, Copy)]
enum Kind {
    Value,
    Type,
}

fn input_error(kind: Kind, field: Option<&str>, message: String) -> PyErr {
    Python::attach(|py| {
        let made = input_errors(py).and_then(|(value, type_)| {
            let class = match kind {
                Kind::Value => value.bind(py),
                Kind::Type => type_.bind(py),
            };
            let keywords = PyDict::new(py);
            keywords.set_item("field", field)?;
            class.call((&message,), Some(&keywords))
        });
        match made {
            Ok(error) => PyErr::from_value(error),
            // Only if the classes cannot be made at all: still the builtin the caller expects.
            Err(_) => match kind {
                Kind::Value => PyValueError::new_err(message),
                Kind::Type => PyTypeError::new_err(message),
            },
        }
    })
}

create_exception!(
    pi_agent,
    SessionError,
    PiError,
    "A durable session's store failed (the session stopped; open it again to resume), another \
     writer wrote the same session, or a request id was reused for another kind of request."
);

create_exception!(
    pi_agent,
    SessionInUseError,
    SessionError,
    "The session is open in another handle or process (opening or deleting it is refused \
     until that one is closed)."
);

/// The Python exception for a session failure (input mistakes are `ValueError`s).
pub(crate) fn session_error(error: SessionFailure) -> PyErr {
    match error {
        SessionFailure::EmptyRequestId | SessionFailure::EmptySessionId => {
            pyo3::exceptions::PyValueError::new_err(error.to_string())
        }
        SessionFailure::Store(StoreError::InUse { .. }) => {
            SessionInUseError::new_err(error.to_string())
        }
        error => SessionError::new_err(error.to_string()),
    }
}

/// A `PiValueError` (a `ValueError`): a value pi_agent cannot use; `field` names it.
pub(crate) fn value_error(field: Option<&str>, message: impl Into<String>) -> PyErr {
    input_error(Kind::Value, field, message.into())
}

/// A `PiTypeError` (a `TypeError`): an argument of the wrong kind; `field` names it.
pub(crate) fn type_error(field: Option<&str>, message: impl Into<String>) -> PyErr {
    input_error(Kind::Type, field, message.into())
}

/// The name of `obj`'s type, for error messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |name| name.to_string())
}

/// `value` if it is callable; else a `PiTypeError` "`<what>` must be callable, not <type>"
/// whose field is `field`.
pub(crate) fn callable<'a, 'py>(
    value: &'a Bound<'py, PyAny>,
    what: &str,
    field: &str,
) -> PyResult<&'a Bound<'py, PyAny>> {
    if value.is_callable() {
        return Ok(value);
    }
    Err(type_error(
        Some(field),
        format!("{what} must be callable, not {}", type_name(value)),
    ))
}

/// An optional callable keyword argument named `what`: absent or `None` is `None`; a value that
/// is not callable is a `PiTypeError` "`<what>` must be callable or None, not <type>".
pub(crate) fn optional_callable<'a, 'py>(
    value: Option<&'a Bound<'py, PyAny>>,
    what: &str,
) -> PyResult<Option<&'a Bound<'py, PyAny>>> {
    match value.filter(|value| !value.is_none()) {
        Some(value) if !value.is_callable() => Err(type_error(
            Some(what),
            format!("{what} must be callable or None, not {}", type_name(value)),
        )),
        value => Ok(value),
    }
}

/// `error` with its field set to `field` when it is an input error that names none yet (an
/// inner conversion failed where the caller knows what was being read). Other errors pass.
pub(crate) fn with_field(error: PyErr, field: &str) -> PyErr {
    Python::attach(|py| {
        let Ok((value, type_)) = input_errors(py) else {
            return error;
        };
        let is_input =
            error.is_instance(py, value.bind(py)) || error.is_instance(py, type_.bind(py));
        if is_input {
            let instance = error.value(py);
            if instance
                .getattr("field")
                .is_ok_and(|current| current.is_none())
            {
                let _ = instance.setattr("field", field);
            }
        }
        error
    })
}

/// `"ValueError"` / `"TypeError"` for a `PiValueError` / `PiTypeError`, else `None`.
pub(crate) fn builtin_name(py: Python<'_>, error: &PyErr) -> Option<&'static str> {
    let (value, type_) = input_errors(py).ok()?;
    if error.is_instance(py, value.bind(py)) {
        Some("ValueError")
    } else if error.is_instance(py, type_.bind(py)) {
        Some("TypeError")
    } else {
        None
    }
}

/// Puts a Ctrl-C back when a callback the library calls where it cannot fail (a logging
/// handler, `execute_tool_calls_sync`'s `on_event`) was interrupted by it: the exception itself
/// is dropped there, so SIGINT is marked pending again and the main thread raises
/// `KeyboardInterrupt` at its next check, as it would have without the library in between.
/// Returns whether `error` was one; other errors are left to the caller.
pub(crate) fn keep_interrupt(py: Python<'_>, error: &PyErr) -> bool {
    let interrupted = error.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py);
    if interrupted {
        // SAFETY: `PyErr_SetInterrupt` only marks a signal as pending (any thread, GIL held).
        unsafe { pyo3::ffi::PyErr_SetInterrupt() };
    }
    interrupted
}
