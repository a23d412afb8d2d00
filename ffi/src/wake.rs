//! The waker of a non-blocking read (`pi_stream_try_next`): a C function and its `user_data`,
//! called once when a stream that had no event may have one, and never after the stream is
//! freed. A C host with many streams then reads them all from one thread (its event loop)
//! instead of blocking a thread per stream in `pi_stream_next`.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Wake, Waker};

use crate::boundary::lock;
use crate::runtime::{Scope, ScopeGuard};

/// Called when a stream that answered `PI_POLL_PENDING` may have an event: once per such
/// answer, from a library thread. It must return quickly (e.g. write to a pipe or an eventfd,
/// or signal a condition variable) and must not block or free the stream.
pub type pi_wake_callback = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// The callback a pending read registered.
#[derive(Clone, Copy)]
struct Registered {
    callback: unsafe extern "C" fn(user_data: *mut c_void),
    user_data: *mut c_void,
}

// SAFETY: the C API documents that the callback is called from a library thread with its
// `user_data`, so the registering caller guarantees both may cross threads.
unsafe impl Send for Registered {}

#[derive(Default)]
struct State {
    registered: Option<Registered>,
    /// How many threads run the callback right now (two, when a callback registered again
    /// and another thread woke it before the first call returned).
    firing: usize,
    /// A wake-up came while the waking thread read this stream (see [`WakeSlot::reading`]):
    /// it is delivered when that read ends.
    deferred: bool,
}

thread_local! {
    /// The slot whose callback this thread is running (its address), or 0. A plain `Cell`:
    /// no allocation and no destructor, so a C host's threads (its main thread included) keep
    /// nothing of ours when they exit (`std::thread::current()` would allocate a handle).
    static FIRING: Cell<usize> = const { Cell::new(0) };

    /// The slot whose stream this thread is reading right now, its lock held (its address), or
    /// 0. Reading a stream can wake it on the same thread (the provider runs inside the read:
    /// one that waited for room, or yields to the scheduler, wakes the read's waker); the
    /// callback then must not run there, since it may call `pi_stream_try_next`, which takes
    /// the same lock.
    static READING: Cell<usize> = const { Cell::new(0) };
}

/// One stream's registered wake-up. The core holds [`Waker`]s made from it for as long as it
/// likes; [`WakeSlot::clear`] makes sure none of them calls C after it returns.
#[derive(Default)]
pub(crate) struct WakeSlot {
    state: Mutex<State>,
    idle: Condvar,
}

impl WakeSlot {
    /// Registers `callback(user_data)` for the next wake-up, replacing any earlier one;
    /// `None` registers nothing (a host that polls).
    pub(crate) fn set(&self, callback: pi_wake_callback, user_data: *mut c_void) {
        lock(&self.state).registered = callback.map(|callback| Registered {
            callback,
            user_data,
        });
    }

    /// Forgets the registered callback (a call already running finishes on its own).
    pub(crate) fn unset(&self) {
        lock(&self.state).registered = None;
    }

    /// Forgets the registered callback and waits for a call already running on another
    /// thread, so that the caller may free what `user_data` points to.
    pub(crate) fn clear(&self) {
        let mut state = lock(&self.state);
        state.registered = None;
        // A callback that frees its own stream does not wait for itself.
        let mine = usize::from(FIRING.with(Cell::get) == self.address());
        while state.firing > mine {
            state = self
                .idle
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Marks this thread as reading the slot's stream until the guard drops: a wake-up meant
    /// for the slot in between is held back and delivered when the guard drops. Take it before
    /// the stream's lock, so that it drops after the lock is released.
    pub(crate) fn reading(&self) -> Reading<'_> {
        let outer = READING.with(|cell| cell.replace(self.address()));
        Reading { slot: self, outer }
    }

    /// A waker that calls the registered callback (once) when woken.
    pub(crate) fn waker(self: &Arc<Self>) -> Waker {
        Waker::from(Arc::new(SlotWaker(Arc::clone(self))))
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn fire(&self) {
        let registered = {
            let mut state = lock(&self.state);
            if READING.with(Cell::get) == self.address() {
                state.deferred = true;
                return;
            }
            let Some(registered) = state.registered.take() else {
                return;
            };
            state.firing += 1;
            registered
        };
        // The callback runs as an event callback: a blocking call from it (`pi_stream_next`)
        // is refused instead of stalling the runtime thread it runs on.
        {
            let _scope = ScopeGuard::enter(Scope::Event(0));
            let outer = FIRING.with(|cell| cell.replace(self.address()));
            // SAFETY: the C caller registered `callback` for `user_data`, and `clear` (run
            // before the stream is freed) waits for this call to end.
            unsafe { (registered.callback)(registered.user_data) };
            FIRING.with(|cell| cell.set(outer));
        }
        lock(&self.state).firing -= 1;
        self.idle.notify_all();
    }
}

/// A read of a stream in progress on this thread (see [`WakeSlot::reading`]).
pub(crate) struct Reading<'a> {
    slot: &'a WakeSlot,
    outer: usize,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        READING.with(|cell| cell.set(self.outer));
        let deferred = std::mem::take(&mut lock(&self.slot.state).deferred);
        if deferred {
            // The registration as the read left it: a read that found an event unregistered
            // it, and then nothing fires.
            self.slot.fire();
        }
    }
}

struct SlotWaker(Arc<WakeSlot>);

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.0.fire();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fire();
    }
}
