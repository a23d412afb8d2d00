//! `async for`'s wait for an event that is not there yet, woken from a runtime thread without
//! taking the GIL.
//!
//! The general path ([`crate::bridge::future_into_py`]) spawns a runtime task per awaited event, and that task
//! takes the GIL on a runtime thread to complete an asyncio future with
//! `loop.call_soon_threadsafe`: with many streams open, runtime threads queue for the GIL behind
//! the loop's own thread, and every pending `__anext__` holds a task, a cancellation token and a
//! `weakref.finalize`.
//!
//! Here the awaitable is a [`NextEvent`], which holds the reader's lock on the stream (or run)
//! for as long as it waits, as the general path's task did: a second reader waits its turn.
//! Each step of the awaiting task polls the stream with a waker of its own ([`Waiting`]); when
//! nothing is there, the step yields a plain asyncio future. The waker, called on whichever
//! runtime thread pushed an event, puts itself on its loop's ready list and writes one byte to a
//! socket the loop watches (`loop.add_reader`, one socket pair per loop), taking no GIL. On the
//! loop's thread, the reader callback ([`Drain`]) completes each woken future, and the task's
//! next step takes the event. The event is only ever taken by the task that receives it, so a
//! wait cancelled at any moment loses nothing. A loop that cannot watch a file descriptor takes
//! the general path.

use std::io::{Read as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, Wake, Waker};

use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;

use crate::bridge::{helper, running_loop};
use crate::socket_pair::{self, Socket};

/// A reader's hold on a stream or run (an owned lock guard), polled on the loop's thread.
pub(crate) trait Locked: Send {
    /// Polls once with `cx` (the GIL held): the event's dict, the error to raise
    /// (`StopAsyncIteration` at the end), or `Pending` with `cx`'s waker registered.
    fn poll_here<'py>(
        &mut self,
        py: Python<'py>,
        cx: &mut Context<'_>,
    ) -> Poll<PyResult<Bound<'py, PyAny>>>;
}

/// The awaitable of the next event of `locked` (nothing there yet) on the running loop: a
/// [`NextEvent`] woken through the loop's wake channel, or, where the loop has none, the
/// awaitable `general` makes (see `put_back::general_next`) once `locked` is let go.
pub(crate) fn await_next<'py>(
    py: Python<'py>,
    locked: Box<dyn Locked>,
    general: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let event_loop = running_loop(py)?;
    let Some(channel) = channel_for(&event_loop)? else {
        drop(locked);
        return general();
    };
    let waiting = Arc::new(Waiting {
        channel: Arc::downgrade(&channel),
        queued: AtomicBool::new(false),
        future: Mutex::new(None),
    });
    let next = NextEvent {
        pending: Mutex::new(Some(Pending {
            locked,
            waiting,
            event_loop: event_loop.unbind(),
        })),
    };
    Ok(Bound::new(py, next)?.into_any())
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

/// An `await` of the next event: each step polls, and yields an asyncio future to wait on when
/// nothing is there. Dropping it (the await cancelled, or the task collected) lets the stream go.
#[pyclass(module = "pi_agent", frozen)]
pub(crate) struct NextEvent {
    /// `None` once the await is over.
    pending: Mutex<Option<Pending>>,
}

struct Pending {
    locked: Box<dyn Locked>,
    waiting: Arc<Waiting>,
    event_loop: Py<PyAny>,
}

#[pymethods]
impl NextEvent {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// One step of the awaiting task: ends the await with the event (`StopIteration(event)`)
    /// or its error, or yields a future to wait on.
    fn __next__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let mut slot = this.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(pending) = slot.as_mut() else {
            return Err(PyRuntimeError::new_err(
                "cannot reuse already awaited event",
            ));
        };
        let waker = Waker::from(Arc::clone(&pending.waiting));
        let mut cx = Context::from_waker(&waker);
        match pending.locked.poll_here(py, &mut cx) {
            Poll::Ready(outcome) => {
                // The lock is let go before the caller sees the event.
                *slot = None;
                drop(slot);
                Err(match outcome {
                    Ok(event) => {
                        PyErr::from_type(py.get_type::<PyStopIteration>(), (event.unbind(),))
                    }
                    Err(error) => error,
                })
            }
            Poll::Pending => {
                let future = pending.event_loop.bind(py).call_method0("create_future")?;
                // What `Future.__await__` sets before it yields: the task waits on the future.
                future.setattr("_asyncio_future_blocking", true)?;
                // Weakly: the stream holds this waker, and an abandoned task (with the stream
                // its frame holds) must stay collectable.
                let weak = PyWeakrefReference::new(&future)?.into_any().unbind();
                *pending
                    .waiting
                    .future
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(weak);
                Ok(future.unbind())
            }
        }
    }

    /// As `__next__` (the task sends `None`).
    fn send(slf: &Bound<'_, Self>, _value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::__next__(slf)
    }

    /// An exception thrown into the await (the task cancelled, a timeout): the await is over
    /// and lets the stream go at once (this object itself may live on in a traceback), and the
    /// exception goes on.
    #[pyo3(signature = (kind, value = None, _traceback = None))]
    fn throw(
        &self,
        kind: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.end();
        let value = value.filter(|value| !value.is_none()).unwrap_or(kind);
        Err(PyErr::from_value(value.clone()))
    }

    /// The awaiting coroutine is closed: the await is over.
    fn close(&self) {
        self.end();
    }
}

impl NextEvent {
    /// Ends the await: the stream (its lock) is let go; the event stays for the next reader.
    fn end(&self) {
        drop(
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }
}

/// One loop's ready list and the socket pair that tells the loop it is not empty.
struct Channel {
    ready: Mutex<Vec<Arc<Waiting>>>,
    /// A byte was written since the loop last emptied the list.
    signalled: AtomicBool,
    /// Written (one byte) when the list has something new; non-blocking.
    signal: Socket,
    /// Watched by the loop; non-blocking.
    watched: Socket,
}

impl Channel {
    fn new() -> std::io::Result<Self> {
        let (signal, watched) = socket_pair::pair()?;
        signal.set_nonblocking(true)?;
        watched.set_nonblocking(true)?;
        Ok(Self {
            ready: Mutex::new(Vec::new()),
            signalled: AtomicBool::new(false),
            signal,
            watched,
        })
    }

    fn push(&self, waiting: Arc<Waiting>) {
        self.ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(waiting);
        if !self.signalled.swap(true, Ordering::SeqCst) {
            match (&self.signal).write(&[1]) {
                // A full socket buffer already has bytes for the loop to see.
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                // Not written: the next push tries again.
                Err(_) => self.signalled.store(false, Ordering::Release),
            }
        }
    }

    fn take(&self) -> Vec<Arc<Waiting>> {
        // The bytes first, then the flag, then the list. A push whose byte this read consumed
        // set the flag before it is cleared here, so its waker is in the list taken below; a
        // push that finds the flag cleared writes a byte this read did not see. (Clearing the
        // flag before the read would lose wake-ups: a push in between would set it again, its
        // byte be read here, and every later push see the flag set and write nothing.)
        let mut bytes = [0u8; 256];
        while matches!((&self.watched).read(&mut bytes), Ok(n) if n > 0) {}
        self.signalled.store(false, Ordering::SeqCst);
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

    /// The file descriptor (a `SOCKET` on Windows) the loop watches.
    fn fileno(&self) -> u64 {
        socket_pair::fileno(&self.channel.watched)
    }

    /// Completes the future of every woken wait (on the loop's thread).
    fn __call__(&self, py: Python<'_>) {
        let woken = self.channel.take();
        for waiting in &woken {
            waiting.queued.store(false, Ordering::Release);
        }
        for waiting in woken {
            waiting.complete(py);
        }
    }
}

/// The waker of one [`NextEvent`]: what the stream holds while the task waits.
struct Waiting {
    /// Weakly: the loop's reader callback holds the channel, and a channel that still lists
    /// this waker when its loop closes must not keep itself alive through it.
    channel: Weak<Channel>,
    /// On the ready list already (a second wake before the drain adds nothing).
    queued: AtomicBool,
    /// A `weakref.ref` to the future the task waits on; taken when completed.
    future: Mutex<Option<Py<PyAny>>>,
}

impl Wake for Waiting {
    fn wake(self: Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel)
            && let Some(channel) = self.channel.upgrade()
        {
            channel.push(self);
        }
    }
}

impl Waiting {
    /// Completes the waited-on future (the task's next step takes the event). Nothing to do
    /// when it was cancelled or collected.
    fn complete(&self, py: Python<'_>) {
        let weak = self
            .future
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(future) = weak.and_then(|weak| {
            weak.bind(py)
                .cast::<PyWeakrefReference>()
                .ok()
                .and_then(|weak| weak.upgrade())
        }) else {
            return;
        };
        let done = future
            .call_method0("done")
            .and_then(|done| done.is_truthy())
            .unwrap_or(true);
        if !done {
            // An error here means the future was completed meanwhile: nothing else to tell.
            let _ = future.call_method1("set_result", (py.None(),));
        }
    }
}
