//! Shared helpers of the durable-session tests: stores to test, a store that "crashes" at a
//! chosen write, and a scripted faux model.

#![allow(dead_code, unreachable_pub)]

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pi_agent::agent::{AgentTool, AgentToolResult, FnTool};
use pi_agent::ai::providers::faux::{
    FauxProvider, FauxResponse, faux_assistant_message, faux_text, faux_tool_call_with_id,
};
use pi_agent::ai::{Context, Message};
use pi_agent::session::{
    Batch, Heads, MemoryStore, SessionStore, SqliteStore, StoreError, StoredControl, StoredRecord,
};
use serde_json::json;

/// Which store a test runs on.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Memory,
    Sqlite,
}

/// A store and a way to get "another handle" on the same data (a new process, for SQLite).
pub struct Backing {
    pub store: Arc<dyn SessionStore>,
    path: Option<TempDb>,
}

impl Backing {
    pub fn new(kind: Kind) -> Self {
        match kind {
            Kind::Memory => Self {
                store: Arc::new(MemoryStore::new()),
                path: None,
            },
            Kind::Sqlite => {
                let path = temp_db();
                Self {
                    store: Arc::new(SqliteStore::open(&path).unwrap()),
                    path: Some(path),
                }
            }
        }
    }

    /// The database file, for SQLite.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// A fresh handle on the same sessions.
    pub fn reopen(&self) -> Arc<dyn SessionStore> {
        match &self.path {
            Some(path) => Arc::new(SqliteStore::open(path).unwrap()),
            None => Arc::clone(&self.store),
        }
    }
}

/// A database path in a directory of its own under the system temp dir; the directory and
/// everything in it (the database, its WAL and shared-memory files) go when this is dropped,
/// so a test run leaves nothing behind.
#[derive(Debug)]
pub struct TempDb {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Deref for TempDb {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDb {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// A fresh database path; see [`TempDb`].
pub fn temp_db() -> TempDb {
    let dir = tempfile::Builder::new()
        .prefix("pi-session-tests-")
        .tempdir()
        .unwrap();
    TempDb {
        path: dir.path().join("session.db"),
        _dir: dir,
    }
}

/// A store whose appends fail from the `allowed + 1`-th on, as if the process died there, and
/// whose reads of records fail while `records_fail` is set.
#[derive(Debug)]
pub struct FailingStore {
    pub inner: Arc<dyn SessionStore>,
    allowed: usize,
    pub appends: AtomicUsize,
    pub records_fail: AtomicBool,
}

impl FailingStore {
    pub fn new(inner: Arc<dyn SessionStore>, allowed: usize) -> Self {
        Self {
            inner,
            allowed,
            appends: AtomicUsize::new(0),
            records_fail: AtomicBool::new(false),
        }
    }
}

impl SessionStore for FailingStore {
    fn append(&self, session: &str, batch: Batch<'_>) -> Result<(), StoreError> {
        if self.appends.fetch_add(1, Ordering::SeqCst) >= self.allowed {
            return Err(StoreError::Unavailable("simulated crash".into()));
        }
        self.inner.append(session, batch)
    }
    fn records(&self, s: &str, after: u64, limit: usize) -> Result<Vec<StoredRecord>, StoreError> {
        if self.records_fail.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("simulated read failure".into()));
        }
        self.inner.records(s, after, limit)
    }
    fn controls(&self, s: &str) -> Result<Vec<StoredControl>, StoreError> {
        self.inner.controls(s)
    }
    fn heads(&self, s: &str) -> Result<Heads, StoreError> {
        self.inner.heads(s)
    }
    fn truncate(&self, s: &str, seq: u64, control: u64) -> Result<(), StoreError> {
        self.inner.truncate(s, seq, control)
    }
    fn sessions(&self) -> Result<Vec<String>, StoreError> {
        self.inner.sessions()
    }
}

/// A faux model that calls `echo` after a user message and answers "done" after a tool
/// result, however many calls are made (redone calls included).
pub fn scripted_model(options: pi_agent::ai::providers::faux::FauxOptions) -> FauxProvider {
    let faux = FauxProvider::register_with(options);
    let responses = (0..200).map(|_| {
        FauxResponse::Factory(Arc::new(|context: &Context, _, _, _| {
            match context.messages.last() {
                Some(Message::ToolResult(_)) => faux_assistant_message(vec![faux_text("done")]),
                _ => faux_assistant_message(vec![faux_tool_call_with_id(
                    "call-1",
                    "echo",
                    json!({"text": "hi"}),
                )]),
            }
        }))
    });
    faux.set_responses(responses);
    faux
}

/// `echo`: returns its text; counts its runs.
pub fn echo_tool(runs: Arc<AtomicUsize>, replay_safe: bool) -> Arc<dyn AgentTool> {
    Arc::new(
        FnTool::new(
            "echo",
            "Echoes the text",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            move |call| {
                let runs = Arc::clone(&runs);
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(AgentToolResult::text(
                        call.arguments["text"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    ))
                }
            },
        )
        .with_replay_safe(replay_safe),
    )
}

/// `echo` that never finishes (a process "dies" while it runs).
pub fn hanging_tool(started: Arc<AtomicUsize>) -> Arc<dyn AgentTool> {
    Arc::new(FnTool::new(
        "echo",
        "Echoes the text",
        json!({"type": "object"}),
        move |_call| {
            let started = Arc::clone(&started);
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<()>().await;
                Ok(AgentToolResult::text("never"))
            }
        },
    ))
}

/// Waits (up to 30 s) for `check`.
pub async fn eventually(mut check: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached in 30 s");
}

/// The `type` tags of every record of `session` in `store`, checking seqs are 1, 2, 3...
pub fn record_kinds(store: &dyn SessionStore, session: &str) -> Vec<(String, u32)> {
    let records = store.records(session, 0, usize::MAX).unwrap();
    records
        .iter()
        .enumerate()
        .map(|(i, record)| {
            assert_eq!(record.seq, i as u64 + 1, "seqs are dense");
            let event: serde_json::Value = serde_json::from_str(&record.event).unwrap();
            (event["type"].as_str().unwrap().to_owned(), record.attempt)
        })
        .collect()
}
