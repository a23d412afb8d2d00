//! [`Subscription`]: a session's journal from a cursor, then live.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::error::SessionError;
use super::record::JournalRecord;
use super::state::SessionStatus;
use super::store::{SessionStore, off_worker};

/// How many records one read takes from the store.
const PAGE: usize = 512;

/// How often a follower without an in-process session polls the store.
pub const FOLLOW_POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Everything a session journalled after a cursor, in order, then each new record as it is
/// written: nothing skipped, nothing twice. Records are read from the store, so a slow
/// subscriber never holds the session back and never loses a record.
///
/// A subscription from [`Session::subscribe`](super::Session::subscribe) wakes as the
/// session writes and ends (`None`) once the session is closed or stopped and everything is
/// read; one
/// from [`Subscription::follow`] (another process, for one) polls the store and never ends.
#[derive(Debug)]
pub struct Subscription {
    store: Arc<dyn SessionStore>,
    session: String,
    cursor: u64,
    buffer: VecDeque<JournalRecord>,
    mode: Mode,
}

/// How a subscription learns of new records.
#[derive(Debug)]
enum Mode {
    /// From the session in this process: woken by its writes, ended by its close (or its end:
    /// the sender dropped).
    Live {
        written: watch::Receiver<u64>,
        closed: CancellationToken,
        /// A stopped session writes nothing more either.
        status: watch::Receiver<SessionStatus>,
    },
    /// By polling the store.
    Follow,
    /// The session is over: what is in the store is read, then `None`.
    Ended,
}

impl Subscription {
    pub(crate) fn live(
        store: Arc<dyn SessionStore>,
        session: String,
        after: u64,
        written: watch::Receiver<u64>,
        closed: CancellationToken,
        status: watch::Receiver<SessionStatus>,
    ) -> Self {
        Self {
            store,
            session,
            cursor: after,
            buffer: VecDeque::new(),
            mode: Mode::Live {
                written,
                closed,
                status,
            },
        }
    }

    /// Follows `session` in `store` from `after`, polling every
    /// [`FOLLOW_POLL_INTERVAL`]: for a reader that does not run the session (another
    /// process on the same SQLite file).
    pub fn follow(store: Arc<dyn SessionStore>, session: impl Into<String>, after: u64) -> Self {
        Self {
            store,
            session: session.into(),
            cursor: after,
            buffer: VecDeque::new(),
            mode: Mode::Follow,
        }
    }

    /// The seq of the last record handed out (the cursor to resume from).
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// The next record if one is in the store now; never waits.
    pub fn try_next(&mut self) -> Result<Option<JournalRecord>, SessionError> {
        if self.buffer.is_empty() {
            self.fill()?;
        }
        Ok(self.take())
    }

    /// The next record, waiting for it; `None` when the session was closed and every record
    /// was read.
    pub async fn next(&mut self) -> Option<Result<JournalRecord, SessionError>> {
        loop {
            match self.try_next() {
                Err(error) => return Some(Err(error)),
                Ok(Some(record)) => return Some(Ok(record)),
                Ok(None) => {}
            }
            match &mut self.mode {
                Mode::Live {
                    written,
                    closed,
                    status,
                } => {
                    if *written.borrow_and_update() > self.cursor {
                        continue;
                    }
                    // Closed, stopped (its store failed), or gone: it writes nothing more,
                    // and what it wrote last is still to read (the loop reads it, then ends).
                    if matches!(*status.borrow_and_update(), SessionStatus::Stopped(_)) {
                        self.mode = Mode::Ended;
                        continue;
                    }
                    let ended = tokio::select! {
                        changed = written.changed() => changed.is_err(),
                        () = closed.cancelled() => true,
                        // Looked at again above.
                        _ = status.changed() => false,
                    };
                    if ended {
                        self.mode = Mode::Ended;
                    }
                }
                Mode::Follow => tokio::time::sleep(FOLLOW_POLL_INTERVAL).await,
                Mode::Ended => return None,
            }
        }
    }

    /// [`next`](Self::next) waiting at most `timeout`: `Ok(None)` when nothing came (or the
    /// session is closed and everything was read).
    pub async fn next_timeout(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<JournalRecord>, SessionError> {
        match tokio::time::timeout(timeout, self.next()).await {
            Ok(Some(result)) => result.map(Some),
            Ok(None) | Err(_) => Ok(None),
        }
    }

    fn take(&mut self) -> Option<JournalRecord> {
        let record = self.buffer.pop_front()?;
        self.cursor = record.seq;
        Some(record)
    }

    fn fill(&mut self) -> Result<(), SessionError> {
        let after = self.cursor;
        let page = off_worker(|| self.store.records(&self.session, after, PAGE))?;
        for stored in page {
            let event =
                RawValue::from_string(stored.event).map_err(|error| SessionError::Corrupt {
                    session: self.session.clone(),
                    what: "record",
                    position: stored.seq,
                    reason: error.to_string(),
                })?;
            self.buffer.push_back(JournalRecord {
                seq: stored.seq,
                attempt: stored.attempt,
                event,
            });
        }
        Ok(())
    }
}
