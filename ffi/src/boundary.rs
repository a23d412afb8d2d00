//! The one boundary every exported function runs inside, and the handles that cross it. A leaf:
//! it knows no type of this crate, so every other module (errors and strings included) builds
//! on it.
//!
//! [`ffi_boundary!`] wraps a body in `catch_unwind` and turns a panic into the function's
//! fallback value ([`Fallback`]): NULL, `false`, 0, or what the type's own module says (an
//! error object for `pi_error *`, an empty `pi_str`). `ffi_fallible!` (in `error.rs`) does the
//! same for bodies written as `Result<(), pi_error>`.

use std::any::Any;
use std::ffi::c_char;
use std::ptr;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Runs the body, turning a panic into the return type's [`Fallback`] value.
macro_rules! ffi_boundary {
    ($($body:tt)*) => {
        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| { $($body)* })) {
            Ok(value) => value,
            Err(payload) => $crate::boundary::Fallback::on_panic(
                $crate::boundary::panic_message(&*payload),
            ),
        }
    };
}

/// What an exported function returns when its body panicked.
pub(crate) trait Fallback {
    /// The value for a panic with this message.
    fn on_panic(message: String) -> Self;
}

impl Fallback for bool {
    fn on_panic(_: String) -> Self {
        false
    }
}

impl Fallback for u64 {
    fn on_panic(_: String) -> Self {
        0
    }
}

impl Fallback for usize {
    fn on_panic(_: String) -> Self {
        0
    }
}

impl Fallback for () {
    fn on_panic(_: String) -> Self {}
}

impl Fallback for *mut c_char {
    fn on_panic(_: String) -> Self {
        ptr::null_mut()
    }
}

impl<T> Fallback for *const T {
    fn on_panic(_: String) -> Self {
        ptr::null()
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("panic in pi-agent: {text}")
}

/// Borrows the object behind a handle, if it is not NULL (for functions without an error).
///
/// The C caller guarantees that a non-NULL handle came from this library, is not freed yet, and
/// stays alive for the returned lifetime (the duration of the call).
pub(crate) fn opt_ref<'a, T>(ptr: *const T) -> Option<&'a T> {
    // SAFETY: per the API contract, a non-NULL handle points to a live object this library
    // allocated; `as_ref` handles NULL.
    unsafe { ptr.as_ref() }
}

/// Locks `mutex`, also after a panic while it was held: what it guards here stays consistent
/// (every change is one assignment), and a C caller must not lose the rest of its run to one
/// panic.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The body of an accessor that returns a flag of an object: `read` on the object behind
/// `handle`, or `false` when it is NULL (or `read` panicked).
pub(crate) fn flag<T>(handle: *const T, read: impl FnOnce(&T) -> bool) -> bool {
    ffi_boundary! {
        opt_ref(handle).is_some_and(read)
    }
}

/// The body of a function that acts on an object and cannot fail: `act` on the object behind
/// `handle`; a NULL `handle` (or a panic in `act`) does nothing.
pub(crate) fn act<T>(handle: *const T, act: impl FnOnce(&T)) {
    ffi_boundary! {
        if let Some(object) = opt_ref(handle) {
            act(object);
        }
    }
}

/// The body of a `_free` function: takes back the handle and hands the object to `finish`
/// (which drops it, after whatever must happen first); NULL is a no-op.
pub(crate) fn free<T>(handle: *mut T, finish: impl FnOnce(Box<T>)) {
    ffi_boundary! {
        if let Some(object) = take_handle(handle) {
            finish(object);
        }
    }
}

/// Moves `value` to the heap and hands it to C as a handle.
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Takes back a handle made by [`into_handle`] (NULL gives `None`).
pub(crate) fn take_handle<T>(ptr: *mut T) -> Option<Box<T>> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: per the API contract, a non-NULL handle passed to a `_free` function came from
    // `into_handle` and is freed exactly once, with no other call using it at the same time.
    Some(unsafe { Box::from_raw(ptr) })
}

#[cfg(test)]
mod tests {
    use std::ffi::c_char;

    #[test]
    fn panics_become_defaults() {
        let flag: bool = ffi_boundary! {
            panic!("boom");
        };
        assert!(!flag);
        let string: *mut c_char = ffi_boundary! {
            panic!("boom");
        };
        assert!(string.is_null());
    }
}
