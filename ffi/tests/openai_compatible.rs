//! The OpenAI-compatible population's stream shapes (`tests/fixtures/openai-compatible`)
//! through the C ABI: `tests/c/stream_result.c` streams each fixture from the mock server with
//! `pi_stream_open` / `pi_stream_next` and prints the events and `pi_stream_result_json`; the
//! final message C received must be the expected one, with no call merged, lost, or left with
//! an empty or duplicate id (the same checks as `core/tests/openai_compatible.rs`).

#[path = "support/c_build.rs"]
mod c_build;
#[path = "../../core/tests/support/openai_compatible.rs"]
mod openai_compatible;

use std::process::Command;

use c_build::{assert_success, compile, run};
use openai_compatible::{cases, check_invariants, reply, summarise};
use pi_mock_server::MockServer;
use serde_json::{Value, json};

/// The events and final message `stream_result` printed.
fn parse_output(stdout: &[u8]) -> (Vec<Value>, Value) {
    let text = String::from_utf8_lossy(stdout);
    let mut events = Vec::new();
    let mut result = Value::Null;
    for line in text.lines() {
        if let Some(event) = line.strip_prefix("EVENT ") {
            events.push(serde_json::from_str(event).unwrap());
        } else if let Some(message) = line.strip_prefix("RESULT ") {
            result = serde_json::from_str(message).unwrap();
        }
    }
    (events, result)
}

#[test]
fn every_family_shape_through_c() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let exe = compile("tests/c/stream_result.c", "stream_result_compatible");
    let context = json!({"messages": [{"role": "user", "content": "Weather?", "timestamp": 0}],
        "tools": [{"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}},
                  {"name": "get_time", "description": "Time", "parameters": {"type": "object"}}]});
    for case in cases() {
        for shaping in [json!({}), json!({"split_random": 17})] {
            let server = runtime.block_on(MockServer::start()).unwrap();
            server.push(reply(&case, &shaping));
            let model = json!({"id": "m", "api": "openai-completions", "provider": "mock",
                "baseUrl": server.base_url()});
            let mut command = Command::new(&exe);
            command
                .arg(model.to_string())
                .arg(context.to_string())
                .arg(r#"{"maxRetries":0}"#);
            let output = run(command);
            assert_success(&output, &case.name);
            let (events, message) = parse_output(&output.stdout);
            check_invariants(&case.name, &message);
            assert_eq!(
                summarise(&message, &case.expected),
                case.expected,
                "{} through C with {shaping}: {message:#}",
                case.name
            );
            let last = events.last().expect("events");
            assert!(
                matches!(last["type"].as_str(), Some("done" | "error")),
                "{}: {last}",
                case.name
            );
        }
    }
}
