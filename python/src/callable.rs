//! Python functions that the runtime calls — tools, hooks, subscribers, stream functions,
//! faux factories, OAuth callbacks — sync or `async def`, in one place.
//!
//! A call runs on a pool thread (see `bridge.rs`), never on a runtime thread: Python may block
//! there (a sync tool, a subscriber calling `complete_sync`) without stalling the runtime, and
//! the awaiting Rust future can be dropped (abort, watchdog) while the function runs on. A
//! coroutine it returns runs on the event loop of the caller awaiting the agent's run (`await
//! agent.prompt()`, `async for ... in agent.run()`) when that loop is running, else with
//! `asyncio.run` on a pool thread, so `prompt_sync` never needs, or blocks, the caller's loop.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tokio::sync::oneshot;

use crate::bridge::{
    Delivered, Done, is_awaitable, loop_is_usable, run_fresh, run_on_loop, spawn_job,
};
use crate::errors::type_name;
use crate::exit::with_gil;

/// Where the Python callbacks of a run go: the event loop of the caller awaiting it (`None`
/// for `prompt_sync` and sync iteration), and the ids of the agents whose runs it belongs to
/// (a `frozenset`, see `bridge.owners`).
#[derive(Clone, Default)]
pub(crate) struct Scope {
    pub(crate) event_loop: Option<Arc<Py<PyAny>>>,
    pub(crate) owners: Option<Arc<Py<PyAny>>>,
    /// Held by each call made with this scope, for as long as the call's future lives (see
    /// [`RunScope::calls_in_flight`]); `None` in the slot itself.
    in_flight: Option<Arc<()>>,
}

impl Scope {
    /// A run's scope: where its async callbacks go, and who it belongs to.
    pub(crate) fn new(event_loop: Option<Arc<Py<PyAny>>>, owners: Option<Arc<Py<PyAny>>>) -> Self {
        Self {
            event_loop,
            owners,
            in_flight: None,
        }
    }
}

/// An agent's current [`Scope`], shared by the agent, its tools, hooks and subscribers; the
/// agent sets it while it starts a run, holding the lock so that no call of that run can read
/// it before it is set.
#[derive(Clone, Default)]
pub(crate) struct RunScope(Arc<ScopeSlot>);

#[derive(Default)]
struct ScopeSlot {
    scope: Mutex<Scope>,
    /// Cloned into every scope [`RunScope::current`] hands out.
    calls: Arc<()>,
}

impl RunScope {
    /// Locks the slot.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Scope> {
        self.0.scope.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The scope of the current run, for one call: the call's future holds it until it ends
    /// or is dropped.
    pub(crate) fn current(&self) -> Scope {
        let mut scope = self.lock().clone();
        scope.in_flight = Some(Arc::clone(&self.0.calls));
        scope
    }

    /// Whether a call made with this scope may still run Python: its future (a tool's, a
    /// hook's, a subscriber's, a stream function's) still exists, though perhaps outside any
    /// run (a task a finished run left to be dropped). The agent's `__traverse__` leaves the
    /// functions of its core alone meanwhile. Once no run is going this can only turn false.
    pub(crate) fn calls_in_flight(&self) -> bool {
        Arc::strong_count(&self.0.calls) > 1
    }
}

/// What a pool thread hands back.
enum Delivery<T> {
    /// The function's outcome, finished.
    Done(T),
    /// It returned an awaitable: run it (on this loop, if usable) and finish its outcome.
    Await(Py<PyAny>, Option<Py<PyAny>>),
}

type Finish<T> = Box<dyn for<'py> FnOnce(Python<'py>, PyResult<Bound<'py, PyAny>>) -> T + Send>;

/// Calls a Python function from the runtime. `prepare` (with the GIL, on the calling thread)
/// returns the function and its arguments; `finish` (with the GIL) turns the outcome — the
/// value, the awaited result of a coroutine, or the raised exception — into a `T`; `lost`
/// makes the `T` when no outcome can come (the interpreter is exiting). Dropping the returned
/// future cancels a coroutine that is still running; a sync function runs to its end.
pub(crate) async fn call<T: Send + 'static>(
    scope: Scope,
    prepare: impl for<'py> FnOnce(Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)>
    + Send
    + 'static,
    finish: impl for<'py> FnOnce(Python<'py>, PyResult<Bound<'py, PyAny>>) -> T + Send + 'static,
    lost: impl FnOnce() -> T,
) -> T {
    let finish: Arc<Mutex<Option<Finish<T>>>> = Arc::new(Mutex::new(Some(Box::new(finish))));
    let take = |finish: &Mutex<Option<Finish<T>>>| {
        finish.lock().unwrap_or_else(PoisonError::into_inner).take()
    };
    let (tx, rx) = oneshot::channel::<Delivery<T>>();
    let on_pool = Arc::clone(&finish);
    let event_loop = scope.event_loop.clone();
    let submitted = with_gil(|py| -> Option<T> {
        let failed = |py, error| take(&finish).map(|finish| finish(py, Err(error)));
        let (function, args) = match prepare(py) {
            Ok(call) => call,
            Err(error) => return failed(py, error),
        };
        let done = Done::new(move |py, outcome| {
            let delivery = match outcome {
                Ok(value) if is_awaitable(&value) => {
                    let usable = event_loop
                        .filter(|event_loop| loop_is_usable(py, event_loop))
                        .map(|event_loop| event_loop.clone_ref(py));
                    Delivery::Await(value.unbind(), usable)
                }
                outcome => match take(&on_pool) {
                    Some(finish) => Delivery::Done(finish(py, outcome)),
                    None => return,
                },
            };
            let _ = tx.send(delivery);
        });
        match spawn_job(py, &function, &args, done, scope.owners.as_deref()) {
            Ok(()) => None,
            Err(error) => failed(py, error),
        }
    });
    match submitted {
        None => return lost(),
        Some(Some(result)) => return result,
        Some(None) => {}
    }
    let (coroutine, event_loop) = match rx.await {
        Ok(Delivery::Done(result)) => return result,
        Ok(Delivery::Await(coroutine, event_loop)) => (coroutine, event_loop),
        Err(_) => return lost(),
    };
    let outcome: Option<Delivered> = match event_loop {
        Some(event_loop) => run_on_loop(event_loop, coroutine, scope.owners.clone()).await,
        None => run_fresh(coroutine, scope.owners.clone()).await,
    };
    let Some(outcome) = outcome else {
        return lost();
    };
    with_gil(|py| take(&finish).map(|finish| finish(py, outcome.map(|value| value.into_bound(py)))))
        .flatten()
        .unwrap_or_else(lost)
}

/// Waits for a [`call`] in core callbacks that are synchronous (`prepare_arguments`,
/// `on_payload`, OAuth's `on_auth`): blocks the calling runtime thread, which hands its other
/// tasks to another worker meanwhile (`block_in_place`).
pub(crate) fn call_blocking<T>(call: impl std::future::Future<Output = T>) -> T {
    pi_agent::off_worker(|| futures::executor::block_on(call))
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
    // The binding's own input errors read as the builtin they extend, as before they existed.
    let kind = crate::errors::builtin_name(py, error)
        .map_or_else(|| type_name(value.as_any()), str::to_owned);
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

/// The message for calls whose outcome is lost because the interpreter is exiting.
pub(crate) const EXITING: &str = "the Python interpreter is exiting";
