//! `pi_shutdown`: the last call of a program that wants to exit leak-checker clean.

use std::time::Duration;

use crate::error::{pi_error, pi_error_kind};
use crate::runtime::{Scope, current_scope};

/// How long `pi_shutdown` waits for the runtime's threads (a tool still running is not waited
/// for beyond this).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Shuts the library down for good, so that a program can exit clean under a leak checker
/// (`valgrind --leak-check=full --error-exitcode=1`, whose default counts "possibly lost"
/// blocks): stops the runtime's threads (waiting up to 5 s) and frees the provider registry, the
/// parsed model catalog and the compiled overflow patterns.
/// Call it last, after freeing every object, when no other thread uses the library; a call
/// into the library after it fails with `PI_ERROR_KIND_RUNTIME` (streams, agents) or finds no
/// provider. A program that simply exits need not call it. Calling it twice is a no-op.
///
/// Errors: `CALLED_FROM_CALLBACK` (from a callback of the library: it would stop the thread it
/// runs on).
/// Thread-safety: call from one thread, when no other thread uses the library.
#[unsafe(no_mangle)]
pub extern "C" fn pi_shutdown() -> *mut pi_error {
    ffi_fallible! {
        if current_scope() != Scope::Outside || tokio::runtime::Handle::try_current().is_ok() {
            return Err(pi_error::new(
                pi_error_kind::CalledFromCallback,
                "pi_shutdown() was called from a callback of the library; call it from the \
                 program's own thread, last",
            ));
        }
        crate::runtime::shutdown(SHUTDOWN_TIMEOUT);
        pi_agent::ai::clear_api_providers();
        pi_agent::ai::release_catalog();
        pi_agent::ai::release_overflow_patterns();
        pi_agent::ai::release_validators();
        Ok(())
    }
}
