//! A real tool call from a real server, through Rust, on its three routes: llama.cpp's
//! `llama-server` (see `llama_server.rs`) with `--jinja --chat-template-file scripts/llama-server/tool-call.jinja`,
//! whose call format has no start marker, so `tool_choice: "required"` makes the server's
//! grammar force a call (see the template's comment for why SmolLM2-135M needs that). An agent
//! turn gets the streamed call, runs the tool with the arguments the model chose, sends the
//! result back and gets a plain-text answer. The first request asks `required`, the one after a
//! tool result asks `none` (on `/v1/messages`, which maps no `none`, it sends no tools): an
//! `on_payload` hook switches it, as a user forcing one call would.
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

/// Whether `body` (of `api`'s wire shape) sends a tool result last.
fn after_tool_result(api: &str, body: &Value) -> bool {
    let last = |key: &str| body[key].as_array().and_then(|items| items.last()).cloned();
    match api {
        "openai-completions" => last("messages").is_some_and(|m| m["role"] == "tool"),
        "openai-responses" => last("input").is_some_and(|i| i["type"] == "function_call_output"),
        _ => last("messages").is_some_and(|m| {
            m["content"]
                .as_array()
                .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
        }),
    }
}

/// Lets the model answer in text after a tool result: `tool_choice` `none` (llama.cpp's
/// `/v1/messages` maps no `none`, so there the tools go: no tools, no call).
fn answer_in_text(api: &str, body: &mut Value) {
    if api == "anthropic-messages" {
        let object = body.as_object_mut().expect("a JSON object");
        object.remove("tools");
        object.remove("tool_choice");
    } else {
        body["tool_choice"] = json!("none");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_turn_runs_a_real_tool_call_from_llama_server() {
    if !enabled() {
        return;
    }
    let server = LlamaServer::start_with_tool_template();
    for api in [
        "openai-completions",
        "openai-responses",
        "anthropic-messages",
    ] {
        agent_turn(&server, api).await;
    }
}

async fn agent_turn(server: &LlamaServer, api: &str) {
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
        // llama-server closes a keep-alive connection idle for 5 s; a request that races the
        // close fails with "connection closed before message completed", a network error the
        // shared policy retries.
        max_retries: Some(2),
        tool_choice: Some(ToolChoice::Required),
        on_payload: Some(Callback(Arc::new(move |body: &Value, model: &Model| {
            let mut body = body.clone();
            if after_tool_result(&model.api, &body) {
                answer_in_text(&model.api, &mut body);
            }
            sent.lock().unwrap().push(body.clone());
            Ok(Some(body))
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
        "{api}: {messages:#?}\n{}",
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

    // What went over the wire: a forced call, then the result with the call's id.
    let payloads = payloads.lock().unwrap().clone();
    assert_eq!(payloads.len(), 2, "{api}: {payloads:#?}");
    assert!(!after_tool_result(api, &payloads[0]), "{api}");
    assert!(after_tool_result(api, &payloads[1]), "{api}");
    if api == "openai-completions" {
        assert_eq!(payloads[0]["tool_choice"], "required");
        assert_eq!(payloads[1]["tool_choice"], "none");
        let replayed = payloads[1]["messages"].as_array().unwrap();
        let assistant = replayed
            .iter()
            .find(|m| m["role"] == "assistant")
            .expect("the call is replayed");
        assert_eq!(assistant["tool_calls"][0]["id"], call.id.as_str());
        assert_eq!(replayed.last().unwrap()["tool_call_id"], call.id.as_str());
    }
}
