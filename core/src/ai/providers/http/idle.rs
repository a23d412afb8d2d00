//! The idle limit between a streamed body's chunks, with one timer per body.
//!
//! A `tokio::time::timeout` around each chunk's read registers a timer in the runtime's wheel
//! for every frame, and drops it when the frame comes: a lock of the timer driver both ways,
//! and now and then a wake-up of the thread parked on the driver. Here the timer is armed once
//! and left where it is; each wait only notes when it began. When the timer fires before a
//! wait's real deadline (the body was busy meanwhile), it is moved to that deadline. So a
//! frame costs a clock read, and the wheel is touched about once per limit's length. On a
//! thread that reads the stream itself there is no runtime timer at all (see `deadline`).

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use super::deadline::{Deadline, Elapsed, poll_within};

/// An idle limit (see the module's doc).
pub(crate) struct IdleTimer {
    limit: Duration,
    /// Made on the first wait that does not finish at once, and moved by each wait after it.
    deadline: Option<Deadline>,
}

impl IdleTimer {
    /// A limit of `limit` for each wait.
    pub(crate) fn new(limit: Duration) -> Self {
        Self {
            limit,
            deadline: None,
        }
    }

    /// Waits from now on get `limit` instead.
    pub(crate) fn set_limit(&mut self, limit: Duration) {
        self.limit = limit;
    }

    /// The current limit.
    pub(crate) fn limit(&self) -> Duration {
        self.limit
    }

    /// `next`'s output, or [`Elapsed`] if it took longer than the limit from now. The clock is
    /// read only when the chunk is not there yet.
    pub(crate) async fn wait<F: Future>(&mut self, next: F) -> Result<F::Output, Elapsed> {
        let mut next = pin!(next);
        let mut at = None;
        std::future::poll_fn(|cx| {
            poll_within(next.as_mut(), cx, self.limit, &mut at, &mut self.deadline)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn a_wait_longer_than_the_limit_elapses() {
        let mut idle = IdleTimer::new(Duration::from_millis(100));
        let slow = tokio::time::sleep(Duration::from_millis(150));
        assert!(idle.wait(slow).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn waits_that_each_stay_under_the_limit_never_elapse() {
        let mut idle = IdleTimer::new(Duration::from_millis(100));
        // Ten waits of 60 ms: 600 ms in all, past the timer's first deadline many times.
        for _ in 0..10 {
            let chunk = tokio::time::sleep(Duration::from_millis(60));
            assert!(idle.wait(chunk).await.is_ok());
        }
        // And the limit still holds after the timer was moved so often.
        let slow = tokio::time::sleep(Duration::from_millis(101));
        assert!(idle.wait(slow).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_shorter_limit_applies_to_the_next_wait() {
        let mut idle = IdleTimer::new(Duration::from_secs(600));
        assert!(
            idle.wait(tokio::time::sleep(Duration::from_millis(5)))
                .await
                .is_ok()
        );
        idle.set_limit(Duration::from_millis(20));
        let started = Instant::now();
        assert!(idle.wait(std::future::pending::<()>()).await.is_err());
        assert_eq!(started.elapsed(), Duration::from_millis(20));
    }

    #[tokio::test(start_paused = true)]
    async fn a_ready_chunk_reads_no_clock_and_arms_no_timer() {
        let mut idle = IdleTimer::new(Duration::from_millis(100));
        assert!(idle.wait(async { 7 }).await.is_ok_and(|n| n == 7));
        assert!(idle.deadline.is_none());
    }
}
