//! [`MemoryStore`]: sessions in memory, for tests and short-lived hosts.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::record::{Batch, Heads, StoredControl, StoredRecord};
use super::store::{Claim, SessionStore, StoreError, check_follows};

/// A [`SessionStore`] in memory. Clones of one `Arc<MemoryStore>` share the sessions; nothing
/// survives the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: Mutex<BTreeMap<String, Logs>>,
    /// The sessions a handle drives (see [`SessionStore::claim`]).
    claimed: Arc<Mutex<BTreeSet<String>>>,
}

/// A claim of a [`MemoryStore`] session: the id in `claimed` until dropped.
struct Claimed {
    claimed: Arc<Mutex<BTreeSet<String>>>,
    session: String,
}

impl Drop for Claimed {
    fn drop(&mut self) {
        self.claimed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.session);
    }
}

#[derive(Debug, Default)]
struct Logs {
    records: Vec<StoredRecord>,
    controls: Vec<StoredControl>,
}

impl Logs {
    fn heads(&self) -> Heads {
        Heads {
            seq: self.records.last().map_or(0, |r| r.seq),
            control: self.controls.last().map_or(0, |c| c.index),
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Logs>> {
        // The map is consistent after every statement: a panic elsewhere leaves it usable.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SessionStore for MemoryStore {
    fn append(&self, session: &str, batch: Batch<'_>) -> Result<(), StoreError> {
        let mut sessions = self.lock();
        let logs = sessions.entry(session.to_owned()).or_default();
        check_follows(session, logs.heads(), &batch)?;
        logs.records.extend_from_slice(batch.records);
        logs.controls.extend_from_slice(batch.controls);
        Ok(())
    }

    fn records(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let sessions = self.lock();
        let Some(logs) = sessions.get(session) else {
            return Ok(Vec::new());
        };
        // Records are dense from seq 1, so `after` is an index.
        let start = usize::try_from(after).unwrap_or(usize::MAX);
        Ok(logs
            .records
            .iter()
            .skip(start)
            .take(limit)
            .cloned()
            .collect())
    }

    fn controls(&self, session: &str) -> Result<Vec<StoredControl>, StoreError> {
        Ok(self
            .lock()
            .get(session)
            .map(|logs| logs.controls.clone())
            .unwrap_or_default())
    }

    fn heads(&self, session: &str) -> Result<Heads, StoreError> {
        Ok(self
            .lock()
            .get(session)
            .map(Logs::heads)
            .unwrap_or_default())
    }

    fn truncate(&self, session: &str, seq: u64, control: u64) -> Result<(), StoreError> {
        if let Some(logs) = self.lock().get_mut(session) {
            logs.records.retain(|r| r.seq <= seq);
            logs.controls.retain(|c| c.index <= control);
        }
        Ok(())
    }

    fn claim(&self, session: &str) -> Result<Claim, StoreError> {
        let mut claimed = self.claimed.lock().unwrap_or_else(PoisonError::into_inner);
        if !claimed.insert(session.to_owned()) {
            return Err(StoreError::InUse {
                session: session.to_owned(),
            });
        }
        Ok(Claim::held(Claimed {
            claimed: Arc::clone(&self.claimed),
            session: session.to_owned(),
        }))
    }

    fn sessions(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.lock().keys().cloned().collect())
    }

    fn delete(&self, session: &str) -> Result<bool, StoreError> {
        let _claim = self.claim(session)?;
        // An id whose logs were emptied (by `truncate`) is gone from the list as well.
        Ok(self
            .lock()
            .remove(session)
            .is_some_and(|logs| logs.heads() != Heads::default()))
    }
}
