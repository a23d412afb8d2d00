//! A real llama-server (see `core/tests/llama_server.rs`) through the C ABI:
//! `tests/c/stream_result.c` streams from its three routes with `pi_stream_open` /
//! `pi_stream_next` (and `pi_stream_abort`): text ends `done` with the server's own token
//! count, a max-tokens stop, an abort that frees the server's slot, and a prompt longer than
//! the context that is `errorKind` `context_overflow`. Skipped only with
//! `PI_LLAMA_SERVER_TESTS=0`.

#[path = "support/c_build.rs"]
mod c_build;
#[path = "../../core/tests/support/llama_server.rs"]
mod llama_server;

use std::process::Command;
use std::time::Duration;

use c_build::{assert_success, compile, run};
use llama_server::{LlamaServer, enabled, overlong_prompt};
use serde_json::{Value, json};

const PREDICTED: &str = "llamacpp:tokens_predicted_total";

/// Runs `stream_result` once: `(event types, final message)`.
fn stream(
    exe: &std::path::Path,
    server: &LlamaServer,
    api: &str,
    prompt: &str,
    max_tokens: u64,
    abort_after: u32,
) -> (Vec<String>, Value) {
    let model = json!({"id": "SmolLM2-135M-Instruct", "api": api, "provider": "llama.cpp",
        "baseUrl": server.base_url(api), "contextWindow": 512, "maxTokens": 256});
    let context = json!({"messages": [{"role": "user", "content": prompt, "timestamp": 0}]});
    let options = json!({"apiKey": "local", "maxTokens": max_tokens, "maxRetries": 2});
    let mut command = Command::new(exe);
    command
        .arg(model.to_string())
        .arg(context.to_string())
        .arg(options.to_string())
        .arg(abort_after.to_string());
    let output = run(command);
    assert_success(&output, api);
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut kinds = Vec::new();
    let mut result = Value::Null;
    for line in text.lines() {
        if let Some(event) = line.strip_prefix("EVENT ") {
            let event: Value = serde_json::from_str(event).unwrap();
            kinds.push(event["type"].as_str().unwrap().to_owned());
        } else if let Some(message) = line.strip_prefix("RESULT ") {
            result = serde_json::from_str(message).unwrap();
        }
    }
    (kinds, result)
}

#[test]
fn a_real_llama_server_through_c() {
    if !enabled() {
        return;
    }
    let exe = compile("tests/c/stream_result.c", "stream_result_llama");
    let server = LlamaServer::start(&[]);
    for api in [
        "openai-completions",
        "openai-responses",
        "anthropic-messages",
    ] {
        let before = server.metric(PREDICTED);
        let (kinds, message) = stream(&exe, &server, api, "Say hello.", 12, 0);
        assert_eq!(
            kinds.last().map(String::as_str),
            Some("done"),
            "{api}: {message}"
        );
        let predicted = server.metric(PREDICTED) - before;
        assert_eq!(
            message["usage"]["output"].as_f64(),
            Some(predicted),
            "{api}: {message}"
        );

        let (_, message) = stream(&exe, &server, api, "Tell me about the sea.", 3, 0);
        assert_eq!(message["usage"]["output"], 3, "{api}: {message}");
        // llama.cpp's /v1/responses never reports `incomplete` (see the Rust test).
        let expected = if api == "openai-responses" {
            "stop"
        } else {
            "length"
        };
        assert_eq!(message["stopReason"], expected, "{api}: {message}");

        let (kinds, message) = stream(&exe, &server, api, "Write a very long story.", 400, 1);
        assert_eq!(kinds.last().map(String::as_str), Some("error"), "{api}");
        assert_eq!(message["stopReason"], "aborted", "{api}: {message}");
        assert!(
            server.wait_idle(Duration::from_secs(120)),
            "{api}: still generating after the abort"
        );

        let (_, message) = stream(&exe, &server, api, &overlong_prompt(), 8, 0);
        assert_eq!(message["stopReason"], "error", "{api}: {message}");
        assert_eq!(message["errorKind"], "context_overflow", "{api}: {message}");
    }
}
