//! The `void *user_data` of a callback registration and its `free_user_data` finaliser.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

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
