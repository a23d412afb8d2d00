//! The binding's one process-wide tokio runtime (core owns none), and the blocking wait that
//! every `*_sync` method and sync iterator uses.

use std::future::Future;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// How often a blocked caller wakes up to let Python deliver signals (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// The runtime every request, agent run and tool call of this process runs on. At least four
/// workers: subscriber callbacks hold a worker while they wait for the GIL, and requests of
/// other agents should keep streaming meanwhile. (Sync tools run on its blocking pool.)
pub(crate) static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    let workers = std::thread::available_parallelism().map_or(4, |n| n.get().max(4));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("pi-agent-runtime")
        .enable_all()
        .build()
        .expect("pi_agent: cannot start the tokio runtime")
});

/// Runs `future` on the runtime and blocks the calling thread until it finishes, with the GIL
/// released. Works from any thread, including one whose asyncio loop is running (the caller's
/// loop is never used) and a runtime blocking thread (a sync tool calling a sync method).
///
/// While waiting it lets Python deliver signals: if a handler raises (Ctrl-C), `on_interrupt`
/// runs, the future is dropped and the exception is returned.
pub(crate) fn wait<F, T>(py: Python<'_>, future: F, on_interrupt: impl FnOnce()) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    // `detach` needs a `Send` closure; the receiver is only `Send`.
    let rx = Mutex::new(rx);
    let task = RUNTIME.spawn(async move {
        let _ = tx.send(future.await);
    });
    loop {
        match py.detach(|| {
            rx.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .recv_timeout(SIGNAL_POLL)
        }) {
            Ok(value) => return Ok(value),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(error) = py.check_signals() {
                    on_interrupt();
                    task.abort();
                    return Err(error);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "pi_agent: the runtime task ended without a result (it panicked)",
                ));
            }
        }
    }
}
