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
    RUN_CUT_OFF, check_can_continue, cut_off_answer, run_agent_loop, run_agent_loop_continue,
    run_failure_message,
};
use super::config::{AgentContext, AgentLoopConfig};
use super::error::AgentError;
use super::event::AgentEvent;
use super::guard::EventSink;
use super::message::AgentMessage;
use super::run::RUN_EVENT_BUFFER;
use super::tool_calls::aborted_call_end;
use crate::ai::event_queue::{self, Receiver, Sender};
use crate::ai::event_stream::PartialMessage;
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

/// How far a run's events went, for [`CutOff`]: each message once, at its start and end
/// (nothing per delta).
#[derive(Default)]
struct Progress {
    started: bool,
    /// `agent_end` is being sent; `end_sent` once it is in the queue.
    ending: bool,
    end_sent: bool,
    /// The assistant message being streamed.
    open: Option<Open>,
    /// The run's messages that ended.
    ended: Vec<AgentMessage>,
    /// Tool calls started and not ended: id and name.
    running: Vec<(String, String)>,
}

/// The assistant message being streamed: as it started, then its live view.
enum Open {
    Started(AgentMessage),
    Partial(PartialMessage),
}

impl EventSink for ChannelSink {
    async fn emit(&mut self, event: AgentEvent) {
        match &event {
            AgentEvent::MessageUpdate { partial, .. } if !self.partial_kept => {
                lock(&self.progress).open = Some(Open::Partial(partial.clone()));
                self.partial_kept = true;
            }
            AgentEvent::MessageUpdate { .. } | AgentEvent::TurnStart => {}
            AgentEvent::AgentStart => lock(&self.progress).started = true,
            AgentEvent::MessageStart { message } => {
                lock(&self.progress).open =
                    (message.as_assistant().is_some()).then(|| Open::Started(message.clone()));
                self.partial_kept = false;
            }
            AgentEvent::MessageEnd { message } => {
                let mut progress = lock(&self.progress);
                progress.open = None;
                progress.ended.push(message.clone());
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                ..
            } => lock(&self.progress)
                .running
                .push((tool_call_id.clone(), tool_name.clone())),
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                lock(&self.progress)
                    .running
                    .retain(|(id, _)| id != tool_call_id);
            }
            AgentEvent::AgentEnd { .. } => lock(&self.progress).ending = true,
            AgentEvent::TurnEnd { .. } | AgentEvent::ToolExecutionUpdate { .. } => {}
        }
        let end = matches!(event, AgentEvent::AgentEnd { .. });
        let _ = self.events.send_unless_aborted(event, &self.aborted).await;
        if end {
            lock(&self.progress).end_sent = true;
        }
    }
}

fn lock(progress: &Mutex<Progress>) -> std::sync::MutexGuard<'_, Progress> {
    progress.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Ends the stream of a run whose task is dropped before its end (its runtime shut down under
/// it), so the stream ends as this module promises and as an `Agent`'s run ends: the message
/// being streamed ends `aborted`, or else each running tool call ends with its aborted result
/// and a failure message (`aborted`) says why; then `agent_end` with the run's messages
/// (after `agent_start` if none went out). Disarmed when the task ends.
struct CutOff {
    events: Arc<Sender<AgentEvent>>,
    model: crate::ai::Model,
    progress: Arc<Mutex<Progress>>,
    armed: bool,
}

impl CutOff {
    /// The run's task ended (or reports its own failure): its stream ends as the run did.
    fn disarm(&mut self) {
        self.armed = false;
    }

    fn end(&self, progress: &mut Progress) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        if progress.ending {
            if !progress.end_sent {
                events.push(AgentEvent::AgentEnd {
                    messages: std::mem::take(&mut progress.ended),
                });
            }
            return events;
        }
        if !progress.started {
            events.push(AgentEvent::AgentStart);
        }
        let answer = match progress.open.take() {
            Some(Open::Partial(partial)) => Some(partial.snapshot()),
            Some(Open::Started(message)) => message.as_assistant().cloned(),
            None => None,
        };
        let mut end_message = |events: &mut Vec<AgentEvent>, message: AgentMessage| {
            events.push(AgentEvent::MessageEnd {
                message: message.clone(),
            });
            progress.ended.push(message);
        };
        if let Some(answer) = answer {
            end_message(&mut events, cut_off_answer(answer).into());
        } else {
            for (tool_call_id, tool_name) in std::mem::take(&mut progress.running) {
                let (end, message) = aborted_call_end(tool_call_id, tool_name);
                events.push(end);
                events.push(AgentEvent::MessageStart {
                    message: message.clone(),
                });
                end_message(&mut events, message);
            }
            let failure: AgentMessage = run_failure_message(&self.model, RUN_CUT_OFF, true).into();
            events.push(AgentEvent::MessageStart {
                message: failure.clone(),
            });
            end_message(&mut events, failure);
        }
        events.push(AgentEvent::AgentEnd {
            messages: std::mem::take(&mut progress.ended),
        });
        events
    }
}

impl Drop for CutOff {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let events = self.end(&mut lock(&self.progress));
        for event in events {
            // Nothing can wait now: queued past the bound (a few events, one per running
            // tool call).
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
            let outcome = std::panic::AssertUnwindSafe(future).catch_unwind().await;
            // Ended, or failed: the failure below reports it.
            cut_off.disarm();
            if let Err(panic) = outcome {
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
