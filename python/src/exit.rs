//! Interpreter exit. CPython ends a thread that takes the GIL once finalization has begun
//! (`pthread_exit`), and that forced unwind aborts the process if it crosses Rust frames. So:
//! - runtime threads take the GIL only through [`with_gil`], which an `atexit` hook (run
//!   before finalization) closes, after waiting for the calls in flight;
//! - a thread blocked in a binding call with the GIL released never takes it back once the
//!   hook ran ([`park_if_exiting`]): it parks until the process is gone.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyModule;

/// Calls into Python from runtime threads that may race the interpreter's exit.
struct ExitState {
    in_flight: usize,
    exiting: bool,
    /// The thread that ran the hook (it finalizes the interpreter and may still call us).
    finalizer: Option<std::thread::ThreadId>,
}

static EXIT: Mutex<ExitState> = Mutex::new(ExitState {
    in_flight: 0,
    exiting: false,
    finalizer: None,
});
static EXIT_DONE: Condvar = Condvar::new();

/// How long the exit hook waits for calls in flight (conversions: microseconds).
const EXIT_WAIT: Duration = Duration::from_secs(5);

fn exit_state() -> std::sync::MutexGuard<'static, ExitState> {
    EXIT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Never returns once the interpreter is exiting: for threads about to take the GIL back
/// after a blocking wait. The process ends under them. (The thread that finalizes the
/// interpreter, which ran the hook, carries on.)
pub(crate) fn park_if_exiting() {
    let park = {
        let state = exit_state();
        state.exiting && state.finalizer != Some(std::thread::current().id())
    };
    if park {
        loop {
            std::thread::park();
        }
    }
}

/// Runs `f` with the GIL on a runtime thread, unless the interpreter is exiting (then `None`:
/// nobody waits for the outcome any more).
pub(crate) fn with_gil<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
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

/// The `atexit` hook: stops new calls of [`with_gil`] and waits (GIL released) for those in
/// flight.
#[pyfunction]
fn wait_for_runtime_calls(py: Python<'_>) {
    py.detach(|| {
        let mut state = exit_state();
        state.exiting = true;
        state.finalizer = Some(std::thread::current().id());
        let _ = EXIT_DONE.wait_timeout_while(state, EXIT_WAIT, |state| state.in_flight > 0);
    });
}

/// Registers the `atexit` hook (once, at import).
pub(crate) fn register_exit_hook(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let hook = wrap_pyfunction!(wait_for_runtime_calls, module)?;
    module
        .py()
        .import("atexit")?
        .call_method1("register", (hook,))?;
    Ok(())
}
