//! Durable sessions on SQLite: the journal's write cost per event (one record appended, as
//! every delta is), a whole one-turn session (open, prompt, 60-delta answer, idle: sessions
//! per second) against the same turn on a plain `Agent` (the difference over the turn's
//! steps is the per-step overhead), and the recovery of a session with a 20-turn journal
//! (what a process does after kill -9 before it goes on: open the file and replay).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use pi_agent::agent::{Agent, AgentOptions};
use pi_agent::ai::UserMessage;
use pi_agent::ai::providers::faux::{FauxProvider, faux_assistant_message, faux_text};
use pi_agent::session::{
    Batch, MemoryStore, Session, SessionOptions, SessionStore, SqliteStore, StoredRecord,
};

/// A `message_update` record as the journal stores it.
const DELTA: &str = r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"word "}}"#;

/// The benchmark's databases, in a directory removed when the benchmark ends.
fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("pi-session-bench-")
        .tempdir()
        .unwrap()
}

fn append_cost(c: &mut Criterion, name: &str, store: Arc<dyn SessionStore>) {
    let mut seq = store.heads("bench").unwrap().seq;
    c.bench_function(name, |b| {
        b.iter(|| {
            seq += 1;
            let record = [StoredRecord {
                seq,
                attempt: 0,
                event: DELTA.to_owned(),
            }];
            store
                .append(
                    "bench",
                    Batch {
                        records: &record,
                        controls: &[],
                    },
                )
                .unwrap();
        });
    });
}

fn answer() -> pi_agent::ai::AssistantMessage {
    // 60 deltas of 4 characters (faux token size 1).
    faux_assistant_message(vec![faux_text("word".repeat(60))])
}

fn journal(c: &mut Criterion) {
    let dir = temp_dir();
    append_cost(
        c,
        "journal_append_one_event_sqlite",
        Arc::new(SqliteStore::open(dir.path().join("append.db")).unwrap()),
    );
    append_cost(
        c,
        "journal_append_one_event_memory",
        Arc::new(MemoryStore::new()),
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let faux = FauxProvider::register_with(pi_agent::ai::providers::faux::FauxOptions {
        token_size: (1, 1),
        ..Default::default()
    });
    let store: Arc<dyn SessionStore> =
        Arc::new(SqliteStore::open(dir.path().join("turns.db")).unwrap());
    let mut next = 0u64;
    c.bench_function("session_one_turn_sqlite", |b| {
        b.iter(|| {
            next += 1;
            faux.push(answer());
            runtime.block_on(async {
                let session = Session::open(
                    Arc::clone(&store),
                    format!("s{next}"),
                    SessionOptions::new(faux.model()),
                )
                .await
                .unwrap();
                session.prompt("r", UserMessage::text("hi")).unwrap();
                session.wait_idle().await.unwrap();
            });
        });
    });
    c.bench_function("agent_one_turn_in_memory", |b| {
        b.iter(|| {
            faux.push(answer());
            runtime.block_on(async {
                let agent = Agent::new(AgentOptions {
                    model: Some(faux.model()),
                    ..AgentOptions::default()
                });
                agent.prompt("hi").await.unwrap();
            });
        });
    });

    // A session with 20 turns in its journal, reopened (replayed) as after a kill -9.
    let path = dir.path().join("recover.db");
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    runtime.block_on(async {
        let session = Session::open(Arc::clone(&store), "big", SessionOptions::new(faux.model()))
            .await
            .unwrap();
        for turn in 0..20 {
            faux.push(answer());
            session
                .prompt(&format!("r{turn}"), UserMessage::text("hi"))
                .unwrap();
            session.wait_idle().await.unwrap();
        }
    });
    c.bench_function("session_recover_20_turns_sqlite", |b| {
        b.iter_custom(|iterations| {
            let started = Instant::now();
            for _ in 0..iterations {
                runtime.block_on(async {
                    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
                    let session = Session::open(store, "big", SessionOptions::new(faux.model()))
                        .await
                        .unwrap();
                    assert_eq!(session.transcript().len(), 40);
                });
            }
            started.elapsed()
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(4));
    targets = journal
}
criterion_main!(benches);
