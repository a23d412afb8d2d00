//! [`AgentRun`]: one run of an [`Agent`](super::Agent) as a value — a stream of that run's
//! events, its result, and an abort that also happens when the value is dropped.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll};

use futures::Stream;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::event::AgentEvent;
use super::message::AgentMessage;
use crate::ai::event_queue::Receiver;
use crate::ai::structured::parse_output;
use crate::ai::types::Message;

/// How many of a run's events wait for its consumer before the run waits too.
pub(crate) const RUN_EVENT_BUFFER: usize = 1024;

/// What a run ends with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutcome {
    /// The messages the run added (`agent_end`'s).
    pub new_messages: Vec<AgentMessage>,
    /// The run's answer, for a run with an output schema
    /// ([`AgentSettings::output_schema`](super::AgentSettings)) that ended in a validated one:
    /// its last message's text parsed. `None` when the run failed (the last message then says
    /// why: `invalid_output` after the re-asks, or another failure).
    pub output: Option<Value>,
}

impl RunOutcome {
    /// The answer as `T` (see [`output`](Self::output)): `None` without one, else serde's
    /// verdict.
    pub fn output_as<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Option<Result<T, serde_json::Error>> {
        self.output.clone().map(serde_json::from_value)
    }
}

impl RunOutcome {
    /// The run's failure: the error of its last message, when that is a failed assistant
    /// message (a model failure, an abort, a failing hook, a run limit).
    pub fn error(&self) -> Option<crate::ai::MessageError> {
        self.new_messages
            .last()
            .and_then(AgentMessage::as_assistant)
            .and_then(crate::ai::MessageError::of)
    }

    /// The outcome, or the run's failure as an error (the opt-in to raising: by default a
    /// failed run is data, as in pi).
    pub fn into_result(self) -> Result<RunOutcome, crate::ai::MessageError> {
        match self.error() {
            Some(error) => Err(error),
            None => Ok(self),
        }
    }
}

/// Where a run leaves its outcome when it emits `agent_end`, so waiting for the result does
/// not need the events. `wants_output` when the run has an output schema.
#[derive(Clone, Debug, Default)]
pub(crate) struct OutcomeSlot(Arc<Mutex<Option<RunOutcome>>>, bool);

impl OutcomeSlot {
    /// A slot for a run that ends in a value when `wants_output`.
    pub(crate) fn new(wants_output: bool) -> Self {
        Self(Arc::default(), wants_output)
    }

    pub(crate) fn set(&self, new_messages: Vec<AgentMessage>) {
        let output = if self.1 {
            final_output(&new_messages)
        } else {
            None
        };
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(RunOutcome {
            new_messages,
            output,
        });
    }

    /// Whether the run's `agent_end` went out.
    pub(crate) fn is_set(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    fn get(&self) -> Option<RunOutcome> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The answer of a run whose last message is a successful assistant turn without tool calls
/// (the stream has validated its text against the schema already).
fn final_output(messages: &[AgentMessage]) -> Option<Value> {
    let AgentMessage::Llm(Message::Assistant(last)) = messages.last()? else {
        return None;
    };
    if last.stop_reason.is_failure() || last.tool_calls().next().is_some() {
        return None;
    }
    parse_output(&last.text()).ok()
}

/// A run started by [`Agent::start`](super::Agent::start). Iterate it for the run's events (the
/// same the subscribers get, in the same order), or await [`result`](Self::result).
///
/// Dropping it before the run has ended aborts the run (cancelling the task awaiting
/// `Agent::prompt` does the same); the abort completes in the background, and
/// [`Agent::wait_for_idle`](super::Agent::wait_for_idle) returns once it has.
#[derive(Debug)]
pub struct AgentRun {
    /// `None` once only the result is wanted: the run then stops queueing events.
    events: Option<Receiver<AgentEvent>>,
    idle: watch::Receiver<bool>,
    signal: CancellationToken,
    abort_on_drop: Option<DropGuard>,
    outcome: OutcomeSlot,
}

impl AgentRun {
    pub(crate) fn new(
        events: Receiver<AgentEvent>,
        outcome: OutcomeSlot,
        idle: watch::Receiver<bool>,
        signal: CancellationToken,
    ) -> Self {
        Self {
            events: Some(events),
            idle,
            abort_on_drop: Some(signal.clone().drop_guard()),
            signal,
            outcome,
        }
    }

    /// Cancels the run (it ends promptly with `agent_end`).
    pub fn abort(&self) {
        self.signal.cancel();
    }

    /// The run's cancellation token (tools and hooks get it too).
    pub fn signal(&self) -> CancellationToken {
        self.signal.clone()
    }

    /// Gives up the remaining events and waits until the run is over (its `agent_end` delivered
    /// to every subscriber and the agent idle again); returns what it added.
    pub async fn result(mut self) -> RunOutcome {
        self.finish().await
    }

    /// [`result`](Self::result) without giving the run up: cancel-safe, so a binding can stop
    /// waiting (its caller was cancelled), [`abort`](Self::abort), and wait again until the
    /// abort has completed. Once over, returns the same outcome every time.
    pub async fn finish(&mut self) -> RunOutcome {
        // Unread events are not wanted any more; the run stops queueing them.
        self.events = None;
        let _ = self.idle.wait_for(|idle| *idle).await;
        self.disarm();
        self.outcome.get().unwrap_or_default()
    }

    /// Whether the run is over (every event read and the agent idle again).
    pub fn is_finished(&self) -> bool {
        self.abort_on_drop.is_none() && *self.idle.borrow()
    }

    fn disarm(&mut self) {
        if let Some(guard) = self.abort_on_drop.take() {
            // The run is over: nothing left to abort.
            let _ = guard.disarm();
        }
    }
}

impl AgentRun {
    /// The next event if it is already there: `Ready(Some(event))`, `Ready(None)` after the
    /// last one, `Pending` when none has arrived yet. Unlike polling the run as a stream, it
    /// registers no waker, so a task waiting on the run stays the one woken.
    pub fn poll_next_ready(&mut self) -> Poll<Option<AgentEvent>> {
        self.poll_with(None)
    }

    fn poll_with(&mut self, cx: Option<&mut TaskContext<'_>>) -> Poll<Option<AgentEvent>> {
        let Some(events) = self.events.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = match cx {
            Some(cx) => events.poll_recv(cx),
            None => events.poll_recv_ready(),
        };
        if let Poll::Ready(None) = polled {
            // The run has sent its last event.
            self.disarm();
        }
        polled
    }
}

impl Stream for AgentRun {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        self.poll_with(Some(cx))
    }
}
