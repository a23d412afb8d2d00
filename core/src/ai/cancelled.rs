//! Waiting for a cancellation token without registering again at every poll.
//!
//! `CancellationToken::cancelled()` hands its waker to the token again, under the token's
//! lock, each time it is polled. A stream's task watches two tokens beside its request (the
//! caller's abort and the consumer's drop) and is polled once per frame: two lock round trips
//! per frame, about 800 instructions (callgrind), for tokens that nearly never fire. A
//! registration stays valid until the token fires, so [`Cancelled`] polls the token's future
//! only when the waker differs from the one it registered; otherwise an atomic load says
//! whether the token fired.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

pin_project_lite::pin_project! {
    /// Completes when `token` is cancelled (see the module's doc); made by [`cancelled`].
    pub(crate) struct Cancelled<'a> {
        token: &'a CancellationToken,
        #[pin]
        wait: WaitForCancellationFuture<'a>,
        // The waker `wait` registered at its last poll.
        registered: Option<Waker>,
    }
}

/// [`CancellationToken::cancelled`], polled again only when its waker changes.
pub(crate) fn cancelled(token: &CancellationToken) -> Cancelled<'_> {
    Cancelled {
        token,
        wait: token.cancelled(),
        registered: None,
    }
}

impl Future for Cancelled<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        if this.token.is_cancelled() {
            return Poll::Ready(());
        }
        if this
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            // `wait` will wake this waker when the token fires; the check above sees it then.
            return Poll::Pending;
        }
        match this.wait.poll(cx) {
            Poll::Ready(()) => Poll::Ready(()),
            Poll::Pending => {
                *this.registered = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (Arc::clone(&count), Waker::from(count))
    }

    #[test]
    fn wakes_its_registered_waker_and_completes() {
        let token = CancellationToken::new();
        let mut wait = std::pin::pin!(cancelled(&token));
        let (count, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        // Polled again with the same waker: still pending, still registered.
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        token.cancel();
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "the waker was woken");
        assert!(wait.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn a_new_waker_is_registered_and_woken() {
        let token = CancellationToken::new();
        let mut wait = std::pin::pin!(cancelled(&token));
        let (first, first_waker) = waker();
        assert!(
            wait.as_mut()
                .poll(&mut Context::from_waker(&first_waker))
                .is_pending()
        );
        let (second, second_waker) = waker();
        let mut cx = Context::from_waker(&second_waker);
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        token.cancel();
        assert_eq!(second.0.load(Ordering::SeqCst), 1, "the latest waker");
        assert_eq!(first.0.load(Ordering::SeqCst), 0, "not the replaced one");
        assert!(wait.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn an_already_cancelled_token_completes_at_once() {
        let token = CancellationToken::new();
        token.cancel();
        let (_, waker) = waker();
        let mut wait = std::pin::pin!(cancelled(&token));
        assert!(
            wait.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_ready()
        );
    }
}
