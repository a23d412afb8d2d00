//! A real tool call from a real server, through Rust: llama.cpp's `llama-server` (see
//! `llama_server.rs`) with `--jinja --chat-template-file scripts/llama-server/tool-call.jinja`,
//! whose call format has no start marker, so `tool_choice: "required"` makes the server's
//! grammar force a call (see the template's comment for why SmolLM2-135M needs that). An agent
//! turn gets the streamed call, runs the tool with the arguments the model chose, sends the
//! result back and gets a plain-text answer. The first request asks `required`, the one after a
//! tool result asks `none`: an `on_payload` hook switches it, as a user forcing one call would.
//! Skipped only with `PI_LLAMA_SERVER_TESTS=0`.

#[path = "support/llama_server.rs"]
mod llama_server;

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use llama_server::{LlamaServer, SLOT_CONTEXT, enabled};
use pi_agent::agent::{
    Agent, AgentMessage, AgentOptions, AgentSettings, AgentToolResult, FnTool, ToolCallContext,
};
use pi_agent::ai::{ApiKey, Callback, Model, StopReason, StreamOptions, ToolChoice};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_turn_runs_a_real_tool_call_from_llama_server() {
    if !enabled() {
        return;
    }
    let server = LlamaServer::start_with_tool_template();
    let api = "openai-completions";
    let mut model = Model::new(
        api,
        "llama.cpp",
        "SmolLM2-135M-Instruct",
        server.base_url(api),
    );
    model.context_window = SLOT_CONTEXT as u64;
    model.max_tokens = 256;

    let calls: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = Arc::clone(&calls);
    let tool = FnTool::new(
        "get_weather",
        "Get the weather for a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}),
        move |call: ToolCallContext| {
            seen.lock().unwrap().push(call.arguments.clone());
            async { Ok(AgentToolResult::text("Sunny, 21 degrees")) }.boxed()
        },
    );
    let payloads: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sent = Arc::clone(&payloads);
    let stream_options = StreamOptions {
        api_key: Some(ApiKey::new("local")),
        max_tokens: Some(48),
        max_retries: Some(0),
        tool_choice: Some(ToolChoice::Required),
        on_payload: Some(Callback(Arc::new(move |body: &Value, _: &Model| {
            let mut body = body.clone();
            let after_result = body["messages"]
                .as_array()
                .and_then(|messages| messages.last())
                .is_some_and(|last| last["role"] == "tool");
            if after_result {
                body["tool_choice"] = json!("none");
            }
            sent.lock().unwrap().push(body.clone());
            Some(body)
        }))),
        ..StreamOptions::default()
    };
    let agent = Agent::new(AgentOptions {
        model: Some(model),
        tools: vec![Arc::new(tool)],
        settings: AgentSettings {
            stream_options,
            ..AgentSettings::default()
        },
        ..AgentOptions::default()
    });
    let outcome = agent
        .prompt("What is the weather in Paris? Use the tool.")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail()));

    // assistant (tool call), tool result, assistant (answer), after the user's prompt.
    let messages: Vec<&AgentMessage> = outcome.new_messages.iter().collect();
    let kinds: Vec<&str> = messages
        .iter()
        .map(|m| match m {
            m if m.as_assistant().is_some() => "assistant",
            m if m.as_tool_result().is_some() => "toolResult",
            _ => "user",
        })
        .collect();
    assert_eq!(
        kinds,
        ["user", "assistant", "toolResult", "assistant"],
        "{messages:#?}\n{}",
        server.log_tail()
    );
    let first = messages[1].as_assistant().unwrap();
    assert_eq!(first.stop_reason, StopReason::ToolUse, "{first:?}");
    let call = first.tool_calls().next().expect("a tool call");
    assert_eq!(call.name, "get_weather");
    // The server's id (llama.cpp generates one), replayed as the result's `tool_call_id`.
    assert!(!call.id.is_empty(), "{call:?}");
    let result = messages[2].as_tool_result().unwrap();
    assert_eq!(result.tool_call_id, call.id);
    assert!(!result.is_error, "{result:?}");

    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let city = calls[0]["city"].as_str().unwrap_or_default();
    assert!(city.to_lowercase().contains("paris"), "{calls:?}");

    let answer = messages[3].as_assistant().unwrap();
    assert!(
        matches!(answer.stop_reason, StopReason::Stop | StopReason::Length),
        "{answer:?}"
    );
    assert_eq!(answer.tool_calls().count(), 0, "{answer:?}");
    assert!(!answer.text().trim().is_empty(), "{answer:?}");

    // What went over the wire: the call replayed with its id, then the tool's text.
    let payloads = payloads.lock().unwrap().clone();
    assert_eq!(payloads.len(), 2, "{payloads:#?}");
    assert_eq!(payloads[0]["tool_choice"], "required");
    assert_eq!(payloads[1]["tool_choice"], "none");
    let replayed = &payloads[1]["messages"];
    let assistant = replayed
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the call is replayed");
    assert_eq!(assistant["tool_calls"][0]["id"], call.id.as_str());
    let tool = replayed.as_array().unwrap().last().unwrap();
    assert_eq!(tool["tool_call_id"], call.id.as_str());
}
