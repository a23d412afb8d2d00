//! A request's time limits, waited for where the request is read.
//!
//! In a runtime task a limit is a `tokio` timer. On a thread that reads the stream itself
//! (see `ai::blocking`) it is only a time the thread's own `poll(2)` wakes up for: arming a
//! runtime timer from such a thread writes to the runtime's wake-up descriptor and wakes a
//! worker for nothing, three times per request (the response head, the body's idle limit,
//! its end).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::ai::blocking;

/// A point in time to wake up at (see the module's doc). Its `tokio` timer, in a task, is armed
/// once and moved only when it fires before the deadline (the deadline moved later) or the
/// deadline moves earlier: a wait whose deadline moves on every frame touches the runtime's
/// timer wheel about once per limit's length.
pub(crate) struct Deadline {
    at: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Deadline {
    pub(crate) fn new(at: Instant) -> Self {
        Self { at, timer: None }
    }

    /// The deadline from now on.
    pub(crate) fn set(&mut self, at: Instant) {
        self.at = at;
    }

    /// `Ready` once the deadline has passed; else arranges a wake-up for it.
    pub(crate) fn poll_elapsed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if blocking::is_reading_thread() {
            if Instant::now() >= self.at {
                return Poll::Ready(());
            }
            blocking::wake_at(self.at.into_std());
            return Poll::Pending;
        }
        let at = self.at;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if timer.deadline() > at {
            timer.as_mut().reset(at);
        }
        loop {
            match timer.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if Instant::now() >= at => return Poll::Ready(()),
                // Fired for an earlier deadline: moved to this one.
                Poll::Ready(()) => timer.as_mut().reset(at),
            }
        }
    }

    /// Whether a timer was armed (a wait that finished at once arms none).
    #[cfg(test)]
    pub(crate) fn armed(&self) -> bool {
        self.timer.is_some()
    }
}

/// The deadline passed first.
#[derive(Debug)]
pub(crate) struct Elapsed;

/// `future`'s output, or [`Elapsed`] once `limit` has passed (`future` is polled first: one
/// that is ready arms nothing).
pub(crate) async fn within<F: Future>(limit: Duration, future: F) -> Result<F::Output, Elapsed> {
    let mut future = std::pin::pin!(future);
    let (mut at, mut deadline) = (None, None);
    std::future::poll_fn(|cx| poll_within(future.as_mut(), cx, limit, &mut at, &mut deadline)).await
}

/// One poll of a wait for `future` within `limit`: `future` is polled first, and only when it
/// is not ready is the clock read (once per wait, into `at`) and `deadline` made or moved to
/// `at`. A `deadline` kept across waits (the body's idle limit) arms its timer once.
pub(crate) fn poll_within<F: Future>(
    future: Pin<&mut F>,
    cx: &mut Context<'_>,
    limit: Duration,
    at: &mut Option<Instant>,
    deadline: &mut Option<Deadline>,
) -> Poll<Result<F::Output, Elapsed>> {
    if let Poll::Ready(output) = future.poll(cx) {
        return Poll::Ready(Ok(output));
    }
    let at = *at.get_or_insert_with(|| Instant::now() + limit);
    let deadline = deadline.get_or_insert_with(|| Deadline::new(at));
    deadline.set(at);
    deadline.poll_elapsed(cx).map(|()| Err(Elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_ready_future_arms_nothing_and_a_slow_one_elapses() {
        assert_eq!(
            within(Duration::from_millis(10), async { 7 }).await.ok(),
            Some(7)
        );
        let started = Instant::now();
        let slow = within(Duration::from_millis(10), std::future::pending::<()>()).await;
        assert!(slow.is_err());
        assert_eq!(started.elapsed(), Duration::from_millis(10));
    }

    /// On a reading thread, a deadline arms no runtime timer: the thread's own wait wakes up
    /// for it.
    #[test]
    fn a_reading_thread_waits_for_a_deadline_itself() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let _runtime = runtime.enter();
        let started = std::time::Instant::now();
        let mut deadline = Deadline::new(Instant::now() + Duration::from_millis(30));
        let output = blocking::poll_until(None, |waker| {
            match deadline.poll_elapsed(&mut Context::from_waker(waker)) {
                Poll::Ready(()) => Some(()),
                Poll::Pending => None,
            }
        });
        assert_eq!(output, Some(()));
        assert!(!deadline.armed(), "no runtime timer");
        assert!(started.elapsed() >= Duration::from_millis(30));
    }
}
