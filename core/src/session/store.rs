//! The storage contract of durable sessions: [`SessionStore`].

use super::record::{Batch, Heads, StoredControl, StoredRecord};

/// A store failed. A session whose store fails stops where it is, as a crashed process would:
/// nothing it did not write is shown, and reopening it resumes from what was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another writer appended first (the batch did not follow the session's last entries);
    /// nothing was written.
    #[error(
        "session `{session}` was written by another writer (expected to follow seq {expected_seq} / control {expected_control}, found {found_seq} / {found_control})"
    )]
    Conflict {
        /// The session.
        session: String,
        /// The last seq the writer expected.
        expected_seq: u64,
        /// The last control index the writer expected.
        expected_control: u64,
        /// The last seq found.
        found_seq: u64,
        /// The last control index found.
        found_control: u64,
    },
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The store refused the write (a test store simulating a crash, for one).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Another handle (in this process or another) holds the session's claim: a session is
    /// driven by one [`Session`](super::Session) at a time.
    #[error("session `{session}` is open in another handle or process; close it there first")]
    InUse {
        /// The session.
        session: String,
    },
    /// The claim could not be taken for another reason (its lock file cannot be created).
    #[error("session `{session}` cannot be claimed: {reason}")]
    Claim {
        /// The session.
        session: String,
        /// Why.
        reason: String,
    },
}

/// A store's hold on one session for the [`Session`](super::Session) that drives it: while it
/// lives, another claim of the session fails with [`StoreError::InUse`]. Dropping it releases
/// the session.
pub struct Claim {
    _held: Option<Box<dyn Send + Sync>>,
}

impl Claim {
    /// A claim that holds nothing: for a store whose handles cannot see one another's claims
    /// (two writers of one session are then told apart by [`StoreError::Conflict`] alone).
    pub fn none() -> Self {
        Self { _held: None }
    }

    /// A claim held by `guard`, released when the guard is dropped.
    pub fn held(guard: impl Send + Sync + 'static) -> Self {
        Self {
            _held: Some(Box::new(guard)),
        }
    }
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("held", &self._held.is_some())
            .finish()
    }
}

/// Where durable sessions keep their journals. One store holds many sessions, keyed by id.
///
/// Contract (checked by the conformance suite in `core/tests/session_store.rs`, which any store
/// must pass):
/// - [`append`](Self::append) is atomic: all of a batch is stored or none of it;
/// - it refuses a batch whose first record or control entry does not directly follow the
///   session's last ones ([`StoreError::Conflict`]), so two writers of one session cannot
///   interleave: one of them is refused and writes nothing;
/// - what is appended is readable at once by this and by every other handle on the same
///   storage (another process, for SQLite);
/// - entries are returned byte for byte as written (a torn write is detected by the session,
///   which drops it with [`truncate`](Self::truncate)).
pub trait SessionStore: Send + Sync + std::fmt::Debug {
    /// Appends a batch to `session` (creating it on its first write).
    fn append(&self, session: &str, batch: Batch<'_>) -> Result<(), StoreError>;
    /// Up to `limit` records of `session` with `seq > after`, in order.
    fn records(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError>;
    /// Every control entry of `session`, in order.
    fn controls(&self, session: &str) -> Result<Vec<StoredControl>, StoreError>;
    /// Where `session`'s logs end (zeros for an unknown session).
    fn heads(&self, session: &str) -> Result<Heads, StoreError>;
    /// Drops records with `seq > seq` and control entries with `index > control`: how a
    /// reopened session discards a torn last write.
    fn truncate(&self, session: &str, seq: u64, control: u64) -> Result<(), StoreError>;
    /// The ids of the sessions in the store, sorted.
    fn sessions(&self) -> Result<Vec<String>, StoreError>;
    /// Claims `session` for one driving [`Session`](super::Session) ([`Session::open`]
    /// takes it): while the returned claim lives, claiming the session again, through this
    /// handle or another on the same storage, fails with [`StoreError::InUse`]. Without a
    /// claim, a second handle would resume a tool call the first is still running, and run it
    /// again. The default claims nothing ([`Claim::none`]).
    ///
    /// [`Session::open`]: super::Session::open
    fn claim(&self, session: &str) -> Result<Claim, StoreError> {
        let _ = session;
        Ok(Claim::none())
    }
    /// Deletes `session`'s journal (its records and control entries); returns whether it had
    /// any. The session's claim is taken for the deletion, so a store whose claims hold
    /// (`SqliteStore`, `MemoryStore`) refuses a session that a handle has open
    /// ([`StoreError::InUse`]), and no handle opens it meanwhile; with a store that claims
    /// nothing, a handle that still drives the session is stopped by its next write
    /// ([`StoreError::Conflict`]). Afterwards the id is free: opening it starts a new, empty
    /// session.
    ///
    /// A [`Subscription::follow`](super::Subscription::follow) of the deleted session sees no
    /// more records (it waits for records past its cursor, which a new session of the same id
    /// would write): do not reuse an id that followers still watch.
    ///
    /// The default claims the session and truncates it to nothing.
    fn delete(&self, session: &str) -> Result<bool, StoreError> {
        let _claim = self.claim(session)?;
        let had = self.heads(session)? != Heads::default();
        self.truncate(session, 0, 0)?;
        Ok(had)
    }
}

/// Store calls may wait (for another connection's write lock, up to SQLite's busy timeout, or
/// for the disk): the session makes them through [`off_worker`](crate::off_worker).
pub(crate) use crate::off_worker::off_worker;

/// Checks that `batch` follows `heads`; the shared half of every store's conflict check.
pub(crate) fn check_follows(
    session: &str,
    heads: Heads,
    batch: &Batch<'_>,
) -> Result<(), StoreError> {
    let records_follow = batch
        .records
        .iter()
        .enumerate()
        .all(|(i, record)| record.seq == heads.seq + 1 + i as u64);
    let controls_follow = batch
        .controls
        .iter()
        .enumerate()
        .all(|(i, control)| control.index == heads.control + 1 + i as u64);
    if records_follow && controls_follow {
        return Ok(());
    }
    Err(StoreError::Conflict {
        session: session.to_owned(),
        expected_seq: batch.records.first().map_or(heads.seq, |r| r.seq - 1),
        expected_control: batch
            .controls
            .first()
            .map_or(heads.control, |c| c.index - 1),
        found_seq: heads.seq,
        found_control: heads.control,
    })
}
