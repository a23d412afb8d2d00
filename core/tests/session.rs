//! Durable sessions through the public Rust API: journal records and cursors, request ids,
//! restarts mid-tool and mid-stream, followers, abort and compaction.

mod session_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pi_agent::ai::providers::faux::{
    FauxOptions, FauxProvider, FauxResponse, faux_assistant_message, faux_error_message, faux_text,
};
use pi_agent::ai::{Context, Message, StopReason, UserMessage};
use pi_agent::session::{
    CompactionSettings, MemoryStore, SUMMARY_PREFIX, Session, SessionOptions, SessionStore,
    SqliteStore, Subscription, TOOL_INTERRUPTED,
};
use serde_json::{Value, json};
use session_support::{echo_tool, eventually, hanging_tool, record_kinds, scripted_model, temp_db};

fn options(faux: &FauxProvider, tool: Arc<dyn pi_agent::agent::AgentTool>) -> SessionOptions {
    let mut options = SessionOptions::new(faux.model());
    options.tools = vec![tool];
    options
}

async fn drain(subscription: &mut Subscription, until: u64) -> Vec<Value> {
    let mut out = Vec::new();
    while subscription.cursor() < until {
        let record = subscription
            .next_timeout(Duration::from_secs(30))
            .await
            .unwrap()
            .expect("a record");
        out.push(serde_json::from_str(&record.to_json()).unwrap());
    }
    out
}

#[tokio::test]
async fn records_have_the_shared_shape_and_resume_from_any_cursor() {
    let faux = scripted_model(FauxOptions::default());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let session = Session::open(store, "s", options(&faux, echo_tool(runs, false)))
        .await
        .unwrap();
    let mut live = session.subscribe(0);
    session.prompt("r1", UserMessage::text("hi")).unwrap();
    session.wait_idle().await.unwrap();
    let last = session.last_seq();
    let all = drain(&mut live, last).await;
    assert_eq!(
        all[0],
        json!({"seq": 1, "attempt": 0, "event": {"type": "agent_start"}})
    );
    let kinds: Vec<&str> = all
        .iter()
        .map(|r| r["event"]["type"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"message_update"),
        "deltas are journalled: {kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"agent_end"));
    // A client that saw record 5 gets 6 onwards, the same records.
    let mut resumed = session.subscribe(5);
    let rest = drain(&mut resumed, last).await;
    assert_eq!(rest[0]["seq"], 6);
    assert_eq!(rest[..], all[5..]);
    assert!(resumed.try_next().unwrap().is_none());
}

#[tokio::test]
async fn a_subscription_ends_once_the_session_is_closed_and_read() {
    let faux = scripted_model(FauxOptions::default());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let session = Session::open(store, "s", options(&faux, echo_tool(runs, false)))
        .await
        .unwrap();
    let mut before = session.subscribe(0);
    session.prompt("r1", UserMessage::text("hi")).unwrap();
    session.wait_idle().await.unwrap();
    let last = session.last_seq();
    // Closed with its handle still alive: a waiting subscriber and a new one read every
    // record, then end (they waited for ever while the handle lived).
    session.close();
    let mut after = session.subscribe(0);
    for subscription in [&mut before, &mut after] {
        let mut read = 0;
        loop {
            let next = tokio::time::timeout(Duration::from_secs(30), subscription.next())
                .await
                .expect("the subscription never ended");
            match next {
                Some(record) => read = record.unwrap().seq,
                None => break,
            }
        }
        assert_eq!(read, last);
    }
}

#[tokio::test]
async fn a_repeated_request_id_is_applied_once_even_after_a_restart() {
    let faux = scripted_model(FauxOptions::default());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = echo_tool(Arc::clone(&runs), false);
    let session = Session::open(Arc::clone(&store), "s", options(&faux, Arc::clone(&tool)))
        .await
        .unwrap();
    let first = session.prompt("r1", UserMessage::text("hi")).unwrap();
    let again = session.prompt("r1", UserMessage::text("hi")).unwrap();
    assert_eq!(first, again);
    session.wait_idle().await.unwrap();
    let transcript = session.transcript();
    drop(session);
    let session = Session::open(store, "s", options(&faux, tool))
        .await
        .unwrap();
    assert_eq!(
        session.prompt("r1", UserMessage::text("hi")).unwrap(),
        first
    );
    assert!(session.steer("r1", UserMessage::text("x")).is_err());
    session.wait_idle().await.unwrap();
    assert_eq!(session.transcript(), transcript);
    assert_eq!(faux.call_count(), 2);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

async fn restart_mid_tool(replay_safe: bool) -> (Vec<Value>, usize) {
    let faux = scripted_model(FauxOptions::default());
    let path = temp_db();
    let started = Arc::new(AtomicUsize::new(0));
    {
        let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
        let session = Session::open(
            store,
            "s",
            options(&faux, hanging_tool(Arc::clone(&started))),
        )
        .await
        .unwrap();
        session.prompt("r1", UserMessage::text("hi")).unwrap();
        eventually(|| started.load(Ordering::SeqCst) == 1).await;
        // The process dies here.
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let session = Session::open(
        Arc::clone(&store),
        "s",
        options(&faux, echo_tool(Arc::clone(&runs), replay_safe)),
    )
    .await
    .unwrap();
    session.wait_idle().await.unwrap();
    let transcript = session
        .transcript()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    (transcript, runs.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_tool_in_flight_is_interrupted_unless_replay_safe() {
    let (transcript, runs) = restart_mid_tool(false).await;
    assert_eq!(runs, 0);
    assert_eq!(transcript[2]["role"], "toolResult");
    assert_eq!(transcript[2]["isError"], true);
    assert_eq!(transcript[2]["content"][0]["text"], TOOL_INTERRUPTED);
    assert_eq!(transcript[2]["details"], json!({"interrupted": true}));
    assert_eq!(transcript[3]["content"][0]["text"], "done");

    let (transcript, runs) = restart_mid_tool(true).await;
    assert_eq!(runs, 1);
    assert_eq!(transcript[2]["isError"], false);
    assert_eq!(transcript[2]["content"][0]["text"], "hi");
}

#[tokio::test]
async fn a_model_call_in_flight_is_redone_as_the_next_attempt() {
    let slow = FauxOptions {
        tokens_per_second: Some(40.0),
        ..FauxOptions::default()
    };
    let faux = FauxProvider::register_with(slow);
    let long = "word ".repeat(200);
    faux.set_responses(
        (0..3).map(|_| FauxResponse::from(faux_assistant_message(vec![faux_text(long.clone())]))),
    );
    let path = temp_db();
    let runs = Arc::new(AtomicUsize::new(0));
    {
        let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
        let session = Session::open(
            Arc::clone(&store),
            "s",
            options(&faux, echo_tool(runs.clone(), false)),
        )
        .await
        .unwrap();
        session.prompt("r1", UserMessage::text("hi")).unwrap();
        eventually(|| {
            record_kinds(&*store, "s")
                .iter()
                .filter(|(k, _)| k == "message_update")
                .count()
                > 3
        })
        .await;
    }
    // A client follows from another handle, from where it was.
    let reader: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let seen = reader.heads("s").unwrap().seq;
    let mut follower = Subscription::follow(Arc::clone(&reader), "s", seen);
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let session = Session::open(
        Arc::clone(&store),
        "s",
        options(&faux, echo_tool(runs, false)),
    )
    .await
    .unwrap();
    session.wait_idle().await.unwrap();
    let transcript = session.transcript();
    assert_eq!(transcript.len(), 2);
    let answer = transcript[1].as_assistant().unwrap();
    assert_eq!(answer.text(), long);
    assert_eq!(answer.stop_reason, StopReason::Stop);
    let followed = drain(&mut follower, session.last_seq()).await;
    assert_eq!(followed[0]["seq"].as_u64().unwrap(), seen + 1, "no gap");
    assert_eq!(followed[0]["event"]["type"], "message_start");
    assert!(
        followed
            .iter()
            .all(|r| r["attempt"] == 1 || r["event"]["type"] == "agent_end")
    );
    assert_eq!(faux.call_count(), 2);
}

#[tokio::test]
async fn abort_ends_the_stream_and_keeps_its_partial_text() {
    let faux = FauxProvider::register_with(FauxOptions {
        tokens_per_second: Some(40.0),
        ..FauxOptions::default()
    });
    faux.push(faux_assistant_message(vec![faux_text("word ".repeat(400))]));
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let session = Session::open(
        Arc::clone(&store),
        "s",
        options(&faux, echo_tool(runs, false)),
    )
    .await
    .unwrap();
    session.prompt("r1", UserMessage::text("hi")).unwrap();
    eventually(|| {
        record_kinds(&*store, "s")
            .iter()
            .filter(|(k, _)| k == "message_update")
            .count()
            > 5
    })
    .await;
    session.abort();
    session.wait_idle().await.unwrap();
    let transcript = session.transcript();
    let answer = transcript[1].as_assistant().unwrap();
    assert_eq!(answer.stop_reason, StopReason::Aborted);
    assert!(answer.text().starts_with("word"), "{}", answer.text());
    assert_eq!(record_kinds(&*store, "s").last().unwrap().0, "agent_end");
}

#[tokio::test]
async fn a_steer_queued_before_an_abort_waits_for_the_next_run() {
    // An abort that lands once a turn's answer is complete, with a steer queued: the aborted
    // run ends at its next poll (as an agent's does) and the steer starts the next run. The
    // aborted run used to take the steer into a turn whose model call ended aborted at once:
    // never answered. (An abort during tools or the stream ends the run by itself.)
    use pi_agent::agent::stream_message;
    use std::sync::{OnceLock, Weak};

    let faux = FauxProvider::register();
    let session_slot: Arc<OnceLock<Weak<Session>>> = Arc::new(OnceLock::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let mut options = SessionOptions::new(faux.model());
    let (slot, count) = (Arc::clone(&session_slot), Arc::clone(&calls));
    options.hooks.stream_fn = Some(Arc::new(move |model, context, options| {
        let call = count.fetch_add(1, Ordering::SeqCst);
        let aborted = options.signal.as_ref().is_some_and(|s| s.is_cancelled());
        let mut message = faux_assistant_message(vec![faux_text(if aborted {
            String::new()
        } else if call == 0 {
            "first answer".to_owned()
        } else {
            format!(
                "answered {}",
                serde_json::to_string(&context.messages.last()).unwrap()
            )
        })]);
        if aborted {
            message.stop_reason = StopReason::Aborted;
            message.error_message = Some("Request was aborted".into());
        } else if call == 0 {
            // The answer is complete; meanwhile a steer arrives, then the abort.
            let session = slot.get().and_then(Weak::upgrade).expect("the session");
            session.steer("s1", UserMessage::text("s1")).unwrap();
            session.abort();
        }
        message.api = model.api.clone();
        message.provider = model.provider.clone();
        message.model = model.id.clone();
        stream_message(model, None, message)
    }));
    let session = Arc::new(
        Session::open(Arc::new(MemoryStore::new()), "s", options)
            .await
            .unwrap(),
    );
    session_slot.set(Arc::downgrade(&session)).unwrap();
    session.prompt("p", UserMessage::text("go")).unwrap();
    eventually(|| calls.load(Ordering::SeqCst) >= 2).await;
    session.wait_idle().await.unwrap();
    let transcript: Vec<Value> = session
        .transcript()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let steer = transcript
        .iter()
        .position(|m| m["role"] == "user" && m["content"].to_string().contains("s1"))
        .expect("the steer is in the transcript");
    let answer = &transcript[steer + 1];
    assert_eq!(answer["stopReason"], "stop", "{transcript:#?}");
    assert!(
        answer["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("answered"),
        "{transcript:#?}"
    );
    assert_eq!(transcript[steer - 1]["content"][0]["text"], "first answer");
}

#[tokio::test]
async fn two_tool_calls_with_one_id_each_get_their_own_result() {
    // A model (or a custom stream function) may give two calls one id: each gets its own
    // result. The second's outcome used to overwrite the first's, and the session stopped
    // (and stopped again at every reopen).
    let faux = FauxProvider::register();
    faux.set_responses((0..10).map(|_| {
        FauxResponse::Factory(Arc::new(|context: &Context, _, _, _| {
            match context.messages.last() {
                Some(Message::ToolResult(_)) => faux_assistant_message(vec![faux_text("done")]),
                _ => faux_assistant_message(vec![
                    pi_agent::ai::providers::faux::faux_tool_call_with_id(
                        "x",
                        "echo",
                        json!({"text": "first"}),
                    ),
                    pi_agent::ai::providers::faux::faux_tool_call_with_id(
                        "x",
                        "echo",
                        json!({"text": "second"}),
                    ),
                ]),
            }
        }))
    }));
    let runs = Arc::new(AtomicUsize::new(0));
    let session = Session::open(
        Arc::new(MemoryStore::new()),
        "s",
        options(&faux, echo_tool(Arc::clone(&runs), false)),
    )
    .await
    .unwrap();
    session.prompt("p", UserMessage::text("go")).unwrap();
    session.wait_idle().await.unwrap();
    let transcript: Vec<Value> = session
        .transcript()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let results: Vec<&Value> = transcript
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| &m["content"][0]["text"])
        .collect();
    assert_eq!(
        results,
        [&json!("first"), &json!("second")],
        "{transcript:#?}"
    );
    assert_eq!(transcript.last().unwrap()["content"][0]["text"], "done");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn steer_and_follow_up_go_through_the_inbox() {
    let faux = scripted_model(FauxOptions::default());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let started = Arc::new(AtomicUsize::new(0));
    let session = Session::open(store, "s", options(&faux, echo_tool(started, false)))
        .await
        .unwrap();
    session.prompt("p", UserMessage::text("hi")).unwrap();
    session
        .follow_up("f", UserMessage::text("and then"))
        .unwrap();
    session.wait_idle().await.unwrap();
    let roles: Vec<String> = session
        .transcript()
        .iter()
        .map(|m| m.role().to_owned())
        .collect();
    // Both prompts start the one run (the inbox was taken whole), then the tool round trip.
    assert_eq!(
        roles,
        ["user", "user", "assistant", "toolResult", "assistant"]
    );
    session
        .steer("s2", UserMessage::text("steer while idle"))
        .unwrap();
    session.wait_idle().await.unwrap();
    assert_eq!(session.transcript().len(), 9);
}

/// A model with a small window whose summary calls succeed or fail as told.
fn compacting_model(fail_summary: bool) -> (FauxProvider, Arc<AtomicUsize>) {
    let faux = FauxProvider::register();
    let summaries = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&summaries);
    faux.set_responses((0..50).map(move |_| {
        let counter = Arc::clone(&counter);
        FauxResponse::Factory(Arc::new(move |context: &Context, _, _, _| {
            if context
                .system_prompt
                .as_deref()
                .unwrap_or_default()
                .contains("summarise")
            {
                counter.fetch_add(1, Ordering::SeqCst);
                if fail_summary {
                    return faux_error_message(Vec::new(), "summary refused");
                }
                return faux_assistant_message(vec![faux_text("the user said hello many times")]);
            }
            let first = match context.messages.first() {
                Some(Message::User(user)) => serde_json::to_string(&user.content).unwrap(),
                _ => String::new(),
            };
            let tag = if first.contains("was compacted") {
                "saw-summary"
            } else {
                "full"
            };
            faux_assistant_message(vec![faux_text(format!("{tag}|{}", "x".repeat(2000)))])
        }))
    }));
    (faux, summaries)
}

fn compacting_options(faux: &FauxProvider) -> SessionOptions {
    let mut model = faux.model();
    model.context_window = 1_500;
    let mut options = SessionOptions::new(model);
    options.compaction = CompactionSettings {
        enabled: true,
        reserve_tokens: 200,
        keep_recent_tokens: 300,
    };
    options
}

#[tokio::test]
async fn compaction_summarises_older_turns_once_and_survives_a_restart() {
    let (faux, summaries) = compacting_model(false);
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let session = Session::open(Arc::clone(&store), "s", compacting_options(&faux))
        .await
        .unwrap();
    for turn in 0..6 {
        session
            .prompt(
                &format!("r{turn}"),
                UserMessage::text(format!("hello {turn}")),
            )
            .unwrap();
        session.wait_idle().await.unwrap();
    }
    let compaction = session.compaction().expect("compacted");
    assert_eq!(compaction.summary, "the user said hello many times");
    // The transcript keeps everything; the model saw the summary first.
    let transcript = session.transcript();
    assert_eq!(transcript.len(), 12);
    let last = transcript[11].as_assistant().unwrap().text();
    assert!(last.starts_with("saw-summary|"), "{}", &last[..20]);
    assert!(SUMMARY_PREFIX.contains("was compacted"));
    let made = summaries.load(Ordering::SeqCst);
    assert!(made >= 1);
    // Nothing new to cover: an explicit compact() right after does not summarise again.
    let again = session.compact().await.unwrap();
    assert!(again.is_none() || again.as_ref().unwrap().covers > compaction.covers);
    drop(session);
    let session = Session::open(store, "s", compacting_options(&faux))
        .await
        .unwrap();
    assert!(session.compaction().is_some());
}

#[tokio::test]
async fn the_summary_call_is_made_as_the_runs_model_calls_are() {
    // The key from `get_api_key` (a host with OAuth keys has no other) and a signal that
    // aborts it: the summary call went out with neither, and failed for good without a key.
    let faux = FauxProvider::register();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    faux.set_responses((0..10).map(move |_| {
        let record = Arc::clone(&record);
        FauxResponse::Factory(Arc::new(move |context: &Context, options, _, _| {
            let summary = context
                .system_prompt
                .as_deref()
                .unwrap_or_default()
                .contains("summarise");
            let key = options.api_key.as_ref().map(|key| key.expose().to_owned());
            record
                .lock()
                .unwrap()
                .push((summary, key, options.signal.is_some()));
            faux_assistant_message(vec![faux_text(if summary {
                "summary".to_owned()
            } else {
                "x".repeat(2000)
            })])
        }))
    }));
    let mut options = compacting_options(&faux);
    options.compaction.enabled = false;
    options.hooks.get_api_key = Some(Arc::new(|provider: &str| {
        let key = format!("key-for-{provider}");
        Box::pin(async move { Ok(Some(pi_agent::ai::ApiKey::new(key))) })
    }));
    let session = Session::open(Arc::new(MemoryStore::new()), "s", options)
        .await
        .unwrap();
    for turn in 0..2 {
        session
            .prompt(&format!("r{turn}"), UserMessage::text("hello"))
            .unwrap();
        session.wait_idle().await.unwrap();
    }
    let compaction = session.compact().await.unwrap().expect("compacted");
    assert_eq!(compaction.summary, "summary");
    let seen = seen.lock().unwrap().clone();
    let key = Some(format!("key-for-{}", faux.model().provider));
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        seen.iter().all(|(_, got, signal)| *got == key && *signal),
        "{seen:?}"
    );
    assert!(seen[2].0, "{seen:?}");
}

#[tokio::test]
async fn an_explicit_compact_reports_the_summary_failure_once() {
    let (faux, summaries) = compacting_model(true);
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let mut options = compacting_options(&faux);
    options.compaction.enabled = false;
    let session = Session::open(store, "s", options).await.unwrap();
    for turn in 0..2 {
        session
            .prompt(
                &format!("r{turn}"),
                UserMessage::text(format!("hello {turn}")),
            )
            .unwrap();
        session.wait_idle().await.unwrap();
    }
    assert_eq!(summaries.load(Ordering::SeqCst), 0);
    let error = session.compact().await.unwrap_err();
    assert_eq!(error.to_string(), "compaction failed: summary refused");
    assert_eq!(summaries.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_failing_summary_is_not_retried_in_a_loop() {
    let (faux, summaries) = compacting_model(true);
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let session = Session::open(store, "s", compacting_options(&faux))
        .await
        .unwrap();
    for turn in 0..6 {
        session
            .prompt(
                &format!("r{turn}"),
                UserMessage::text(format!("hello {turn}")),
            )
            .unwrap();
        session.wait_idle().await.unwrap();
    }
    // Every turn still got its answer; each cut point was tried at most once.
    assert_eq!(session.transcript().len(), 12);
    assert!(session.compaction().is_none());
    let tried = summaries.load(Ordering::SeqCst);
    assert!((1..=6).contains(&tried), "{tried}");
    assert!(session.compact().await.is_err() || summaries.load(Ordering::SeqCst) == tried + 1);
}

#[test]
fn processes_opening_a_new_file_at_once_all_open_it() {
    // The processes of one deployment start together on one new file; each switches it to WAL
    // mode, and SQLite answered "database is locked" at once (without the busy timeout) to one
    // opener in most rounds of four. Connections of one process lock the file as those of two
    // processes do, so threads stand in for the processes.
    for attempt in 0..100 {
        let path = temp_db();
        let start = std::sync::Barrier::new(4);
        let failures: Vec<String> = std::thread::scope(|scope| {
            let openers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        SqliteStore::open(&path)
                            .err()
                            .map(|error| error.to_string())
                    })
                })
                .collect();
            openers
                .into_iter()
                .filter_map(|opener| opener.join().unwrap())
                .collect()
        });
        assert!(failures.is_empty(), "attempt {attempt}: {failures:?}");
    }
}

#[tokio::test]
async fn compact_after_close_is_an_error_not_a_wait() {
    let faux = scripted_model(FauxOptions::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let session = Session::open(store, "s", options(&faux, echo_tool(runs, false)))
        .await
        .unwrap();
    session.close();
    let compacted = tokio::time::timeout(Duration::from_secs(60), session.compact())
        .await
        .expect("compact answers after close");
    assert!(
        matches!(compacted, Err(pi_agent::session::SessionError::Closed)),
        "{compacted:?}"
    );
}

#[tokio::test]
async fn a_message_that_would_not_read_back_is_refused_not_journalled() {
    let faux = scripted_model(FauxOptions::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let path = temp_db();
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let session = Session::open(
        Arc::clone(&store),
        "s",
        options(&faux, echo_tool(Arc::clone(&runs), false)),
    )
    .await
    .unwrap();
    // A custom message that claims to be the user's but has no content.
    let bogus = pi_agent::agent::CustomMessage {
        role: "user".into(),
        fields: serde_json::Map::new(),
    };
    let refused = session.prompt("r1", bogus).unwrap_err();
    assert!(
        matches!(
            refused,
            pi_agent::session::SessionError::UnreadableMessage(_)
        ),
        "{refused}"
    );
    assert_eq!(session.last_seq(), 0);
    drop(session);
    // Nothing was journalled: the session reopens and takes requests.
    let reopened = Session::open(
        Arc::new(SqliteStore::open(&path).unwrap()),
        "s",
        options(&faux, echo_tool(runs, false)),
    )
    .await
    .unwrap();
    reopened.prompt("r1", UserMessage::text("hi")).unwrap();
    reopened.wait_idle().await.unwrap();
}

#[tokio::test]
async fn a_whole_last_entry_that_does_not_read_is_kept_and_reported() {
    use pi_agent::session::{Batch, SessionError, StoredControl};

    let faux = scripted_model(FauxOptions::default());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    // Whole JSON, committed, but no entry a session writes (a newer version's, say).
    store
        .append(
            "s",
            Batch {
                records: &[],
                controls: &[StoredControl {
                    index: 1,
                    entry: r#"{"kind":"fromTheFuture"}"#.into(),
                }],
            },
        )
        .unwrap();
    let opened = Session::open(
        Arc::clone(&store),
        "s",
        options(&faux, echo_tool(Arc::new(AtomicUsize::new(0)), false)),
    )
    .await;
    assert!(
        matches!(opened, Err(SessionError::Corrupt { position: 1, .. })),
        "{:?}",
        opened.err()
    );
    assert_eq!(store.controls("s").unwrap().len(), 1, "the entry is kept");
}

/// A store whose appends on the runtime's threads wait at a gate until it opens.
#[derive(Debug)]
struct GatedStore {
    inner: MemoryStore,
    entered: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    gate: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl SessionStore for GatedStore {
    fn append(
        &self,
        session: &str,
        batch: pi_agent::session::Batch<'_>,
    ) -> Result<(), pi_agent::session::StoreError> {
        if std::thread::current().name() == Some("gated-runtime") {
            let _ = self.entered.lock().unwrap().send(());
            let _ = self.gate.lock().unwrap().recv();
        }
        self.inner.append(session, batch)
    }
    fn records(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<pi_agent::session::StoredRecord>, pi_agent::session::StoreError> {
        self.inner.records(session, after, limit)
    }
    fn controls(
        &self,
        session: &str,
    ) -> Result<Vec<pi_agent::session::StoredControl>, pi_agent::session::StoreError> {
        self.inner.controls(session)
    }
    fn heads(
        &self,
        session: &str,
    ) -> Result<pi_agent::session::Heads, pi_agent::session::StoreError> {
        self.inner.heads(session)
    }
    fn truncate(
        &self,
        session: &str,
        seq: u64,
        control: u64,
    ) -> Result<(), pi_agent::session::StoreError> {
        self.inner.truncate(session, seq, control)
    }
    fn sessions(&self) -> Result<Vec<String>, pi_agent::session::StoreError> {
        self.inner.sessions()
    }
}

/// A store call that waits (SQLite's busy timeout, a slow disk) does not hold a runtime worker:
/// on a runtime with one worker, another task still runs while the session's write waits.
#[test]
fn a_store_write_that_waits_does_not_hold_the_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("gated-runtime")
        .enable_all()
        .build()
        .unwrap();
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (open_gate, gate) = std::sync::mpsc::channel();
    let store = Arc::new(GatedStore {
        inner: MemoryStore::new(),
        entered: std::sync::Mutex::new(entered_tx),
        gate: std::sync::Mutex::new(gate),
    });
    let runs = Arc::new(AtomicUsize::new(0));
    let faux = scripted_model(FauxOptions::default());
    let session = runtime
        .block_on(Session::open(
            store,
            "s",
            options(&faux, echo_tool(runs, false)),
        ))
        .unwrap();
    // The request is written on this thread; the run's first write, on the worker, waits.
    session.prompt("r1", UserMessage::text("hi")).unwrap();
    entered
        .recv_timeout(Duration::from_secs(60))
        .expect("the run's first write");
    let (ran_tx, ran) = std::sync::mpsc::channel();
    runtime.spawn(async move {
        let _ = ran_tx.send(());
    });
    let other_task_ran = ran.recv_timeout(Duration::from_secs(30)).is_ok();
    // Open the gate for good: every later write passes.
    drop(open_gate);
    assert!(
        other_task_ran,
        "a waiting store write held the runtime's only worker"
    );
    runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), session.wait_idle())
            .await
            .expect("the run ends once the store answers")
            .unwrap();
    });
    let kinds = record_kinds(&*session.store().clone(), "s");
    assert_eq!(kinds.last().unwrap().0, "agent_end");
    session.close();
}

/// Runs the scripted prompt "r1" (a tool call, then "done") in session "s" of `store`, closes
/// the session, and returns its transcript.
async fn run_scripted(
    store: &Arc<dyn SessionStore>,
    faux: &FauxProvider,
    runs: &Arc<AtomicUsize>,
) -> Value {
    let session = Session::open(
        Arc::clone(store),
        "s",
        options(faux, echo_tool(Arc::clone(runs), false)),
    )
    .await
    .unwrap();
    session.prompt("r1", UserMessage::text("hi")).unwrap();
    session.wait_idle().await.unwrap();
    let transcript = serde_json::to_value(session.transcript()).unwrap();
    session.close();
    transcript
}

/// A session reopened with other settings replays its runs under the settings they ran with
/// (a lower turn limit would end a finished run early, and the journal's next step would not
/// fit: the session could not be opened); new runs go by today's.
#[tokio::test]
async fn a_session_reopened_with_other_settings_replays_its_runs_as_they_ran() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let faux = scripted_model(FauxOptions::default());
    let before = run_scripted(&store, &faux, &runs).await;
    // Two model calls: the tool call, then "done".
    assert_eq!(before.as_array().unwrap().len(), 4);

    let mut changed = options(&faux, echo_tool(Arc::clone(&runs), false));
    changed.settings.limits.max_turns = Some(1);
    let session = Session::open(Arc::clone(&store), "s", changed)
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(session.transcript()).unwrap(), before);
    // The new run stops at its limit: one model call (the tool call), the tool's result, and
    // the limit's message.
    session.prompt("r2", UserMessage::text("again")).unwrap();
    session.wait_idle().await.unwrap();
    let after = serde_json::to_value(session.transcript()).unwrap();
    assert_eq!(after.as_array().unwrap().len(), 4 + 4, "{after}");
    assert_eq!(
        after[7]["errorMessage"],
        "The run reached its limit of 1 turn (maxTurns)"
    );
    let kinds = record_kinds(&*store, "s");
    assert_eq!(kinds.last().unwrap().0, "agent_end");
    session.close();
}

/// A journal written before runs recorded their settings (no `config` in `run_start`) opens,
/// replayed under the options given.
#[tokio::test]
async fn a_journal_without_recorded_settings_replays_under_the_options() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let faux = scripted_model(FauxOptions::default());
    let before = run_scripted(&store, &faux, &runs).await;
    // Rewrite the control log as an earlier build wrote it.
    let controls = store.controls("s").unwrap();
    let heads = store.heads("s").unwrap();
    store.truncate("s", heads.seq, 0).unwrap();
    let mut stripped = 0;
    let earlier: Vec<pi_agent::session::StoredControl> = controls
        .iter()
        .map(|control| {
            let mut entry: Value = serde_json::from_str(&control.entry).unwrap();
            if entry["type"] == "run_start" {
                assert!(entry.as_object_mut().unwrap().remove("config").is_some());
                stripped += 1;
            }
            pi_agent::session::StoredControl {
                index: control.index,
                entry: entry.to_string(),
            }
        })
        .collect();
    assert_eq!(stripped, 1);
    let batch = pi_agent::session::Batch {
        records: &[],
        controls: &earlier,
    };
    store.append("s", batch).unwrap();
    let session = Session::open(
        Arc::clone(&store),
        "s",
        options(&faux, echo_tool(runs, false)),
    )
    .await
    .unwrap();
    assert_eq!(serde_json::to_value(session.transcript()).unwrap(), before);
    session.close();
}
