//! The journal's public record, [`JournalRecord`], and the raw rows a [`SessionStore`] keeps.
//!
//! [`SessionStore`]: super::SessionStore

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// One entry of a session's event journal, as every binding hands it to its host:
/// `{"seq": 12, "attempt": 0, "event": {"type": "message_update", ...}}`.
///
/// `seq` counts from 1 without gaps, per session: a client that saw record N resumes with
/// `subscribe(N)` and gets N + 1 next. `attempt` is how many times the step that produced the
/// record was restarted after a crash (0 the first time): when a record arrives with a higher
/// attempt than the message being shown, the lower attempt's deltas were superseded and a
/// client drops them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JournalRecord {
    /// The record's position in the session's journal (1, 2, ...).
    pub seq: u64,
    /// The restart count of the step that produced it.
    pub attempt: u32,
    /// The agent event, exactly as the in-process agent serialises it (with its `type` tag).
    pub event: Box<RawValue>,
}

impl JournalRecord {
    /// The event's `type` tag (`"message_update"`, `"tool_execution_end"`, ...), read without
    /// parsing the rest of the event.
    pub fn kind(&self) -> Option<String> {
        #[derive(Deserialize)]
        struct Tag {
            #[serde(rename = "type")]
            kind: String,
        }
        serde_json::from_str::<Tag>(self.event.get())
            .ok()
            .map(|tag| tag.kind)
    }

    /// The record as one line of JSON.
    pub fn to_json(&self) -> String {
        // A record is plain data (numbers and a valid JSON value): writing it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// An event record as a store keeps it: the event is JSON text, checked by the session when it
/// reads it back (a torn last write is found there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRecord {
    /// Position in the journal, from 1.
    pub seq: u64,
    /// Restart count of the step that wrote it.
    pub attempt: u32,
    /// The event's JSON text.
    pub event: String,
}

/// A control entry as a store keeps it: what the session needs to rebuild its state on
/// reopen (requests taken, step inputs, action starts, compactions), as JSON text. Control
/// entries are not shown to subscribers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredControl {
    /// Position in the control log, from 1.
    pub index: u64,
    /// The entry's JSON text.
    pub entry: String,
}

/// What one [`SessionStore::append`](super::SessionStore::append) writes, all or nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Batch<'a> {
    /// Event records; the first one's `seq` must follow the session's last.
    pub records: &'a [StoredRecord],
    /// Control entries; the first one's `index` must follow the session's last.
    pub controls: &'a [StoredControl],
}

/// Where a session's two logs end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Heads {
    /// The last record's `seq` (0 when empty).
    pub seq: u64,
    /// The last control entry's `index` (0 when empty).
    pub control: u64,
}
