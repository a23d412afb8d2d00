//! Issue 17 through the C ABI: `tests/c/ffi_hostile_test.c` (array-shaped settings, nonsense
//! faux options and tool schemas, secret headers in snapshots, deep tool arguments), natively
//! and under valgrind when it is installed; the mock-server cases; the big-result benchmark.

#[path = "support/c_build.rs"]
mod c_build;

use std::process::Command;

use c_build::{assert_success, compile, run};
use pi_mock_server::MockServer;
use serde_json::json;

#[test]
fn c_hostile_input_is_refused_naming_the_field() {
    let exe = compile("tests/c/ffi_hostile_test.c", "ffi_hostile_test");
    let output = run(Command::new(&exe));
    assert_success(&output, "ffi_hostile_test");
    assert!(String::from_utf8_lossy(&output.stdout).contains("ffi_hostile_test: ok"));
}

#[test]
fn c_hostile_input_under_valgrind() {
    let available = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !available {
        eprintln!("valgrind is not installed: skipped");
        return;
    }
    let exe = compile("tests/c/ffi_hostile_test.c", "ffi_hostile_test_valgrind");
    let output = run({
        let mut command = Command::new("valgrind");
        command.args([
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "-q",
        ]);
        command.arg(&exe);
        command
    });
    assert_success(&output, "ffi_hostile_test under valgrind");
}

#[test]
fn c_hostile_ids_and_lone_surrogates_against_the_mock_server() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    let google = r#"{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}]}"#;
    let responses = [
        r#"{"type":"response.created","response":{"id":"r1"}}"#,
        r#"{"type":"response.output_text.delta","item_id":"m1","output_index":0,"content_index":0,"delta":"h\ud800i"}"#,
        r#"{"type":"response.completed","response":{"id":"r1","status":"completed","usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}}"#,
    ];
    server.push(json!({"sse": format!("data: {google}\n\n")}));
    server.push(json!({"sse": responses.map(|event| format!("data: {event}\n\n"))}));
    let exe = compile("tests/c/ffi_hostile_test.c", "ffi_hostile_test_mock");
    let mut command = Command::new(&exe);
    command.arg("mock").arg(server.base_url());
    let output = run(command);
    assert_success(&output, "ffi_hostile_test mock");
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the key went to two requests, nowhere else"
    );
    assert_eq!(
        requests[0].path,
        "/v1/models/..%2F..%2F..%2Fadmin%2Fdelete%3Fall%3D1%23:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        requests[0].header("x-goog-api-key"),
        Some("c-hostile-key-123")
    );
    assert_eq!(requests[1].path, "/v1/responses");
}

/// The big-result memory benchmark (`benches/c/big_result_bench.c`) builds and runs on a small
/// result; its figure is read by hand, never asserted.
#[test]
fn c_big_result_bench_runs() {
    let exe = compile("benches/c/big_result_bench.c", "big_result_bench");
    let mut command = Command::new(&exe);
    command.arg("4");
    let output = run(command);
    assert_success(&output, "big_result_bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("big result 4 MiB: peak RSS"), "{stdout}");
}
