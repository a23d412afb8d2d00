//! The one boundary every exported function runs inside, and the argument checks used in it.
//!
//! [`ffi_boundary!`] wraps a body in `catch_unwind` and turns a panic into the function's
//! fallback value ([`Fallback`]): an error object for `pi_error *`, NULL, `false`, 0 or an
//! empty `pi_str` otherwise. [`ffi_fallible!`] does the same for bodies written as
//! `Result<(), pi_error>` (so `?` works) and returns the `pi_error *` the C caller sees.

use std::any::Any;
use std::ffi::{CStr, c_char};
use std::ptr;

use crate::error::{pi_error, pi_error_kind};
use crate::string::pi_str;

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

/// Runs a body returning `Result<(), pi_error>` and converts it to the `pi_error *` result
/// (NULL on success); a panic becomes a `PI_ERROR_KIND_PANIC` error.
macro_rules! ffi_fallible {
    ($($body:tt)*) => {
        $crate::boundary::into_c_result(::std::panic::catch_unwind(
            ::std::panic::AssertUnwindSafe(
                || -> ::std::result::Result<(), $crate::error::pi_error> { $($body)* },
            ),
        ))
    };
}

/// What an exported function returns when its body panicked.
pub(crate) trait Fallback {
    /// The value for a panic with this message.
    fn on_panic(message: String) -> Self;
}

impl Fallback for *mut pi_error {
    fn on_panic(message: String) -> Self {
        pi_error::panic(message).into_raw()
    }
}

impl Fallback for bool {
    fn on_panic(_: String) -> Self {
        false
    }
}

impl Fallback for u64 {
    fn on_panic(_message: String) -> Self {
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

impl Fallback for pi_str {
    fn on_panic(_: String) -> Self {
        pi_str::EMPTY
    }
}

impl Fallback for pi_error_kind {
    fn on_panic(_: String) -> Self {
        pi_error_kind::Panic
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

/// The `pi_error *` for the outcome of an [`ffi_fallible!`] body.
pub(crate) fn into_c_result(outcome: std::thread::Result<Result<(), pi_error>>) -> *mut pi_error {
    match outcome {
        Ok(Ok(())) => ptr::null_mut(),
        Ok(Err(error)) => error.into_raw(),
        Err(payload) => pi_error::panic(panic_message(&*payload)).into_raw(),
    }
}

/// Borrows the object behind a handle, or fails with `PI_ERROR_KIND_NULL_ARGUMENT`.
///
/// The C caller guarantees that a non-NULL handle came from this library, is not freed yet, and
/// stays alive for the returned lifetime (the duration of the call).
pub(crate) fn arg_ref<'a, T>(ptr: *const T, name: &str) -> Result<&'a T, pi_error> {
    // SAFETY: per the API contract, a non-NULL handle points to a live object this library
    // allocated; `as_ref` handles NULL.
    unsafe { ptr.as_ref() }.ok_or_else(|| pi_error::null_argument(name))
}

/// Borrows the object behind a handle, if it is not NULL (for functions without an error).
pub(crate) fn opt_ref<'a, T>(ptr: *const T) -> Option<&'a T> {
    // SAFETY: as in `arg_ref`.
    unsafe { ptr.as_ref() }
}

/// Reads a `const char *` argument as UTF-8, rejecting NULL and invalid UTF-8.
pub(crate) fn arg_str<'a>(ptr: *const c_char, name: &str) -> Result<&'a str, pi_error> {
    arg_opt_str(ptr, name)?.ok_or_else(|| pi_error::null_argument(name))
}

/// Reads a nullable `const char *` argument as UTF-8 (`None` for NULL).
pub(crate) fn arg_opt_str<'a>(ptr: *const c_char, name: &str) -> Result<Option<&'a str>, pi_error> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: per the API contract, a non-NULL string argument is NUL-terminated and stays
    // valid and unchanged for the duration of the call.
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes.to_str().map(Some).map_err(|error| {
        pi_error::new(
            pi_error_kind::InvalidUtf8,
            format!("`{name}` is not valid UTF-8: {error}"),
        )
    })
}

/// An out-param checked to be non-NULL; written only on success.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks `ptr`, failing with `PI_ERROR_KIND_NULL_ARGUMENT`.
    pub(crate) fn new(ptr: *mut T, name: &str) -> Result<Self, pi_error> {
        if ptr.is_null() {
            Err(pi_error::null_argument(name))
        } else {
            Ok(Self(ptr))
        }
    }

    /// Writes the value (without reading or dropping what was there).
    pub(crate) fn write(self, value: T) {
        // SAFETY: checked non-NULL in `new`; per the API contract it points to writable memory
        // for a `T`.
        unsafe { self.0.write(value) }
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

/// Frees a string made by [`crate::string::into_c_string`] (NULL is a no-op).
pub(crate) fn take_handle_c_string(ptr: *mut c_char) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: per the API contract, a non-NULL string passed to `pi_string_free` came from
    // `CString::into_raw` in this library and is freed exactly once.
    drop(unsafe { std::ffi::CString::from_raw(ptr) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{pi_error_free, pi_error_get_kind, pi_error_message};

    fn message(error: *mut pi_error) -> String {
        let view = pi_error_message(error);
        // SAFETY: `pi_error_message` returns a view of `len` valid bytes.
        let bytes = unsafe { std::slice::from_raw_parts(view.data.cast::<u8>(), view.len) };
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn panics_become_errors_or_defaults() {
        let error: *mut pi_error = ffi_fallible! {
            panic!("boom");
        };
        assert_eq!(pi_error_get_kind(error), pi_error_kind::Panic);
        assert_eq!(message(error), "panic in pi-agent: boom");
        pi_error_free(error);

        let flag: bool = ffi_boundary! {
            panic!("boom");
        };
        assert!(!flag);
        let string: *mut c_char = ffi_boundary! {
            panic!("boom");
        };
        assert!(string.is_null());
    }

    #[test]
    fn arguments_are_checked() {
        let error = into_c_result(Ok(arg_str(ptr::null(), "text").map(drop)));
        assert_eq!(pi_error_get_kind(error), pi_error_kind::NullArgument);
        assert_eq!(message(error), "`text` must not be NULL");
        pi_error_free(error);

        let bad = c"\xff";
        let error = into_c_result(Ok(arg_str(bad.as_ptr(), "text").map(drop)));
        assert_eq!(pi_error_get_kind(error), pi_error_kind::InvalidUtf8);
        pi_error_free(error);

        assert_eq!(arg_opt_str(ptr::null(), "x").unwrap(), None);
        assert_eq!(arg_opt_str(c"hé".as_ptr(), "x").unwrap(), Some("hé"));
        assert!(Out::<u64>::new(ptr::null_mut(), "out").is_err());
    }
}
