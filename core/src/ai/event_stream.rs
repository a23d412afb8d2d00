//! The two ends of a streamed response: [`StreamWriter`] (held by a provider) and
//! [`AssistantMessageEventStream`] (held by the caller).
//!
//! Guarantees, whatever the provider does:
//! - the stream yields exactly one terminal event (`done` or `error`) and it is the last one;
//!   events pushed after it are dropped;
//! - if the provider's task ends, panics or is dropped without a terminal event, the stream
//!   ends with an `error` event of its own, so [`AssistantMessageEventStream::result`] never
//!   hangs;
//! - the channel between them is bounded, so a slow consumer slows the HTTP read instead of
//!   buffering without limit.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

use futures::Stream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::accumulator::{MessageAccumulator, object_or_empty};
use super::blocking;
use super::cancelled::cancelled;
use super::error::{ErrorKind, ProviderError};
use super::event::AssistantMessageEvent;
use super::event_queue::{self, Queued, Receiver, Sender};
use super::model::Model;
use super::redact::Redactor;
use super::structured::OutputTracker;
use super::types::{
    AssistantContent, AssistantMessage, ResponseTiming, StopReason, ThinkingContent, ToolCall,
    now_ms,
};

/// The message of a stream started outside a tokio runtime.
pub(crate) const NO_RUNTIME: &str = "pi-agent providers must be called from within a tokio runtime";

/// The message of a stream that ended without `done` or `error`.
pub const STREAM_ENDED_EARLY: &str = "provider stream ended without a terminal event";

/// A live view of the message a stream is building (cheap to clone; shares the accumulator).
///
/// It reflects exactly the events the stream has yielded so far. [`snapshot`](Self::snapshot)
/// copies the message; nothing is copied until you ask.
#[derive(Clone, Debug)]
pub struct PartialMessage(Arc<Mutex<MessageAccumulator>>);

impl PartialMessage {
    fn lock(&self) -> MutexGuard<'_, MessageAccumulator> {
        // The accumulator holds no invariant a panic could break halfway, so a poisoned lock is
        // still usable.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of the message so far, with best-effort arguments for tool calls still streaming.
    pub fn snapshot(&self) -> AssistantMessage {
        self.lock().snapshot()
    }

    /// Runs `f` on the message so far without copying it (open tool calls show `{}` arguments).
    pub fn with<R>(&self, f: impl FnOnce(&AssistantMessage) -> R) -> R {
        f(self.lock().message())
    }
}

/// How [`StreamWriter::drive`]'s request ended.
enum Ended {
    Ran(Result<(), ProviderError>),
    Aborted,
    Dropped,
}

/// The caller's end: a `futures::Stream` of events plus [`result`](Self::result). Dropping it
/// cancels the request.
///
/// The built-in HTTP providers' requests run in the stream itself: whoever reads the stream
/// (a task awaiting it, or a thread in [`blocking_next`](Self::blocking_next)) sends the
/// request and parses the answer as it reads, with no runtime task between the socket and
/// the reader. The request is sent when the stream is made, as far as it goes without
/// waiting (a connection to a local server is usually open by then); the rest happens while
/// the stream is read. A stream nobody reads does nothing, and dropping it ends its request.
///
/// Awaited in a task spawned on a multi-thread runtime (or on a current-thread runtime), a
/// frame wakes its reader once: the worker that read the socket runs the reader. Awaited
/// directly in `block_on`, a worker reads the socket and wakes the `block_on` thread, a thread
/// hop more per frame (25–40 µs on the benchmark's machines; README, "Performance").
#[derive(Debug)]
pub struct AssistantMessageEventStream {
    rx: Option<Receiver>,
    /// The provider's task, while the stream's reader drives it (see [`Self::driving`]).
    task: Option<DrivenTask>,
    partial: PartialMessage,
    /// Set once the terminal event has been yielded.
    finished: bool,
    /// The typed answer's tracker, for a request with an output schema.
    output: Option<Box<OutputTracker>>,
    /// Events the tracker made of one provider event, not yet yielded.
    pending: VecDeque<AssistantMessageEvent>,
}

/// Creates a connected writer and stream for a response from `model`.
pub fn channel(
    model: &Model,
    signal: Option<CancellationToken>,
) -> (StreamWriter, AssistantMessageEventStream) {
    let (tx, rx) = event_queue::queue();
    let header = empty_message(model);
    let stream = AssistantMessageEventStream {
        rx: Some(rx),
        task: None,
        partial: PartialMessage(Arc::new(Mutex::new(MessageAccumulator::new(
            header.clone(),
        )))),
        finished: false,
        output: None,
        pending: VecDeque::new(),
    };
    let writer = StreamWriter {
        tx: Some(tx),
        acc: MessageAccumulator::new(header),
        signal,
        started: false,
        redactor: Redactor::default(),
        open: Vec::new(),
        end_blocks_on_abort: false,
        started_at: Instant::now(),
        first_content_at: None,
        span: tracing::Span::none(),
        caller_span: tracing::Span::current(),
    };
    (writer, stream)
}

/// No event arrived within the wait of
/// [`blocking_next_timeout`](AssistantMessageEventStream::blocking_next_timeout); the stream is
/// as it was, and a later read gets the next event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no event arrived within the wait")]
pub struct WaitTimedOut;

/// A provider's task that the stream's reader polls (see [`AssistantMessageEventStream`]).
struct DrivenTask {
    /// The runtime the stream was made on: each poll enters it, so that the task's sockets and
    /// timers are that runtime's, whichever thread reads.
    runtime: tokio::runtime::Handle,
    future: sync_wrapper::SyncWrapper<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl std::fmt::Debug for DrivenTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DrivenTask")
    }
}

impl DrivenTask {
    /// Polls the task on the runtime it was made on. A panic in it ends it (`Ready`), as a
    /// runtime task's panic would: its writer is dropped with it, and the stream ends with an
    /// `error` of its own instead of the panic reaching the reader.
    fn poll(&mut self, waker: &Waker) -> Poll<()> {
        let _runtime = self.runtime.enter();
        let future = self.future.get_mut().as_mut();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            future.poll(&mut TaskContext::from_waker(waker))
        }))
        .unwrap_or(Poll::Ready(()))
    }
}

/// The empty assistant message a response from `model` starts as.
pub fn empty_message(model: &Model) -> AssistantMessage {
    AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        timestamp: now_ms(),
        ..AssistantMessage::default()
    }
}

impl AssistantMessageEventStream {
    /// A stream with only an `error` event when called outside a tokio runtime (a stream's
    /// task needs one); `None` inside one.
    pub(crate) fn outside_runtime(model: &Model) -> Option<Self> {
        (tokio::runtime::Handle::try_current().is_err())
            .then(|| Self::failed(model, StopReason::Error, NO_RUNTIME))
    }

    /// A stream that yields only an `error` event (for failures before any provider runs).
    /// `error` is a [`ProviderError`] or a plain message (no kind); `reason` `aborted` makes
    /// the kind `aborted`.
    pub fn failed(model: &Model, reason: StopReason, error: impl Into<ProviderError>) -> Self {
        let (writer, stream) = channel(model, None);
        let mut message = writer.acc.into_message();
        message.stop_reason = reason;
        set_error(&mut message, &error.into(), reason, &Redactor::default());
        stream.partial.lock().finish_with(message.clone());
        let (tx, rx) = event_queue::queue();
        // A fresh queue always has room for its first event.
        let _ = tx.try_send(Box::new(AssistantMessageEvent::Error {
            reason,
            error: message,
        }));
        Self {
            rx: Some(rx),
            ..stream
        }
    }

    /// Has this stream's reader drive the task `make` builds, the provider's task writing it
    /// (call within a runtime, on a stream made by [`channel`] whose writer the task owns). The
    /// task is polled once here, so that the request leaves at once; see the type's
    /// documentation.
    pub(crate) fn driving<F>(mut self, make: impl FnOnce() -> F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut task = DrivenTask {
            runtime: tokio::runtime::Handle::current(),
            future: sync_wrapper::SyncWrapper::new(super::stack::boxed(make)),
        };
        // Nobody is woken by this poll: a socket that would wait names itself to the (absent)
        // reading thread instead of registering with the runtime; the first read registers it
        // where that reader waits.
        if blocking::start(|| task.poll(Waker::noop())).is_pending() {
            self.task = Some(task);
        }
        self
    }

    /// Moves the stream's request into a runtime task of its own, on the runtime the stream was
    /// made on: from then on it progresses whether or not the stream is read (its events wait
    /// in the stream's bounded queue), and whoever reads is woken through that queue. For a
    /// reader that is an event loop of its own reading many streams (Python's `async for`
    /// uses it), so that the responses are parsed on the runtime's workers, in parallel,
    /// rather than on the loop's one thread. Does nothing when the request already runs on its
    /// own or has ended.
    pub fn drive_in_background(&mut self) {
        if let Some(task) = self.task.take() {
            drop(task.runtime.spawn(task.future.into_inner()));
        }
    }

    /// The next event, waiting for it on the calling thread; `None` after the last one. For
    /// threads that do not run async code (a worker thread of your own, a C or Python caller):
    /// like [`futures::StreamExt::next`] under a `block_on`, but where the stream's request is
    /// the library's own HTTP/1.1 client's (`http://` URLs), the thread waits for the socket
    /// itself, so each frame reaches it with one wake-up instead of going through a runtime
    /// worker. Timers, aborts and other connections still wake it through the runtime the
    /// stream was made on, which must keep running (it does unless it is a current-thread
    /// runtime that nobody drives).
    ///
    /// Do not call it from async code: it blocks the thread it runs on.
    pub fn blocking_next(&mut self) -> Option<AssistantMessageEvent> {
        blocking::poll_until(None, |waker| match self.poll_with(Some(waker)) {
            Poll::Ready(event) => Some(event),
            Poll::Pending => None,
        })
        .flatten()
        .map(|event| *event)
    }

    /// [`blocking_next`](Self::blocking_next), waiting at most `timeout`: `Err(WaitTimedOut)`
    /// when no event arrived by then (nothing is lost: the next call gets it). For callers
    /// that must look up now and then (Python checks for Ctrl-C).
    pub fn blocking_next_timeout(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<AssistantMessageEvent>, WaitTimedOut> {
        let deadline = Instant::now().checked_add(timeout);
        blocking::poll_until(deadline, |waker| match self.poll_with(Some(waker)) {
            Poll::Ready(event) => Some(event),
            Poll::Pending => None,
        })
        .map(|event| event.map(|event| *event))
        .ok_or(WaitTimedOut)
    }

    /// A handle on the message as it builds up (see [`PartialMessage`]).
    pub fn partial(&self) -> PartialMessage {
        self.partial.clone()
    }

    /// Waits for the end of the stream (consuming the remaining events) and returns the final
    /// message. Never fails and never hangs once the provider's task has ended: failures are a
    /// message with `stop_reason` `error` or `aborted`.
    pub async fn result(mut self) -> AssistantMessage {
        while futures::StreamExt::next(&mut self).await.is_some() {}
        self.partial.lock().message().clone()
    }

    /// The final message, if the terminal event has already been yielded.
    pub fn final_message(&self) -> Option<AssistantMessage> {
        self.finished.then(|| self.partial.lock().message().clone())
    }

    /// Has the answer of a request with an output schema tracked (see `ai/structured`).
    pub(crate) fn with_output(mut self, tracker: OutputTracker) -> Self {
        self.output = Some(Box::new(tracker));
        self
    }

    /// Folds `event` into the partial message and ends the stream after a terminal one.
    fn yield_event(&mut self, event: Queued) -> Queued {
        self.partial.lock().apply(&event);
        if event.is_terminal() {
            self.finished = true;
            self.pending.clear();
            // Dropping the receiver tells the provider nobody listens any more.
            self.rx = None;
        }
        event
    }

    fn synthesize_end(&mut self) -> Queued {
        let mut acc = self.partial.lock();
        let mut message = acc.snapshot();
        message.stop_reason = StopReason::Error;
        message.error_message = Some(STREAM_ENDED_EARLY.to_owned());
        message.error_kind = Some(ErrorKind::Decode);
        acc.finish_with(message.clone());
        Box::new(AssistantMessageEvent::Error {
            reason: StopReason::Error,
            error: message,
        })
    }
}

impl Stream for AssistantMessageEventStream {
    type Item = AssistantMessageEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.poll_with(Some(cx.waker()))
            .map(|event| event.map(|event| *event))
    }
}

impl AssistantMessageEventStream {
    /// The next event if it is already there: `Ready(Some(event))`, `Ready(None)` after the
    /// last one, `Pending` when none has arrived yet. Unlike polling the stream (e.g.
    /// `stream.next().now_or_never()`), it registers no waker, so a task waiting on the stream
    /// stays the one woken, and it does not drive the request: an event parsed by an earlier
    /// read (or by the request's own task, after [`drive_in_background`](Self::drive_in_background))
    /// is there, nothing else. For readers that check between other work.
    pub fn poll_next_ready(&mut self) -> Poll<Option<AssistantMessageEvent>> {
        self.poll_with(None).map(|event| event.map(|event| *event))
    }

    /// The next event, boxed as it came through the queue: the public readers unbox it
    /// once, at the end.
    fn poll_with(&mut self, waker: Option<&Waker>) -> Poll<Option<Queued>> {
        let this = self;
        loop {
            if let Some(event) = this.pending.pop_front() {
                return Poll::Ready(Some(this.yield_event(Box::new(event))));
            }
            if this.finished {
                return Poll::Ready(None);
            }
            let Some(rx) = this.rx.as_mut() else {
                return Poll::Ready(None);
            };
            let received = match (waker, this.task.as_mut()) {
                (None, _) => rx.poll_recv_ready(),
                (Some(waker), None) => rx.poll_recv(&mut TaskContext::from_waker(waker)),
                // The task is polled only when its queue is empty, and then the queue needs no
                // waker: only the task pushes to it, and the task's own wake-ups (its socket,
                // timers, abort) are registered with `waker` by this poll.
                (Some(waker), Some(task)) => match rx.poll_recv_ready() {
                    Poll::Pending => {
                        if task.poll(waker).is_ready() {
                            // Its writer is gone with it: the queue ends after its events.
                            this.task = None;
                            continue;
                        }
                        match rx.poll_recv_ready() {
                            Poll::Pending => return Poll::Pending,
                            ready => ready,
                        }
                    }
                    ready => ready,
                },
            };
            match received {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(event)) => match this.output.as_mut() {
                    // The tracker queues what the event becomes (one event or a few).
                    Some(tracker) => tracker.map(*event, &mut this.pending),
                    None => return Poll::Ready(Some(this.yield_event(event))),
                },
                Poll::Ready(None) => {
                    let event = this.synthesize_end();
                    this.finished = true;
                    this.rx = None;
                    return Poll::Ready(Some(event));
                }
            }
        }
    }
}

/// The provider's end. Each method updates the provider's own copy of the message and sends the
/// matching event; [`done`](Self::done) and [`fail`](Self::fail) end the stream.
///
/// If the consumer has gone away, sends are dropped and [`is_closed`](Self::is_closed) turns
/// true so the provider can stop reading.
#[derive(Debug)]
pub struct StreamWriter {
    tx: Option<Sender>,
    acc: MessageAccumulator,
    signal: Option<CancellationToken>,
    started: bool,
    /// The request's credentials, hidden from every error message this writer sends.
    redactor: Redactor,
    /// Per content index: whether the block is still open (started, not ended).
    open: Vec<bool>,
    /// End every open block before the `error` of an abort (see [`Self::end_blocks_on_abort`]).
    end_blocks_on_abort: bool,
    /// When the request started (the writer's creation) and when its first content arrived.
    started_at: Instant,
    first_content_at: Option<Instant>,
    /// The request's `chat` span (see [`crate::observability`]), once `drive` opened it.
    span: tracing::Span,
    /// The span current where the request was made (an agent's `turn`): the `chat` span's
    /// parent, although providers open it in a task of their own.
    caller_span: tracing::Span,
}

impl StreamWriter {
    /// Waits while the consumer is [`event_queue::CAPACITY`] events behind. Every public
    /// method waits here first and then pushes its event without waiting: the event is built
    /// after the wait, so no provider future carries one across an `await` (each would add
    /// its size to every stream's task).
    async fn ready(&mut self) {
        if let Some(tx) = &self.tx
            && tx.ready().await.is_err()
        {
            self.tx = None;
        }
    }

    /// Sends `event`, built by the caller straight into its box (see [`Queued`]).
    fn push(&mut self, event: Queued) {
        if self.first_content_at.is_none() && event.delta().is_some_and(|d| !d.is_empty()) {
            self.first_content_at = Some(Instant::now());
        }
        self.acc.apply(&event);
        self.push_raw(event);
    }

    /// The response's timing, as of now (see [`ResponseTiming`]).
    fn timing(&self, message: &AssistantMessage) -> ResponseTiming {
        let now = Instant::now();
        let millis =
            |duration: std::time::Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let output_tokens_per_second = self.first_content_at.and_then(|first| {
            let seconds = now.duration_since(first).as_secs_f64();
            (message.usage.output > 0 && seconds > 0.0)
                .then(|| message.usage.output as f64 / seconds)
        });
        let retry_wait_ms = message
            .diagnostics
            .iter()
            .flatten()
            .filter(|entry| entry["type"] == "retry")
            .filter_map(|entry| entry.pointer("/details/delayMs").and_then(Value::as_u64))
            .sum();
        ResponseTiming {
            duration_ms: millis(now.duration_since(self.started_at)),
            ttft_ms: self
                .first_content_at
                .map(|first| millis(first.duration_since(self.started_at))),
            output_tokens_per_second,
            retry_wait_ms,
        }
    }

    fn mark(&mut self, content_index: usize, open: bool) {
        if self.open.len() <= content_index {
            self.open.resize(content_index + 1, false);
        }
        self.open[content_index] = open;
    }

    /// Sends the `*_end` event of every block still open, in content order (what pi's
    /// openai-completions does at the end of a stream, and before the `error` of an abort).
    pub async fn end_open_blocks(&mut self) {
        for content_index in 0..self.open.len() {
            if !self.open[content_index] {
                continue;
            }
            match self.acc.message().content.get(content_index) {
                Some(AssistantContent::Text(_)) => self.text_end(content_index).await,
                Some(AssistantContent::Thinking(_)) => self.thinking_end(content_index).await,
                Some(AssistantContent::ToolCall(_)) => self.tool_call_end(content_index).await,
                None => self.mark(content_index, false),
            }
        }
    }

    /// Asks [`drive`](Self::drive) to end the open blocks before the `error` of an abort, as
    /// pi's openai-completions does (its SDK ends the iteration quietly on abort, then every
    /// block is finished).
    pub fn end_blocks_on_abort(&mut self) {
        self.end_blocks_on_abort = true;
    }

    fn push_raw(&mut self, event: Queued) {
        if let Some(tx) = &self.tx
            && tx.push(event).is_err()
        {
            self.tx = None;
        }
    }

    /// Runs a provider's request to its end: `run` drives this writer; an abort of the
    /// request's token ends it at once with "Request was aborted" (even mid-read); `Ok` ends the
    /// stream with [`done`](Self::done), `Err(error)` with [`fail`](Self::fail).
    ///
    /// A consumer that drops its stream cancels the request too: the request (and its
    /// connection) is dropped at once, whatever the server does.
    ///
    /// (A plain function returning an `async` block: an `async fn` would keep a second copy
    /// of its arguments, the writer and `run`, in every stream's task.)
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn keeps a second copy of its arguments in every stream's task"
    )]
    pub fn drive<R>(mut self, run: R) -> impl std::future::Future<Output = ()> + use<R>
    where
        R: AsyncFnOnce(&mut StreamWriter) -> Result<(), ProviderError>,
    {
        async move {
            let signal = self.signal.clone().unwrap_or_default();
            let Some(queue) = self.tx.as_ref() else {
                return;
            };
            // Each poll of the provider is one batch: its events reach the consumer with one
            // wake-up (see `event_queue`).
            let batch = queue.batcher();
            let consumer_gone = queue.closed_token();
            let span = self.open_span();
            let outcome = tokio::select! {
                biased;
                // Registered once, not at every poll of the request (see `ai::cancelled`).
                () = cancelled(&signal) => Ended::Aborted,
                () = cancelled(&consumer_gone) => Ended::Dropped,
                result = batch.wrap(run(&mut self).instrument(span)) => Ended::Ran(result),
            };
            let outcome = match outcome {
                Ended::Ran(result) => result,
                // Nobody listens any more: nothing to report.
                Ended::Dropped => return,
                Ended::Aborted => {
                    if self.end_blocks_on_abort {
                        self.end_open_blocks().await;
                    }
                    Err(ProviderError::Aborted)
                }
            };
            match outcome {
                Ok(()) => self.end_done().await,
                Err(error) => self.end_fail(error).await,
            }
        }
    }

    /// Wraps the task that writes this stream so that each of its polls is one batch: the
    /// events one poll pushes reach the consumer with one wake-up (see [`event_queue`]), as
    /// [`Self::drive`] does for the HTTP providers.
    pub(crate) fn batched<F: std::future::Future>(
        self,
        task: impl FnOnce(Self) -> F,
    ) -> futures::future::Either<event_queue::Batched<F, Queued>, F> {
        match self.tx.as_ref().map(Sender::batcher) {
            Some(batcher) => futures::future::Either::Left(batcher.wrap(task(self))),
            None => futures::future::Either::Right(task(self)),
        }
    }

    /// Opens the request's `chat` span (see [`crate::observability`]); the writer records the
    /// response on it when the stream ends.
    pub(crate) fn open_span(&mut self) -> tracing::Span {
        self.span = self
            .caller_span
            .in_scope(|| crate::observability::chat_span(self.acc.message()));
        self.span.clone()
    }

    /// Hides the credentials of `redactor` in every error message sent from now on (a server
    /// may echo the key it received).
    pub(crate) fn hide_secrets(&mut self, redactor: Redactor) {
        self.redactor = redactor;
    }

    /// The credentials hidden from now on (see [`hide_secrets`](Self::hide_secrets)).
    pub(crate) fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// `true` once the consumer has dropped its stream.
    pub fn is_closed(&self) -> bool {
        self.tx.as_ref().is_none_or(Sender::is_closed)
    }

    /// `true` once the request's cancellation token has fired.
    pub fn is_aborted(&self) -> bool {
        self.signal
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// The cancellation token of the request, if any.
    pub fn signal(&self) -> Option<&CancellationToken> {
        self.signal.as_ref()
    }

    /// The message built so far.
    pub fn message(&self) -> &AssistantMessage {
        self.acc.message()
    }

    /// Mutable access to fields that have no event of their own: usage, response id, response
    /// model, stop reason.
    pub fn message_mut(&mut self) -> &mut AssistantMessage {
        self.acc.message_mut()
    }

    /// Whether [`start`](Self::start) has been sent.
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// Sends `start` (once; later calls do nothing).
    pub async fn start(&mut self) {
        self.ready().await;
        if self.started {
            return;
        }
        self.started = true;
        let partial = self.acc.message().clone();
        self.push_raw(Box::new(AssistantMessageEvent::Start { partial }));
    }

    fn next_index(&self) -> usize {
        self.acc.message().content.len()
    }

    /// Opens a text block and returns its index.
    pub async fn text_start(&mut self) -> usize {
        self.ready().await;
        let content_index = self.next_index();
        self.mark(content_index, true);
        self.push(Box::new(AssistantMessageEvent::TextStart { content_index }));
        content_index
    }

    /// Appends text to the block at `content_index`.
    pub async fn text_delta(&mut self, content_index: usize, delta: impl Into<String>) {
        self.ready().await;
        let delta = delta.into();
        self.push(Box::new(AssistantMessageEvent::TextDelta {
            content_index,
            delta,
        }));
    }

    /// Closes the text block at `content_index`.
    pub async fn text_end(&mut self, content_index: usize) {
        self.ready().await;
        let (content, content_signature) = match self.acc.message().content.get(content_index) {
            Some(AssistantContent::Text(text)) => (text.text.clone(), text.text_signature.clone()),
            _ => return,
        };
        self.mark(content_index, false);
        self.push(Box::new(AssistantMessageEvent::TextEnd {
            content_index,
            content,
            content_signature,
        }));
    }

    /// Opens a thinking block and returns its index.
    pub async fn thinking_start(&mut self) -> usize {
        self.ready().await;
        let content_index = self.next_index();
        self.mark(content_index, true);
        self.push(Box::new(AssistantMessageEvent::ThinkingStart {
            content_index,
        }));
        content_index
    }

    /// Appends reasoning text to the block at `content_index`.
    pub async fn thinking_delta(&mut self, content_index: usize, delta: impl Into<String>) {
        self.ready().await;
        let delta = delta.into();
        self.push(Box::new(AssistantMessageEvent::ThinkingDelta {
            content_index,
            delta,
        }));
    }

    /// Mutable access to a thinking block (to set its signature or `redacted`).
    pub fn thinking_block_mut(&mut self, content_index: usize) -> Option<&mut ThinkingContent> {
        match self.acc.message_mut().content.get_mut(content_index) {
            Some(AssistantContent::Thinking(thinking)) => Some(thinking),
            _ => None,
        }
    }

    /// Closes the thinking block at `content_index`.
    pub async fn thinking_end(&mut self, content_index: usize) {
        self.ready().await;
        let (content, content_signature) = match self.acc.message().content.get(content_index) {
            Some(AssistantContent::Thinking(t)) => {
                (t.thinking.clone(), t.thinking_signature.clone())
            }
            _ => return,
        };
        self.mark(content_index, false);
        self.push(Box::new(AssistantMessageEvent::ThinkingEnd {
            content_index,
            content,
            content_signature,
        }));
    }

    /// Opens a tool call and returns its index.
    pub async fn tool_call_start(
        &mut self,
        id: impl Into<String>,
        tool_name: impl Into<String>,
    ) -> usize {
        self.ready().await;
        let content_index = self.next_index();
        self.mark(content_index, true);
        self.push(Box::new(AssistantMessageEvent::ToolCallStart {
            content_index,
            id: id.into(),
            tool_name: tool_name.into(),
        }));
        content_index
    }

    /// Mutable access to a tool call block (ids and names that arrive late, signatures).
    pub fn tool_call_mut(&mut self, content_index: usize) -> Option<&mut ToolCall> {
        match self.acc.message_mut().content.get_mut(content_index) {
            Some(AssistantContent::ToolCall(call)) => Some(call),
            _ => None,
        }
    }

    /// Appends a JSON fragment to the arguments of the call at `content_index`.
    pub async fn tool_call_delta(&mut self, content_index: usize, delta: impl Into<String>) {
        self.ready().await;
        let delta = delta.into();
        self.push(Box::new(AssistantMessageEvent::ToolCallDelta {
            content_index,
            delta,
        }));
    }

    /// Closes the call at `content_index`, parsing its arguments once, tolerantly.
    pub async fn tool_call_end(&mut self, content_index: usize) {
        self.tool_call_end_with(content_index, None).await;
    }

    /// [`tool_call_end`](Self::tool_call_end) with `arguments` in place of the streamed ones
    /// when given (an upstream whose final arguments are not what its deltas added up to): the
    /// `toolcall_end` event and the message both carry them.
    pub(crate) async fn tool_call_end_with(
        &mut self,
        content_index: usize,
        replaced: Option<serde_json::Value>,
    ) {
        self.ready().await;
        // The streamed arguments are parsed only when nothing replaces them.
        let streamed = self.acc.take_arguments(content_index);
        let arguments =
            replaced.or_else(|| streamed.map(|parser| object_or_empty(parser.into_value())));
        self.mark(content_index, false);
        let Some(call) = self.tool_call_mut(content_index) else {
            return;
        };
        if let Some(arguments) = arguments {
            call.arguments = arguments;
        }
        let tool_call = call.clone();
        self.push(Box::new(AssistantMessageEvent::ToolCallEnd {
            content_index,
            tool_call,
        }));
    }

    /// Ends the stream with `done`, or with `error` when the message's stop reason is a failure
    /// or the request was aborted. A failure keeps the `error_kind`, `http_status` and
    /// `retry_after_ms` the provider set on the message (a refusal, say).
    pub async fn done(mut self) {
        self.end_done().await;
    }

    /// [`done`](Self::done) through a borrow: [`drive`](Self::drive) ends its stream with it,
    /// so that its future does not hold a second copy of the writer.
    async fn end_done(&mut self) {
        self.ready().await;
        if self.is_aborted() {
            return self.end_fail(ProviderError::Aborted).await;
        }
        let reason = self.acc.message().stop_reason;
        if reason.is_failure() {
            let message = self.acc.message();
            let error = ProviderError::Reported {
                message: message
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "An unknown error occurred".to_owned()),
                kind: message.error_kind,
                status: message.http_status,
                retry_after_ms: message.retry_after_ms,
            };
            return self.end_fail(error).await;
        }
        let mut message = std::mem::take(self.acc.message_mut());
        message.timing = Some(self.timing(&message));
        crate::observability::record_response(&self.span, &message);
        self.push_raw(Box::new(AssistantMessageEvent::Done { reason, message }));
    }

    /// Ends the stream with `error`, keeping the content received so far. The reason is
    /// `aborted` when the request's token fired (abort wins over any other failure), else
    /// `error`. The message's `error_message` is the error's text (credentials hidden), and
    /// `error_kind`, `http_status` and `retry_after_ms` come from the error (a plain message
    /// has no kind).
    pub async fn fail(mut self, error: impl Into<ProviderError>) {
        self.end_fail(error.into()).await;
    }

    /// [`fail`](Self::fail) through a borrow (see [`end_done`](Self::end_done)).
    async fn end_fail(&mut self, error: ProviderError) {
        self.ready().await;
        let reason = if self.is_aborted() {
            StopReason::Aborted
        } else {
            StopReason::Error
        };
        let mut message = self.acc.snapshot();
        message.stop_reason = reason;
        set_error(&mut message, &error, reason, &self.redactor);
        message.timing = Some(self.timing(&message));
        crate::observability::record_response(&self.span, &message);
        self.push_raw(Box::new(AssistantMessageEvent::Error {
            reason,
            error: message,
        }));
    }

    /// Ends the stream with `error` carrying `message` as given (its `stop_reason` is set to
    /// `reason`; its error fields are kept, except that `aborted` makes the kind `aborted`).
    /// For providers that build the failure message themselves.
    pub async fn fail_with(mut self, reason: StopReason, mut message: AssistantMessage) {
        self.ready().await;
        message.stop_reason = reason;
        message.error_message = Some(match &message.error_message {
            Some(text) => self.redactor.redact(text),
            None => "An unknown error occurred".to_owned(),
        });
        if reason == StopReason::Aborted {
            message.error_kind = Some(ErrorKind::Aborted);
        }
        message.timing = Some(self.timing(&message));
        crate::observability::record_response(&self.span, &message);
        self.push_raw(Box::new(AssistantMessageEvent::Error {
            reason,
            error: message,
        }));
    }
}

/// Writes `error` into a failed message: its text (credentials hidden), kind, status and
/// retry delay. An abort is always of kind `aborted`, whatever failed at the same time.
fn set_error(
    message: &mut AssistantMessage,
    error: &ProviderError,
    reason: StopReason,
    redactor: &Redactor,
) {
    message.error_message = Some(redactor.redact(&error.to_string()));
    message.error_kind = if reason == StopReason::Aborted {
        Some(ErrorKind::Aborted)
    } else {
        error.kind()
    };
    message.http_status = error.http_status();
    message.retry_after_ms = error.retry_after_ms();
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn model() -> Model {
        Model::new("test", "test", "m", "")
    }

    #[tokio::test]
    async fn dropped_writer_still_ends_with_error() {
        let (mut writer, mut stream) = channel(&model(), None);
        tokio::spawn(async move {
            writer.start().await;
            let i = writer.text_start().await;
            writer.text_delta(i, "partial").await;
            panic!("provider bug");
        });
        let mut kinds = Vec::new();
        while let Some(event) = stream.next().await {
            kinds.push(event.kind());
        }
        assert_eq!(kinds, ["start", "text_start", "text_delta", "error"]);
    }

    /// A provider task that panics while its reader drives it ends the stream with an `error`
    /// of the stream's own; the panic does not reach the reader.
    #[tokio::test]
    async fn a_driven_task_that_panics_ends_with_error() {
        let (mut writer, stream) = channel(&model(), None);
        let mut stream = stream.driving(|| async move {
            writer.start().await;
            let i = writer.text_start().await;
            writer.text_delta(i, "partial").await;
            tokio::task::yield_now().await;
            panic!("provider bug");
        });
        let mut kinds = Vec::new();
        while let Some(event) = stream.next().await {
            kinds.push(event.kind());
        }
        assert_eq!(kinds, ["start", "text_start", "text_delta", "error"]);
        assert_eq!(stream.final_message().unwrap().text(), "partial");
    }

    #[tokio::test]
    async fn result_never_hangs_and_keeps_partial_content() {
        let (mut writer, stream) = channel(&model(), None);
        writer.start().await;
        let i = writer.text_start().await;
        writer.text_delta(i, "abc").await;
        drop(writer);
        let message = stream.result().await;
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(message.text(), "abc");
        assert_eq!(message.error_message.as_deref(), Some(STREAM_ENDED_EARLY));
    }

    #[tokio::test]
    async fn partial_is_built_from_deltas_on_demand() {
        let (mut writer, mut stream) = channel(&model(), None);
        let producer = tokio::spawn(async move {
            writer.start().await;
            let i = writer.tool_call_start("c1", "calc").await;
            writer.tool_call_delta(i, "{\"expr\": \"1+").await;
            writer.tool_call_delta(i, "2\"}").await;
            writer.tool_call_end(i).await;
            writer.message_mut().stop_reason = StopReason::ToolUse;
            writer.done().await;
        });
        let partial = stream.partial();
        let mut seen_partial_args = None;
        while let Some(event) = stream.next().await {
            if let AssistantMessageEvent::ToolCallDelta { .. } = event {
                seen_partial_args = Some(
                    partial
                        .snapshot()
                        .tool_calls()
                        .next()
                        .unwrap()
                        .arguments
                        .clone(),
                );
            }
        }
        producer.await.unwrap();
        assert_eq!(seen_partial_args, Some(serde_json::json!({"expr": "1+2"})));
        let final_message = stream.final_message().unwrap();
        assert_eq!(final_message.stop_reason, StopReason::ToolUse);
        assert_eq!(
            final_message.tool_calls().next().unwrap().arguments,
            serde_json::json!({"expr": "1+2"})
        );
    }

    #[tokio::test]
    async fn abort_wins_over_done() {
        let token = CancellationToken::new();
        let (mut writer, stream) = channel(&model(), Some(token.clone()));
        writer.start().await;
        token.cancel();
        writer.done().await;
        let message = stream.result().await;
        assert_eq!(message.stop_reason, StopReason::Aborted);
    }

    #[tokio::test]
    async fn failed_stream_has_only_error() {
        let stream = AssistantMessageEventStream::failed(&model(), StopReason::Error, "nope");
        let events: Vec<_> = stream.collect().await;
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind(), "error");
    }
}
