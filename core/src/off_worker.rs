//! [`off_worker`]: a call that may block, made from async code without stalling the runtime.

/// Runs `call`, which may block (a lock held by another process, the disk, a host callback),
/// on this thread without holding a runtime worker: on a worker of a multi-threaded tokio
/// runtime the thread leaves the worker pool meanwhile (`tokio::task::block_in_place`), so
/// the runtime's other tasks go on; elsewhere (a current-thread runtime, where
/// `block_in_place` would panic, or a thread of the caller's) it runs in place.
///
/// The library calls its blocking work through it (a session's store calls; the bindings'
/// synchronous host callbacks).
pub fn off_worker<T>(call: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let multi_threaded = Handle::try_current()
        .is_ok_and(|handle| handle.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi_threaded {
        tokio::task::block_in_place(call)
    } else {
        call()
    }
}
