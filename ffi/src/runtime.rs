//! The process-wide tokio runtime the C API drives, and the record of which callback (if any)
//! the current thread is running, so blocking calls that would deadlock fail instead.

use std::cell::Cell;
use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::Runtime;

use crate::error::{pi_error, pi_error_kind};

/// Worker threads of the runtime. Tool callbacks run on its separate blocking pool.
const WORKER_THREADS: usize = 2;

/// The runtime, started on first use and never shut down.
pub(crate) fn runtime() -> Result<&'static Runtime, pi_error> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            // The runtime's first use is where `PI_AGENT_LOG` takes effect.
            crate::log::init();
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKER_THREADS)
                .thread_name("pi-agent-runtime")
                .on_thread_start(block_sigpipe)
                .enable_all()
                .build()
                .map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|error| {
            pi_error::new(
                pi_error_kind::Runtime,
                format!("cannot start the pi-agent runtime: {error}"),
            )
        })
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

/// Like [`block_on`], but first polls `future` once on the calling thread, and parks only if it
/// is not ready: a stream whose next event is already queued (events arrive in batches) then
/// costs no trip through the runtime's scheduler. For futures whose poll needs no runtime
/// context (no tokio I/O or timers of their own).
pub(crate) fn poll_or_block_on<F: Future>(what: &str, future: F) -> Result<F::Output, pi_error> {
    may_block(what)?;
    let mut future = std::pin::pin!(future);
    // A no-op waker is enough: if the future is pending, `block_on` polls it again with a real
    // one, which replaces it before anything can be missed.
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
        return Ok(output);
    }
    Ok(runtime()?.block_on(future))
}

/// Fails when the current thread must not block (it runs an event callback).
fn may_block(what: &str) -> Result<(), pi_error> {
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
