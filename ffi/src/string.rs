//! Strings across the boundary: borrowed `pi_str` views and owned `char *` results.

use std::ffi::{CString, c_char};

use crate::boundary::{Fallback, opt_ref};

/// A borrowed UTF-8 string: `len` bytes at `data`. NOT NUL-terminated (use `len`, e.g.
/// `printf("%.*s", (int)s.len, s.data)`, or copy it with `pi_str_dup`);
/// `data` is never NULL. How long it stays valid is stated by the function that returns it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pi_str {
    /// The first byte.
    pub data: *const c_char,
    /// The length in bytes.
    pub len: usize,
}

impl pi_str {
    /// The empty string.
    pub(crate) const EMPTY: pi_str = pi_str {
        data: c"".as_ptr(),
        len: 0,
    };

    /// A view of `text`, valid as long as `text` is neither moved nor changed.
    pub(crate) fn new(text: &str) -> Self {
        if text.is_empty() {
            return Self::EMPTY;
        }
        Self {
            data: text.as_ptr().cast(),
            len: text.len(),
        }
    }
}

impl Fallback for pi_str {
    fn on_panic(_: String) -> Self {
        pi_str::EMPTY
    }
}

/// The body of an accessor that returns a view of an object's text: `read` on the object behind
/// `handle`, or the empty string when it is NULL (or `read` panicked).
pub(crate) fn view<T>(handle: *const T, read: impl FnOnce(&T) -> pi_str) -> pi_str {
    ffi_boundary! {
        opt_ref(handle).map_or(pi_str::EMPTY, read)
    }
}

/// Hands `text` to C as an owned, NUL-terminated string (freed with `pi_string_free`). NUL
/// bytes inside `text` (never produced by JSON) are replaced by U+FFFD.
pub(crate) fn into_c_string(text: String) -> *mut c_char {
    let text = if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text
    };
    CString::new(text)
        .unwrap_or_else(|_| CString::from(c""))
        .into_raw()
}

/// Frees a string returned by this library as `char *`. NULL is a no-op.
///
/// Thread-safety: call once, when no other thread uses `string`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_string_free(string: *mut c_char) {
    ffi_boundary! {
        take_c_string(string);
    }
}

/// Frees a string made by [`into_c_string`] (NULL is a no-op).
fn take_c_string(ptr: *mut c_char) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: per the API contract, a non-NULL string passed to `pi_string_free` came from
    // `CString::into_raw` in this library and is freed exactly once.
    drop(unsafe { CString::from_raw(ptr) });
}

/// Copies the `pi_str` view `text` into a new NUL-terminated string (free it with
/// `pi_string_free`), for C code that wants a `char *` (`strstr`, `printf("%s")`, keeping it
/// past the view's lifetime): a `pi_str` is NOT NUL-terminated. A NUL byte inside becomes
/// U+FFFD; a NULL `data` gives `""`.
///
/// Thread-safety: may be called from any thread while the view is valid.
#[unsafe(no_mangle)]
pub extern "C" fn pi_str_dup(text: pi_str) -> *mut c_char {
    ffi_boundary! {
        if text.data.is_null() || text.len == 0 {
            return into_c_string(String::new());
        }
        // SAFETY: a `pi_str` from this library points to `len` readable bytes while valid.
        let bytes = unsafe { std::slice::from_raw_parts(text.data.cast::<u8>(), text.len) };
        into_c_string(String::from_utf8_lossy(bytes).into_owned())
    }
}
