//! The state a session shares between its handle and its driver task, and the one place that
//! writes the journal.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::compaction::Compaction;
use super::control::Control;
use super::error::SessionError;
use super::options::SessionOptions;
use super::receipt::{Receipt, RequestKind};
use super::record::{Batch, Heads, StoredControl, StoredRecord};
use super::store::{SessionStore, off_worker};
use crate::agent::{AgentEvent, AgentMessage};

/// What a session is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionStatus {
    /// No run, nothing waiting.
    Idle,
    /// A run is going on (or requests wait for one).
    Running,
    /// The store failed; the session takes no more requests (reopen it to resume).
    Stopped(String),
}

/// A request waiting in the inbox.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) id: String,
    pub(crate) kind: RequestKind,
    pub(crate) message: AgentMessage,
}

/// A caller of `compact()` waiting for the driver.
pub(crate) type CompactReply = oneshot::Sender<Result<Option<Compaction>, SessionError>>;

/// The mutable half, behind one lock.
#[derive(Debug, Default)]
pub(crate) struct Inner {
    pub(crate) heads: Heads,
    pub(crate) stopped: Option<String>,
    /// The transcript, as of the last `message_end` written.
    pub(crate) transcript: Vec<AgentMessage>,
    pub(crate) inbox: VecDeque<Pending>,
    pub(crate) receipts: HashMap<String, Receipt>,
    pub(crate) compaction: Option<Compaction>,
    /// Cut points whose summary call failed (never tried again).
    pub(crate) failed_cuts: BTreeSet<usize>,
    /// The current run's abort signal.
    pub(crate) signal: CancellationToken,
    pub(crate) running: bool,
    pub(crate) compact_requests: Vec<CompactReply>,
}

/// Shared by the [`Session`](super::Session) handle, its driver and its subscriptions.
pub(crate) struct Shared {
    pub(crate) id: String,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) options: SessionOptions,
    pub(crate) inner: Mutex<Inner>,
    /// The last seq written (wakes in-process subscribers).
    pub(crate) seq: watch::Sender<u64>,
    /// Bumped when a request arrives (wakes the driver).
    pub(crate) work: watch::Sender<u64>,
    pub(crate) status: watch::Sender<SessionStatus>,
    pub(crate) closed: CancellationToken,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every write leaves `Inner` consistent before it can panic.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `events` (as records with `attempt`) and `controls` in one batch, then updates
    /// the transcript and wakes subscribers: the one way anything reaches the journal, so
    /// nothing is shown before it is stored. A failed write stops the session (as a crash
    /// would) and cancels the running step.
    pub(crate) fn write(
        &self,
        inner: &mut Inner,
        attempt: u32,
        events: &[AgentEvent],
        controls: &[Control],
    ) -> Result<(), SessionError> {
        // Closed is stopped as a crash stops it: a driver still in a step when `close()`
        // cancelled the signal must not journal that step's abort (reopening resumes it).
        // `close()` takes this lock after marking the session closed, so once it returns no
        // write is in progress and none follows.
        if self.closed.is_cancelled() {
            return Err(SessionError::Closed);
        }
        if let Some(reason) = &inner.stopped {
            return Err(SessionError::Stopped(reason.clone()));
        }
        let heads = inner.heads;
        let records: Vec<StoredRecord> = events
            .iter()
            .zip(heads.seq + 1..)
            .map(|(event, seq)| StoredRecord {
                seq,
                attempt,
                // Events are plain data (non-finite numbers become null): this cannot fail.
                event: serde_json::to_string(event).unwrap_or_else(|_| "{}".to_owned()),
            })
            .collect();
        let controls: Vec<StoredControl> = controls
            .iter()
            .zip(heads.control + 1..)
            .map(|(control, index)| StoredControl {
                index,
                entry: serde_json::to_string(control).unwrap_or_else(|_| "{}".to_owned()),
            })
            .collect();
        let batch = Batch {
            records: &records,
            controls: &controls,
        };
        if let Err(error) = off_worker(|| self.store.append(&self.id, batch)) {
            self.stop(inner, error.to_string());
            return Err(error.into());
        }
        inner.heads = Heads {
            seq: heads.seq + records.len() as u64,
            control: heads.control + controls.len() as u64,
        };
        apply_message_ends(&mut inner.transcript, events);
        self.seq.send_replace(inner.heads.seq);
        Ok(())
    }

    /// Stops the session for `reason` (the first reason stays): the running step is cancelled,
    /// and every waiter and later request gets [`SessionStatus::Stopped`].
    pub(crate) fn stop(&self, inner: &mut Inner, reason: String) {
        if inner.stopped.is_some() {
            return;
        }
        inner.stopped = Some(reason.clone());
        inner.signal.cancel();
        self.status.send_replace(SessionStatus::Stopped(reason));
    }

    /// Publishes whether the session is idle now.
    pub(crate) fn publish_status(&self, inner: &Inner) {
        let status = match &inner.stopped {
            Some(reason) => SessionStatus::Stopped(reason.clone()),
            None if inner.running || !inner.inbox.is_empty() => SessionStatus::Running,
            None => SessionStatus::Idle,
        };
        self.status.send_if_modified(|current| {
            let changed = *current != status;
            *current = status;
            changed
        });
    }
}

/// Keeps `transcript` in step with the journal: a message joins it at its `message_end`.
pub(crate) fn apply_message_ends(transcript: &mut Vec<AgentMessage>, events: &[AgentEvent]) {
    for event in events {
        if let AgentEvent::MessageEnd { message } = event {
            transcript.push(message.clone());
        }
    }
}
