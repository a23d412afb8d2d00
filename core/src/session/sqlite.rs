//! [`SqliteStore`]: the default store, one SQLite database file (WAL mode) for many sessions.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::record::{Batch, Heads, StoredControl, StoredRecord};
use super::store::{Claim, SessionStore, StoreError, check_follows};

/// How long a write waits for another process's transaction on the same file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The layout of the tables, as `PRAGMA user_version`: a file written by a later layout is
/// refused rather than misread (a file of no version is this layout's, from before versions).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pi_records (
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pi_controls (
    session TEXT NOT NULL,
    idx INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (session, idx)
) WITHOUT ROWID;
";

/// A [`SessionStore`] in one SQLite file. Every handle (in this process or another) on the
/// same path sees the same sessions; writes are transactions, so a process killed at any
/// point leaves every batch either whole or absent.
///
/// The file is in WAL mode with `synchronous = NORMAL`: a killed process loses nothing it
/// committed; a power cut may lose the last transactions before a checkpoint (never corrupt
/// the file), except a tool's start, which is committed with `synchronous = FULL` so that a
/// tool that ran is never taken for one that did not. Two writers of one session are told apart by [`StoreError::Conflict`].
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`. A new file is readable by its owner
    /// only (transcripts are private); SQLite gives its `-wal` and `-shm` files the same mode.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if !in_memory(&path) {
            create_private(&path).map_err(|error| {
                StoreError::Unavailable(format!("cannot create {}: {error}", path.display()))
            })?;
        }
        let connection = Connection::open(&path)?;
        connection.busy_timeout(BUSY_TIMEOUT)?;
        switch_to_wal(&connection)?;
        connection.execute_batch("PRAGMA synchronous = NORMAL;")?;
        let version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::Unavailable(format!(
                "{} was written by a later pi-agent (session schema {version}; this one reads \
                 {SCHEMA_VERSION})",
                path.display()
            )));
        }
        connection.execute_batch(SCHEMA)?;
        if version < SCHEMA_VERSION {
            connection.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))?;
        }
        Ok(Self {
            path,
            connection: Mutex::new(connection),
        })
    }

    /// Opens the database at `path`, which must exist: for a reader following sessions that
    /// another process writes (a mistyped path is an error, not a new empty database that is
    /// followed for ever).
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if !in_memory(path) && !path.is_file() {
            return Err(StoreError::Unavailable(format!(
                "no session database at {}",
                path.display()
            )));
        }
        Self::open(path)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// SQLite's `data_version`: changes when another connection commits to the file, so a
    /// follower can tell cheaply whether to read again.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .lock()
            .query_row("PRAGMA data_version", [], |row| row.get(0))?)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A connection left mid-statement by a panic is still usable (SQLite rolls back).
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// `PRAGMA journal_mode = WAL`, tried again while another connection holds the lock it needs.
///
/// Processes that open a new file at once each switch it from rollback to WAL mode, and SQLite
/// answers `SQLITE_BUSY` at once, without the busy timeout, to the one that would otherwise
/// wait in a deadlock (most runs of four openers had one). Once the file is in WAL mode the
/// pragma changes nothing and takes no lock, so this loop only ever runs on a new file.
fn switch_to_wal(connection: &Connection) -> Result<(), rusqlite::Error> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        // `journal_mode` answers with a row; read it rather than `execute`.
        match connection.query_row("PRAGMA journal_mode = WAL", [], |row| {
            row.get::<_, String>(0)
        }) {
            Ok(_) => return Ok(()),
            Err(error)
                if error.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(error) => return Err(error),
        }
    }
}

fn heads_of(connection: &Connection, session: &str) -> Result<Heads, rusqlite::Error> {
    let seq: Option<i64> = connection
        .prepare_cached("SELECT MAX(seq) FROM pi_records WHERE session = ?1")?
        .query_row([session], |row| row.get(0))
        .optional()?
        .flatten();
    let control: Option<i64> = connection
        .prepare_cached("SELECT MAX(idx) FROM pi_controls WHERE session = ?1")?
        .query_row([session], |row| row.get(0))
        .optional()?
        .flatten();
    Ok(Heads {
        seq: seq.map_or(0, to_u64),
        control: control.map_or(0, to_u64),
    })
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Whether `batch` announces a tool about to run (its `tool_execution_start` record).
fn announces_a_tool(batch: &Batch<'_>) -> bool {
    batch.records.iter().any(|record| {
        record
            .event
            .starts_with(r#"{"type":"tool_execution_start""#)
    })
}

/// Appends `batch` to `session` in one transaction.
fn append_batch(
    connection: &mut Connection,
    session: &str,
    batch: &Batch<'_>,
) -> Result<(), StoreError> {
    // IMMEDIATE takes the write lock first, so the check and the insert see the same heads
    // even when another process writes the same session.
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    check_follows(session, heads_of(&transaction, session)?, batch)?;
    {
        let mut insert = transaction.prepare_cached(
            "INSERT INTO pi_records (session, seq, attempt, event) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for record in batch.records {
            insert.execute(params![
                session,
                to_i64(record.seq),
                record.attempt,
                record.event
            ])?;
        }
        let mut insert = transaction
            .prepare_cached("INSERT INTO pi_controls (session, idx, entry) VALUES (?1, ?2, ?3)")?;
        for control in batch.controls {
            insert.execute(params![session, to_i64(control.index), control.entry])?;
        }
    }
    transaction.commit()?;
    Ok(())
}

/// Whether `path` names no file (SQLite's in-memory database).
fn in_memory(path: &Path) -> bool {
    path.as_os_str().is_empty() || path.as_os_str() == ":memory:"
}

/// Options that create a file readable by its owner only (mode 0600 on Unix).
fn private_file() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    options.create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

/// Creates `path` (see [`private_file`]) unless it exists.
fn create_private(path: &Path) -> std::io::Result<()> {
    private_file().append(true).open(path).map(drop)
}

/// The lock file of `session`'s claim: in `<database>.claims/`, named after the id when it is
/// a plain name, else after its hash.
fn claim_path(database: &Path, session: &str) -> PathBuf {
    let plain = session.len() <= 100
        && !session.starts_with('.')
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    let name = if plain {
        format!("s-{session}.lock")
    } else {
        format!("h-{}.lock", crate::ai::short_hash::short_hash(session))
    };
    let mut directory = database.as_os_str().to_owned();
    directory.push(".claims");
    PathBuf::from(directory).join(name)
}

/// What locking an opened claim file gave.
#[derive(Debug)]
enum Locked {
    /// The claim: the file is locked, and it is the one the path names.
    Held(std::fs::File),
    /// Another claim holds the file.
    Busy,
    /// The file was locked, but a deletion removed it from its path meanwhile (see `delete`):
    /// nobody else will open it, so this lock claims nothing. Open the path again.
    Replaced,
}

/// Locks `file`, which was opened at `path`. `delete` removes a lock file while holding its
/// lock, so a claimant that opened the file before and locks it after must find out.
fn lock_opened(path: &Path, file: std::fs::File) -> std::io::Result<Locked> {
    match file.try_lock() {
        Ok(()) if names_file(path, &file) => Ok(Locked::Held(file)),
        Ok(()) => Ok(Locked::Replaced),
        Err(std::fs::TryLockError::WouldBlock) => Ok(Locked::Busy),
        Err(std::fs::TryLockError::Error(error)) => Err(error),
    }
}

/// Whether `path` still names `file` (a lock file `delete` removed no longer does).
fn names_file(path: &Path, file: &std::fs::File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(path), file.metadata()) {
            (Ok(named), Ok(held)) => named.dev() == held.dev() && named.ino() == held.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        // Lock files are never removed there.
        let _ = (path, file);
        true
    }
}

impl SessionStore for SqliteStore {
    /// An exclusive lock (`flock`, `LockFileEx`) on the session's lock file, beside the
    /// database: it holds across processes, and the system releases it when a process dies,
    /// so a killed process never leaves its sessions claimed.
    fn claim(&self, session: &str) -> Result<Claim, StoreError> {
        if in_memory(&self.path) {
            return Ok(Claim::none());
        }
        let failed = |reason: std::io::Error| StoreError::Claim {
            session: session.to_owned(),
            reason: reason.to_string(),
        };
        let path = claim_path(&self.path, session);
        if let Some(directory) = path.parent() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(directory).map_err(failed)?;
        }
        // Each round that finds its file replaced follows a deletion; a few rounds are plenty.
        for _ in 0..8 {
            let file = private_file()
                .write(true)
                .truncate(false)
                .open(&path)
                .map_err(failed)?;
            match lock_opened(&path, file).map_err(failed)? {
                Locked::Held(file) => return Ok(Claim::held(file)),
                Locked::Replaced => continue,
                Locked::Busy => {
                    return Err(StoreError::InUse {
                        session: session.to_owned(),
                    });
                }
            }
        }
        Err(failed(std::io::Error::other(
            "its lock file kept being replaced (the session is being deleted and recreated)",
        )))
    }

    /// Deletes the session's rows in one transaction, and its claim's lock file while the
    /// claim is held (see [`claim`](Self::claim)). The file keeps its size: SQLite reuses the
    /// freed pages for later writes (`VACUUM` gives them back to the system).
    fn delete(&self, session: &str) -> Result<bool, StoreError> {
        let claim = self.claim(session)?;
        let deleted = {
            let mut connection = self.lock();
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let records =
                transaction.execute("DELETE FROM pi_records WHERE session = ?1", [session])?;
            let controls =
                transaction.execute("DELETE FROM pi_controls WHERE session = ?1", [session])?;
            transaction.commit()?;
            records + controls > 0
        };
        // Only where a claimant can tell (`names_file`): elsewhere the file stays.
        #[cfg(unix)]
        if !in_memory(&self.path) {
            let _ = std::fs::remove_file(claim_path(&self.path, session));
        }
        drop(claim);
        Ok(deleted)
    }

    fn append(&self, session: &str, batch: Batch<'_>) -> Result<(), StoreError> {
        let mut connection = self.lock();
        // A tool about to run is announced durably: with `synchronous = NORMAL` a power cut
        // may lose the last commits, and a tool whose start was lost would run again on
        // reopen (a non-replay-safe one must get its "interrupted" result instead). The other
        // commits keep NORMAL's speed: losing them only redoes a step.
        let durable = announces_a_tool(&batch);
        if durable {
            connection.execute_batch("PRAGMA synchronous = FULL;")?;
        }
        let appended = append_batch(&mut connection, session, &batch);
        if durable {
            connection.execute_batch("PRAGMA synchronous = NORMAL;")?;
        }
        appended
    }

    fn records(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let connection = self.lock();
        let mut select = connection.prepare_cached(
            "SELECT seq, attempt, event FROM pi_records WHERE session = ?1 AND seq > ?2 \
             ORDER BY seq LIMIT ?3",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = select.query_map(params![session, to_i64(after), limit], |row| {
            Ok(StoredRecord {
                seq: to_u64(row.get(0)?),
                attempt: row.get(1)?,
                event: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn controls(&self, session: &str) -> Result<Vec<StoredControl>, StoreError> {
        let connection = self.lock();
        let mut select = connection
            .prepare_cached("SELECT idx, entry FROM pi_controls WHERE session = ?1 ORDER BY idx")?;
        let rows = select.query_map([session], |row| {
            Ok(StoredControl {
                index: to_u64(row.get(0)?),
                entry: row.get(1)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn heads(&self, session: &str) -> Result<Heads, StoreError> {
        Ok(heads_of(&self.lock(), session)?)
    }

    fn truncate(&self, session: &str, seq: u64, control: u64) -> Result<(), StoreError> {
        let mut connection = self.lock();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        transaction.execute(
            "DELETE FROM pi_records WHERE session = ?1 AND seq > ?2",
            params![session, to_i64(seq)],
        )?;
        transaction.execute(
            "DELETE FROM pi_controls WHERE session = ?1 AND idx > ?2",
            params![session, to_i64(control)],
        )?;
        transaction.commit()?;
        Ok(())
    }

    fn sessions(&self) -> Result<Vec<String>, StoreError> {
        let connection = self.lock();
        let mut select = connection.prepare_cached(
            "SELECT session FROM pi_controls UNION SELECT session FROM pi_records ORDER BY 1",
        )?;
        let rows = select.query_map([], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentEvent;

    /// A claimant that opened the lock file before a deletion removed it and locks it after
    /// holds a file nobody else will open: it is told so, and a new claim takes a new file.
    #[test]
    #[cfg(unix)]
    fn a_lock_file_deleted_meanwhile_claims_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
        let path = claim_path(store.path(), "s");
        drop(store.claim("s").unwrap());
        let early = private_file().write(true).open(&path).unwrap();
        assert!(!store.delete("s").unwrap());
        assert!(!path.exists());
        assert!(matches!(lock_opened(&path, early), Ok(Locked::Replaced)));
        let claim = store.claim("s").unwrap();
        assert!(path.exists());
        let again = private_file().write(true).open(&path).unwrap();
        assert!(matches!(lock_opened(&path, again), Ok(Locked::Busy)));
        drop(claim);
    }

    #[test]
    fn a_tool_start_is_recognised_as_the_session_writes_it() {
        let record = |event: &AgentEvent| StoredRecord {
            seq: 1,
            attempt: 0,
            event: serde_json::to_string(event).unwrap(),
        };
        let start = record(&AgentEvent::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: "send".into(),
            args: serde_json::json!({}),
        });
        let other = record(&AgentEvent::AgentStart);
        let batch = |records: &[StoredRecord]| {
            announces_a_tool(&Batch {
                records,
                controls: &[],
            })
        };
        assert!(batch(&[other.clone(), start]));
        assert!(!batch(&[other]));
    }
}
