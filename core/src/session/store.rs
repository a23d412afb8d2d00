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
}

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
