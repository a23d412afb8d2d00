//! [`SessionError`]: what the session API refuses or reports.

use super::store::StoreError;

/// A durable session's failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The store failed; the session stopped where it was (reopen it to resume).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A journal entry before the last one cannot be read: the store was damaged (a torn
    /// *last* entry is dropped on reopen instead).
    #[error("session `{session}`: {what} {position} is unreadable: {reason}")]
    Corrupt {
        /// The session.
        session: String,
        /// `record` or `control entry`.
        what: &'static str,
        /// Its seq or index.
        position: u64,
        /// Why it cannot be read.
        reason: String,
    },
    /// The session stopped earlier (after this store failure) and takes no more requests;
    /// reopen it to resume.
    #[error("session stopped: {0}")]
    Stopped(String),
    /// A request id was empty.
    #[error("a request id must not be empty")]
    EmptyRequestId,
    /// A request id was used before for a different kind of request.
    #[error("request id `{id}` was used before for a `{kind}` request")]
    RequestIdReused {
        /// The id.
        id: String,
        /// The kind it was used for.
        kind: &'static str,
    },
    /// A session id was empty.
    #[error("a session id must not be empty")]
    EmptySessionId,
    /// A request's message would not read back from the journal as it was given (e.g. a
    /// custom message with the role `user` but no `content`): it is refused, not journalled,
    /// so that reopening the session cannot fail on it.
    #[error("the request's message cannot be journalled: it does not read back ({0})")]
    UnreadableMessage(String),
    /// The compaction's summary call failed; the session goes on uncompacted.
    #[error("compaction failed: {0}")]
    Compaction(String),
    /// The session was closed.
    #[error("session closed")]
    Closed,
}
