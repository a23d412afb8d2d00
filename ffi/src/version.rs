//! The library version.

use std::ffi::c_char;

/// The library version, e.g. `"0.1.0"` (static; never freed). It equals
/// `PI_AGENT_VERSION_MAJOR.PI_AGENT_VERSION_MINOR.PI_AGENT_VERSION_PATCH` of the header the
/// library was built with.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_version() -> *const c_char {
    ffi_boundary! {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    }
}
