//! A typed answer from a real llama-server (see `core/tests/llama_server_typed.rs`) through the
//! C ABI: `tests/c/stream_result.c` streams with `outputSchema` in the options JSON; the events
//! carry `object_delta`s and the final message's text is JSON the grammar-constrained server
//! produced for the schema. Skipped only with `PI_LLAMA_SERVER_TESTS=0`.

#[path = "support/c_build.rs"]
mod c_build;
#[path = "../../core/tests/support/llama_server.rs"]
mod llama_server;

use std::process::Command;

use c_build::{assert_success, compile, run};
use llama_server::{LlamaServer, enabled};
use serde_json::{Value, json};

#[test]
fn a_typed_answer_from_a_real_llama_server_through_c() {
    if !enabled() {
        return;
    }
    let server = LlamaServer::start(&[]);
    let exe = compile("tests/c/stream_result.c", "stream_result_llama_typed");
    let api = "openai-completions";
    let model = json!({"id": "SmolLM2-135M-Instruct", "api": api, "provider": "llama.cpp",
        "baseUrl": server.base_url(api), "contextWindow": 512, "maxTokens": 256});
    let context = json!({"messages": [{"role": "user", "timestamp": 0,
        "content": "Give the largest city of France and its population as JSON."}]});
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"},
        "population": {"type": "integer"}}, "required": ["city", "population"],
        "additionalProperties": false});
    let options = json!({"apiKey": "local", "maxTokens": 64, "maxRetries": 2,
        "outputSchema": {"name": "city", "schema": schema, "strict": true}});
    let mut command = Command::new(&exe);
    command
        .arg(model.to_string())
        .arg(context.to_string())
        .arg(options.to_string())
        .arg("0");
    let output = run(command);
    assert_success(&output, "stream_result");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut objects = Vec::new();
    let mut result = Value::Null;
    for line in text.lines() {
        if let Some(event) = line.strip_prefix("EVENT ") {
            let event: Value = serde_json::from_str(event).unwrap();
            if event["type"] == "object_delta" {
                objects.push(event["object"].clone());
            }
        } else if let Some(message) = line.strip_prefix("RESULT ") {
            result = serde_json::from_str(message).unwrap();
        }
    }
    assert_eq!(
        result["stopReason"],
        "stop",
        "{result}\n{}",
        server.log_tail()
    );
    let answer_text = result["content"][0]["text"].as_str().unwrap();
    let answer: Value = serde_json::from_str(answer_text.trim()).unwrap();
    assert!(
        answer["city"].is_string() && answer["population"].is_u64(),
        "{answer}"
    );
    assert_eq!(objects.last(), Some(&answer), "{text}");
}
