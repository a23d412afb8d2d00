//! asyncio <-> tokio, by hand: Rust futures become asyncio futures completed with
//! `loop.call_soon_threadsafe`, and Python coroutines run either on the awaiting caller's loop
//! (`asyncio.run_coroutine_threadsafe`) or in a fresh loop on a worker thread (`asyncio.run`).
//! The small Python half lives in `bridge.py`, compiled into the extension.
//!
//! Runtime threads that touch Python after an asyncio caller may already have its result (a
//! delivery, a cancellation) go through [`attach_unless_exiting`]: CPython kills a thread that
//! takes the GIL once the interpreter is finalizing (`pthread_exit`), and that forced unwind
//! through Rust frames aborts the process. An `atexit` hook, which runs before finalization,
//! waits for such calls and stops new ones.

use std::ffi::CStr;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyModule, PyTuple};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::runtime::RUNTIME;

const BRIDGE_SOURCE: &CStr =
    match CStr::from_bytes_with_nul(concat!(include_str!("bridge.py"), "\0").as_bytes()) {
        Ok(source) => source,
        Err(_) => panic!("bridge.py contains a NUL byte"),
    };

static BRIDGE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Calls into Python from runtime threads that may race the interpreter's exit.
struct ExitState {
    in_flight: usize,
    exiting: bool,
}

static EXIT: Mutex<ExitState> = Mutex::new(ExitState {
    in_flight: 0,
    exiting: false,
});
static EXIT_DONE: Condvar = Condvar::new();

/// How long the exit hook waits for calls in flight (they take microseconds).
const EXIT_WAIT: Duration = Duration::from_secs(5);

fn exit_state() -> std::sync::MutexGuard<'static, ExitState> {
    EXIT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` with the GIL on a runtime thread, unless the interpreter is exiting (then `None`:
/// nobody waits for the outcome any more).
pub(crate) fn attach_unless_exiting<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    {
        let mut state = exit_state();
        if state.exiting {
            return None;
        }
        state.in_flight += 1;
    }
    let outcome = Python::attach(f);
    let mut state = exit_state();
    state.in_flight -= 1;
    if state.in_flight == 0 {
        EXIT_DONE.notify_all();
    }
    Some(outcome)
}

/// The `atexit` hook: stops new calls of [`attach_unless_exiting`] and waits (GIL released)
/// for those in flight.
#[pyfunction]
fn wait_for_runtime_calls(py: Python<'_>) {
    py.detach(|| {
        let mut state = exit_state();
        state.exiting = true;
        let _ = EXIT_DONE.wait_timeout_while(state, EXIT_WAIT, |state| state.in_flight > 0);
    });
}

/// Registers the exit hook (once, at import).
pub(crate) fn register_exit_hook(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let hook = wrap_pyfunction!(wait_for_runtime_calls, module)?;
    module
        .py()
        .import("atexit")?
        .call_method1("register", (hook,))?;
    Ok(())
}

/// A function or class of `bridge.py`.
pub(crate) fn helper<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let module = BRIDGE.get_or_try_init(py, || {
        PyModule::from_code(
            py,
            BRIDGE_SOURCE,
            c"pi_agent/_bridge.py",
            c"pi_agent._bridge",
        )
        .map(Bound::unbind)
    })?;
    module.bind(py).getattr(name)
}

/// `drive(start, *args)`: a real coroutine that calls `start(*args)` (which returns an asyncio
/// future) when first awaited, and awaits it.
pub(crate) fn drive<'py>(
    start: Bound<'py, PyAny>,
    args: impl IntoIterator<Item = Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = start.py();
    let mut all = vec![start];
    all.extend(args);
    helper(py, "drive")?.call1(PyTuple::new(py, all)?)
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
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        self.token.cancel();
    }
}

/// Runs `future` on the runtime and returns an asyncio future of the calling thread's running
/// loop that gets its result. Cancelling the asyncio future drops `future`.
pub(crate) fn future_into_py<F, T>(py: Python<'_>, future: F) -> PyResult<Bound<'_, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    let event_loop = running_loop(py)?;
    let py_future = event_loop.call_method0("create_future")?;
    let cancel = CancellationToken::new();
    py_future.call_method1(
        "add_done_callback",
        (CancelOnDone {
            token: cancel.clone(),
        },),
    )?;
    let event_loop = event_loop.unbind();
    let target = py_future.clone().unbind();
    RUNTIME.spawn(async move {
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            outcome = future => outcome,
        };
        attach_unless_exiting(|py| {
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

/// The output of `future` if it is ready at once (e.g. an event already buffered), polled
/// here without a trip through the runtime; `None` if it would wait (it is then dropped, so it
/// must be cancel-safe).
pub(crate) fn ready<F: Future>(future: F) -> Option<F::Output> {
    let _runtime = RUNTIME.enter();
    future.now_or_never()
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

/// Receives the outcome of a coroutine submitted to another thread's loop.
#[pyclass(frozen)]
struct SubmittedDone {
    tx: Mutex<Option<oneshot::Sender<PyResult<Py<PyAny>>>>>,
}

#[pymethods]
impl SubmittedDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) {
        let outcome = future.call_method0("result").map(Bound::unbind);
        if let Some(tx) = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = tx.send(outcome);
        }
    }
}

/// Cancels a submitted coroutine if the Rust side stops waiting (e.g. the run was aborted).
struct CancelSubmitted(Option<Py<PyAny>>);

impl Drop for CancelSubmitted {
    fn drop(&mut self) {
        if let Some(future) = self.0.take() {
            attach_unless_exiting(|py| {
                let _ = future.bind(py).call_method0("cancel");
            });
        }
    }
}

/// Whether coroutines submitted to `event_loop` from another thread will run.
pub(crate) fn loop_is_usable(py: Python<'_>, event_loop: &Py<PyAny>) -> bool {
    helper(py, "loop_is_usable")
        .and_then(|check| check.call1((event_loop.bind(py),)))
        .and_then(|usable| usable.is_truthy())
        .unwrap_or(false)
}

/// Runs `coroutine` on `event_loop` (another thread's running loop) and waits for its result
/// without holding the GIL. Dropping the returned future cancels the coroutine.
pub(crate) async fn run_on_loop(
    event_loop: Py<PyAny>,
    coroutine: Py<PyAny>,
) -> PyResult<Py<PyAny>> {
    let (tx, rx) = oneshot::channel();
    let submitted = Python::attach(|py| {
        let done = SubmittedDone {
            tx: Mutex::new(Some(tx)),
        };
        helper(py, "submit")?
            .call1((coroutine, event_loop, done))
            .map(Bound::unbind)
    })?;
    let mut guard = CancelSubmitted(Some(submitted));
    let outcome = rx.await;
    // Finished: nothing to cancel (and no GIL needed to drop the handle later).
    let submitted = guard.0.take();
    drop(submitted);
    outcome.unwrap_or_else(|_| {
        Err(PyRuntimeError::new_err(
            "pi_agent: the event loop dropped a tool coroutine",
        ))
    })
}

/// Cancellation handle of a coroutine run by [`run_fresh`] on a worker thread.
#[derive(Clone, Default)]
pub(crate) struct FreshCancel(Arc<Mutex<FreshCancelState>>);

#[derive(Default)]
struct FreshCancelState {
    cancelled: bool,
    runner: Option<Py<PyAny>>,
}

impl FreshCancel {
    /// Cancels the coroutine (now if it runs, or before it starts).
    pub(crate) fn cancel(&self) {
        let runner = {
            let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            state.cancelled = true;
            state.runner.take()
        };
        if let Some(runner) = runner {
            attach_unless_exiting(|py| {
                let _ = runner.bind(py).call_method0("cancel");
            });
        }
    }
}

/// Runs `coroutine` to completion with `asyncio.run` on the calling thread (a runtime blocking
/// thread, attached). `cancel` can stop it from any thread.
pub(crate) fn run_fresh<'py>(
    coroutine: Bound<'py, PyAny>,
    cancel: &FreshCancel,
) -> PyResult<Bound<'py, PyAny>> {
    let py = coroutine.py();
    let runner = helper(py, "FreshLoop")?.call0()?;
    {
        let mut state = cancel.0.lock().unwrap_or_else(PoisonError::into_inner);
        if state.cancelled {
            runner.call_method0("cancel")?;
        } else {
            state.runner = Some(runner.clone().unbind());
        }
    }
    runner.call_method1("run", (coroutine,))
}
