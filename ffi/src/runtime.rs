//! The process-wide tokio runtime the C API drives, and the record of which callback (if any)
//! the current thread is running, so blocking calls that would deadlock fail instead.

use std::cell::Cell;
use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::runtime::Runtime;

use crate::error::{pi_error, pi_error_kind};

/// Worker threads of the runtime. Tool callbacks run on its separate blocking pool.
const WORKER_THREADS: usize = 2;

/// Where the runtime is in its life.
enum Slot {
    /// Not started yet.
    Unstarted,
    /// Running; leaked so that callers can hold `&'static` (until `pi_shutdown`).
    Running(&'static Runtime),
    /// It could not be started.
    Failed(String),
    /// `pi_shutdown` stopped it.
    ShutDown,
}

static RUNTIME: Mutex<Slot> = Mutex::new(Slot::Unstarted);

/// The runtime, started on first use and stopped only by `pi_shutdown`.
pub(crate) fn runtime() -> Result<&'static Runtime, pi_error> {
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    if matches!(*slot, Slot::Unstarted) {
        // The runtime's first use is where `PI_AGENT_LOG` takes effect.
        crate::log::init();
        *slot = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .thread_name("pi-agent-runtime")
            .on_thread_start(block_sigpipe)
            .enable_all()
            .build()
        {
            Ok(runtime) => Slot::Running(Box::leak(Box::new(runtime))),
            Err(error) => Slot::Failed(error.to_string()),
        };
    }
    match &*slot {
        Slot::Running(runtime) => Ok(runtime),
        Slot::Failed(error) => Err(pi_error::new(
            pi_error_kind::Runtime,
            format!("cannot start the pi-agent runtime: {error}"),
        )),
        Slot::ShutDown => Err(pi_error::new(
            pi_error_kind::Runtime,
            "the pi-agent library was shut down (pi_shutdown); it cannot be used any more",
        )),
        Slot::Unstarted => unreachable!("the slot was filled above"),
    }
}

/// Stops the runtime (waiting up to `timeout` for its threads) for good.
pub(crate) fn shutdown(timeout: Duration) {
    let previous = std::mem::replace(
        &mut *RUNTIME.lock().unwrap_or_else(PoisonError::into_inner),
        Slot::ShutDown,
    );
    if let Slot::Running(runtime) = previous {
        // SAFETY: the runtime was leaked from a `Box` in `runtime()`; `pi_shutdown`'s contract
        // is that no other thread uses the library any more, so no `&'static` to it is alive.
        let runtime = unsafe { Box::from_raw(std::ptr::from_ref(runtime).cast_mut()) };
        runtime.shutdown_timeout(timeout);
    }
}

/// Keeps SIGPIPE away from the runtime's threads. A write to a pipe whose reader is gone (an
/// MCP server that exited, its stdin still being written) raises SIGPIPE in the writing thread,
/// and a C host usually leaves SIGPIPE's default action, which ends the process. Blocked on
/// these threads, the write fails with `EPIPE` instead, which the library reports as the
/// server closing the connection. The host's own threads and its signal handlers are untouched.
fn block_sigpipe() {
    #[cfg(unix)]
    // SAFETY: an empty set with SIGPIPE added, applied to the calling thread's mask only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Which C callback the current thread is inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// None.
    Outside,
    /// An agent event callback (on a runtime worker thread); the value identifies the listener.
    Event(usize),
    /// A tool or hook callback (on a blocking-pool thread) of the agent identified by the value.
    Callback(usize),
}

thread_local! {
    static SCOPE: Cell<Scope> = const { Cell::new(Scope::Outside) };
}

/// The callback the current thread is inside.
pub(crate) fn current_scope() -> Scope {
    SCOPE.with(Cell::get)
}

/// Marks the current thread as inside a callback until dropped.
pub(crate) struct ScopeGuard(Scope);

impl ScopeGuard {
    pub(crate) fn enter(scope: Scope) -> Self {
        Self(SCOPE.with(|cell| cell.replace(scope)))
    }
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        SCOPE.with(|cell| cell.set(self.0));
    }
}

/// Runs `future` to completion on the runtime, blocking the calling thread. `what` names the C
/// function for the error raised when called from an event callback.
pub(crate) fn block_on<F: Future>(what: &str, future: F) -> Result<F::Output, pi_error> {
    may_block(what)?;
    Ok(runtime()?.block_on(future))
}

/// Runs `read`, a blocking read of a stream on the calling thread (which waits there itself, see
/// core's `AssistantMessageEventStream::blocking_next`), unless the thread must not block or
/// the library was shut down (the stream's runtime is gone). `what` names the C function.
pub(crate) fn read_blocking<T>(what: &str, read: impl FnOnce() -> T) -> Result<T, pi_error> {
    may_block(what)?;
    runtime()?;
    Ok(read())
}

/// Fails when the current thread must not block (it runs an event callback).
pub(crate) fn may_block(what: &str) -> Result<(), pi_error> {
    if let Scope::Event(_) = current_scope() {
        return Err(pi_error::new(
            pi_error_kind::CalledFromCallback,
            format!(
                "`{what}` blocks, so it cannot be called from an event callback (which runs on a \
                 runtime thread)"
            ),
        ));
    }
    Ok(())
}
