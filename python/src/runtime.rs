//! The binding's one process-wide tokio runtime (core owns none), and the blocking wait that
//! every `*_sync` method and sync iterator uses.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

use crate::exit::park_if_exiting;

/// How often a blocked caller wakes up to let Python deliver signals (Ctrl-C).
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// How many nested `fork`s get a fresh runtime (see [`after_fork_in_child`]).
const FORK_GENERATIONS: usize = 64;

/// Which of [`RUNTIMES`] is this process's: bumped in a forked child. No lock: a lock held by
/// another thread at the fork would stay locked in the child forever.
static GENERATION: AtomicUsize = AtomicUsize::new(0);

static RUNTIMES: [OnceLock<Runtime>; FORK_GENERATIONS] =
    [const { OnceLock::new() }; FORK_GENERATIONS];

/// The runtime every request, agent run and Python call of this process is driven from.
/// Python code itself never runs on its threads (see `bridge.rs`), so they are never blocked
/// by it: two workers are enough whatever Python does.
pub(crate) fn runtime() -> &'static Runtime {
    RUNTIMES[GENERATION.load(Ordering::Acquire)].get_or_init(|| {
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("pi-agent-runtime")
            .enable_all()
            .build()
            .expect("pi_agent: cannot start the tokio runtime")
    })
}

/// In a forked child (`os.fork`, multiprocessing's `fork`, gunicorn, celery): the parent's
/// runtime has no threads here, so the next use builds a new one (the old one is left as is:
/// dropping it would wait for threads that do not exist); the HTTP connections the parent
/// pooled are forgotten too. Registered with `os.register_at_fork(after_in_child=...)`.
pub(crate) fn after_fork_in_child() {
    let generation = GENERATION.load(Ordering::Acquire);
    if RUNTIMES[generation].get().is_some() && generation + 1 < FORK_GENERATIONS {
        GENERATION.store(generation + 1, Ordering::Release);
    }
    pi_agent::ai::forget_connections_after_fork();
}

/// What a blocked caller did when Python raised a signal (Ctrl-C) while it waited.
pub(crate) enum Interrupted {
    /// Stop waiting at once.
    Return,
    /// Run this future to its end first (e.g. an abort completing), then return.
    Finish(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
}

/// Runs `future` on the runtime and blocks the calling thread until it finishes, with the GIL
/// released. Works from any thread, including one whose asyncio loop is running (the caller's
/// loop is never used) and a pool thread running a tool.
///
/// While waiting it lets Python deliver signals: if a handler raises (Ctrl-C), the future is
/// dropped and `on_interrupt` says what to do before the exception is returned (a second
/// Ctrl-C during that stops waiting).
pub(crate) fn wait<F, T>(
    py: Python<'_>,
    future: F,
    on_interrupt: impl FnOnce() -> Interrupted,
) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    wait_with_messages(py, |_: Messages<(), T>| future, |_, ()| {}, on_interrupt)
}

/// A `timeout=` in seconds, as Python's own waits read one: negative waits not at all,
/// infinite (or too large for a deadline) waits without a limit (as `None`), NaN is refused.
pub(crate) fn timeout_seconds(timeout: Option<f64>) -> PyResult<Option<Duration>> {
    match timeout {
        None => Ok(None),
        Some(seconds) if seconds.is_nan() => Err(crate::errors::value_error(
            Some("timeout"),
            "timeout must be a number of seconds, not NaN",
        )),
        // A century: past any deadline a wait needs, and far from `Instant`'s overflow.
        Some(seconds) if seconds > 3.2e9 => Ok(None),
        Some(seconds) => Ok(Some(Duration::from_secs_f64(seconds.max(0.0)))),
    }
}

/// What a future run by [`wait_with_messages`] sends: its messages, then its outcome.
enum Sent<M, T> {
    Message(M),
    Outcome(T),
}

/// Sends messages from a future run by [`wait_with_messages`] to the waiting thread.
pub(crate) struct Messages<M, T>(mpsc::Sender<Sent<M, T>>);

impl<M, T> Messages<M, T> {
    /// Hands `message` to the waiting thread (dropped if it stopped waiting).
    pub(crate) fn send(&self, message: M) {
        let _ = self.0.send(Sent::Message(message));
    }
}

/// [`wait`] for a future that also sends messages on its way (through the [`Messages`] that
/// `make` gets): each is handed to `on_message` on the calling thread, with the GIL, in order
/// and before the outcome. So a host callback fed by a runtime task runs on the host's own
/// thread, where it may block or call the library, not on a runtime worker.
pub(crate) fn wait_with_messages<F, T, M>(
    py: Python<'_>,
    make: impl FnOnce(Messages<M, T>) -> F,
    mut on_message: impl FnMut(Python<'_>, M),
    on_interrupt: impl FnOnce() -> Interrupted,
) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
    M: Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Sent<M, T>>();
    let future = make(Messages(tx.clone()));
    let task = runtime().spawn(async move {
        let outcome = future.await;
        let _ = tx.send(Sent::Outcome(outcome));
    });
    let rx = Mutex::new(rx);
    loop {
        match block_on_channel(py, &rx) {
            Waited::Value(Sent::Message(message)) => {
                on_message(py, message);
                // A Ctrl-C during `on_message` stops the wait now, not after the next message.
                if let Err(error) = py.check_signals() {
                    task.abort();
                    return Err(finish_interrupted(py, error, on_interrupt));
                }
            }
            Waited::Value(Sent::Outcome(outcome)) => return Ok(outcome),
            Waited::Lost => {
                return Err(PyRuntimeError::new_err(
                    "pi_agent: the runtime task ended without a result (it panicked)",
                ));
            }
            Waited::Signal(error) => {
                task.abort();
                return Err(finish_interrupted(py, error, on_interrupt));
            }
        }
    }
}

/// What a wait interrupted by `error` (a signal handler's) does before it returns `error`:
/// runs `on_interrupt`'s finishing future, if any, to its end (a second Ctrl-C stops that).
fn finish_interrupted(
    py: Python<'_>,
    error: PyErr,
    on_interrupt: impl FnOnce() -> Interrupted,
) -> PyErr {
    if let Interrupted::Finish(finish) = on_interrupt() {
        let finishing = spawn_with_channel(finish);
        if let Waited::Signal(_) = block_on_channel(py, &finishing.1) {
            finishing.0.abort();
        }
    }
    error
}

type Receiver<T> = Mutex<mpsc::Receiver<T>>;

fn spawn_with_channel<F, T>(future: F) -> (tokio::task::JoinHandle<()>, Receiver<T>)
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    let task = runtime().spawn(async move {
        let _ = tx.send(future.await);
    });
    // `detach` needs a `Send` closure; the receiver is only `Send`.
    (task, Mutex::new(rx))
}

enum Waited<T> {
    Value(T),
    Lost,
    Signal(PyErr),
}

fn block_on_channel<T: Send>(py: Python<'_>, rx: &Receiver<T>) -> Waited<T> {
    loop {
        let received = py.detach(|| {
            let received = rx
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .recv_timeout(SIGNAL_POLL);
            // Taking the GIL back during the interpreter's exit would kill this thread.
            park_if_exiting();
            received
        });
        match received {
            Ok(value) => return Waited::Value(value),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(error) = py.check_signals() {
                    return Waited::Signal(error);
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Waited::Lost,
        }
    }
}

/// Returns the memory the allocator keeps for reuse to the operating system (core's
/// `release_memory`: glibc's `malloc_trim`) and says whether any was returned. Call it when a
/// burst of streams or runs has ended; RSS otherwise stays at the burst's peak.
#[pyfunction]
pub(crate) fn release_memory(py: Python<'_>) -> bool {
    // Walking the arenas takes a while after a big burst: let other Python threads run.
    py.detach(pi_agent::release_memory)
}
