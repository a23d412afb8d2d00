//! The conformance suite every `SessionStore` must pass, run against `MemoryStore` and
//! `SqliteStore`: atomic appends, refused interleaving writers, concurrent writers serialised,
//! a torn last record dropped on reopen, and a session crashed at every write point that
//! resumes to the same transcript.

mod session_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_agent::agent::AgentMessage;
use pi_agent::ai::UserMessage;
use pi_agent::ai::providers::faux::FauxOptions;
use pi_agent::session::{
    Batch, Heads, Session, SessionError, SessionOptions, SessionStatus, SessionStore, StoreError,
    StoredControl, StoredRecord, TOOL_INTERRUPTED,
};
use session_support::{Backing, FailingStore, Kind, echo_tool, record_kinds, scripted_model};

fn record(seq: u64, event: &str) -> StoredRecord {
    StoredRecord {
        seq,
        attempt: 0,
        event: event.to_owned(),
    }
}

fn appends_are_atomic_and_ordered(kind: Kind) {
    let backing = Backing::new(kind);
    let store = &backing.store;
    store
        .append(
            "a",
            Batch {
                records: &[record(1, r#"{"type":"agent_start"}"#), record(2, "{}")],
                controls: &[StoredControl {
                    index: 1,
                    entry: "{}".into(),
                }],
            },
        )
        .unwrap();
    // A batch that does not follow is refused whole.
    let error = store
        .append(
            "a",
            Batch {
                records: &[record(3, "{}"), record(5, "{}")],
                controls: &[],
            },
        )
        .unwrap_err();
    assert!(matches!(error, StoreError::Conflict { .. }), "{error}");
    let heads = store.heads("a").unwrap();
    assert_eq!((heads.seq, heads.control), (2, 1));
    // Another handle sees the same data, byte for byte.
    let other = backing.reopen();
    let records = other.records("a", 0, 10).unwrap();
    assert_eq!(records[0].event, r#"{"type":"agent_start"}"#);
    assert_eq!(other.records("a", 1, 10).unwrap().len(), 1);
    assert_eq!(other.controls("a").unwrap().len(), 1);
    assert_eq!(other.sessions().unwrap(), ["a"]);
    assert_eq!(other.heads("unknown").unwrap().seq, 0);
}

fn concurrent_writers_are_serialised(kind: Kind) {
    let backing = Backing::new(kind);
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let store = backing.reopen();
            std::thread::spawn(move || {
                let mut written = 0;
                while written < 25 {
                    let heads = store.heads("s").unwrap();
                    let batch = [record(heads.seq + 1, "{}")];
                    match store.append(
                        "s",
                        Batch {
                            records: &batch,
                            controls: &[],
                        },
                    ) {
                        Ok(()) => written += 1,
                        Err(StoreError::Conflict { .. }) => {}
                        Err(error) => panic!("{error}"),
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let records = backing.store.records("s", 0, usize::MAX).unwrap();
    assert_eq!(records.len(), 100);
    assert!(records.iter().zip(1..).all(|(r, seq)| r.seq == seq));
}

fn options(
    faux: &pi_agent::ai::providers::faux::FauxProvider,
    runs: &Arc<AtomicUsize>,
) -> SessionOptions {
    let mut options = SessionOptions::new(faux.model());
    options.tools = vec![echo_tool(Arc::clone(runs), false)];
    options
}

fn texts(messages: &[AgentMessage]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let value = serde_json::to_value(m).unwrap();
            format!("{}:{}", value["role"].as_str().unwrap(), value["content"])
        })
        .collect()
}

/// Runs the scripted session (prompt → echo → "done") on `store` until idle or stopped.
async fn run_scenario(store: Arc<dyn SessionStore>, runs: &Arc<AtomicUsize>) -> Session {
    let faux = scripted_model(FauxOptions::default());
    let session = Session::open(store, "s", options(&faux, runs))
        .await
        .unwrap();
    let _ = session.prompt("r1", UserMessage::text("hi"));
    let _ = session.wait_idle().await;
    session
}

async fn crash_at_every_write_point(kind: Kind) {
    // The reference run, counting its writes.
    let reference = Backing::new(kind);
    let counting = Arc::new(FailingStore::new(Arc::clone(&reference.store), usize::MAX));
    let runs = Arc::new(AtomicUsize::new(0));
    let session = run_scenario(counting.clone(), &runs).await;
    let expected = texts(&session.transcript());
    assert_eq!(expected.len(), 4, "{expected:?}");
    let expected_kinds: Vec<String> = record_kinds(&*reference.store, "s")
        .into_iter()
        .map(|(kind, _)| kind)
        .collect();
    drop(session);
    let writes = counting.appends.load(Ordering::SeqCst);
    assert!(writes > 10, "{writes}");

    let (mut saw_interrupted, mut saw_redo) = (false, false);
    for allowed in 0..writes {
        let backing = Backing::new(kind);
        let failing = Arc::new(FailingStore::new(Arc::clone(&backing.store), allowed));
        let runs = Arc::new(AtomicUsize::new(0));
        let crashed = run_scenario(failing, &runs).await;
        if allowed < writes {
            assert!(
                matches!(crashed.status(), SessionStatus::Stopped(_)) || allowed == 0,
                "write {allowed}: {:?}",
                crashed.status()
            );
        }
        drop(crashed);
        // The restarted process: same request again (a client retrying), then to the end.
        let resumed = run_scenario(backing.reopen(), &runs).await;
        assert_eq!(resumed.status(), SessionStatus::Idle, "write {allowed}");
        let transcript = texts(&resumed.transcript());
        let interrupted = transcript.iter().any(|t| t.contains(TOOL_INTERRUPTED));
        if interrupted {
            // The crash came while the tool ran: it is not replay-safe, so it never ran twice.
            assert!(runs.load(Ordering::SeqCst) <= 1, "write {allowed}");
        } else {
            assert_eq!(transcript, expected, "write {allowed}");
            assert_eq!(
                runs.load(Ordering::SeqCst),
                1,
                "write {allowed}: the tool ran once"
            );
        }
        // Dense seqs, and the journal as a client sees it holds no step twice.
        let kinds = record_kinds(&*backing.store, "s");
        saw_interrupted |= interrupted;
        saw_redo |= kinds.iter().any(|(_, attempt)| *attempt > 0);
        let ends = kinds.iter().filter(|(k, _)| k == "agent_end").count();
        assert_eq!(ends, 1, "write {allowed}");
        if !interrupted && kinds.iter().all(|(_, attempt)| *attempt == 0) {
            let kinds: Vec<String> = kinds.into_iter().map(|(k, _)| k).collect();
            assert_eq!(kinds, expected_kinds, "write {allowed}");
        }
    }
    // The crash points include a tool in flight and a model call in flight.
    assert!(saw_interrupted && saw_redo, "{saw_interrupted} {saw_redo}");
}

/// A driver that fails (here: the journal cannot be read back while a crashed tool batch is
/// retried) stops the session with its error: `wait_idle` and `compact` answer instead of
/// waiting for a driver that is gone.
async fn a_driver_that_fails_stops_the_session(kind: Kind) {
    let mut stopped_by_the_read = 0;
    for allowed in 0..40 {
        let backing = Backing::new(kind);
        let runs = Arc::new(AtomicUsize::new(0));
        let crashed = run_scenario(
            Arc::new(FailingStore::new(Arc::clone(&backing.store), allowed)),
            &runs,
        )
        .await;
        let finished = crashed.status() == SessionStatus::Idle;
        if !finished {
            // A subscription of the stopped session reads what was written, then ends.
            let mut records = crashed.subscribe(0);
            tokio::time::timeout(std::time::Duration::from_secs(60), async {
                while records.next().await.is_some() {}
            })
            .await
            .unwrap_or_else(|_| {
                panic!("write {allowed}: the stopped session's subscription hangs")
            });
        }
        drop(crashed);
        if finished {
            break;
        }
        let store = Arc::new(FailingStore::new(backing.reopen(), usize::MAX));
        let faux = scripted_model(FauxOptions::default());
        let session = Session::open(store.clone(), "s", options(&faux, &runs))
            .await
            .unwrap();
        // Before the driver's first poll (this test's runtime has one thread).
        store.records_fail.store(true, Ordering::SeqCst);
        let _ = session.prompt("r1", UserMessage::text("hi"));
        let waited = tokio::time::timeout(std::time::Duration::from_secs(60), session.wait_idle())
            .await
            .unwrap_or_else(|_| panic!("write {allowed}: wait_idle hangs"));
        if let Err(error) = waited {
            assert!(
                matches!(session.status(), SessionStatus::Stopped(ref why) if why.contains("simulated read failure")),
                "write {allowed}: {error} / {:?}",
                session.status()
            );
            let compacted =
                tokio::time::timeout(std::time::Duration::from_secs(60), session.compact())
                    .await
                    .unwrap_or_else(|_| panic!("write {allowed}: compact hangs"));
            assert!(compacted.is_err(), "write {allowed}");
            stopped_by_the_read += 1;
        }
    }
    assert!(
        stopped_by_the_read > 0,
        "no crash point retried a tool batch"
    );
}

async fn torn_last_record_is_dropped_on_reopen(kind: Kind) {
    let backing = Backing::new(kind);
    let runs = Arc::new(AtomicUsize::new(0));
    let session = run_scenario(Arc::clone(&backing.store), &runs).await;
    let expected = texts(&session.transcript());
    let last = session.last_seq();
    drop(session);
    // A write cut short: half an event.
    backing
        .store
        .append(
            "s",
            Batch {
                records: &[record(last + 1, r#"{"type":"message_upd"#)],
                controls: &[],
            },
        )
        .unwrap();
    let store = backing.reopen();
    let faux = scripted_model(FauxOptions::default());
    let session = Session::open(Arc::clone(&store), "s", options(&faux, &runs))
        .await
        .unwrap();
    assert_eq!(session.last_seq(), last);
    assert_eq!(texts(&session.transcript()), expected);
    // And the session goes on writing after it.
    session.prompt("r2", UserMessage::text("again")).unwrap();
    session.wait_idle().await.unwrap();
    assert!(session.last_seq() > last);
    record_kinds(&*store, "s");
}

async fn a_second_writer_is_refused(kind: Kind) {
    let backing = Backing::new(kind);
    let runs = Arc::new(AtomicUsize::new(0));
    let faux = scripted_model(FauxOptions::default());
    let first = Session::open(backing.reopen(), "s", options(&faux, &runs))
        .await
        .unwrap();
    // A second handle on the same storage is refused while the first has the session open.
    match Session::open(backing.reopen(), "s", options(&faux, &runs)).await {
        Err(SessionError::Store(StoreError::InUse { session })) => {
            assert_eq!(session, "s");
            // Another session of the same store is free; closing the first frees "s".
            let other = Session::open(backing.reopen(), "t", options(&faux, &runs)).await;
            assert!(other.is_ok());
            first.close();
            drop(first);
            let reopened = Session::open(backing.reopen(), "s", options(&faux, &runs))
                .await
                .unwrap();
            reopened.close();
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a second handle opened a session the first has open"),
    }
}

/// A store that claims nothing (a wrapper that does not pass `claim` on): the second writer is
/// refused at its first write, by the conflict check.
async fn a_second_writer_without_a_claim_is_refused(kind: Kind) {
    let backing = Backing::new(kind);
    let runs = Arc::new(AtomicUsize::new(0));
    let faux = scripted_model(FauxOptions::default());
    let unclaimed =
        || -> Arc<dyn SessionStore> { Arc::new(FailingStore::new(backing.reopen(), usize::MAX)) };
    let first = Session::open(unclaimed(), "s", options(&faux, &runs))
        .await
        .unwrap();
    let second = Session::open(unclaimed(), "s", options(&faux, &runs))
        .await
        .unwrap();
    first.prompt("a", UserMessage::text("hi")).unwrap();
    first.wait_idle().await.unwrap();
    let error = second.prompt("b", UserMessage::text("hi")).unwrap_err();
    assert!(error.to_string().contains("another writer"), "{error}");
    assert!(matches!(second.status(), SessionStatus::Stopped(_)));
    // The first one's journal is intact.
    assert_eq!(
        record_kinds(&*backing.store, "s").last().unwrap().0,
        "agent_end"
    );
}

/// Deleting a session: refused while a handle has it open, then its journal (and, for
/// SQLite, its claim's lock file) goes, the other sessions stay, and the id opens as new.
async fn deleting_a_session_frees_its_id(kind: Kind) {
    let backing = Backing::new(kind);
    let runs = Arc::new(AtomicUsize::new(0));
    let kept = run_scenario(backing.reopen(), &runs).await;
    let kept_transcript = kept.transcript();
    kept.close();
    drop(kept);
    let faux = scripted_model(FauxOptions::default());
    let doomed = Session::open(backing.reopen(), "doomed", options(&faux, &runs))
        .await
        .unwrap();
    doomed.prompt("r1", UserMessage::text("hi")).unwrap();
    doomed.wait_idle().await.unwrap();
    assert_eq!(backing.store.sessions().unwrap(), ["doomed", "s"]);
    match backing.reopen().delete("doomed") {
        Err(StoreError::InUse { session }) => assert_eq!(session, "doomed"),
        other => panic!("deleted an open session: {other:?}"),
    }
    assert!(backing.store.heads("doomed").unwrap().seq > 0);
    doomed.close();
    drop(doomed);
    assert!(backing.reopen().delete("doomed").unwrap());
    assert_eq!(backing.store.sessions().unwrap(), ["s"]);
    assert_eq!(backing.store.heads("doomed").unwrap(), Heads::default());
    if let Some(path) = backing.path().filter(|_| cfg!(unix)) {
        let claims = path.with_file_name("session.db.claims");
        let left: Vec<_> = std::fs::read_dir(&claims)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["s-s.lock"], "the deleted session's lock file goes");
    }
    // Nothing left: deleting again says so; the id opens as a new session.
    assert!(!backing.reopen().delete("doomed").unwrap());
    let fresh = Session::open(backing.reopen(), "doomed", options(&faux, &runs))
        .await
        .unwrap();
    assert!(fresh.transcript().is_empty());
    assert_eq!(fresh.last_seq(), 0);
    fresh.prompt("r1", UserMessage::text("hi")).unwrap();
    fresh.wait_idle().await.unwrap();
    assert_eq!(
        record_kinds(&*backing.store, "doomed").last().unwrap().0,
        "agent_end"
    );
    fresh.close();
    // The other session is untouched.
    let kept = Session::open(backing.reopen(), "s", options(&faux, &runs))
        .await
        .unwrap();
    assert_eq!(texts(&kept.transcript()), texts(&kept_transcript));
    kept.close();
}

/// The trait's own `delete` (a store that does not write one): it truncates the session.
#[test]
fn the_default_delete_truncates() {
    let backing = Backing::new(Kind::Memory);
    let store = FailingStore::new(backing.reopen(), usize::MAX);
    let records = [record(1, "{}"), record(2, "{}")];
    let batch = Batch {
        records: &records,
        controls: &[],
    };
    store.append("s", batch).unwrap();
    assert!(store.delete("s").unwrap());
    assert_eq!(store.heads("s").unwrap(), Heads::default());
    assert!(!store.delete("s").unwrap());
}

macro_rules! suite {
    ($name:ident, $kind:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn appends_are_atomic_and_ordered() {
                super::appends_are_atomic_and_ordered($kind);
            }

            #[test]
            fn concurrent_writers_are_serialised() {
                super::concurrent_writers_are_serialised($kind);
            }

            #[tokio::test]
            async fn crash_at_every_write_point() {
                super::crash_at_every_write_point($kind).await;
            }

            #[tokio::test]
            async fn a_driver_that_fails_stops_the_session() {
                super::a_driver_that_fails_stops_the_session($kind).await;
            }

            #[tokio::test]
            async fn torn_last_record_is_dropped_on_reopen() {
                super::torn_last_record_is_dropped_on_reopen($kind).await;
            }

            #[tokio::test]
            async fn a_second_writer_is_refused() {
                super::a_second_writer_is_refused($kind).await;
            }

            #[tokio::test]
            async fn deleting_a_session_frees_its_id() {
                super::deleting_a_session_frees_its_id($kind).await;
            }

            #[tokio::test]
            async fn a_second_writer_without_a_claim_is_refused() {
                super::a_second_writer_without_a_claim_is_refused($kind).await;
            }
        }
    };
}

suite!(memory, Kind::Memory);
suite!(sqlite, Kind::Sqlite);

#[test]
fn following_needs_a_database_that_is_there() {
    let dir = std::env::temp_dir().join(format!("pi-open-existing-{}", std::process::id()));
    let missing = dir.join("typo.db");
    let error = pi_agent::session::SqliteStore::open_existing(&missing).unwrap_err();
    assert!(error.to_string().contains("no session database"), "{error}");
    assert!(!missing.exists());
}

#[test]
fn a_database_of_a_later_schema_is_refused_not_misread() {
    let dir = std::env::temp_dir().join(format!("pi-schema-version-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("later.db");
    drop(pi_agent::session::SqliteStore::open(&path).unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 1, "a new file gets the current schema version");
    connection
        .execute_batch("PRAGMA user_version = 2;")
        .unwrap();
    drop(connection);
    let error = pi_agent::session::SqliteStore::open(&path).unwrap_err();
    assert!(
        error.to_string().contains("written by a later pi-agent"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
