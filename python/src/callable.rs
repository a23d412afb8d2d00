//! Python functions that an agent calls from its runtime — tool functions and hooks — sync or
//! `async def`, in one place.
//!
//! A call starts on a runtime blocking thread with the GIL. A sync function's value is used
//! there. A coroutine runs on the event loop of the caller awaiting the agent's run (`await
//! agent.prompt()`, `async for ... in agent.run()`) when there is one, else with `asyncio.run`
//! on the blocking thread, so `prompt_sync` never needs, or blocks, the caller's loop.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pyo3::prelude::*;

use crate::bridge::{FreshCancel, loop_is_usable, run_fresh, run_on_loop};
use crate::convert::type_name;

/// The event loop of the caller awaiting an agent's current run (`None` for `prompt_sync` and
/// sync iteration). Shared by the agent, its tools and its hooks; the agent sets it while it
/// starts a run, holding the lock so that no call of that run can read it before it is set.
#[derive(Clone, Default)]
pub(crate) struct CallerLoop(Arc<Mutex<Option<Arc<Py<PyAny>>>>>);

impl CallerLoop {
    /// Locks the slot.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<Arc<Py<PyAny>>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The loop of the current run, if any.
    pub(crate) fn current(&self) -> Option<Arc<Py<PyAny>>> {
        self.lock().clone()
    }
}

/// What the blocking thread did with a call.
enum Step<T, F> {
    /// Finished (a sync function, or a coroutine run with `asyncio.run`).
    Done(T),
    /// A coroutine to run on the caller's loop, and what to do with its outcome.
    OnLoop(Py<PyAny>, Py<PyAny>, F),
}

/// Cancels a fresh-loop coroutine when core drops the call (abort).
struct CancelOnDrop(Option<FreshCancel>);

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel.cancel();
        }
    }
}

/// Calls a Python function from the runtime. `invoke` calls it (on a blocking thread, with
/// the GIL) and returns what it returned; `finish` turns the outcome — the value, the
/// awaited result of a coroutine, or the raised exception — into a `T`, with the GIL.
/// Dropping the returned future cancels a coroutine that is still running. A panic in
/// `invoke` or `finish` is passed on to core, which reports it as it does any panic.
pub(crate) async fn call<T, I, F>(caller_loop: Option<Arc<Py<PyAny>>>, invoke: I, finish: F) -> T
where
    T: Send + 'static,
    I: for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>> + Send + 'static,
    F: for<'py> FnOnce(Python<'py>, PyResult<Bound<'py, PyAny>>) -> T + Send + 'static,
{
    let cancel = FreshCancel::default();
    let mut guard = CancelOnDrop(Some(cancel.clone()));
    let step = tokio::task::spawn_blocking(move || {
        Python::attach(|py| {
            let value = match invoke(py) {
                Ok(value) => value,
                Err(error) => return Step::Done(finish(py, Err(error))),
            };
            if !value.hasattr("__await__").unwrap_or(false) {
                return Step::Done(finish(py, Ok(value)));
            }
            if let Some(event_loop) =
                caller_loop.filter(|event_loop| loop_is_usable(py, event_loop))
            {
                return Step::OnLoop(event_loop.clone_ref(py), value.unbind(), finish);
            }
            Step::Done(finish(py, run_fresh(value, &cancel)))
        })
    })
    .await
    .unwrap_or_else(|error| match error.try_into_panic() {
        Ok(panic) => std::panic::resume_unwind(panic),
        Err(error) => std::panic::resume_unwind(Box::new(error.to_string())),
    });
    let result = match step {
        Step::Done(result) => result,
        Step::OnLoop(event_loop, coroutine, finish) => {
            let outcome = run_on_loop(event_loop, coroutine).await;
            Python::attach(|py| finish(py, outcome.map(|value| value.into_bound(py))))
        }
    };
    guard.disarm();
    result
}

/// The text of a raised exception: its message, or its type name when the message is empty
/// (what the model reads for a failed tool, as in pi).
pub(crate) fn exception_message(py: Python<'_>, error: &PyErr) -> String {
    let value = error.value(py);
    let message = value.str().map(|s| s.to_string()).unwrap_or_default();
    if message.is_empty() {
        type_name(value.as_any())
    } else {
        message
    }
}

/// `"<Type>: <message>"` (or just the type), like the last line of a traceback.
pub(crate) fn describe(py: Python<'_>, error: &PyErr) -> String {
    let value = error.value(py);
    let kind = type_name(value.as_any());
    match value.str().map(|s| s.to_string()) {
        Ok(message) if !message.is_empty() => format!("{kind}: {message}"),
        _ => kind,
    }
}

/// `"<what> raised <Type>: <message>"`, for failures reported to the application rather than
/// the model.
pub(crate) fn raised(py: Python<'_>, what: &str, error: &PyErr) -> String {
    format!("{what} raised {}", describe(py, error))
}
