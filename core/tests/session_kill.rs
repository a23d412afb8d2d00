//! Durable sessions survive a real `kill -9` of the process that ran them (Rust).
//!
//! The test binary runs itself again as a child (`child_process`, selected by
//! `PI_SESSION_KILL_CHILD`): the child opens a session on a SQLite file and starts a prompt;
//! the parent follows the same file from another handle, sends SIGKILL at the chosen point
//! (mid-tool, mid-stream), then reopens the session in its own process and checks what the
//! journal made of the half-done work.

mod session_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pi_agent::ai::providers::faux::{
    FauxOptions, FauxProvider, FauxResponse, faux_assistant_message, faux_text,
};
use pi_agent::ai::{StopReason, UserMessage};
use pi_agent::session::{
    Session, SessionOptions, SessionStore, SqliteStore, Subscription, TOOL_INTERRUPTED,
};
use serde_json::Value;
use session_support::{echo_tool, hanging_tool, record_kinds, scripted_model, temp_db};

const CHILD_ENV: &str = "PI_SESSION_KILL_CHILD";
const PATH_ENV: &str = "PI_SESSION_KILL_PATH";

/// The long answer of the mid-stream case, streamed slowly so the kill lands inside it.
fn long_answer() -> String {
    "word ".repeat(200)
}

fn slow_model() -> FauxProvider {
    let faux = FauxProvider::register_with(FauxOptions {
        tokens_per_second: Some(40.0),
        ..FauxOptions::default()
    });
    faux.set_responses(
        (0..3).map(|_| FauxResponse::from(faux_assistant_message(vec![faux_text(long_answer())]))),
    );
    faux
}

fn options(faux: &FauxProvider, tool: Arc<dyn pi_agent::agent::AgentTool>) -> SessionOptions {
    let mut options = SessionOptions::new(faux.model());
    options.tools = vec![tool];
    options
}

/// The child's side: start the prompt and wait to be killed (never returns on its own in
/// time: the parent kills it within seconds, and 120 s bound a parent that died first).
#[tokio::test]
async fn child_process() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return; // An ordinary test run: nothing to do.
    };
    let path = std::env::var(PATH_ENV).expect("the store path");
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let (faux, tool) = match mode.as_str() {
        "tool" => (
            scripted_model(FauxOptions::default()),
            hanging_tool(Arc::new(AtomicUsize::new(0))),
        ),
        _ => (
            slow_model(),
            echo_tool(Arc::new(AtomicUsize::new(0)), false),
        ),
    };
    let session = Session::open(store, "s", options(&faux, tool))
        .await
        .unwrap();
    session.prompt("r1", UserMessage::text("hi")).unwrap();
    tokio::time::sleep(Duration::from_secs(120)).await;
}

/// Runs this test binary as the child for `mode`, on the store at `path`.
fn spawn_child(mode: &str, path: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, mode)
        .env(PATH_ENV, path)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Follows the store (another handle, as another process would) until `ready` holds for the
/// record kinds, then kills the child with SIGKILL and reaps it.
async fn kill_when(mut child: Child, path: &Path, ready: impl Fn(&[(String, u32)]) -> bool) {
    let reader = SqliteStore::open(path).unwrap();
    let mut waited = Duration::ZERO;
    loop {
        let kinds = if reader.sessions().unwrap().iter().any(|s| s == "s") {
            record_kinds(&reader, "s")
        } else {
            Vec::new()
        };
        if ready(&kinds) {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child ended before the kill point ({status}): {kinds:?}");
        }
        assert!(
            waited < Duration::from_secs(60),
            "the kill point was not reached in 60 s: {kinds:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += Duration::from_millis(20);
    }
    child.kill().unwrap(); // SIGKILL on Unix: no destructor, no flush, no goodbye.
    child.wait().unwrap();
}

fn transcript_json(session: &Session) -> Vec<Value> {
    session
        .transcript()
        .iter()
        .map(|message| serde_json::to_value(message).unwrap())
        .collect()
}

#[tokio::test]
async fn kill_9_mid_tool_gives_an_interrupted_result_and_the_session_goes_on() {
    let path = temp_db();
    let child = spawn_child("tool", &path);
    kill_when(child, &path, |kinds| {
        kinds.iter().any(|(kind, _)| kind == "tool_execution_start")
    })
    .await;

    let faux = scripted_model(FauxOptions::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let session = Session::open(
        store,
        "s",
        options(&faux, echo_tool(Arc::clone(&runs), false)),
    )
    .await
    .unwrap();
    session.wait_idle().await.unwrap();
    let transcript = transcript_json(&session);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "a tool with effects is not re-run"
    );
    assert_eq!(transcript[2]["role"], "toolResult");
    assert_eq!(transcript[2]["isError"], true);
    assert_eq!(transcript[2]["content"][0]["text"], TOOL_INTERRUPTED);
    assert_eq!(transcript[3]["content"][0]["text"], "done");
    // The child's request id is known: sending it again starts nothing.
    let before = session.last_seq();
    session.prompt("r1", UserMessage::text("hi")).unwrap();
    session.wait_idle().await.unwrap();
    assert_eq!(session.last_seq(), before);
    let kinds = record_kinds(&**session.store(), "s");
    assert_eq!(
        kinds.iter().filter(|(kind, _)| kind == "agent_end").count(),
        1
    );
}

#[tokio::test]
async fn kill_9_mid_stream_redoes_the_model_call_as_the_next_attempt() {
    let path = temp_db();
    let child = spawn_child("stream", &path);
    kill_when(child, &path, |kinds| {
        kinds
            .iter()
            .filter(|(kind, _)| kind == "message_update")
            .count()
            > 3
    })
    .await;

    // A client that saw everything up to the kill resumes from there.
    let reader: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let seen = reader.heads("s").unwrap().seq;
    let mut follower = Subscription::follow(Arc::clone(&reader), "s", seen);

    let faux = slow_model();
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let session = Session::open(
        store,
        "s",
        options(&faux, echo_tool(Arc::new(AtomicUsize::new(0)), false)),
    )
    .await
    .unwrap();
    session.wait_idle().await.unwrap();
    let transcript = session.transcript();
    assert_eq!(transcript.len(), 2);
    let answer = transcript[1].as_assistant().unwrap();
    assert_eq!(answer.text(), long_answer());
    assert_eq!(answer.stop_reason, StopReason::Stop);

    let mut followed = Vec::new();
    while follower.cursor() < session.last_seq() {
        let record = follower
            .next_timeout(Duration::from_secs(30))
            .await
            .unwrap()
            .expect("a record");
        followed.push(serde_json::from_str::<Value>(&record.to_json()).unwrap());
    }
    assert_eq!(followed[0]["seq"].as_u64().unwrap(), seen + 1, "no gap");
    assert_eq!(followed[0]["event"]["type"], "message_start");
    assert!(
        followed
            .iter()
            .all(|r| r["attempt"] == 1 || r["event"]["type"] == "agent_end"),
        "the redone call is attempt 1"
    );
}
