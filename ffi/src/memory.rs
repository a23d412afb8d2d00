//! `pi_release_memory`: core's `release_memory` for C hosts.

/// Returns the memory the allocator keeps for reuse to the operating system (glibc's
/// `malloc_trim`), and says whether any was returned. Freed memory otherwise stays with the
/// process: after 10,000 concurrent streams have ended, RSS stays at their peak until this is
/// called. Call it when a burst of streams or runs has ended (e.g. when a server goes idle);
/// the next burst takes the pages again. Returns `false` where the allocator is not glibc's.
///
/// Thread-safety: may be called from any thread at any time, also while streams run.
#[unsafe(no_mangle)]
pub extern "C" fn pi_release_memory() -> bool {
    ffi_boundary! {
        pi_agent::release_memory()
    }
}
