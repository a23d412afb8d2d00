//! Compiles the C programs (`tests/c/ffi_test.c`, `tests/c/ffi_agent_test.c`,
//! `tests/c/ffi_ai_test.c`, `tests/c/ffi_agent_run_test.c`, `tests/c/ffi_log_test.c`,
//! `examples/c/agent.c`, the benchmark `benches/c/stream_bench.c`) with
//! `cc -Wall -Wextra -Werror -std=c11` against `include/pi_agent.h`, links them with `-lpi_agent`
//! against the cdylib cargo built for this test run (`target/<profile>/deps/libpi_agent_ffi.so`,
//! found from the test executable's path, so `CARGO_TARGET_DIR` and `--release` work) with an
//! rpath, and runs them: natively, and the offline cases again under valgrind when it is
//! installed.

#[path = "support/c_build.rs"]
mod c_build;

use std::path::Path;
use std::process::Command;

use c_build::{assert_success, compile, repo_root, run};

use pi_mock_server::MockServer;
use serde_json::{Value, json};

fn valgrind_available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

#[test]
fn c_test_faux() {
    let exe = compile("tests/c/ffi_test.c", "ffi_test_faux");
    let mut command = Command::new(&exe);
    command.arg("faux");
    let output = run(command);
    assert_success(&output, "ffi_test faux");
    assert!(String::from_utf8_lossy(&output.stdout).contains("ffi_test faux: ok"));
}

/// Runs `exe args` under valgrind (memory errors and definite leaks fail the run), or skips
/// when valgrind is not installed.
fn run_under_valgrind(exe: &Path, args: &[&str], what: &str) {
    if !valgrind_available() {
        println!("note: valgrind is not installed; skipping the valgrind run of {what}");
        return;
    }
    let mut command = Command::new("valgrind");
    command
        .args([
            "--quiet",
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
        ])
        .arg(exe)
        .args(args);
    let output = run(command);
    assert_success(&output, &format!("valgrind {what}"));
}

#[test]
fn c_test_faux_under_valgrind() {
    let exe = compile("tests/c/ffi_test.c", "ffi_test_valgrind");
    run_under_valgrind(&exe, &["faux"], "ffi_test faux");
}

#[test]
fn c_agent_test() {
    let exe = compile("tests/c/ffi_agent_test.c", "ffi_agent_test");
    let output = run(Command::new(&exe));
    assert_success(&output, "ffi_agent_test");
    assert!(String::from_utf8_lossy(&output.stdout).contains("ffi_agent_test: ok"));
}

/// The agent test ends with `pi_shutdown`, so it passes valgrind's default leak flags
/// (possibly-lost blocks count), as a user's `valgrind --leak-check=full --error-exitcode=1`,
/// except the `jsonschema` crate's own static meta-schema validators (`jsonschema.supp`).
#[test]
fn c_agent_test_under_valgrind() {
    let exe = compile("tests/c/ffi_agent_test.c", "ffi_agent_test_valgrind");
    if !valgrind_available() {
        println!("note: valgrind is not installed; skipping the valgrind run of ffi_agent_test");
        return;
    }
    let mut command = Command::new("valgrind");
    command
        .args([
            "--quiet",
            "--leak-check=full",
            "--error-exitcode=99",
            "--num-callers=100",
        ])
        .arg(format!(
            "--suppressions={}/tests/jsonschema.supp",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(&exe);
    let output = run(command);
    assert_success(&output, "valgrind --leak-check=full ffi_agent_test");
}

#[test]
fn c_ai_test() {
    let exe = compile("tests/c/ffi_ai_test.c", "ffi_ai_test");
    let output = run(Command::new(&exe));
    assert_success(&output, "ffi_ai_test");
    assert!(String::from_utf8_lossy(&output.stdout).contains("ffi_ai_test: ok"));
}

#[test]
fn c_ai_test_under_valgrind() {
    let exe = compile("tests/c/ffi_ai_test.c", "ffi_ai_test_valgrind");
    run_under_valgrind(&exe, &[], "ffi_ai_test");
}

/// `on_payload`, `on_response` and `get_api_key` from C, seen from the server.
#[test]
fn c_ai_test_mock_server() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    // pi's proxy events, as a pi proxy server sends them.
    let proxied = json!({"chunks": [
        {"type": "start"},
        {"type": "text_start", "contentIndex": 0},
        {"type": "text_delta", "contentIndex": 0, "delta": "Proxied "},
        {"type": "text_delta", "contentIndex": 0, "delta": "hello"},
        {"type": "text_end", "contentIndex": 0},
        {"type": "done", "reason": "stop", "usage": {"input": 3, "output": 2, "cacheRead": 0,
            "cacheWrite": 0, "totalTokens": 5, "cost": {"input": 0, "output": 0,
            "cacheRead": 0, "cacheWrite": 0, "total": 0}}},
    ], "done": false});
    server.push_all([
        json!({"text": "Hello from the mock server!"}),
        json!({"text": "Agent reply from the mock server."}),
        proxied.clone(),
        proxied,
    ]);
    let exe = compile("tests/c/ffi_ai_test.c", "ffi_ai_test_mock");
    let mut command = Command::new(&exe);
    command.arg("mock").arg(server.base_url());
    let output = run(command);
    assert_success(&output, "ffi_ai_test mock");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // One after another, over one kept-alive connection (the library's HTTP/1.1 client).
    assert_eq!(server.connections(), 1);
    // The C `on_payload` rewrote both bodies; the stream sent its key, the agent the hook's.
    for request in &requests[..2] {
        assert_eq!(request.body["user"], "c-on-payload", "{}", request.body);
    }
    assert_eq!(requests[0].header("authorization"), Some("Bearer test-key"));
    assert_eq!(requests[1].header("authorization"), Some("Bearer hook-key"));
    // The proxy got the model, context and options, with the app's token.
    for request in &requests[2..] {
        assert!(request.path.ends_with("/api/stream"), "{}", request.path);
        assert_eq!(request.header("authorization"), Some("Bearer app-token"));
        assert_eq!(request.body["model"]["id"], "mock-model");
    }
    assert_eq!(
        requests[3].body["context"]["messages"][0]["content"][0]["text"],
        "Via the proxy"
    );
    drop(server);
}

#[test]
fn c_agent_run_test() {
    let exe = compile("tests/c/ffi_agent_run_test.c", "ffi_agent_run_test");
    let output = run(Command::new(&exe));
    assert_success(&output, "ffi_agent_run_test");
    assert!(String::from_utf8_lossy(&output.stdout).contains("ffi_agent_run_test: ok"));
}

/// Also the regression test of `pi_agent_free` from callbacks (issue 9: it read freed memory).
#[test]
fn c_agent_run_test_under_valgrind() {
    let exe = compile(
        "tests/c/ffi_agent_run_test.c",
        "ffi_agent_run_test_valgrind",
    );
    run_under_valgrind(&exe, &[], "ffi_agent_run_test");
}

#[test]
fn c_test_mock_server() {
    let (_runtime, server) = scripted_mock_server();
    let exe = compile("tests/c/ffi_test.c", "ffi_test_mock");
    let mut command = Command::new(&exe);
    command.arg("mock").arg(server.base_url());
    let output = run(command);
    assert_success(&output, "ffi_test mock");
    check_scripted_requests(&server);
}

/// The same program and server under valgrind: `pi_stream_next` reads the socket on the C
/// program's own thread (core's `blocking_next`), whose reads and waits memcheck sees.
#[test]
fn c_test_mock_server_under_valgrind() {
    if !valgrind_available() {
        println!("note: valgrind is not installed; skipping");
        return;
    }
    let (_runtime, server) = scripted_mock_server();
    let exe = compile("tests/c/ffi_test.c", "ffi_test_mock_valgrind");
    run_under_valgrind(&exe, &["mock", &server.base_url()], "ffi_test mock");
    check_scripted_requests(&server);
}

/// A mock server with `ffi_test mock`'s five replies, on a runtime of its own.
fn scripted_mock_server() -> (tokio::runtime::Runtime, MockServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    server.push_all([
        json!({"text": "Hello from the mock server!"}),
        json!({"status": 401, "body": {"error": {
            "message": "Incorrect API key provided",
            "type": "invalid_request_error",
            "code": "invalid_api_key"
        }}}),
        json!({"text": "This reply is cut off by a dropped connection.", "drop_after_bytes": 120}),
        json!({"tool_calls": [{"id": "call_1", "name": "calculator",
            "arguments": {"expression": "6 * 7"}}]}),
        json!({"text": "The answer is 42."}),
    ]);
    (runtime, server)
}

fn check_scripted_requests(server: &MockServer) {
    assert_eq!(server.pending(), 0, "every scripted reply was used");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[0].header("authorization"), Some("Bearer test-key"));
    // The agent's second request carries the C tool's result.
    let last = requests[4].body.to_string();
    assert!(last.contains("\"tool_call_id\":\"call_1\""), "{last}");
}

#[test]
fn c_example_agent() {
    let exe = compile("examples/c/agent.c", "agent_example");
    let mut command = Command::new(&exe);
    command
        .env_remove("PI_MODEL")
        .env_remove("PI_MODEL_JSON")
        .env_remove("PI_API_KEY");
    let output = run(command);
    assert_success(&output, "examples/c/agent");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(r#"[approve] calculator {"expression":"6 * 7"}"#),
        "{stdout}"
    );
    assert!(stdout.contains("[calculator] 6 * 7 = 42"), "{stdout}");
    assert!(stdout.contains("assistant: 6 * 7 is 42."), "{stdout}");
}

/// Every wire API through the C pull stream, against recorded-style fixtures.
#[test]
fn c_stream_every_wire_api() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let exe = compile("tests/c/providers_test.c", "providers_test");
    for (api, provider, id, suffix, fixture) in [
        (
            "anthropic-messages",
            "anthropic",
            "claude-sonnet-4-5",
            "",
            "anthropic/thinking_text_tool_use.sse",
        ),
        (
            "openai-responses",
            "openai",
            "gpt-5-mini",
            "/v1",
            "openai-responses/reasoning_text_function_call.sse",
        ),
        (
            "google-generative-ai",
            "google",
            "gemini-2.5-flash",
            "/v1beta",
            "google/thinking_text_function_call.sse",
        ),
    ] {
        let server = runtime.block_on(MockServer::start()).unwrap();
        let body =
            std::fs::read_to_string(repo_root().join("tests/fixtures").join(fixture)).unwrap();
        server.push(json!({"sse": body, "split_random": 11}));
        let model = json!({"id": id, "api": api, "provider": provider, "reasoning": true,
            "baseUrl": format!("http://{}{suffix}", server.addr()), "maxTokens": 8192});
        let mut command = Command::new(&exe);
        command.arg(model.to_string());
        let output = run(command);
        assert_success(&output, api);
        assert_eq!(server.requests().len(), 1, "{api}");
    }
}

/// A stream read only from its own wake callback, through a burst that fills its queue: the
/// wake-up the read itself causes comes after the read, not inside it (where the callback's
/// own `pi_stream_try_next` would wait for the lock its caller holds).
/// Runs the C program `source` (built as `name`) with the JSON of an OpenAI Chat Completions
/// model on a mock server that answers `reply`, and returns its stdout once it succeeded.
fn run_against_one_reply(source: &str, name: &str, reply: Value) -> String {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    server.push(reply);
    let model = json!({"id": "m", "api": "openai-completions", "provider": "openai",
        "baseUrl": format!("http://{}/v1", server.addr()), "maxTokens": 8192});
    let exe = compile(source, name);
    let mut command = Command::new(&exe);
    command.arg(model.to_string());
    let output = run(command);
    assert_success(&output, name);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn c_stream_read_from_its_own_wake_callback() {
    const DELTAS: usize = 3_000;
    let mut body = String::new();
    for _ in 0..DELTAS {
        body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w \"}}]}\n\n");
    }
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
         data: [DONE]\n\n",
    );
    let stdout = run_against_one_reply(
        "tests/c/stream_wake_reentry.c",
        "stream_wake_reentry",
        json!({"sse": body}),
    );
    assert!(stdout.contains(&format!("deltas {DELTAS}")), "{stdout}");
}

/// `pi_agent_free` from the agent's own `on_payload` callback is deferred like one from its
/// tools and hooks, not a wait for the run that waits for the callback.
#[test]
fn c_agent_freed_from_its_on_payload_callback() {
    let stdout = run_against_one_reply(
        "tests/c/agent_payload_free.c",
        "agent_payload_free",
        json!({"text": "Hello."}),
    );
    assert!(stdout.contains("agent_payload_free: ok"), "{stdout}");
}

/// `pi_set_log_callback` beside `PI_AGENT_LOG=debug`: both get the request's lines, neither
/// the API key.
#[test]
fn c_log_test() {
    const SECRET: &str = "sk-log-secret-5150";
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    server.push_all([
        json!({"status": 503, "body": {"error": {"message": format!("overloaded, key {SECRET}")}}}),
        json!({"text": "Hello after a retry."}),
        json!({"text": "Hello again."}),
        json!({"text": "Hello once more."}),
    ]);
    let exe = compile("tests/c/ffi_log_test.c", "ffi_log_test");
    let mut command = Command::new(&exe);
    command.arg(server.base_url()).env("PI_AGENT_LOG", "debug");
    let output = run(command);
    assert_success(&output, "ffi_log_test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stdout.contains("ffi_log_test: ok"), "{stdout}");
    assert_eq!(server.requests().len(), 4, "three requests, one retried");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str()),
        "the key was sent, so a leak would show"
    );
    // PI_AGENT_LOG's stderr log ran beside the callback, for every request.
    assert_eq!(
        stderr
            .matches("pi_agent debug pi_agent::http: sending request")
            .count(),
        3,
        "{stderr}"
    );
    assert!(
        stderr.contains("pi_agent info  pi_agent::retry: "),
        "{stderr}"
    );
    assert!(!stderr.contains(SECRET), "{stderr}");
    assert!(!stdout.contains(SECRET), "{stdout}");
    drop(server);
}

#[test]
fn c_log_test_under_valgrind() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    server.push_all([
        json!({"status": 503, "body": {"error": {"message": "overloaded"}}}),
        json!({"text": "Hello after a retry."}),
        json!({"text": "Hello again."}),
        json!({"text": "Hello once more."}),
    ]);
    let exe = compile("tests/c/ffi_log_test.c", "ffi_log_test_valgrind");
    run_under_valgrind(&exe, &[&server.base_url()], "ffi_log_test");
    drop(server);
}

/// The C benchmark (`benches/c/run.sh` runs it on the release library) compiles and runs; a few
/// events, one run, nothing timed.
#[test]
fn c_stream_bench_runs() {
    let exe = compile("benches/c/stream_bench.c", "stream_bench");
    for (args, expected) in [
        (["text", "300", "1"], "text 300 deltas: 304 events"),
        (["tool", "1", "1"], "tool 1 MiB: "),
    ] {
        let mut command = Command::new(&exe);
        command.args(args).env("PI_BENCH_JSON", "1");
        let output = run(command);
        assert_success(&output, "stream_bench");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains(expected), "{stdout}");
        assert!(
            stdout.contains("us/event") && stdout.contains("peak RSS"),
            "{stdout}"
        );
    }
}

/// Typed answers from C: partial objects in a stream, `pi_complete_structured_json` (valid,
/// invalid, a list sent wrapped), and an agent run that ends in a value after one re-ask.
#[test]
fn c_structured_test_mock_server() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    server.push_all([
        json!({"text": "{\"city\": \"Paris\", \"celsius\": 21.5}", "delta_size": 6}),
        json!({"text": "{\"city\": \"Oslo\", \"celsius\": -3}"}),
        json!({"text": "{\"city\": \"Oslo\"}"}),
        json!({"text": "{\"city\": \"Oslo\", \"celsius\": 1}",
               "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {}}]}),
        json!({"text": "{\"city\": \"Rome\"}"}),
        json!({"text": "{\"city\": \"Rome\", \"celsius\": 30}"}),
        json!({"text": "plain"}),
        json!({"text": "ok"}),
        json!({"text": "{\"response\": [\"Oslo\", \"Rome\"]}"}),
    ]);
    let exe = compile("tests/c/structured_test.c", "structured_test");
    let mut command = Command::new(&exe);
    command.arg(server.base_url());
    let output = run(command);
    assert_success(&output, "structured_test");
    let requests = server.requests();
    assert_eq!(requests.len(), 9);
    assert_eq!(
        requests[8].body["response_format"]["json_schema"]["schema"],
        json!({"type": "object", "properties": {"response": {"type": "array", "items": {"type": "string"}}},
               "required": ["response"], "additionalProperties": false})
    );
    assert_eq!(
        requests[7].body["tool_choice"],
        json!({"type": "function", "function": {"name": "lookup"}})
    );
    for request in &requests[..6] {
        assert_eq!(
            request.body["response_format"]["json_schema"]["name"],
            "weather"
        );
    }
    assert!(requests[6].body.get("response_format").is_none());
    let retry = requests[5].body["messages"].to_string();
    assert!(
        retry.contains("must have required properties celsius"),
        "{retry}"
    );
}

/// The reference MCP server's entry script (installed into the cache by
/// `tests/mcp/install-everything.sh`); `None` without node/npm.
fn mcp_everything() -> Option<std::path::PathBuf> {
    let output = Command::new("bash")
        .arg(repo_root().join("tests/mcp/install-everything.sh"))
        .output()
        .expect("bash runs");
    if output.status.code() == Some(2) {
        println!("SKIP: node/npm not found: the C MCP test is skipped");
        return None;
    }
    assert_success(&output, "tests/mcp/install-everything.sh");
    Some(String::from_utf8_lossy(&output.stdout).trim().into())
}

/// The reference server in Streamable HTTP mode on a free port, killed when dropped.
struct McpHttpServer(std::process::Child);

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The reference server over Streamable HTTP on a free port, once it listens.
fn mcp_http_server(entry: &Path) -> (McpHttpServer, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = McpHttpServer(
        Command::new("node")
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the MCP HTTP server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    (http, format!("http://127.0.0.1:{port}/mcp"))
}

#[test]
fn c_mcp_test() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (_http, url) = mcp_http_server(&entry);
    let exe = compile("tests/c/ffi_mcp_test.c", "ffi_mcp_test");
    let mut command = Command::new(&exe);
    command.arg(&entry).arg(url);
    let output = run(command);
    assert_success(&output, "ffi_mcp_test");
    assert!(String::from_utf8_lossy(&output.stdout).contains("ffi_mcp_test: ok"));
}

#[test]
fn c_mcp_test_under_valgrind() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (_http, url) = mcp_http_server(&entry);
    let exe = compile("tests/c/ffi_mcp_test.c", "ffi_mcp_test_valgrind");
    run_under_valgrind(&exe, &[&entry.display().to_string(), &url], "ffi_mcp_test");
}
