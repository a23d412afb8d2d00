//! The `void *user_data` of a callback registration and its `free_user_data` finaliser, and
//! the list of an agent's registrations that decides when each finaliser runs.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Frees the `user_data` of a callback registration. Called exactly once, from whichever
/// thread releases the registration last.
pub type pi_free_callback = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// A C pointer plus its finaliser, which runs exactly once: at [`UserData::release`] or on
/// drop, whichever comes first.
pub(crate) struct UserData {
    ptr: *mut c_void,
    free: Mutex<pi_free_callback>,
    released: AtomicBool,
}

// SAFETY: the C API documents that `user_data` is used from the library's runtime threads (and
// freed on one of them), so the registering caller guarantees it may cross threads.
unsafe impl Send for UserData {}
// SAFETY: as above; the pointer itself is only copied, never dereferenced by Rust.
unsafe impl Sync for UserData {}

impl UserData {
    pub(crate) fn new(ptr: *mut c_void, free: pi_free_callback) -> Self {
        Self {
            ptr,
            free: Mutex::new(free),
            released: AtomicBool::new(false),
        }
    }

    /// The pointer to pass to the callback, or `None` once released.
    pub(crate) fn get(&self) -> Option<*mut c_void> {
        (!self.released.load(Ordering::Acquire)).then_some(self.ptr)
    }

    /// Calls the finaliser (once). The caller makes sure no callback is using the pointer.
    pub(crate) fn release(&self) {
        self.released.store(true, Ordering::Release);
        let free = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(free) = free {
            // SAFETY: `free` is the finaliser the C caller registered for `ptr`; `take` makes
            // sure it runs at most once.
            unsafe { free(self.ptr) }
        }
    }
}

impl Drop for UserData {
    fn drop(&mut self) {
        self.release();
    }
}

/// The `user_data` of an agent's tools and hooks. Core holds each registration (inside a tool or
/// hook closure) while it is installed and while a run uses it; this list holds one more
/// reference, so the finaliser never runs on a runtime thread when core lets go. Instead it
/// runs on the thread of a later `pi_agent_*` call that finds the registration unused
/// ([`Registrations::prune`]), or in `pi_agent_free` ([`Registrations::release_all`]).
#[derive(Default)]
pub(crate) struct Registrations {
    all: Mutex<Vec<Arc<UserData>>>,
}

impl Registrations {
    fn lock(&self) -> MutexGuard<'_, Vec<Arc<UserData>>> {
        self.all.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a new registration (and frees the unused ones).
    pub(crate) fn register(&self, ptr: *mut c_void, free: pi_free_callback) -> Arc<UserData> {
        self.adopt(UserData::new(ptr, free))
    }

    /// Records a registration made earlier (e.g. by `pi_tool_new`), and frees the unused ones.
    pub(crate) fn adopt(&self, data: UserData) -> Arc<UserData> {
        let data = Arc::new(data);
        self.lock().push(Arc::clone(&data));
        self.prune();
        data
    }

    /// Calls the finaliser of every registration nobody else references any more: it was
    /// replaced or removed, and no run or callback uses it. Nothing can take a new reference to
    /// such a registration, so no callback can start with it.
    pub(crate) fn prune(&self) {
        let unused: Vec<Arc<UserData>> = {
            let mut all = self.lock();
            let (unused, used) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|data| Arc::strong_count(data) == 1);
            *all = used;
            unused
        };
        // Dropping the last reference runs the finaliser, outside the lock.
        drop(unused);
    }

    /// Calls every finaliser now. The caller makes sure no callback runs or can start.
    pub(crate) fn release_all(&self) {
        let all = std::mem::take(&mut *self.lock());
        for data in all {
            data.release();
        }
    }

    /// Forgets every registration; each finaliser runs when its last user lets go.
    pub(crate) fn forget_all(&self) {
        drop(std::mem::take(&mut *self.lock()));
    }
}
