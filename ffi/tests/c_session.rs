//! Durable sessions from C: `tests/c/ffi_session_test.c` is killed (SIGKILL) mid-tool and
//! mid-stream, then a new process resumes the session from the same SQLite file.

#[path = "support/c_build.rs"]
mod c_build;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use c_build::{assert_success, compile, run};
use pi_mock_server::MockServer;
use serde_json::{Value, json};

/// A database path in a fresh directory under the system temp dir; the directory goes with
/// the returned guard, so a test run leaves no files behind.
fn temp_db(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("pi-c-session-")
        .tempdir()
        .unwrap();
    let path = dir.path().join(name);
    (dir, path)
}

/// Starts the session in a child, reads its records until `kill_when` says so, then kills it
/// with SIGKILL; returns the records seen.
fn start_and_kill(
    exe: &PathBuf,
    db: &PathBuf,
    url: &str,
    kill_when: impl Fn(&str, &[Value]) -> bool,
) -> Vec<Value> {
    let mut child = Command::new(exe)
        .arg("start")
        .arg(db)
        .arg(url)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut records = Vec::new();
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some(json) = line.strip_prefix("RECORD ") {
            records.push(serde_json::from_str(json).unwrap());
        }
        if kill_when(&line, &records) {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    records
}

fn resume(exe: &PathBuf, db: &PathBuf, url: &str, cursor: u64) -> (Vec<Value>, Value) {
    let mut command = Command::new(exe);
    command
        .arg("resume")
        .arg(db)
        .arg(url)
        .arg(cursor.to_string());
    let output = run(command);
    assert_success(&output, "ffi_session_test resume");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let records = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("RECORD "))
        .map(|j| serde_json::from_str(j).unwrap())
        .collect();
    let transcript = stdout
        .lines()
        .find_map(|l| l.strip_prefix("TRANSCRIPT "))
        .map(|j| serde_json::from_str(j).unwrap())
        .unwrap();
    (records, transcript)
}

/// The mock server on a runtime of its own (kept alive by the caller).
fn mock_server() -> (tokio::runtime::Runtime, MockServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    (runtime, server)
}

fn last_seq(records: &[Value]) -> u64 {
    records.last().map_or(0, |r| r["seq"].as_u64().unwrap())
}

#[test]
fn killed_mid_tool_the_tool_ends_interrupted_and_the_run_goes_on() {
    let exe = compile("tests/c/ffi_session_test.c", "ffi_session_test_tool");
    let (_runtime, server) = mock_server();
    server.push(json!({"tool_calls": [{"id": "call-1", "name": "wait", "arguments": {}}]}));
    server.push(json!({"text": "after the tool"}));
    let (_dir, db) = temp_db("tool.db");
    let tool_started = std::cell::Cell::new(false);
    // Killed once the tool runs and its intent record was shown (journalled before it ran).
    let seen = start_and_kill(&exe, &db, &server.base_url(), |line, records| {
        tool_started.set(tool_started.get() || line == "TOOL_STARTED");
        tool_started.get()
            && records
                .iter()
                .any(|r| r["event"]["type"] == "tool_execution_start")
    });
    let cursor = last_seq(&seen);
    let (records, transcript) = resume(&exe, &db, &server.base_url(), cursor);
    assert_eq!(
        records[0]["seq"].as_u64().unwrap(),
        cursor + 1,
        "no gap, no duplicate"
    );
    let roles: Vec<&str> = transcript
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(transcript[2]["isError"], true);
    assert!(
        transcript[2]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Tool execution was interrupted")
    );
    assert_eq!(transcript[3]["content"][0]["text"], "after the tool");
    // The repeated request id did not start another run: two model calls in all.
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn killed_mid_stream_the_model_call_is_redone_as_attempt_1() {
    let exe = compile("tests/c/ffi_session_test.c", "ffi_session_test_stream");
    let (_runtime, server) = mock_server();
    let long = "token ".repeat(100);
    server.push(json!({"text": long, "delta_size": 6, "delay_ms": 30}));
    server.push(json!({"text": "the whole answer", "delta_size": 4}));
    let (_dir, db) = temp_db("stream.db");
    let seen = start_and_kill(&exe, &db, &server.base_url(), |_, records| {
        records
            .iter()
            .filter(|r| r["event"]["type"] == "message_update")
            .count()
            >= 5
    });
    let cursor = last_seq(&seen);
    let (records, transcript) = resume(&exe, &db, &server.base_url(), cursor);
    assert_eq!(records[0]["seq"].as_u64().unwrap(), cursor + 1);
    let restart = records
        .iter()
        .find(|r| r["event"]["type"] == "message_start")
        .unwrap();
    assert_eq!(restart["attempt"], 1, "the redone call is the next attempt");
    assert!(seen.iter().all(|r| r["attempt"] == 0));
    assert_eq!(transcript[1]["content"][0]["text"], "the whole answer");
    assert_eq!(transcript.as_array().unwrap().len(), 2);
}

/// `pi_session_free` from one of the session's own tool callbacks stops the session without
/// waiting for that callback (it would wait for itself), and nothing crashes afterwards.
#[test]
fn freed_from_its_own_tool_callback_the_session_stops() {
    let exe = compile("tests/c/ffi_session_test.c", "ffi_session_test_free");
    let (_runtime, server) = mock_server();
    server.push(json!({"tool_calls": [{"id": "call-1", "name": "wait", "arguments": {}}]}));
    server.push(json!({"text": "after the tool"}));
    let (_dir, db) = temp_db("free.db");
    let mut command = Command::new(&exe);
    command.arg("free_in_tool").arg(&db).arg(server.base_url());
    let output = run(command);
    assert_success(&output, "ffi_session_test free_in_tool");
    assert!(String::from_utf8_lossy(&output.stdout).contains("ffi_session_test free_in_tool: ok"));
}

/// `pi_session_list_json` and `pi_session_delete`: refused (`SESSION_IN_USE`) while the
/// session is open, then the journal goes and the id opens as a new session.
#[test]
fn a_session_is_listed_and_deleted() {
    let exe = compile("tests/c/ffi_session_test.c", "ffi_session_test_delete");
    let (_runtime, server) = mock_server();
    server.push(json!({"text": "hello back"}));
    let (_dir, db) = temp_db("delete.db");
    let mut command = Command::new(&exe);
    command.arg("delete").arg(&db).arg(server.base_url());
    let output = run(command);
    assert_success(&output, "ffi_session_test delete");
    assert!(String::from_utf8_lossy(&output.stdout).contains("ffi_session_test delete: ok"));
}
