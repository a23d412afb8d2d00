//! `agent_loop` and `agent_loop_continue` as streams: the loop runs on its own task and its
//! events arrive through a [`futures::Stream`], with the run's new messages from
//! [`AgentEventStream::result`].
//!
//! Unlike pi's, this stream always ends: if the loop fails (a panicking hook or `stream_fn`),
//! or its runtime shuts down under it, the stream carries a failure message (`message_start`,
//! `message_end`) and `agent_end`.
//! Dropping the stream aborts the run.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll};

use futures::{FutureExt, Stream};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::agent_loop::{
    RUN_CUT_OFF, check_can_continue, run_agent_loop, run_agent_loop_continue, run_failure_message,
};
use super::config::{AgentContext, AgentLoopConfig};
use super::error::AgentError;
use super::event::AgentEvent;
use super::guard::EventSink;
use super::message::AgentMessage;
use super::run::RUN_EVENT_BUFFER;
use crate::ai::event_queue::{self, Receiver, Sender};
use crate::ai::event_stream::PartialMessage;
use crate::ai::{ErrorKind, StopReason};
use crate::panics::panic_text;

/// The events of one loop run; ends after `agent_end`. Dropping it aborts the run.
#[derive(Debug)]
pub struct AgentEventStream {
    rx: Receiver<AgentEvent>,
    new_messages: Option<Vec<AgentMessage>>,
    _abort_on_drop: DropGuard,
}

impl AgentEventStream {
    /// Drains the remaining events and returns the messages the run added (`agent_end`'s).
    pub async fn result(mut self) -> Vec<AgentMessage> {
        while futures::StreamExt::next(&mut self).await.is_some() {}
        self.new_messages.take().unwrap_or_default()
    }
}

impl Stream for AgentEventStream {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(event)) => {
                if let AgentEvent::AgentEnd { messages } = &event {
                    self.new_messages = Some(messages.clone());
                }
                Poll::Ready(Some(event))
            }
            other => other,
        }
    }
}

/// A bounded queue as the run's sink: the run waits for a slow consumer, until it is aborted
/// (then an unread stream must not hold the run). Shared with the task that reports a
/// panicking run, so the queue stays open for its failure events.
struct ChannelSink {
    events: Arc<Sender<AgentEvent>>,
    /// The run's own token.
    aborted: CancellationToken,
    /// What [`CutOff`] needs to end the stream.
    progress: Arc<Mutex<Progress>>,
    /// The open message's partial view is in `progress` (checked without the lock: one test
    /// per delta).
    partial_kept: bool,
}

/// How far a run's events went, for [`CutOff`].
#[derive(Default)]
struct Progress {
    started: bool,
    /// The assistant message being streamed: its view so far.
    open: Option<PartialMessage>,
}

impl EventSink for ChannelSink {
    async fn emit(&mut self, event: AgentEvent) {
        match &event {
            AgentEvent::MessageUpdate { partial, .. } if !self.partial_kept => {
                lock(&self.progress).open = Some(partial.clone());
                self.partial_kept = true;
            }
            AgentEvent::MessageUpdate { .. } => {}
            AgentEvent::AgentStart => lock(&self.progress).started = true,
            AgentEvent::MessageStart { .. } | AgentEvent::MessageEnd { .. } => {
                lock(&self.progress).open = None;
                self.partial_kept = false;
            }
            _ => {}
        }
        let _ = self.events.send_unless_aborted(event, &self.aborted).await;
    }
}

fn lock(progress: &Mutex<Progress>) -> std::sync::MutexGuard<'_, Progress> {
    progress.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Ends the stream of a run whose task is dropped before its end (its runtime shut down under
/// it), so the stream ends as this module promises: the message being streamed ends,
/// `aborted`, or else a failure message (`aborted`) says why; then `agent_end` (after
/// `agent_start` if none went out). Disarmed when the task ends.
struct CutOff {
    events: Arc<Sender<AgentEvent>>,
    model: crate::ai::Model,
    progress: Arc<Mutex<Progress>>,
    armed: bool,
}

impl CutOff {
    /// The run's task ended: its stream ended as the run did.
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CutOff {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (started, open) = {
            let mut progress = lock(&self.progress);
            (progress.started, progress.open.take())
        };
        let mut events = Vec::with_capacity(4);
        if !started {
            events.push(AgentEvent::AgentStart);
        }
        let message: AgentMessage = match open {
            Some(partial) => {
                let mut answer = partial.snapshot();
                answer.stop_reason = StopReason::Aborted;
                answer.error_message = Some(RUN_CUT_OFF.to_owned());
                answer.error_kind = Some(ErrorKind::Aborted);
                answer.into()
            }
            None => {
                let failure: AgentMessage =
                    run_failure_message(&self.model, RUN_CUT_OFF, true).into();
                events.push(AgentEvent::MessageStart {
                    message: failure.clone(),
                });
                failure
            }
        };
        events.push(AgentEvent::MessageEnd {
            message: message.clone(),
        });
        events.push(AgentEvent::AgentEnd {
            messages: vec![message],
        });
        for event in events {
            // Nothing can wait now: queued past the bound (four events at most).
            let _ = self.events.push(event);
        }
    }
}

fn spawn_run<F>(config: &AgentLoopConfig, signal: &CancellationToken, run: F) -> AgentEventStream
where
    F: FnOnce(ChannelSink, CancellationToken) -> futures::future::BoxFuture<'static, ()>,
{
    let (tx, rx) = event_queue::bounded(RUN_EVENT_BUFFER);
    let tx = Arc::new(tx);
    let failure_tx = Arc::clone(&tx);
    // Each poll of the run is one batch: its events wake the consumer once.
    let batcher = tx.batcher();
    let model = config.model.clone();
    // The run's own token: the caller's signal cancels it, and so does dropping the stream.
    let run_signal = signal.child_token();
    let progress = Arc::new(Mutex::new(Progress::default()));
    let mut cut_off = CutOff {
        events: Arc::clone(&tx),
        model: config.model.clone(),
        progress: Arc::clone(&progress),
        armed: true,
    };
    let sink = ChannelSink {
        events: tx,
        aborted: run_signal.clone(),
        progress,
        partial_kept: false,
    };
    let future = run(sink, run_signal.clone());
    let task_signal = run_signal.clone();
    let span = crate::observability::agent_span(&config.model);
    tokio::spawn(tracing::Instrument::instrument(
        batcher.wrap(async move {
            if let Err(panic) = std::panic::AssertUnwindSafe(future).catch_unwind().await {
                let message: AgentMessage =
                    run_failure_message(&model, &panic_text(&*panic), task_signal.is_cancelled())
                        .into();
                let events = [
                    AgentEvent::MessageStart {
                        message: message.clone(),
                    },
                    AgentEvent::MessageEnd {
                        message: message.clone(),
                    },
                    AgentEvent::AgentEnd {
                        messages: vec![message],
                    },
                ];
                for event in events {
                    let _ = failure_tx.send_unless_aborted(event, &task_signal).await;
                }
            }
            cut_off.disarm();
        }),
        span,
    ));
    AgentEventStream {
        rx,
        new_messages: None,
        _abort_on_drop: run_signal.drop_guard(),
    }
}

/// Starts the loop with `prompts` on a new task (pi's `agentLoop`). Call from a tokio runtime.
pub fn agent_loop(
    prompts: Vec<AgentMessage>,
    context: AgentContext,
    config: AgentLoopConfig,
    signal: CancellationToken,
) -> AgentEventStream {
    spawn_run(&config.clone(), &signal, move |mut sink, signal| {
        async move {
            run_agent_loop(prompts, context, &config, signal, &mut sink).await;
        }
        .boxed()
    })
}

/// Starts the loop from the transcript (pi's `agentLoopContinue`); fails at once, like pi, when
/// the transcript is empty or ends with an assistant message.
pub fn agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: CancellationToken,
) -> Result<AgentEventStream, AgentError> {
    check_can_continue(&context.messages)?;
    Ok(spawn_run(
        &config.clone(),
        &signal,
        move |mut sink, signal| {
            async move {
                let _ = run_agent_loop_continue(context, &config, signal, &mut sink).await;
            }
            .boxed()
        },
    ))
}
