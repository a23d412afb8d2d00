//! The `openai-responses` and `azure-openai-responses` providers against the mock server, which
//! serves Responses SSE (`event: <type>\ndata: <json>\n\n`) byte for byte.

use std::collections::BTreeMap;

use futures::StreamExt;
use pi_agent::ai::providers::AzureOpenAIResponsesProvider;
use pi_agent::ai::providers::OpenAIResponsesProvider;
use pi_agent::ai::{CacheRetention, Callback};

/// The message of a body that ended before `response.completed`.
const INCOMPLETE_RESPONSE: &str =
    "Connection error: the provider closed the stream before the response was complete";
use pi_agent::ai::{
    self, ApiKey, ApiProvider, AssistantContent, AssistantMessage, AssistantMessageEvent, Context,
    ImageContent, Message, Model, StopReason, StreamOptions, TextContent, ThinkingContent,
    ThinkingLevel, Tool, ToolCall, ToolResultMessage, UserContent, UserMessage, UserMessageContent,
};
use pi_mock_server::MockServer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// Realistic Responses SSE, built event by event.
// ---------------------------------------------------------------------------------------------

fn event(kind: &str, mut data: Value) -> String {
    data["type"] = json!(kind);
    format!("event: {kind}\ndata: {data}\n\n")
}

fn created(id: &str) -> String {
    event(
        "response.created",
        json!({"sequence_number": 0, "response": {"id": id, "object": "response",
            "status": "in_progress", "model": "gpt-5-mini-2025-08-07", "output": [], "usage": null}}),
    )
}

fn message_item(index: u64, id: &str, deltas: &[&str], phase: Option<&str>) -> Vec<String> {
    let text: String = deltas.concat();
    let mut item = json!({"id": id, "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}]});
    if let Some(phase) = phase {
        item["phase"] = json!(phase);
    }
    let mut out = vec![
        event(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "message",
                "status": "in_progress", "content": [], "role": "assistant"}}),
        ),
        event(
            "response.content_part.added",
            json!({"item_id": id, "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "annotations": [], "text": ""}}),
        ),
    ];
    for delta in deltas {
        out.push(event(
            "response.output_text.delta",
            json!({"item_id": id, "output_index": index, "content_index": 0, "delta": delta,
                "logprobs": [], "obfuscation": "aZ3"}),
        ));
    }
    out.push(event(
        "response.output_text.done",
        json!({"item_id": id, "output_index": index, "content_index": 0, "text": text}),
    ));
    out.push(event(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    ));
    out
}

/// A reasoning item with summary parts; returns the events and the final item.
fn reasoning_item(index: u64, id: &str, parts: &[&[&str]]) -> (Vec<String>, Value) {
    let encrypted = format!("gAAAAABenc_{id}_opaque==");
    let summary: Vec<Value> = parts
        .iter()
        .map(|deltas| json!({"type": "summary_text", "text": deltas.concat()}))
        .collect();
    let item = json!({"id": id, "type": "reasoning", "encrypted_content": encrypted,
        "summary": summary});
    let mut out = vec![event(
        "response.output_item.added",
        json!({"output_index": index, "item": {"id": id, "type": "reasoning",
            "encrypted_content": encrypted, "summary": []}}),
    )];
    for (part, deltas) in parts.iter().enumerate() {
        out.push(event(
            "response.reasoning_summary_part.added",
            json!({"item_id": id, "output_index": index, "summary_index": part,
                "part": {"type": "summary_text", "text": ""}}),
        ));
        for delta in *deltas {
            out.push(event(
                "response.reasoning_summary_text.delta",
                json!({"item_id": id, "output_index": index, "summary_index": part,
                    "delta": delta}),
            ));
        }
        out.push(event(
            "response.reasoning_summary_part.done",
            json!({"item_id": id, "output_index": index, "summary_index": part,
                "part": {"type": "summary_text", "text": deltas.concat()}}),
        ));
    }
    out.push(event(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    ));
    (out, item)
}

fn function_call_item(index: u64, item_id: &str, call_id: &str, arguments: &str) -> Vec<String> {
    let mut out = vec![event(
        "response.output_item.added",
        json!({"output_index": index, "item": {"id": item_id, "type": "function_call",
            "status": "in_progress", "arguments": "", "call_id": call_id, "name": "calculator"}}),
    )];
    let chars: Vec<char> = arguments.chars().collect();
    for piece in chars.chunks(4) {
        out.push(event(
            "response.function_call_arguments.delta",
            json!({"item_id": item_id, "output_index": index,
                "delta": piece.iter().collect::<String>()}),
        ));
    }
    out.push(event(
        "response.function_call_arguments.done",
        json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
    ));
    out.push(event(
        "response.output_item.done",
        json!({"output_index": index, "item": {"id": item_id, "type": "function_call",
            "status": "completed", "arguments": arguments, "call_id": call_id,
            "name": "calculator"}}),
    ));
    out
}

fn usage(input: u64, cached: u64, output: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output})
}

fn terminal(kind: &str, id: &str, status: &str, usage: Value) -> String {
    event(
        kind,
        json!({"response": {"id": id, "object": "response", "status": status, "output": [],
            "service_tier": "default", "usage": usage}}),
    )
}

fn completed(id: &str, usage: Value) -> String {
    terminal("response.completed", id, "completed", usage)
}

fn text_reply(id: &str, text: &str) -> Value {
    let mut pieces = vec![created(id)];
    pieces.extend(message_item(0, &format!("msg_{id}"), &[text], None));
    pieces.push(completed(id, usage(10, 0, 2)));
    json!({"sse": pieces})
}

// ---------------------------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------------------------

fn model_for(server: &MockServer) -> Model {
    let mut model = Model::new(
        "openai-responses",
        "openai",
        "gpt-5-mini",
        server.base_url(),
    );
    model.cost.input = 1.0;
    model.cost.output = 2.0;
    model.cost.cache_read = 0.5;
    model.cost.cache_write = 1.25;
    model
}

fn reasoning_model(server: &MockServer) -> Model {
    let mut model = model_for(server);
    model.reasoning = true;
    model.thinking_level_map = Some([("off".to_owned(), None)].into());
    model
}

fn calculator() -> Tool {
    Tool {
        name: "calculator".into(),
        description: "Evaluates arithmetic".into(),
        parameters: json!({"type": "object", "properties": {"expression": {"type": "string"}},
                           "required": ["expression"]}),
    }
}

fn context(prompt: &str) -> Context {
    Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![Message::User(UserMessage::text(prompt))],
        tools: Some(vec![calculator()]),
    }
}

async fn collect_stream(
    mut stream: ai::AssistantMessageEventStream,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let message = stream.final_message().expect("stream ended");
    (events, message)
}

async fn collect(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    // `stream_simple`: these tests set `reasoning` (the agent's path).
    collect_stream(ai::stream_simple(model, context, options)).await
}

fn kinds(events: &[AssistantMessageEvent]) -> Vec<&'static str> {
    events.iter().map(AssistantMessageEvent::kind).collect()
}

fn no_retries() -> StreamOptions {
    StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn streams_text_with_signature_usage_and_cost() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("resp_1")];
    pieces.extend(message_item(
        0,
        "msg_abc",
        &["Hello", " there, ", "world!"],
        None,
    ));
    // 1000 prompt tokens: 200 read from the cache, 100 written to it (pi #3161).
    let mut counts = usage(1000, 200, 500);
    counts["input_tokens_details"]["cache_write_tokens"] = json!(100);
    pieces.push(completed("resp_1", counts));
    server.push(json!({"sse": pieces}));
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(message.text(), "Hello there, world!");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.response_id.as_deref(), Some("resp_1"));
    assert_eq!(message.api, "openai-responses");
    let AssistantContent::Text(text) = &message.content[0] else {
        panic!("expected text: {message:?}")
    };
    assert_eq!(
        text.text_signature.as_deref(),
        Some(r#"{"v":1,"id":"msg_abc"}"#)
    );
    let usage = message.usage;
    assert_eq!(
        (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write
        ),
        (700, 500, 200, 100)
    );
    assert_eq!(usage.total_tokens, 1500);
    let expected = (700.0 * 1.0 + 500.0 * 2.0 + 200.0 * 0.5 + 100.0 * 1.25) / 1_000_000.0;
    assert!((usage.cost.total - expected).abs() < 1e-12, "{usage:?}");
}

#[tokio::test]
async fn reasoning_summary_becomes_thinking_that_replays_the_exact_item() {
    let server = MockServer::start().await.unwrap();
    let (reasoning_events, item) = reasoning_item(
        0,
        "rs_1",
        &[&["**Plan**", "\n\nAdd them."], &["Then ", "answer."]],
    );
    let mut pieces = vec![created("resp_r")];
    pieces.extend(reasoning_events);
    pieces.extend(message_item(1, "msg_r", &["4"], Some("final_answer")));
    pieces.push(completed("resp_r", usage(50, 0, 30)));
    server.push(json!({"sse": pieces}));
    server.push(text_reply("resp_next", "ok"));
    let model = reasoning_model(&server);
    let options = StreamOptions {
        reasoning: Some(ThinkingLevel::High),
        ..StreamOptions::default()
    };
    let mut context = context("2+2?");
    let (events, message) = collect(&model, &context, &options).await;
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::ThinkingDelta { .. }))
        .filter_map(AssistantMessageEvent::delta)
        .collect();
    // As pi: every summary part ends with a blank-line delta (the final text, joined from the
    // item's parts, has no trailing one).
    assert_eq!(
        deltas,
        [
            "**Plan**",
            "\n\nAdd them.",
            "\n\n",
            "Then ",
            "answer.",
            "\n\n"
        ]
    );
    let AssistantContent::Thinking(thinking) = &message.content[0] else {
        panic!("expected thinking: {message:?}")
    };
    assert_eq!(thinking.thinking, "**Plan**\n\nAdd them.\n\nThen answer.");
    let signature: Value =
        serde_json::from_str(thinking.thinking_signature.as_deref().unwrap()).unwrap();
    assert_eq!(signature, item);
    let AssistantContent::Text(text) = &message.content[1] else {
        panic!("expected text")
    };
    assert_eq!(
        text.text_signature.as_deref(),
        Some(r#"{"v":1,"id":"msg_r","phase":"final_answer"}"#)
    );

    context.messages.push(Message::Assistant(message));
    context
        .messages
        .push(Message::User(UserMessage::text("thanks")));
    let second = ai::complete_simple(&model, &context, &options).await;
    assert_eq!(second.stop_reason, StopReason::Stop, "{second:?}");
    let requests = server.requests();
    let first_body = &requests[0].body;
    assert_eq!(
        first_body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(
        first_body["include"],
        json!(["reasoning.encrypted_content"])
    );
    assert_eq!(first_body["input"][0]["role"], "developer");
    let input = requests[1].body["input"].as_array().unwrap().clone();
    assert_eq!(input[2], item, "the reasoning item is replayed as received");
    assert_eq!(
        input[3],
        json!({"type": "message", "role": "assistant", "status": "completed", "id": "msg_r",
            "phase": "final_answer",
            "content": [{"type": "output_text", "text": "4", "annotations": []}]})
    );
}

#[tokio::test]
async fn a_call_id_that_comes_only_with_the_finished_item_makes_the_id() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("resp_l")];
    let mut call = function_call_item(0, "fc_1", "call_9", r#"{"expression":"6*7"}"#);
    // `output_item.added` without its `call_id`.
    call[0] = call[0].replace(r#""call_id":"call_9","#, "");
    assert!(!call[0].contains("call_9"), "{}", call[0]);
    pieces.extend(call);
    pieces.push(completed("resp_l", usage(30, 0, 20)));
    server.push(json!({"sse": pieces}));
    let (events, message) = collect(
        &model_for(&server),
        &context("compute"),
        &StreamOptions::default(),
    )
    .await;
    let ids: Vec<&str> = message.tool_calls().map(|call| call.id.as_str()).collect();
    assert_eq!(ids, ["call_9|fc_1"]);
    let ended = events.iter().find_map(|event| match event {
        AssistantMessageEvent::ToolCallEnd { tool_call, .. } => Some(tool_call.id.clone()),
        _ => None,
    });
    assert_eq!(ended.as_deref(), Some("call_9|fc_1"));
}

#[tokio::test]
async fn function_calls_stream_by_item_and_replay_with_their_results() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("resp_t")];
    pieces.extend(function_call_item(
        0,
        "fc_1",
        "call_A",
        r#"{"expression":"6*7"}"#,
    ));
    pieces.extend(function_call_item(
        1,
        "fc_2",
        "call_B",
        r#"{"expression":"1+1"}"#,
    ));
    pieces.push(completed("resp_t", usage(30, 0, 20)));
    server.push(json!({"sse": pieces}));
    server.push(text_reply("resp_2", "42 and 2"));
    let model = model_for(&server);
    let mut context = context("compute");
    let (events, message) = collect(&model, &context, &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "call_A|fc_1");
    assert_eq!(calls[0].name, "calculator");
    assert_eq!(calls[0].arguments, json!({"expression": "6*7"}));
    assert_eq!(calls[1].id, "call_B|fc_2");
    assert_eq!(calls[1].arguments, json!({"expression": "1+1"}));
    // Blocks are sequential: each call ends before the next starts.
    let shape: Vec<&str> = kinds(&events)
        .into_iter()
        .filter(|k| *k != "toolcall_delta")
        .collect();
    assert_eq!(
        shape,
        [
            "start",
            "toolcall_start",
            "toolcall_end",
            "toolcall_start",
            "toolcall_end",
            "done"
        ]
    );
    let streamed: String = events
        .iter()
        .filter(|e| e.content_index() == Some(0))
        .filter_map(AssistantMessageEvent::delta)
        .collect();
    assert_eq!(streamed, r#"{"expression":"6*7"}"#);

    let ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
    context.messages.push(Message::Assistant(message.clone()));
    for (id, output) in ids.iter().zip(["42", "2"]) {
        context
            .messages
            .push(Message::ToolResult(ToolResultMessage {
                tool_call_id: id.clone(),
                tool_name: "calculator".into(),
                content: vec![UserContent::text(output)],
                ..ToolResultMessage::default()
            }));
    }
    let second = ai::complete(&model, &context, &StreamOptions::default()).await;
    assert_eq!(second.text(), "42 and 2");
    let input = server.requests()[1].body["input"].clone();
    assert_eq!(
        input[2],
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_A", "name": "calculator",
            "arguments": "{\"expression\":\"6*7\"}"})
    );
    assert_eq!(input[3]["id"], "fc_2");
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": "call_A", "output": "42"})
    );
    assert_eq!(
        input[5],
        json!({"type": "function_call_output", "call_id": "call_B", "output": "2"})
    );
}

#[tokio::test]
async fn any_chunk_boundaries_give_the_same_message() {
    let fixture = FIXTURE.split_inclusive("\n\n").collect::<Vec<_>>();
    let mut reference: Option<Vec<Value>> = None;
    for shaping in [
        json!({}),
        json!({"split": 1}),
        json!({"split_random": 7}),
        json!({"split_random": 12345}),
        json!({"split": 13}),
    ] {
        let server = MockServer::start().await.unwrap();
        let mut script = json!({"sse": fixture});
        for (key, value) in shaping.as_object().unwrap() {
            script[key] = value.clone();
        }
        server.push(script);
        let (events, message) = collect(
            &fixture_model(&server),
            &fixture_context(),
            &StreamOptions::default(),
        )
        .await;
        assert_eq!(
            message.stop_reason,
            StopReason::ToolUse,
            "{shaping}: {message:?}"
        );
        let mut summary: Vec<Value> = events
            .iter()
            .filter(|e| e.kind().ends_with("_end"))
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        let joined: String = events
            .iter()
            .filter_map(AssistantMessageEvent::delta)
            .collect();
        summary.push(json!(joined));
        let mut final_message = serde_json::to_value(&message).unwrap();
        final_message["timestamp"] = json!(0);
        // Measured, so it differs from run to run.
        final_message
            .as_object_mut()
            .unwrap()
            .shift_remove("timing");
        summary.push(final_message);
        match &reference {
            None => reference = Some(summary),
            Some(reference) => assert_eq!(&summary, reference, "{shaping}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parity with pi on a recorded stream.
// ---------------------------------------------------------------------------------------------

/// A realistic stream: a reasoning item with two summary parts, a `commentary` message and a
/// function call, with cached input tokens.
const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/openai-responses/reasoning_text_function_call.sse"
));

/// What pi 0.73.1 emitted for [`FIXTURE`] and the body it sent for the follow-up turn
/// (recorded by running pi against the mock server binary).
const PI_RECORDING: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/openai-responses/reasoning_text_function_call.pi.json"
));

/// JSON numbers as floats, so that pi's `0` and our `0.0` compare equal.
fn numbers_as_floats(value: Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => items.into_iter().map(numbers_as_floats).collect(),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, numbers_as_floats(v)))
                .collect(),
        ),
        other => other,
    }
}

fn fixture_model(server: &MockServer) -> Model {
    let mut model = Model::new(
        "openai-responses",
        "openai",
        "gpt-5-mini",
        server.base_url(),
    );
    model.name = "GPT-5 mini".into();
    model.reasoning = true;
    model.thinking_level_map = Some([("off".to_owned(), None)].into());
    model.input = vec![ai::InputModality::Text, ai::InputModality::Image];
    model.cost.input = 0.25;
    model.cost.output = 2.0;
    model.cost.cache_read = 0.025;
    model.context_window = 400_000;
    model.max_tokens = 128_000;
    model
}

fn fixture_context() -> Context {
    Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![Message::User(UserMessage {
            content: UserMessageContent::Text("What is 6*7?".into()),
            timestamp: 1,
        })],
        tools: Some(vec![calculator()]),
    }
}

fn fixture_options() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("sk-test")),
        session_id: Some("session-42".into()),
        reasoning: Some(ThinkingLevel::Medium),
        max_tokens: Some(4096),
        ..StreamOptions::default()
    }
}

#[tokio::test]
async fn same_events_message_and_replay_body_as_pi_for_a_recorded_stream() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": FIXTURE.split_inclusive("\n\n").collect::<Vec<_>>()}));
    server.push(json!({"sse": [completed("resp_2", usage(10, 0, 2))]}));
    let model = fixture_model(&server);
    let mut context = fixture_context();
    let (events, message) = collect(&model, &context, &fixture_options()).await;
    let pi: Value = serde_json::from_str(PI_RECORDING).unwrap();

    // pi sends "\n\n" after every summary part, the last one too; so do we.
    let pi_events: Vec<Value> = pi["events"].as_array().unwrap().clone();

    assert_eq!(events.len(), pi_events.len(), "{:?}", kinds(&events));
    for (ours, theirs) in events.iter().zip(&pi_events) {
        assert_eq!(ours.kind(), theirs["type"], "{ours:?} vs {theirs}");
        assert_eq!(
            ours.content_index().map(|i| json!(i)),
            theirs.get("contentIndex").cloned(),
            "{ours:?} vs {theirs}"
        );
        assert_eq!(
            ours.delta().map(|d| json!(d)),
            theirs.get("delta").cloned(),
            "{ours:?} vs {theirs}"
        );
        match ours {
            AssistantMessageEvent::TextEnd { content, .. }
            | AssistantMessageEvent::ThinkingEnd { content, .. } => {
                assert_eq!(json!(content), theirs["content"]);
            }
            AssistantMessageEvent::ToolCallEnd { tool_call, .. } => {
                let block = AssistantContent::ToolCall(tool_call.clone());
                assert_eq!(serde_json::to_value(block).unwrap(), theirs["toolCall"]);
            }
            _ => {}
        }
    }

    // The final message is pi's, except that the thinking signature is the same item with its
    // keys in another order.
    let mut ours = serde_json::to_value(Message::Assistant(message.clone())).unwrap();
    let mut theirs = pi["message"].clone();
    let signature = |m: &mut Value| -> Value {
        let text = m["content"][0]["thinkingSignature"].take();
        serde_json::from_str(text.as_str().unwrap()).unwrap()
    };
    assert_eq!(signature(&mut ours), signature(&mut theirs));
    ours["timestamp"] = json!(0);
    ours.as_object_mut().unwrap().shift_remove("timing");
    assert_eq!(numbers_as_floats(ours), numbers_as_floats(theirs));

    // The follow-up turn sends exactly pi's body.
    let call_id = message.tool_calls().next().unwrap().id.clone();
    context.messages.push(Message::Assistant(message));
    context
        .messages
        .push(Message::ToolResult(ToolResultMessage {
            tool_call_id: call_id,
            tool_name: "calculator".into(),
            content: vec![UserContent::text("42")],
            details: None,
            is_error: false,
            timestamp: 3,
            timing: None,
        }));
    context.messages.push(Message::User(UserMessage {
        content: UserMessageContent::Blocks(vec![UserContent::text("And in words?")]),
        timestamp: 4,
    }));
    let second = ai::complete_simple(&model, &context, &fixture_options()).await;
    assert_eq!(second.stop_reason, StopReason::Stop, "{second:?}");
    let requests = server.requests();
    assert_eq!(requests[1].body, pi["replayRequestBody"]);
    assert_eq!(requests[1].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(requests[1].header("session_id"), Some("session-42"));
    assert_eq!(
        requests[1].header("x-client-request-id"),
        Some("session-42")
    );
}

// ---------------------------------------------------------------------------------------------
// Request body.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn sends_the_request_pi_sends() {
    let server = MockServer::start().await.unwrap();
    server.push(text_reply("r", "ok"));
    let mut model = model_for(&server);
    model.headers = Some([("x-model".to_owned(), "m".to_owned())].into());
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-test-123")),
        max_tokens: Some(64),
        temperature: Some(0.5),
        session_id: Some("sess-1".into()),
        cache_retention: Some(CacheRetention::Long),
        headers: [
            ("x-extra".to_owned(), "1".to_owned()),
            ("X-Model".to_owned(), "overridden".to_owned()),
        ]
        .into(),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model, &context("hi"), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(request.header("x-extra"), Some("1"));
    assert_eq!(request.header("x-model"), Some("overridden"));
    assert_eq!(request.header("session_id"), Some("sess-1"));
    assert_eq!(request.header("x-client-request-id"), Some("sess-1"));
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-5-mini",
            "input": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
            ],
            "stream": true,
            "prompt_cache_key": "sess-1",
            "prompt_cache_retention": "24h",
            "store": false,
            "max_output_tokens": 64,
            "temperature": 0.5,
            "tools": [{"type": "function", "name": "calculator",
                "description": "Evaluates arithmetic", "strict": false,
                "parameters": calculator().parameters}]
        })
    );
}

#[tokio::test]
async fn cache_retention_and_compat_flags() {
    let server = MockServer::start().await.unwrap();
    for _ in 0..2 {
        server.push(text_reply("r", "ok"));
    }
    let mut model = model_for(&server);
    let none = StreamOptions {
        session_id: Some("s".into()),
        cache_retention: Some(CacheRetention::None),
        ..StreamOptions::default()
    };
    ai::complete(&model, &context("hi"), &none).await;
    model.compat = Some(json!({"sendSessionIdHeader": false, "supportsLongCacheRetention": false}));
    let long = StreamOptions {
        session_id: Some("s".into()),
        cache_retention: Some(CacheRetention::Long),
        ..StreamOptions::default()
    };
    ai::complete(&model, &context("hi"), &long).await;
    let requests = server.requests();
    assert!(requests[0].body.get("prompt_cache_key").is_none());
    assert_eq!(requests[0].header("session_id"), None);
    assert_eq!(requests[0].header("x-client-request-id"), None);
    assert_eq!(requests[1].body["prompt_cache_key"], "s");
    assert!(requests[1].body.get("prompt_cache_retention").is_none());
    assert_eq!(requests[1].header("session_id"), None);
    assert_eq!(requests[1].header("x-client-request-id"), Some("s"));
}

#[tokio::test]
async fn reasoning_is_switched_off_explicitly_unless_the_model_cannot() {
    let server = MockServer::start().await.unwrap();
    for _ in 0..4 {
        server.push(text_reply("r", "ok"));
    }
    let mut model = reasoning_model(&server);
    // `off: null`: the model cannot switch reasoning off, so nothing is sent.
    ai::complete(&model, &context("hi"), &StreamOptions::default()).await;
    // No map: pi sends effort "none".
    model.thinking_level_map = None;
    ai::complete(&model, &context("hi"), &StreamOptions::default()).await;
    // A map entry renames the effort; xhigh clamps to high when the map does not list it.
    model.thinking_level_map = Some([("low".to_owned(), Some("minimal".to_owned()))].into());
    let low = StreamOptions {
        reasoning: Some(ThinkingLevel::Low),
        ..StreamOptions::default()
    };
    ai::complete_simple(&model, &context("hi"), &low).await;
    let xhigh = StreamOptions {
        reasoning: Some(ThinkingLevel::Xhigh),
        ..StreamOptions::default()
    };
    ai::complete_simple(&model, &context("hi"), &xhigh).await;
    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert!(bodies[0].get("reasoning").is_none());
    assert!(bodies[0].get("include").is_none());
    assert_eq!(bodies[1]["reasoning"], json!({"effort": "none"}));
    assert!(bodies[1].get("include").is_none());
    assert_eq!(
        bodies[2]["reasoning"],
        json!({"effort": "minimal", "summary": "auto"})
    );
    assert_eq!(
        bodies[3]["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(bodies[3]["include"], json!(["reasoning.encrypted_content"]));
}

#[tokio::test]
async fn provider_options_service_tier_and_summary() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("r")];
    pieces.extend(message_item(0, "msg_1", &["ok"], None));
    pieces.push(event(
        "response.completed",
        json!({"response": {"id": "r", "status": "completed", "service_tier": "flex",
            "usage": usage(1000, 0, 1000)}}),
    ));
    server.push(json!({"sse": pieces}));
    // Per-request provider options, as pi's `OpenAIResponsesOptions`.
    let options: StreamOptions =
        serde_json::from_value(json!({"serviceTier": "flex", "reasoningSummary": "detailed"}))
            .unwrap();
    let model = reasoning_model(&server);
    let (_, message) =
        collect_stream(OpenAIResponsesProvider.stream(&model, &context("hi"), &options)).await;
    let body = &server.requests()[0].body;
    assert_eq!(body["service_tier"], "flex");
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "detailed"})
    );
    let full_price = (1000.0 * 1.0 + 1000.0 * 2.0) / 1_000_000.0;
    assert!((message.usage.cost.total - full_price * 0.5).abs() < 1e-12);
}

#[tokio::test]
async fn images_go_as_input_images_and_inside_tool_outputs() {
    let server = MockServer::start().await.unwrap();
    server.push(text_reply("r", "ok"));
    let mut model = model_for(&server);
    model.input = vec![ai::InputModality::Text, ai::InputModality::Image];
    let image = ImageContent {
        data: "AAAA".into(),
        mime_type: "image/png".into(),
    };
    let context = Context {
        system_prompt: None,
        messages: vec![
            Message::User(UserMessage {
                content: UserMessageContent::Blocks(vec![
                    UserContent::text("look"),
                    UserContent::Image(image.clone()),
                ]),
                timestamp: 0,
            }),
            Message::Assistant(AssistantMessage {
                content: vec![AssistantContent::ToolCall(ToolCall {
                    id: "call_1|fc_1".into(),
                    name: "screenshot".into(),
                    arguments: json!({}),
                    thought_signature: None,
                })],
                api: "openai-responses".into(),
                provider: "openai".into(),
                model: "gpt-5-mini".into(),
                stop_reason: StopReason::ToolUse,
                ..AssistantMessage::default()
            }),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "call_1|fc_1".into(),
                tool_name: "screenshot".into(),
                content: vec![UserContent::Image(image)],
                ..ToolResultMessage::default()
            }),
        ],
        tools: None,
    };
    ai::complete(&model, &context, &StreamOptions::default()).await;
    let input = server.requests()[0].body["input"].clone();
    let image_part = json!({"type": "input_image", "detail": "auto",
        "image_url": "data:image/png;base64,AAAA"});
    assert_eq!(
        input[0]["content"],
        json!([{"type": "input_text", "text": "look"}, image_part])
    );
    assert_eq!(input[1]["arguments"], "{}");
    assert_eq!(
        input[2],
        json!({"type": "function_call_output", "call_id": "call_1", "output": [image_part]})
    );
}

// ---------------------------------------------------------------------------------------------
// Replaying other providers' messages.
// ---------------------------------------------------------------------------------------------

fn assistant_from(
    provider: &str,
    api: &str,
    model: &str,
    content: Vec<AssistantContent>,
) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        api: api.into(),
        provider: provider.into(),
        model: model.into(),
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    })
}

fn result_for(id: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "calculator".into(),
        content: vec![UserContent::text("42")],
        ..ToolResultMessage::default()
    })
}

#[tokio::test]
async fn a_corrupt_thinking_signature_is_downgraded_to_text_not_a_failure() {
    let server = MockServer::start().await.unwrap();
    server.push(text_reply("r", "fine"));
    let model = model_for(&server);
    let thinking = |signature: &str, text: &str| {
        AssistantContent::Thinking(ThinkingContent {
            thinking: text.into(),
            thinking_signature: Some(signature.into()),
            redacted: None,
        })
    };
    // Same provider, api and model, so the blocks are replayed natively, but the signatures
    // are not reasoning items: an Anthropic signature, a truncated item, a completions field.
    let context = Context {
        system_prompt: None,
        messages: vec![
            Message::User(UserMessage::text("hi")),
            assistant_from(
                "openai",
                "openai-responses",
                "gpt-5-mini",
                vec![
                    thinking("EqQBCkgIARABGAIiQKx9", "I considered it."),
                    thinking(r#"{"type":"reasoning","id":"rs_1","summ"#, ""),
                    thinking("reasoning_content", "More thought."),
                    AssistantContent::Text(TextContent::new("Answer.")),
                ],
            ),
            Message::User(UserMessage::text("and?")),
        ],
        tools: None,
    };
    let message = ai::complete(&model, &context, &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.text(), "fine");
    let input = server.requests()[0].body["input"].clone();
    let items = input.as_array().unwrap();
    assert!(items.iter().all(|item| item["type"] != "reasoning"));
    let texts: Vec<(&str, &str)> = items
        .iter()
        .filter(|item| item["type"] == "message")
        .map(|item| {
            (
                item["id"].as_str().unwrap(),
                item["content"][0]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        texts,
        [
            ("msg_1", "I considered it."),
            ("msg_1_1", "More thought."),
            ("msg_1_2", "Answer.")
        ]
    );
}

#[tokio::test]
async fn foreign_tool_call_ids_get_hashed_item_ids() {
    let server = MockServer::start().await.unwrap();
    server.push(text_reply("r", "ok"));
    let model = model_for(&server);
    let call = |id: &str| {
        AssistantContent::ToolCall(ToolCall {
            id: id.into(),
            name: "calculator".into(),
            arguments: json!({"expression": "1"}),
            thought_signature: None,
        })
    };
    let context = Context {
        system_prompt: None,
        messages: vec![
            Message::User(UserMessage::text("hi")),
            // Another provider on the same protocol: its item id means nothing to OpenAI.
            assistant_from(
                "github-copilot",
                "openai-responses",
                "gpt-5",
                vec![call("call_x.1|item/with*junk")],
            ),
            result_for("call_x.1|item/with*junk"),
            // Same provider and api, other model: the `fc_` id is left out.
            assistant_from(
                "openai",
                "openai-responses",
                "gpt-4.1",
                vec![call("call_y|fc_y")],
            ),
            result_for("call_y|fc_y"),
            // Another protocol without pipe ids: sanitised as one id.
            assistant_from(
                "anthropic",
                "anthropic-messages",
                "claude",
                vec![call("toolu_01.A")],
            ),
            result_for("toolu_01.A"),
        ],
        tools: Some(vec![calculator()]),
    };
    let message = ai::complete(&model, &context, &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let input = server.requests()[0].body["input"].clone();
    let foreign = &input[1];
    assert_eq!(foreign["call_id"], "call_x_1");
    let item_id = foreign["id"].as_str().unwrap();
    assert!(
        item_id.starts_with("fc_")
            && item_id.len() <= 3 + 14
            && item_id[3..].chars().all(|c| c.is_ascii_alphanumeric()),
        "{item_id}"
    );
    assert_eq!(input[2]["call_id"], "call_x_1");
    assert_eq!(input[3]["call_id"], "call_y");
    assert!(input[3].get("id").is_none(), "{}", input[3]);
    assert_eq!(input[4]["call_id"], "call_y");
    assert_eq!(input[5]["call_id"], "toolu_01_A");
    assert!(input[5].get("id").is_none());
    assert_eq!(input[6]["call_id"], "toolu_01_A");
}

// ---------------------------------------------------------------------------------------------
// Stop reasons and failures.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn incomplete_response_stops_for_length() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("r")];
    pieces.extend(message_item(0, "msg_1", &["cut sh"], None));
    pieces.push(event(
        "response.incomplete",
        json!({"response": {"id": "r", "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"}, "usage": usage(10, 0, 16)}}),
    ));
    server.push(json!({"sse": pieces}));
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(kinds(&events).last(), Some(&"done"));
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.usage.output, 16);
    assert_eq!(message.text(), "cut sh");
}

#[tokio::test]
async fn a_response_cut_by_the_content_filter_is_an_error_not_a_length_stop() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("r")];
    pieces.extend(message_item(0, "msg_1", &["I can"], None));
    pieces.push(event(
        "response.incomplete",
        json!({"response": {"id": "r", "status": "incomplete",
            "incomplete_details": {"reason": "content_filter"}, "usage": usage(10, 0, 2)}}),
    ));
    server.push(json!({"sse": pieces}));
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(kinds(&events).last(), Some(&"error"));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Response incomplete: content_filter")
    );
    assert!(message.error_kind.is_some(), "{message:?}");
    assert_eq!(message.text(), "I can");
}

#[tokio::test]
async fn failed_response_is_an_error_with_the_upstream_reason() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("r")];
    pieces.push(event(
        "response.output_item.added",
        json!({"output_index": 0, "item": {"id": "msg_1", "type": "message", "content": []}}),
    ));
    pieces.push(event(
        "response.output_text.delta",
        json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Part"}),
    ));
    pieces.push(event(
        "response.failed",
        json!({"response": {"id": "r", "status": "failed",
            "error": {"code": "server_error", "message": "The model crashed"},
            "usage": usage(10, 0, 1)}}),
    ));
    server.push(json!({"sse": pieces}));
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "error"],
        "no *_end after a failure"
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("server_error: The model crashed")
    );
    assert_eq!(message.text(), "Part");
    assert_eq!(message.usage.input, 10);
}

#[tokio::test]
async fn failure_statuses_inside_completed_keep_their_reason() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": [created("r"), terminal("response.completed", "r", "cancelled", usage(1, 0, 1))]}));
    let (_, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Response status: cancelled")
    );
}

#[tokio::test]
async fn error_event_mid_stream_keeps_partial_text() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("r")];
    pieces.extend(
        message_item(0, "msg_1", &["Half"], None)
            .into_iter()
            .take(3),
    );
    pieces.push(event(
        "error",
        json!({"code": "rate_limit_exceeded", "message": "Too many tokens", "param": null,
            "sequence_number": 5}),
    ));
    pieces.push(completed("r", usage(1, 0, 1)));
    server.push(json!({"sse": pieces}));
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(kinds(&events).last(), Some(&"error"));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Error Code rate_limit_exceeded: Too many tokens")
    );
    assert_eq!(message.text(), "Half");
}

#[tokio::test]
async fn http_errors_carry_status_and_provider_message() {
    for (status, body, expected) in [
        (
            400,
            json!({"error": {"message": "Invalid value: 'input_txt'.", "type": "invalid_request_error",
                "param": "input[0].content[0].type", "code": "invalid_value"}}),
            "400 Invalid value: 'input_txt'.",
        ),
        (
            429,
            json!({"error": {"message": "Rate limit reached for gpt-5-mini", "type": "tokens"}}),
            "429 Rate limit reached for gpt-5-mini",
        ),
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(json!({"status": status, "body": body}));
        let (events, message) = collect(&model_for(&server), &context("hi"), &no_retries()).await;
        assert_eq!(
            kinds(&events),
            ["error"],
            "no start before a failed request"
        );
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(message.error_message.as_deref(), Some(expected));
    }
}

#[tokio::test]
async fn malformed_event_is_a_clear_error() {
    let server = MockServer::start().await.unwrap();
    server
        .push(json!({"sse": [created("r"), "event: response.output_text.delta\ndata: {nope\n\n"]}));
    let (_, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Malformed event from provider"),
        "{message:?}"
    );
}

#[tokio::test]
async fn dropped_connection_keeps_partial_content() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("r")];
    pieces.extend(message_item(0, "msg_1", &["one ", "two ", "three"], None));
    pieces.push(completed("r", usage(1, 0, 1)));
    let cut: usize = pieces[..4].iter().map(String::len).sum::<usize>() + 20;
    server.push(json!({"sse": pieces, "drop_after_bytes": cut}));
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(kinds(&events).first(), Some(&"start"));
    assert_eq!(kinds(&events).last(), Some(&"error"));
    assert!(!kinds(&events).contains(&"text_end"));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection error"),
        "{message:?}"
    );
    assert_eq!(message.text(), "one ");
}

#[tokio::test]
async fn clean_close_before_completion_is_an_error() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("r")];
    pieces.extend(message_item(0, "msg_1", &["all but the end"], None));
    server.push(json!({"sse": pieces}));
    let (_, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_message.as_deref(), Some(INCOMPLETE_RESPONSE));
    assert_eq!(message.text(), "all but the end");
}

#[tokio::test]
async fn unannounced_items_and_replaced_arguments_are_handled() {
    let server = MockServer::start().await.unwrap();
    let pieces = vec![
        created("r"),
        // A server that never announces its items and puts the arguments only in `done`.
        event(
            "response.output_item.done",
            json!({"output_index": 0, "item": {"id": "fc_9", "type": "function_call",
                "call_id": "call_9", "name": "calculator", "arguments": "{\"expression\":\"2\"}"}}),
        ),
        // Deltas that the final arguments do not extend: the final ones win.
        event(
            "response.output_item.added",
            json!({"output_index": 1, "item": {"id": "fc_10", "type": "function_call",
                "call_id": "call_10", "name": "calculator", "arguments": ""}}),
        ),
        event(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_10", "output_index": 1, "delta": "{\"expression\":\"wro"}),
        ),
        event(
            "response.function_call_arguments.done",
            json!({"item_id": "fc_10", "output_index": 1,
                "arguments": "{\"expression\":\"right\"}"}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 1, "item": {"id": "fc_10", "type": "function_call",
                "call_id": "call_10", "name": "calculator",
                "arguments": "{\"expression\":\"right\"}"}}),
        ),
        completed("r", usage(1, 0, 1)),
    ];
    server.push(json!({"sse": pieces}));
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    // The `toolcall_end` event carries the final arguments too, not the streamed ones.
    let ended: Vec<&ToolCall> = events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::ToolCallEnd { tool_call, .. } => Some(tool_call),
            _ => None,
        })
        .collect();
    assert_eq!(ended[1].arguments, json!({"expression": "right"}));
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    assert_eq!(calls[0].id, "call_9|fc_9");
    assert_eq!(calls[0].arguments, json!({"expression": "2"}));
    assert_eq!(calls[1].id, "call_10|fc_10");
    assert_eq!(calls[1].arguments, json!({"expression": "right"}));
}

#[tokio::test]
async fn interleaved_items_and_unknown_events() {
    let server = MockServer::start().await.unwrap();
    let delta = |kind: &str, id: &str, index: u64, text: &str| {
        event(
            kind,
            json!({"item_id": id, "output_index": index, "content_index": 0, "delta": text}),
        )
    };
    let pieces = vec![
        ": keep-alive\n\n".to_owned(),
        created("r"),
        event("response.in_progress", json!({"response": {"id": "r"}})),
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "ws_1", "type": "web_search_call"}}),
        ),
        event(
            "response.output_item.added",
            json!({"output_index": 1, "item": {"id": "msg_1", "type": "message", "content": []}}),
        ),
        event(
            "response.output_item.added",
            json!({"output_index": 2, "item": {"id": "fc_1", "type": "function_call",
                "call_id": "call_1", "name": "calculator", "arguments": ""}}),
        ),
        delta("response.output_text.delta", "msg_1", 1, "Hel"),
        delta(
            "response.function_call_arguments.delta",
            "fc_1",
            2,
            "{\"expression\":",
        ),
        delta("response.refusal.delta", "msg_1", 1, "lo"),
        event(
            "response.output_text.annotation.added",
            json!({"item_id": "msg_1", "annotation": {"type": "url_citation"}}),
        ),
        delta(
            "response.function_call_arguments.delta",
            "fc_1",
            2,
            "\"3\"}",
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 2, "item": {"id": "fc_1", "type": "function_call",
                "call_id": "call_1", "name": "calculator", "arguments": "{\"expression\":\"3\"}"}}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 1, "item": {"id": "msg_1", "type": "message",
                "content": [{"type": "output_text", "text": "Hel"}, {"type": "refusal", "refusal": "lo"}]}}),
        ),
        completed("r", usage(1, 0, 1)),
    ];
    server.push(json!({"sse": pieces}));
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(message.text(), "Hello");
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.arguments, json!({"expression": "3"}));
    let ends: Vec<(&str, Option<usize>)> = events
        .iter()
        .filter(|e| e.kind().ends_with("_end"))
        .map(|e| (e.kind(), e.content_index()))
        .collect();
    assert_eq!(ends, [("toolcall_end", Some(1)), ("text_end", Some(0))]);
}

#[tokio::test]
async fn abort_mid_stream_keeps_partial_text() {
    let server = MockServer::start().await.unwrap();
    let mut pieces = vec![created("r")];
    pieces.extend(message_item(
        0,
        "msg_1",
        &["one ", "two ", "three ", "four ", "five ", "six"],
        None,
    ));
    pieces.push(completed("r", usage(1, 0, 1)));
    server.push(json!({"sse": pieces, "delay_ms": 30}));
    let token = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(token.clone()),
        ..StreamOptions::default()
    };
    let mut stream = ai::stream(&model_for(&server), &context("hi"), &options);
    let mut deltas = 0;
    let mut last = None;
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            deltas += 1;
            if deltas == 2 {
                token.cancel();
            }
        }
        last = Some(event);
    }
    let Some(AssistantMessageEvent::Error { reason, error }) = last else {
        panic!("expected a terminal error")
    };
    assert_eq!(reason, StopReason::Aborted);
    assert_eq!(error.error_message.as_deref(), Some("Request was aborted"));
    assert!(error.text().starts_with("one two"));
}

#[tokio::test]
async fn missing_key_for_a_remote_endpoint_names_the_variable() {
    if std::env::var("OPENAI_API_KEY").is_ok() {
        return;
    }
    let model = Model::new(
        "openai-responses",
        "openai",
        "gpt-5",
        "https://api.openai.invalid/v1",
    );
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(kinds(&events), ["error"]);
    assert!(message.error_message.unwrap().contains("OPENAI_API_KEY"));
}

#[tokio::test]
async fn on_payload_replaces_the_body_and_on_response_sees_the_status() {
    use std::sync::{Arc, Mutex};
    let server = MockServer::start().await.unwrap();
    server.push(text_reply("r", "ok"));
    let seen = Arc::new(Mutex::new(None));
    let sink = Arc::clone(&seen);
    let options = StreamOptions {
        on_payload: Some(Callback(Arc::new(|body: &Value, _: &Model| {
            let mut body = body.clone();
            body["metadata"] = json!({"tenant": "7"});
            Ok(Some(body))
        }))),
        on_response: Some(Callback(Arc::new(
            move |status: u16, _: &BTreeMap<String, String>, _: &Model| {
                *sink.lock().unwrap() = Some(status);
            },
        ))),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model_for(&server), &context("hi"), &options).await;
    assert_eq!(message.text(), "ok");
    assert_eq!(
        server.requests()[0].body["metadata"],
        json!({"tenant": "7"})
    );
    assert_eq!(*seen.lock().unwrap(), Some(200));
}

#[tokio::test]
async fn cloudflare_gateway_authenticates_with_its_own_header() {
    let server = MockServer::start().await.unwrap();
    server.push(text_reply("r", "ok"));
    let mut model = model_for(&server);
    model.provider = "cloudflare-ai-gateway".into();
    let options = StreamOptions {
        api_key: Some(ApiKey::new("cf-key")),
        ..StreamOptions::default()
    };
    ai::complete(&model, &context("hi"), &options).await;
    let request = &server.requests()[0];
    assert_eq!(
        request.header("cf-aig-authorization"),
        Some("Bearer cf-key")
    );
    assert_eq!(request.header("authorization"), None);
}

// ---------------------------------------------------------------------------------------------
// Azure.
// ---------------------------------------------------------------------------------------------

fn azure_model(base_url: &str) -> Model {
    let mut model = Model::new(
        "azure-openai-responses",
        "azure-openai-responses",
        "gpt-5-mini",
        base_url,
    );
    model.reasoning = true;
    model.thinking_level_map = Some([("off".to_owned(), None)].into());
    model
}

#[tokio::test]
async fn azure_uses_its_endpoint_api_key_and_deployment() {
    let server = MockServer::start().await.unwrap();
    server.push(text_reply("r", "from azure"));
    let provider = AzureOpenAIResponsesProvider;
    let options = StreamOptions {
        azure_base_url: Some(format!("{}/", server.base_url())),
        azure_api_version: Some("2025-04-01-preview".into()),
        azure_deployment_name: Some("prod-gpt5-mini".into()),
        api_key: Some(ApiKey::new("azure-secret")),
        session_id: Some("sess".into()),
        // pi's Azure provider sends the cache key whatever the retention.
        cache_retention: Some(CacheRetention::None),
        reasoning: Some(ThinkingLevel::Low),
        ..StreamOptions::default()
    };
    let (events, message) = collect_stream(provider.stream_simple(
        &azure_model("https://ignored.openai.azure.com"),
        &context("hi"),
        &options,
    ))
    .await;
    assert_eq!(kinds(&events).last(), Some(&"done"), "{message:?}");
    assert_eq!(message.text(), "from azure");
    assert_eq!(message.api, "azure-openai-responses");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses?api-version=2025-04-01-preview");
    assert_eq!(request.header("api-key"), Some("azure-secret"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("session_id"), None);
    let body = &request.body;
    assert_eq!(body["model"], "prod-gpt5-mini");
    assert_eq!(body["prompt_cache_key"], "sess");
    assert!(body.get("store").is_none());
    assert_eq!(
        body["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
}

#[tokio::test]
async fn azure_through_the_registry_uses_the_model_base_url() {
    if std::env::var("AZURE_OPENAI_BASE_URL").is_ok()
        || std::env::var("AZURE_OPENAI_RESOURCE_NAME").is_ok()
        || std::env::var("AZURE_OPENAI_API_VERSION").is_ok()
        || std::env::var("AZURE_OPENAI_DEPLOYMENT_NAME_MAP").is_ok()
    {
        return;
    }
    let server = MockServer::start().await.unwrap();
    server.push(text_reply("r", "ok"));
    let options = StreamOptions {
        api_key: Some(ApiKey::new("k")),
        ..StreamOptions::default()
    };
    let message = ai::complete(&azure_model(&server.base_url()), &context("hi"), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses?api-version=v1");
    assert_eq!(request.body["model"], "gpt-5-mini");
    assert_eq!(request.header("api-key"), Some("k"));
}

#[tokio::test]
async fn azure_without_a_base_url_or_with_a_bad_one_is_an_error_event() {
    if std::env::var("AZURE_OPENAI_BASE_URL").is_ok()
        || std::env::var("AZURE_OPENAI_RESOURCE_NAME").is_ok()
    {
        return;
    }
    let provider = AzureOpenAIResponsesProvider;
    let options = StreamOptions {
        api_key: Some(ApiKey::new("k")),
        ..StreamOptions::default()
    };
    let (events, message) =
        collect_stream(provider.stream(&azure_model(""), &context("hi"), &options)).await;
    assert_eq!(kinds(&events), ["error"]);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Azure OpenAI base URL is required"),
        "{message:?}"
    );
    let (_, message) =
        collect_stream(provider.stream(&azure_model("::not a url"), &context("hi"), &options))
            .await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("Invalid Azure OpenAI base URL: ::not a url")
    );
}

#[tokio::test]
async fn an_empty_reasoning_item_is_not_replayed() {
    let server = MockServer::start().await.unwrap();
    let empty = json!({"id": "rs_e", "type": "reasoning", "summary": []});
    let mut pieces = vec![
        created("resp_e"),
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": empty}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 0, "item": empty}),
        ),
    ];
    pieces.extend(message_item(1, "msg_e", &["4"], None));
    pieces.push(completed("resp_e", usage(50, 0, 30)));
    server.push(json!({"sse": pieces}));
    server.push(text_reply("resp_next", "ok"));
    let model = reasoning_model(&server);
    let options = StreamOptions {
        reasoning: Some(ThinkingLevel::High),
        ..StreamOptions::default()
    };
    let mut context = context("2+2?");
    let (_, message) = collect(&model, &context, &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    // The transcript keeps the item (as pi does); only the replay leaves it out.
    assert!(
        message.content.iter().any(|block| matches!(block,
            AssistantContent::Thinking(t) if t.thinking_signature.as_deref().is_some_and(|s| s.contains("rs_e")))),
        "{message:?}"
    );
    context.messages.push(Message::Assistant(message));
    context
        .messages
        .push(Message::User(UserMessage::text("thanks")));
    let second = ai::complete_simple(&model, &context, &options).await;
    assert_eq!(second.stop_reason, StopReason::Stop, "{second:?}");
    let input = server.requests()[1].body["input"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        input.iter().all(|item| item["type"] != "reasoning"),
        "{input:#?}"
    );
    // The answer itself is still replayed.
    assert!(input.iter().any(|item| item["id"] == "msg_e"), "{input:#?}");
}
