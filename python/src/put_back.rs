//! A stream or run as Python readers share it: with room in front for one event that a wait on
//! the runtime took but could not hand over.
//!
//! `async for` on a loop that cannot watch a file descriptor (Windows' proactor loop, some
//! embedded loops), or while another reader holds the stream, waits on a runtime task (the
//! general path of `loop_wake`). Were that task to take the event and complete the asyncio
//! future with it, a wait cancelled in between (`asyncio.wait_for` timing out) would lose the
//! event. So the task puts the event it took in front of the stream and completes the future
//! with nothing; the awaiting coroutine then takes the event on the loop's thread
//! (`_bridge.next_when_ready`), and a cancelled wait leaves it in front for the next read.

use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt as _};
use pi_agent::agent::{AgentEvent, AgentRun};
use pi_agent::ai::{AssistantMessageEvent, AssistantMessageEventStream};
use pyo3::prelude::*;

use crate::bridge::{future_into_py, helper};

/// A stream whose next event can be looked for without a waker (core's `poll_next_ready`).
pub(crate) trait ReadyNow: Stream + Unpin {
    /// The next event if it is there already (see core's `poll_next_ready`).
    fn poll_next_ready(&mut self) -> Poll<Option<Self::Item>>;
}

impl ReadyNow for AssistantMessageEventStream {
    fn poll_next_ready(&mut self) -> Poll<Option<AssistantMessageEvent>> {
        AssistantMessageEventStream::poll_next_ready(self)
    }
}

impl ReadyNow for AgentRun {
    fn poll_next_ready(&mut self) -> Poll<Option<AgentEvent>> {
        AgentRun::poll_next_ready(self)
    }
}

/// `S` with room for one event put back in front (see the module's doc). It reads as `S`
/// (`Deref`); what changes `S` goes through [`Reader::inner_mut`], which passes the front by.
pub(crate) struct Reader<S: Stream> {
    inner: S,
    front: Option<S::Item>,
}

impl<S: Stream> Reader<S> {
    pub(crate) fn new(inner: S) -> Self {
        Self { inner, front: None }
    }

    /// The event put back, if any.
    pub(crate) fn take_front(&mut self) -> Option<S::Item> {
        self.front.take()
    }

    /// `S` itself, for what does not read events one by one (finishing a run, driving a
    /// request): an event in front is not seen.
    pub(crate) fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

impl<S: ReadyNow> Reader<S> {
    /// The event in front, or `S`'s next one if it is there already.
    pub(crate) fn poll_next_ready(&mut self) -> Poll<Option<S::Item>> {
        match self.front.take() {
            Some(event) => Poll::Ready(Some(event)),
            None => self.inner.poll_next_ready(),
        }
    }
}

impl<S: Stream> Deref for Reader<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.inner
    }
}

impl<S> Stream for Reader<S>
where
    S: Stream + Unpin,
    S::Item: Unpin,
{
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = self.get_mut();
        match this.front.take() {
            Some(event) => Poll::Ready(Some(event)),
            None => this.inner.poll_next_unpin(cx),
        }
    }
}

/// A reader's shared hold on a stream or run.
pub(crate) type Shared<S> = Arc<tokio::sync::Mutex<Reader<S>>>;

/// Waits (on the runtime) until `shared` has an event, and leaves it in front.
async fn put_next_in_front<S>(shared: Shared<S>) -> PyResult<()>
where
    S: Stream + Unpin + Send,
    S::Item: Unpin + Send,
{
    let mut reader = shared.lock().await;
    if reader.front.is_none() {
        // `None` (the end) needs no room: the stream says it again.
        reader.front = reader.inner.next().await;
    }
    Ok(())
}

/// The awaitable of `source`'s next event (`source` the Python iterator over `shared`) by the
/// general path: a runtime task waits for the event and leaves it in front, then
/// `source.__anext__()` takes it on the loop's thread.
pub(crate) fn general_next<'py, S>(
    source: &Bound<'py, PyAny>,
    shared: &Shared<S>,
) -> PyResult<Bound<'py, PyAny>>
where
    S: Stream + Unpin + Send + 'static,
    S::Item: Unpin + Send,
{
    let py = source.py();
    let ready = future_into_py(py, put_next_in_front(Arc::clone(shared)))?;
    helper(py, "next_when_ready")?.call1((ready, source))
}
