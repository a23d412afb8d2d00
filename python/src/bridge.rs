//! Python <-> tokio, by hand: Rust futures become asyncio futures completed with
//! `loop.call_soon_threadsafe`; Python functions run on the daemon threads of a Python-side
//! pool; coroutines run on the awaiting caller's loop (`asyncio.run_coroutine_threadsafe`) or
//! in a fresh loop on a pool thread (`asyncio.run`). The small Python half lives in
//! `pi_agent/_bridge.py`, imported like any module of the package.
//!
//! User Python code only runs on pool threads, called from pure-Python frames, and runtime
//! threads take the GIL only through [`with_gil`] (see [`crate::exit`]).

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyModule, PyTuple};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::exit::with_gil;
use crate::runtime::runtime;

static BRIDGE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The `os.register_at_fork(after_in_child=...)` hook: the child gets its own runtime and
/// worker pool on first use (the parent's threads do not exist in it).
#[pyfunction]
fn after_fork_in_child(py: Python<'_>) -> PyResult<()> {
    crate::runtime::after_fork_in_child();
    if let Some(module) = BRIDGE.get(py) {
        module.bind(py).getattr("after_fork_in_child")?.call0()?;
    }
    Ok(())
}

/// Registers the fork hook (once, at import).
pub(crate) fn register_fork_hook(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let fork_hook = wrap_pyfunction!(after_fork_in_child, module)?;
    let keywords = pyo3::types::PyDict::new(py);
    keywords.set_item("after_in_child", fork_hook)?;
    py.import("os")?
        .getattr("register_at_fork")?
        .call((), Some(&keywords))?;
    Ok(())
}

/// A function or class of `pi_agent/_bridge.py`.
pub(crate) fn helper<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let module = BRIDGE.get_or_try_init(py, || py.import("pi_agent._bridge").map(Bound::unbind))?;
    module.bind(py).getattr(name)
}

/// Whether the running code belongs to a run of the agent or session `owner` (one of its
/// tools, hooks or subscribers; see `bridge.owners`): a wait for that owner from there would
/// wait for itself.
pub(crate) fn inside_run_of(py: Python<'_>, owner: u64) -> PyResult<bool> {
    helper(py, "owners")?.call0()?.contains(owner)
}

/// Whether `value` can be awaited (a coroutine, a future, ...).
pub(crate) fn is_awaitable(value: &Bound<'_, PyAny>) -> bool {
    helper(value.py(), "is_awaitable")
        .and_then(|check| check.call1((value,)))
        .and_then(|answer| answer.is_truthy())
        .unwrap_or(false)
}

/// A one-shot receiver of a pool job's outcome: the pool calls it as `done(ok, value)`.
#[pyclass(frozen)]
pub(crate) struct Done {
    #[allow(clippy::type_complexity)]
    deliver:
        Mutex<Option<Box<dyn for<'py> FnOnce(Python<'py>, PyResult<Bound<'py, PyAny>>) + Send>>>,
}

impl Done {
    /// A receiver that hands the outcome to `deliver` (on the pool thread, with the GIL).
    pub(crate) fn new(
        deliver: impl for<'py> FnOnce(Python<'py>, PyResult<Bound<'py, PyAny>>) + Send + 'static,
    ) -> Self {
        Self {
            deliver: Mutex::new(Some(Box::new(deliver))),
        }
    }

    /// Hands `outcome` on (the first time only).
    fn deliver(&self, py: Python<'_>, outcome: PyResult<Bound<'_, PyAny>>) {
        let deliver = self
            .deliver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(deliver) = deliver {
            deliver(py, outcome);
        }
    }
}

#[pymethods]
impl Done {
    fn __call__(&self, py: Python<'_>, ok: bool, value: Bound<'_, PyAny>) {
        let outcome = if ok {
            Ok(value)
        } else {
            Err(PyErr::from_value(value))
        };
        self.deliver(py, outcome);
    }

    /// As a `concurrent.futures.Future` done-callback (coroutines on another loop).
    fn future_done(&self, future: &Bound<'_, PyAny>) {
        self.deliver(future.py(), future.call_method0("result"));
    }
}

/// Runs `function(*args)` on a pool thread; `done` receives the outcome there.
pub(crate) fn spawn_job(
    py: Python<'_>,
    function: &Bound<'_, PyAny>,
    args: &Bound<'_, PyTuple>,
    done: Done,
    owners: Option<&Py<PyAny>>,
) -> PyResult<()> {
    let owners = match owners {
        Some(owners) => owners.bind(py).clone(),
        None => py.None().into_bound(py),
    };
    helper(py, "spawn")?.call1((function, args, done, owners))?;
    Ok(())
}

/// `drive(start, *args)`: a real coroutine that calls `start(*args)` (which returns an asyncio
/// future) when first awaited, and awaits it. It is named `name` (the public method, e.g.
/// `Agent.prompt`), so that "coroutine ... was never awaited" names what the caller called.
pub(crate) fn drive<'py>(
    name: &str,
    start: Bound<'py, PyAny>,
    args: impl IntoIterator<Item = Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = start.py();
    let mut all = vec![start];
    all.extend(args);
    let coroutine = helper(py, "drive")?.call1(PyTuple::new(py, all)?)?;
    coroutine.setattr("__qualname__", name)?;
    coroutine.setattr("__name__", name.rsplit('.').next().unwrap_or(name))?;
    Ok(coroutine)
}

/// The running asyncio loop of the calling thread (`RuntimeError` if there is none).
pub(crate) fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("asyncio")?.call_method0("get_running_loop")
}

/// The running asyncio loop of the calling thread, if any.
pub(crate) fn try_running_loop(py: Python<'_>) -> Option<Py<PyAny>> {
    running_loop(py).ok().map(Bound::unbind)
}

/// Cancels the Rust side when the asyncio future is done (cancelled, or completed — then the
/// Rust task has already finished and the cancel does nothing).
#[pyclass(frozen)]
struct CancelOnDone {
    token: CancellationToken,
}

#[pymethods]
impl CancelOnDone {
    #[pyo3(signature = (_future = None))]
    fn __call__(&self, _future: Option<&Bound<'_, PyAny>>) {
        self.token.cancel();
    }
}

/// Runs `future` on the runtime and returns an asyncio future of the calling thread's running
/// loop that gets its result. Cancelling the asyncio future drops `future`; so does collecting
/// it (the runtime only holds it weakly: a task abandoned on a closed loop must not be kept
/// alive, with the agent run it awaits, by the Rust side waiting to complete it).
pub(crate) fn future_into_py<F, T>(py: Python<'_>, future: F) -> PyResult<Bound<'_, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    let event_loop = running_loop(py)?;
    let py_future = event_loop.call_method0("create_future")?;
    let cancel = CancellationToken::new();
    let on_done = Bound::new(
        py,
        CancelOnDone {
            token: cancel.clone(),
        },
    )?;
    py_future.call_method1("add_done_callback", (&on_done,))?;
    helper(py, "on_collect")?.call1((&py_future, &on_done))?;
    let event_loop = event_loop.unbind();
    let target = py
        .import("weakref")?
        .call_method1("ref", (&py_future,))?
        .unbind();
    runtime().spawn(async move {
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            outcome = future => outcome,
        };
        with_gil(|py| {
            let Ok(target) = target.bind(py).call0() else {
                return;
            };
            if target.is_none() {
                return; // collected: nobody is waiting
            }
            let (setter, value) = match outcome.and_then(|value| value.into_bound_py_any(py)) {
                Ok(value) => ("set_result", value),
                Err(error) => (
                    "set_exception",
                    error.into_value(py).into_bound(py).into_any(),
                ),
            };
            let delivered = helper(py, setter).and_then(|setter| {
                event_loop
                    .bind(py)
                    .call_method1("call_soon_threadsafe", (setter, target, value))
            });
            // An error here means the loop is closed: nobody is waiting any more.
            drop(delivered);
        });
    });
    Ok(py_future)
}

/// An asyncio future of the running loop that is already done with `outcome`.
pub(crate) fn ready_future<'py>(
    py: Python<'py>,
    outcome: PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let future = running_loop(py)?.call_method0("create_future")?;
    match outcome {
        Ok(value) => future.call_method1("set_result", (value,))?,
        Err(error) => future.call_method1("set_exception", (error.into_value(py),))?,
    };
    Ok(future)
}

/// Cancels a running coroutine (its submitted future, or its `FreshLoop`) if the Rust side
/// stops waiting (e.g. the run was aborted).
struct CancelOnDrop(Option<Py<PyAny>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            with_gil(|py| {
                let _ = handle.bind(py).call_method0("cancel");
            });
        }
    }
}

/// Waits for a coroutine's outcome on `rx`; dropped before it comes, cancels the coroutine
/// through `handle`. `lost` is the error when the outcome never comes.
async fn outcome_or_cancel(
    handle: PyResult<Py<PyAny>>,
    rx: oneshot::Receiver<Delivered>,
    lost: &'static str,
) -> Delivered {
    let mut guard = CancelOnDrop(Some(handle?));
    let outcome = rx.await;
    // Finished: nothing to cancel.
    if let Some(handle) = guard.0.take() {
        with_gil(|_py| drop(handle));
    }
    outcome.unwrap_or_else(|_| Err(PyRuntimeError::new_err(lost)))
}

/// Whether coroutines submitted to `event_loop` from another thread will run.
pub(crate) fn loop_is_usable(py: Python<'_>, event_loop: &Py<PyAny>) -> bool {
    helper(py, "loop_is_usable")
        .and_then(|check| check.call1((event_loop.bind(py),)))
        .and_then(|usable| usable.is_truthy())
        .unwrap_or(false)
}

/// A raw outcome delivered from Python: the value or the exception.
pub(crate) type Delivered = PyResult<Py<PyAny>>;

/// Runs `coroutine` on `event_loop` (another thread's running loop) and waits for its result
/// without holding the GIL. Dropping the returned future cancels the coroutine. `None`: the
/// interpreter is exiting.
pub(crate) async fn run_on_loop(
    event_loop: Py<PyAny>,
    coroutine: Py<PyAny>,
    owners: Option<Arc<Py<PyAny>>>,
) -> Option<Delivered> {
    let (tx, rx) = oneshot::channel::<Delivered>();
    let submitted = with_gil(|py| {
        let done = Done::new(move |_py, outcome| {
            let _ = tx.send(outcome.map(Bound::unbind));
        });
        let done = Bound::new(py, done)?.getattr("future_done")?;
        let owners = match &owners {
            Some(owners) => owners.bind(py).clone(),
            None => py.None().into_bound(py),
        };
        helper(py, "submit")?
            .call1((coroutine, event_loop, done, owners))
            .map(Bound::unbind)
    })?;
    Some(
        outcome_or_cancel(
            submitted,
            rx,
            "pi_agent: the event loop dropped a coroutine",
        )
        .await,
    )
}

/// Runs `coroutine` to completion with `asyncio.run` on a pool thread. Dropping the returned
/// future cancels it. `None`: the interpreter is exiting.
pub(crate) async fn run_fresh(
    coroutine: Py<PyAny>,
    owners: Option<Arc<Py<PyAny>>>,
) -> Option<Delivered> {
    let (tx, rx) = oneshot::channel::<Delivered>();
    let runner = with_gil(|py| -> PyResult<Py<PyAny>> {
        let runner = helper(py, "FreshLoop")?.call0()?;
        let done = Done::new(move |_py, outcome| {
            let _ = tx.send(outcome.map(Bound::unbind));
        });
        let args = PyTuple::new(py, [coroutine.bind(py)])?;
        spawn_job(py, &runner.getattr("run")?, &args, done, owners.as_deref())?;
        Ok(runner.unbind())
    })?;
    Some(outcome_or_cancel(runner, rx, "pi_agent: a coroutine ended without a result").await)
}
