//! Waking an `await` on an asyncio loop from a runtime thread without taking the GIL.
//!
//! The general path ([`future_into_py`]) spawns a runtime task per awaited value, and that task
//! takes the GIL on a runtime thread to call `loop.call_soon_threadsafe`: with many streams
//! open, runtime threads queue for the GIL behind the loop's own thread, and every pending
//! `__anext__` holds a task, a cancellation token and a `weakref.finalize` (about 1.5 KiB).
//!
//! Here, per event loop, one socket pair is registered with `loop.add_reader`. A pending
//! `__anext__` polls its source once with a waker of its own ([`Waiting`]); when the source
//! has something, the waker (on whichever runtime thread pushed it) puts itself on the loop's
//! ready list and writes one byte, taking no GIL. On the loop's thread, the reader callback
//! ([`Drain`]) polls each woken source again, where its event is converted, and completes the
//! asyncio future. A loop that cannot watch a file descriptor (`add_reader` unsupported), or a
//! source locked by another reader, takes the general path.

use std::future::Future;
use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, Wake, Waker};

use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;

use crate::bridge::{complete_from_runtime, future_into_py, helper, running_loop};

/// What an asyncio task awaits through a loop's wake channel: a source of one value at a
/// time, polled on the loop's thread.
pub(crate) trait LoopSource: Send + Sync + Sized + 'static {
    /// What the general path's future gives.
    type Output: for<'py> IntoPyObject<'py> + Send + 'static;

    /// Polls once with `cx` (the GIL held): the value (or the error to raise), `Pending` with
    /// `cx`'s waker registered, or `None` when it cannot be polled now (another reader holds
    /// it).
    fn poll_here<'py>(
        &self,
        py: Python<'py>,
        cx: &mut Context<'_>,
    ) -> Option<Poll<PyResult<Bound<'py, PyAny>>>>;

    /// The same wait as a runtime future (the general path).
    fn wait(this: Arc<Self>) -> impl Future<Output = PyResult<Self::Output>> + Send + 'static;
}

/// An awaitable of `source`'s next value on the running loop: an asyncio future completed
/// through the loop's wake channel, or by the general path where there is none.
pub(crate) fn await_next<'py, S: LoopSource>(
    py: Python<'py>,
    source: &Arc<S>,
) -> PyResult<Bound<'py, PyAny>> {
    let event_loop = running_loop(py)?;
    let Some(channel) = channel_for(&event_loop)? else {
        return future_into_py(py, S::wait(Arc::clone(source)));
    };
    let future = event_loop.call_method0("create_future")?;
    let waiting = Arc::new(Waiting {
        channel: Arc::downgrade(&channel),
        queued: AtomicBool::new(false),
        source: Arc::downgrade(source),
        // Weakly: an abandoned task (and the stream its frame holds) must stay collectable,
        // and the source holds this waker.
        future: PyWeakrefReference::new(&future)?.into_any().unbind(),
    });
    // The first poll registers the waker (the value may have arrived since the caller's).
    waiting.resolve(py);
    Ok(future)
}

/// The wake channel of `event_loop` (made and registered on first use), or `None` when the
/// loop cannot watch a file descriptor.
fn channel_for(event_loop: &Bound<'_, PyAny>) -> PyResult<Option<Arc<Channel>>> {
    let py = event_loop.py();
    let drain = helper(py, "wake_channel")?.call1((event_loop, py.get_type::<Drain>()))?;
    if drain.is_none() {
        return Ok(None);
    }
    Ok(Some(Arc::clone(&drain.cast_into::<Drain>()?.get().channel)))
}

/// One loop's ready list and the socket pair that tells the loop it is not empty.
struct Channel {
    ready: Mutex<Vec<Arc<dyn Woken>>>,
    /// Written (one byte) when the list stops being empty; non-blocking.
    signal: UnixStream,
    /// Watched by the loop; non-blocking.
    watched: UnixStream,
}

impl Channel {
    fn new() -> std::io::Result<Self> {
        let (signal, watched) = UnixStream::pair()?;
        signal.set_nonblocking(true)?;
        watched.set_nonblocking(true)?;
        Ok(Self {
            ready: Mutex::new(Vec::new()),
            signal,
            watched,
        })
    }

    fn push(&self, woken: Arc<dyn Woken>) {
        let mut ready = self.ready.lock().unwrap_or_else(PoisonError::into_inner);
        let first = ready.is_empty();
        ready.push(woken);
        drop(ready);
        if first {
            // A full socket buffer already has a byte for the loop to see.
            let _ = (&self.signal).write(&[1]);
        }
    }

    fn take(&self) -> Vec<Arc<dyn Woken>> {
        // Emptied first: a push from now on writes a byte again, so none is missed.
        let mut bytes = [0u8; 256];
        while matches!((&self.watched).read(&mut bytes), Ok(n) if n > 0) {}
        std::mem::take(&mut *self.ready.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The loop's reader callback for its channel (`loop.add_reader(drain.fileno(), drain)`).
#[pyclass(module = "pi_agent", frozen)]
pub(crate) struct Drain {
    channel: Arc<Channel>,
}

#[pymethods]
impl Drain {
    #[new]
    fn new() -> PyResult<Self> {
        Ok(Self {
            channel: Arc::new(Channel::new()?),
        })
    }

    /// The file descriptor the loop watches.
    fn fileno(&self) -> i32 {
        self.channel.watched.as_raw_fd()
    }

    /// Completes every woken awaiter whose value is there (on the loop's thread).
    fn __call__(&self, py: Python<'_>) {
        for woken in self.channel.take() {
            woken.resolve_woken(py);
        }
    }
}

/// A woken [`Waiting`], whatever its source: what the ready list holds.
trait Woken: Send + Sync {
    fn resolve_woken(self: Arc<Self>, py: Python<'_>);
}

/// One pending `await`: the waker its source holds.
struct Waiting<S> {
    /// Weakly: the loop's reader callback holds the channel, and a channel that still lists
    /// this waker when its loop closes must not keep itself alive through it.
    channel: Weak<Channel>,
    /// On the ready list already (a second wake before the drain adds nothing).
    queued: AtomicBool,
    source: Weak<S>,
    /// A `weakref.ref` to the asyncio future.
    future: Py<PyAny>,
}

impl<S: LoopSource> Wake for Waiting<S> {
    fn wake(self: Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel)
            && let Some(channel) = self.channel.upgrade()
        {
            channel.push(self);
        }
    }
}

impl<S: LoopSource> Woken for Waiting<S> {
    fn resolve_woken(self: Arc<Self>, py: Python<'_>) {
        self.queued.store(false, Ordering::Release);
        self.resolve(py);
    }
}

impl<S: LoopSource> Waiting<S> {
    /// Polls the source and completes the future if its value is there; otherwise the source
    /// keeps this waker. Nothing is taken when nobody waits any more.
    fn resolve(self: &Arc<Self>, py: Python<'_>) {
        let future = match self.future.bind(py).cast::<PyWeakrefReference>() {
            Ok(weak) => match weak.upgrade() {
                Some(future) => future,
                None => return, // collected: nobody is waiting
            },
            Err(_) => return,
        };
        let done = future
            .call_method0("done")
            .and_then(|done| done.is_truthy())
            .unwrap_or(true);
        if done {
            return; // cancelled: the value stays for the next `__anext__`
        }
        let Some(source) = self.source.upgrade() else {
            return;
        };
        let waker = Waker::from(Arc::clone(self));
        let mut cx = Context::from_waker(&waker);
        let outcome = match source.poll_here(py, &mut cx) {
            Some(Poll::Pending) => return,
            Some(Poll::Ready(outcome)) => outcome,
            None => {
                // Another reader holds the source: wait for it on the runtime instead. (An
                // error means the loop is closed: nobody will run the awaiting task.)
                if let Ok(event_loop) = future.call_method0("get_loop") {
                    let _ = complete_from_runtime(&future, event_loop, S::wait(source));
                }
                return;
            }
        };
        // Errors here mean the future was completed meanwhile; nothing else to tell.
        drop(match outcome {
            Ok(value) => future.call_method1("set_result", (value,)),
            Err(error) => future.call_method1("set_exception", (error.into_value(py),)),
        });
    }
}
