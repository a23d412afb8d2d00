//! [`AgentRun`]: one run of an [`Agent`](super::Agent) as a value — a stream of that run's
//! events, its result, and an abort that also happens when the value is dropped.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use futures::Stream;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::event::AgentEvent;
use super::message::AgentMessage;

/// How many of a run's events wait for its consumer before the run waits too.
pub(crate) const RUN_EVENT_BUFFER: usize = 1024;

/// What a run ends with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutcome {
    /// The messages the run added (`agent_end`'s).
    pub new_messages: Vec<AgentMessage>,
}

/// A run started by [`Agent::start`](super::Agent::start). Iterate it for the run's events (the
/// same the subscribers get, in the same order), or await [`result`](Self::result).
///
/// Dropping it before the run has ended aborts the run (cancelling the task awaiting
/// `Agent::prompt` does the same); the abort completes in the background, and
/// [`Agent::wait_for_idle`](super::Agent::wait_for_idle) returns once it has.
#[derive(Debug)]
pub struct AgentRun {
    events: mpsc::Receiver<AgentEvent>,
    idle: watch::Receiver<bool>,
    signal: CancellationToken,
    abort_on_drop: Option<DropGuard>,
    outcome: Option<RunOutcome>,
}

impl AgentRun {
    pub(crate) fn new(
        events: mpsc::Receiver<AgentEvent>,
        idle: watch::Receiver<bool>,
        signal: CancellationToken,
    ) -> Self {
        Self {
            events,
            idle,
            abort_on_drop: Some(signal.clone().drop_guard()),
            signal,
            outcome: None,
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

    /// Reads the remaining events and waits until the run is over (its `agent_end` delivered to
    /// every subscriber and the agent idle again); returns what it added.
    pub async fn result(mut self) -> RunOutcome {
        self.finish().await
    }

    /// [`result`](Self::result) without giving the run up: cancel-safe, so a binding can stop
    /// waiting (its caller was cancelled), [`abort`](Self::abort), and wait again until the
    /// abort has completed. Once over, returns the same outcome every time.
    pub async fn finish(&mut self) -> RunOutcome {
        while futures::StreamExt::next(self).await.is_some() {}
        let _ = self.idle.wait_for(|idle| *idle).await;
        self.disarm();
        self.outcome.clone().unwrap_or_default()
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

impl Stream for AgentRun {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        match self.events.poll_recv(cx) {
            Poll::Ready(Some(event)) => {
                if let AgentEvent::AgentEnd { messages } = &event {
                    self.outcome = Some(RunOutcome {
                        new_messages: messages.clone(),
                    });
                }
                Poll::Ready(Some(event))
            }
            Poll::Ready(None) => {
                self.disarm();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
