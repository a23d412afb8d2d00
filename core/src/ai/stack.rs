//! Keeping big futures off the stack of every poll.
//!
//! A future built where it is awaited (`Box::pin(send(...)).await`, or `make().await` inside
//! an `async fn`) is constructed on the stack before it moves into its box or its parent's
//! state, and the function that builds it keeps room for it in its stack frame for every one
//! of its polls, long after the construction. A stream's request is polled deep down a chain
//! of such functions, on a reading thread's own stack too (see `ai::blocking`): a few such
//! frames are tens of KiB of stack touched per reading thread.

use std::future::Future;
use std::pin::Pin;

/// `Box::pin(make())`, built in a function of its own: the future's size is on the stack once,
/// here, not in the frame of the function that awaits it.
///
/// The box is allocated first and the future written into it, which lets the compiler build
/// it in place: an `async fn`'s future starts as its arguments and a state tag, while
/// `Box::pin(make())` builds the value (KiB-sized, mostly not yet used) on the stack and copies
/// all of it into the box.
#[inline(never)]
pub(crate) fn boxed<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}
