//! The bounded queue between a producer task and the consumer of its events, with wake-ups
//! batched: between a provider and its stream's consumer, and between an agent run and its
//! [`AgentRun`](crate::agent::AgentRun).
//!
//! A general-purpose channel wakes the consumer for every event. When the provider runs on a
//! worker thread and the consumer on another (a multi-thread runtime, `#[tokio::main]`), each
//! of those wake-ups is a cross-thread hand-off that costs more than the event itself. Here the
//! provider's task marks the span of one poll (everything it parses from the bytes it already
//! has) as a batch: events pushed inside it reach the queue at once but the consumer is woken
//! once, when the poll ends or the batch grows large. The consumer then drains the whole queue
//! under one lock.
//!
//! Outside a batch every push wakes the consumer, so a writer used without
//! [`StreamWriter::drive`](super::event_stream::StreamWriter::drive) behaves like a plain
//! channel.
//!
//! The queue is bounded: a provider that gets [`CAPACITY`] events ahead of its consumer waits,
//! which slows the HTTP read instead of buffering without limit. Nothing is allocated until the
//! first event, and a drained queue keeps only the room it needed, so thousands of idle streams
//! cost little.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio_util::sync::CancellationToken;

use super::event::AssistantMessageEvent;

/// Events a provider may get ahead of its consumer before it waits.
pub(crate) const CAPACITY: usize = 256;

/// Inside a batch, the consumer is still woken once this many events wait, so on a
/// multi-thread runtime it can work in parallel with a long batch.
const WAKE_EVERY: usize = 64;

/// A drained consumer buffer this small is freed rather than kept for the next batch: a
/// stream whose events arrive one at a time then holds one buffer (a few events of a few
/// hundred bytes each, times thousands of concurrent streams), and bursts keep their two.
const SMALL_BATCH: usize = 4;

#[derive(Debug)]
struct State<T> {
    events: VecDeque<T>,
    /// The consumer, parked on an empty queue.
    consumer: Option<Waker>,
    /// The provider, parked on a full queue.
    producer: Option<Waker>,
    /// A provider poll is under way: hold wake-ups until it ends.
    batching: bool,
    /// Events were pushed since the consumer was last woken.
    unannounced: bool,
    sender_gone: bool,
    receiver_gone: bool,
}

#[derive(Debug)]
struct Shared<T> {
    state: Mutex<State<T>>,
    /// How many events may wait before the producer does.
    capacity: usize,
    /// Fired when the consumer drops its end.
    receiver_gone: CancellationToken,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Every update leaves the state consistent, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Wakes `waker` (if any) after the lock is released.
fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// A provider's event as it waits in a queue: boxed, so that each of the several moves between
/// the provider's writer and the reader's caller (queue, stream, blocking wait) copies a
/// pointer, not the whole event (the size of its largest variant, which holds a message: a
/// few hundred bytes). One allocation per event costs less than those copies.
pub(crate) type Queued = Box<AssistantMessageEvent>;

/// Creates a connected sender and receiver for a provider's events ([`CAPACITY`]).
pub(crate) fn queue() -> (Sender, Receiver) {
    bounded(CAPACITY)
}

/// Creates a connected sender and receiver holding at most `capacity` waiting events.
pub(crate) fn bounded<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            events: VecDeque::new(),
            consumer: None,
            producer: None,
            batching: false,
            unannounced: false,
            sender_gone: false,
            receiver_gone: false,
        }),
        capacity: capacity.max(1),
        receiver_gone: CancellationToken::new(),
    });
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver {
            shared,
            local: VecDeque::new(),
        },
    )
}

/// The consumer went away: the event was not delivered.
#[derive(Debug)]
pub(crate) struct Closed;

/// The provider's end. Dropping it ends the queue after the events already in it.
#[derive(Debug)]
pub(crate) struct Sender<T = Queued> {
    shared: Arc<Shared<T>>,
}

impl<T> Sender<T> {
    /// Waits until the queue has room for an event (or the consumer is gone).
    pub(crate) async fn ready(&self) -> Result<(), Closed> {
        poll_fn(|cx| {
            let mut state = self.shared.lock();
            if state.receiver_gone {
                return Poll::Ready(Err(Closed));
            }
            if state.events.len() < self.shared.capacity {
                return Poll::Ready(Ok(()));
            }
            state.producer = Some(cx.waker().clone());
            // About to wait for room: the consumer must be running to make some.
            state.unannounced = false;
            let consumer = state.consumer.take();
            drop(state);
            wake(consumer);
            Poll::Pending
        })
        .await
    }

    /// Queues `event` without waiting. Call [`ready`](Self::ready) first: the queue holds at
    /// most one event more than its capacity per caller that skipped it.
    pub(crate) fn push(&self, event: T) -> Result<(), Closed> {
        let mut state = self.shared.lock();
        if state.receiver_gone {
            return Err(Closed);
        }
        if state.events.capacity() == 0 {
            // Room for one event, not the four a `VecDeque` starts with: a paced stream's
            // events come one at a time, and a burst grows the buffer as usual.
            state.events.reserve_exact(1);
        }
        state.events.push_back(event);
        let consumer = if state.batching && state.events.len() < WAKE_EVERY {
            state.unannounced = true;
            None
        } else {
            state.unannounced = false;
            state.consumer.take()
        };
        drop(state);
        wake(consumer);
        Ok(())
    }

    /// [`ready`](Self::ready), then [`push`](Self::push).
    #[cfg(test)]
    pub(crate) async fn send(&self, event: T) -> Result<(), Closed> {
        self.ready().await?;
        self.push(event)
    }

    /// [`ready`](Self::ready), then [`push`](Self::push); but once `aborted` is cancelled it
    /// queues without waiting for room: an aborted run's last events must not wait for a consumer that may never read
    /// again (a run kept unread, then aborted). They are few: the rest of a turn and the
    /// run's end.
    pub(crate) async fn send_unless_aborted(
        &self,
        event: T,
        aborted: &CancellationToken,
    ) -> Result<(), Closed> {
        tokio::select! {
            biased;
            room = self.ready() => room?,
            () = aborted.cancelled() => {}
        }
        self.push(event)
    }

    /// Queues `event` if there is room (the first event of a fresh queue always fits).
    pub(crate) fn try_send(&self, event: T) -> Result<(), Closed> {
        let mut state = self.shared.lock();
        if state.receiver_gone || state.events.len() >= self.shared.capacity {
            return Err(Closed);
        }
        state.events.push_back(event);
        let consumer = state.consumer.take();
        drop(state);
        wake(consumer);
        Ok(())
    }

    /// `true` once the consumer has dropped its end.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.receiver_gone.is_cancelled()
    }

    /// Completes when the consumer drops its end.
    #[cfg(test)]
    pub(crate) fn closed(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.shared.receiver_gone.cancelled()
    }

    /// A token fired when the consumer drops its end (usable while the sender is borrowed).
    pub(crate) fn closed_token(&self) -> CancellationToken {
        self.shared.receiver_gone.clone()
    }

    /// What makes a provider's future batch its events (see [`Batcher::wrap`]).
    pub(crate) fn batcher(&self) -> Batcher<T> {
        Batcher {
            shared: Arc::clone(&self.shared),
        }
    }
}

/// Makes each poll of a future one batch of a queue.
#[derive(Debug)]
pub(crate) struct Batcher<T = Queued> {
    shared: Arc<Shared<T>>,
}

impl<T> Batcher<T> {
    /// Wraps the provider's future so that each of its polls is one batch.
    pub(crate) fn wrap<F: Future>(self, future: F) -> Batched<F, T> {
        Batched {
            shared: self.shared,
            future,
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.sender_gone = true;
        let consumer = state.consumer.take();
        drop(state);
        wake(consumer);
    }
}

pin_project_lite::pin_project! {
    /// A future whose every poll is one batch of the queue (see the module documentation).
    pub(crate) struct Batched<F, T> {
        shared: Arc<Shared<T>>,
        #[pin]
        future: F,
    }
}

impl<F: Future, T> Future for Batched<F, T> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        this.shared.lock().batching = true;
        let result = this.future.poll(cx);
        let mut state = this.shared.lock();
        state.batching = false;
        let consumer = if std::mem::take(&mut state.unannounced) {
            state.consumer.take()
        } else {
            None
        };
        drop(state);
        wake(consumer);
        result
    }
}

/// The consumer's end. Dropping it tells the provider nobody listens any more.
#[derive(Debug)]
pub(crate) struct Receiver<T = Queued> {
    shared: Arc<Shared<T>>,
    /// Events taken from the queue in one go, handed out one by one.
    local: VecDeque<T>,
}

impl<T> Receiver<T> {
    /// The next event; `None` once the provider's end is gone and every event was taken.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.recv(Some(cx.waker()))
    }

    /// [`poll_recv`](Self::poll_recv) that registers no waker when it is `Pending`: the task
    /// waiting on the queue, if any, stays the one woken.
    pub(crate) fn poll_recv_ready(&mut self) -> Poll<Option<T>> {
        self.recv(None)
    }

    fn recv(&mut self, waker: Option<&Waker>) -> Poll<Option<T>> {
        if let Some(event) = self.local.pop_front() {
            if self.local.is_empty() && self.local.capacity() <= SMALL_BATCH {
                // A stream whose events come one at a time (below) needs one buffer, not two.
                self.local = VecDeque::new();
            }
            return Poll::Ready(Some(event));
        }
        let mut state = self.shared.lock();
        if state.events.is_empty() {
            if state.sender_gone {
                return Poll::Ready(None);
            }
            let Some(waker) = waker else {
                return Poll::Pending;
            };
            if !state
                .consumer
                .as_ref()
                .is_some_and(|registered| registered.will_wake(waker))
            {
                state.consumer = Some(waker.clone());
            }
            return Poll::Pending;
        }
        let single = if state.events.len() == 1 {
            // One event (a paced stream's usual case): taken as it lies, no second buffer.
            state.events.pop_front()
        } else {
            // Swap buffers: the provider keeps filling the (empty) one we drained last time.
            std::mem::swap(&mut self.local, &mut state.events);
            None
        };
        let producer = state.producer.take();
        drop(state);
        wake(producer);
        if single.is_some() {
            return Poll::Ready(single);
        }
        // A burst that needed a big buffer does not keep it for the rest of a long stream.
        if self.local.capacity() > self.shared.capacity && self.local.len() <= WAKE_EVERY {
            self.local.shrink_to(WAKE_EVERY);
        }
        Poll::Ready(self.local.pop_front())
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.receiver_gone = true;
        state.events.clear();
        let producer = state.producer.take();
        drop(state);
        self.shared.receiver_gone.cancel();
        wake(producer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::task::noop_waker;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    fn delta(n: usize) -> Queued {
        Box::new(AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: n.to_string(),
        })
    }

    fn text(event: &AssistantMessageEvent) -> String {
        event.delta().unwrap_or_default().to_owned()
    }

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn events_arrive_in_order_then_end() {
        let (tx, mut rx) = queue();
        let consumer = tokio::spawn(async move {
            let mut seen = Vec::new();
            while let Some(event) = poll_fn(|cx| rx.poll_recv(cx)).await {
                seen.push(text(&event));
            }
            seen
        });
        for n in 0..1000 {
            tx.send(delta(n)).await.expect("open");
        }
        drop(tx);
        let seen = consumer.await.expect("consumer");
        assert_eq!(seen, (0..1000).map(|n| n.to_string()).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_batch_wakes_the_consumer_once_when_the_poll_ends() {
        let (tx, mut rx) = queue();
        let count = Arc::new(Count::default());
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        assert!(rx.poll_recv(&mut cx).is_pending());
        let batch = tx.batcher().wrap(async {
            for n in 0..10 {
                tx.send(delta(n)).await.expect("open");
            }
            assert_eq!(
                count.0.load(Ordering::SeqCst),
                0,
                "no wake-up inside the batch"
            );
        });
        batch.await;
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        for n in 0..10 {
            let Poll::Ready(Some(event)) = rx.poll_recv(&mut cx) else {
                panic!("event {n}");
            };
            assert_eq!(text(&event), n.to_string());
        }
    }

    /// A check that only looks (`poll_recv_ready`) leaves the registered waker in place: the
    /// waiting task still gets the next event's wake-up.
    #[test]
    fn a_ready_check_keeps_the_registered_waker() {
        let (tx, mut rx) = queue();
        let waiting = Arc::new(Count::default());
        let waker = Waker::from(Arc::clone(&waiting));
        assert!(rx.poll_recv(&mut Context::from_waker(&waker)).is_pending());
        assert!(rx.poll_recv_ready().is_pending());
        tx.push(delta(0)).expect("open");
        assert_eq!(
            waiting.0.load(Ordering::SeqCst),
            1,
            "the waiting task is woken"
        );
        let Poll::Ready(Some(event)) = rx.poll_recv_ready() else {
            panic!("the event is there");
        };
        assert_eq!(text(&event), "0");
        // A noop-waker poll, by contrast, replaces it: the next event wakes nobody.
        assert!(rx.poll_recv(&mut Context::from_waker(&waker)).is_pending());
        assert!(
            rx.poll_recv(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
        tx.push(delta(1)).expect("open");
        assert_eq!(waiting.0.load(Ordering::SeqCst), 1);
    }

    /// Thousands of paced streams at once: after a first batch, a stream whose events come one
    /// at a time holds one buffer with room for one event (360 bytes), not two of four.
    #[test]
    fn events_one_at_a_time_keep_one_small_buffer() {
        let (tx, mut rx) = queue();
        let noop = noop_waker();
        let mut cx = Context::from_waker(&noop);
        for n in 0..3 {
            tx.push(delta(n)).expect("open");
        }
        for n in 0..3 {
            let Poll::Ready(Some(event)) = rx.poll_recv(&mut cx) else {
                panic!("event {n}");
            };
            assert_eq!(text(&event), n.to_string());
        }
        for n in 3..20 {
            tx.push(delta(n)).expect("open");
            let Poll::Ready(Some(event)) = rx.poll_recv(&mut cx) else {
                panic!("event {n}");
            };
            assert_eq!(text(&event), n.to_string());
        }
        assert_eq!(rx.local.capacity(), 0, "no second buffer");
        assert_eq!(tx.shared.lock().events.capacity(), 1);
        // A burst still grows the buffer and is read whole.
        for n in 0..100 {
            tx.push(delta(n)).expect("open");
        }
        for n in 0..100 {
            let Poll::Ready(Some(event)) = rx.poll_recv(&mut cx) else {
                panic!("burst event {n}");
            };
            assert_eq!(text(&event), n.to_string());
        }
        assert!(rx.poll_recv(&mut cx).is_pending());
    }

    #[tokio::test]
    async fn a_full_queue_makes_the_provider_wait() {
        let (tx, mut rx) = queue();
        for n in 0..CAPACITY {
            tx.try_send(delta(n)).expect("room");
        }
        assert!(tx.try_send(delta(0)).is_err(), "bounded");
        let mut send = std::pin::pin!(tx.send(delta(CAPACITY)));
        let noop = noop_waker();
        let mut cx = Context::from_waker(&noop);
        assert!(send.as_mut().poll(&mut cx).is_pending());
        assert!(matches!(rx.poll_recv(&mut cx), Poll::Ready(Some(_))));
        assert!(send.as_mut().poll(&mut cx).is_ready(), "room after a drain");
    }

    #[tokio::test]
    async fn dropping_the_receiver_closes_the_sender() {
        let (tx, rx) = queue();
        assert!(!tx.is_closed());
        drop(rx);
        assert!(tx.is_closed());
        tx.closed().await;
        assert!(tx.send(delta(0)).await.is_err());
    }
}
