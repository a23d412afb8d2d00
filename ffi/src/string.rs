//! Strings across the boundary: borrowed `pi_str` views and owned `char *` results.

use std::ffi::{CString, c_char};

use crate::boundary::take_handle_c_string;

/// A borrowed UTF-8 string: `len` bytes at `data`. Not necessarily NUL-terminated (use `len`);
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
        take_handle_c_string(string);
    }
}
