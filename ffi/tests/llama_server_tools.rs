//! A real tool call from a real llama-server (see `core/tests/llama_server_tools.rs`) through
//! the C ABI, on `/v1/chat/completions` and `/v1/responses`: `tests/c/llama_tool_call.c` runs an
//! agent turn with a C tool and an `on_payload` callback; the server's call runs the tool, its
//! result goes back with the call's id and the model answers in text. Skipped only with `PI_LLAMA_SERVER_TESTS=0`.

#[path = "support/c_build.rs"]
mod c_build;
#[path = "../../core/tests/support/llama_server.rs"]
mod llama_server;

use std::process::Command;

use c_build::{assert_success, compile, run};
use llama_server::{LlamaServer, SLOT_CONTEXT, enabled};
use serde_json::{Value, json};

#[test]
fn an_agent_turn_runs_a_real_tool_call_through_c() {
    if !enabled() {
        return;
    }
    let exe = compile("tests/c/llama_tool_call.c", "llama_tool_call");
    let server = LlamaServer::start_with_tool_template();
    // `/v1/messages` needs the tools dropped after a result (see the Rust test): not done in C.
    for api in ["openai-completions", "openai-responses"] {
        agent_turn(&exe, &server, api);
    }
}

fn agent_turn(exe: &std::path::Path, server: &LlamaServer, api: &str) {
    let model = json!({"id": "SmolLM2-135M-Instruct", "api": api, "provider": "llama.cpp",
        "baseUrl": server.base_url(api), "contextWindow": SLOT_CONTEXT, "maxTokens": 256});
    let options = json!({"apiKey": "local", "maxTokens": 48, "maxRetries": 2,
        "toolChoice": "required"});
    let mut command = Command::new(exe);
    command.arg(model.to_string()).arg(options.to_string());
    let output = run(command);
    assert_success(&output, "llama_tool_call");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (mut tools, mut payloads, mut messages) = (Vec::new(), Vec::new(), Value::Null);
    for line in text.lines() {
        let parse = |json: &str| serde_json::from_str::<Value>(json).unwrap();
        if let Some(args) = line.strip_prefix("TOOL ") {
            tools.push(parse(args));
        } else if let Some(body) = line.strip_prefix("PAYLOAD ") {
            payloads.push(parse(body));
        } else if let Some(json) = line.strip_prefix("MESSAGES ") {
            messages = parse(json);
        }
    }
    let roles: Vec<&str> = messages
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "assistant"],
        "{text}\n{}",
        server.log_tail()
    );
    assert_eq!(messages[1]["stopReason"], "toolUse", "{}", messages[1]);
    let call = &messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "toolCall")
        .expect("a tool call")
        .clone();
    assert_eq!(call["name"], "get_weather");
    let id = call["id"].as_str().unwrap();
    assert!(!id.is_empty(), "{call}");
    assert_eq!(messages[2]["toolCallId"], id);
    assert_eq!(messages[2]["isError"], false);
    assert_eq!(tools.len(), 1, "{tools:?}");
    let city = tools[0]["city"].as_str().unwrap_or_default().to_lowercase();
    assert!(city.contains("paris"), "{tools:?}");

    let answer = &messages[3];
    assert!(
        answer["stopReason"] == "stop" || answer["stopReason"] == "length",
        "{answer}"
    );
    let blocks = answer["content"].as_array().unwrap();
    assert!(blocks.iter().all(|b| b["type"] != "toolCall"), "{answer}");
    let answer_text: String = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
    assert!(!answer_text.trim().is_empty(), "{answer}");

    let choices: Vec<&Value> = payloads.iter().map(|p| &p["tool_choice"]).collect();
    assert_eq!(
        choices,
        [&json!("required"), &json!("none")],
        "{api}: {text}"
    );
    if api == "openai-completions" {
        let last = payloads[1]["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(last["tool_call_id"], id);
    }
}
