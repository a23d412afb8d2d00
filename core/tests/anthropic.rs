//! The `anthropic-messages` provider against the mock server, fed the Messages API's own SSE
//! bytes (`event: <type>\ndata: <json>\n\n`), cut anywhere.

use futures::StreamExt;
use pi_agent::ai::CacheRetention;
use pi_agent::ai::NO_RESULT_PROVIDED;
use pi_agent::ai::{
    self, ApiKey, AssistantContent, AssistantMessage, AssistantMessageEvent, Context, ImageContent,
    InputModality, Message, Model, StopReason, StreamOptions, TextContent, ThinkingContent,
    ThinkingLevel, Tool, ToolCall, ToolChoice, ToolResultMessage, UserContent, UserMessage,
};
use pi_mock_server::MockServer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A recorded-style response: thinking (signed), text, then a tool call streamed in pieces.
const THINKING_TEXT_TOOL_USE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/anthropic/thinking_text_tool_use.sse"
));
/// The signature in that fixture, split over two `signature_delta`s.
const FIXTURE_SIGNATURE: &str =
    "EqQBCkgIBxABGAIiQL3j8mJ0Lr2nq1ZkQ8cL0WfG4m9X6s1vY7tB3bH2cKpD5eA8uN0rJ4iE6oT9wS+/==";

fn base_url(server: &MockServer) -> String {
    // The mock server reports `http://127.0.0.1:PORT/v1`; Anthropic base URLs have no `/v1`.
    server.base_url().trim_end_matches("/v1").to_owned()
}

fn model_for(server: &MockServer) -> Model {
    let mut model = Model::new(
        "anthropic-messages",
        "anthropic",
        "claude-sonnet-4-5",
        base_url(server),
    );
    model.reasoning = true;
    model.input = vec![InputModality::Text, InputModality::Image];
    model.max_tokens = 64_000;
    model.context_window = 200_000;
    model.cost.input = 3.0;
    model.cost.output = 15.0;
    model.cost.cache_read = 0.3;
    model.cost.cache_write = 3.75;
    model
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("sk-ant-api03-test")),
        ..StreamOptions::default()
    }
}

fn calculator() -> Tool {
    Tool {
        name: "calculator".into(),
        description: "Evaluates arithmetic".into(),
        parameters: json!({"type": "object", "properties": {"expression": {"type": "string"}},
                           "required": ["expression"], "additionalProperties": false}),
    }
}

fn context(prompt: &str) -> Context {
    Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![Message::User(UserMessage::text(prompt))],
        tools: Some(vec![calculator()]),
    }
}

fn event(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

fn message_start(input: u64, cache_read: u64, cache_write: u64) -> String {
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_01TestMessageId", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": null,
            "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_read_input_tokens": cache_read,
                      "cache_creation_input_tokens": cache_write, "output_tokens": 1}}}),
    )
}

fn block_start(index: u64, block: Value) -> String {
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn block_delta(index: u64, delta: Value) -> String {
    event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: u64) -> String {
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn text_block(index: u64, pieces: &[&str]) -> Vec<String> {
    let mut out = vec![block_start(index, json!({"type": "text", "text": ""}))];
    for piece in pieces {
        out.push(block_delta(
            index,
            json!({"type": "text_delta", "text": piece}),
        ));
    }
    out.push(block_stop(index));
    out
}

fn tool_block(index: u64, id: &str, name: &str, arguments: &str, piece: usize) -> Vec<String> {
    let mut out = vec![block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    )];
    let chars: Vec<char> = arguments.chars().collect();
    for chunk in chars.chunks(piece) {
        let partial: String = chunk.iter().collect();
        out.push(block_delta(
            index,
            json!({"type": "input_json_delta", "partial_json": partial}),
        ));
    }
    out.push(block_stop(index));
    out
}

fn message_end(stop_reason: &str, output: u64) -> Vec<String> {
    vec![
        event(
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                   "usage": {"output_tokens": output}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
}

fn sse(parts: Vec<Vec<String>>) -> Value {
    json!({"sse": parts.concat()})
}

async fn collect(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let mut stream = ai::stream(model, context, options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let message = stream.final_message().expect("stream ended");
    (events, message)
}

fn kinds(events: &[AssistantMessageEvent]) -> Vec<&'static str> {
    events.iter().map(AssistantMessageEvent::kind).collect()
}

#[tokio::test]
async fn streams_text_with_usage_from_start_and_delta() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![message_start(1000, 200, 300)],
        vec![event("ping", json!({"type": "ping"}))],
        text_block(0, &["Hello", " there,", " world!"]),
        message_end("end_turn", 50),
    ]));
    let model = model_for(&server);
    let (events, message) = collect(&model, &context("hi"), &options()).await;
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
    let AssistantMessageEvent::TextEnd { content, .. } = &events[5] else {
        panic!("{:?}", events[5])
    };
    assert_eq!(content, "Hello there, world!");
    assert_eq!(message.text(), "Hello there, world!");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.error_message, None);
    assert_eq!(message.response_id.as_deref(), Some("msg_01TestMessageId"));
    assert_eq!(
        (message.api.as_str(), message.provider.as_str()),
        ("anthropic-messages", "anthropic")
    );
    let usage = message.usage;
    assert_eq!(
        (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write
        ),
        (1000, 50, 200, 300)
    );
    assert_eq!(usage.total_tokens, 1550);
    let expected = (1000.0 * 3.0 + 50.0 * 15.0 + 200.0 * 0.3 + 300.0 * 3.75) / 1_000_000.0;
    assert!((usage.cost.total - expected).abs() < 1e-12, "{usage:?}");
    assert!((usage.cost.cache_write - 300.0 * 3.75 / 1_000_000.0).abs() < 1e-12);
}

#[tokio::test]
async fn message_delta_usage_replaces_without_double_counting() {
    let server = MockServer::start().await.unwrap();
    let mut parts = vec![vec![message_start(10, 0, 0)], text_block(0, &["ok"])];
    parts.push(vec![
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                   "usage": {"input_tokens": 12, "output_tokens": 7, "cache_read_input_tokens": 5}}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 9}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]);
    server.push(sse(parts));
    let (_, message) = collect(&model_for(&server), &context("hi"), &options()).await;
    let usage = message.usage;
    assert_eq!(
        (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write
        ),
        (12, 9, 5, 0)
    );
    assert_eq!(usage.total_tokens, 26);
    assert_eq!(message.stop_reason, StopReason::Stop);
}

#[tokio::test]
async fn thinking_signature_and_redacted_thinking_replay_exactly() {
    let server = MockServer::start().await.unwrap();
    let signature = "Er8CCkYIBRgCKkDx+/=sig==";
    server.push(sse(vec![
        vec![message_start(20, 0, 0)],
        vec![
            block_start(
                0,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
            ),
            block_delta(0, json!({"type": "thinking_delta", "thinking": "Let me "})),
            block_delta(0, json!({"type": "thinking_delta", "thinking": "think. ✓"})),
            block_delta(
                0,
                json!({"type": "signature_delta", "signature": &signature[..10]}),
            ),
            block_delta(
                0,
                json!({"type": "signature_delta", "signature": &signature[10..]}),
            ),
            block_stop(0),
            block_start(
                1,
                json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}),
            ),
            block_stop(1),
        ],
        text_block(2, &["Answer."]),
        message_end("end_turn", 30),
    ]));
    server.push(sse(vec![
        vec![message_start(40, 0, 0)],
        text_block(0, &["Again."]),
        message_end("end_turn", 2),
    ]));
    let model = model_for(&server);
    let options = StreamOptions {
        reasoning: Some(ThinkingLevel::Low),
        ..options()
    };
    let mut context = context("think");
    let (events, first) = collect(&model, &context, &options).await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "thinking_start",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    let AssistantMessageEvent::ThinkingEnd {
        content,
        content_signature,
        ..
    } = &events[4]
    else {
        panic!()
    };
    assert_eq!(content, "Let me think. ✓");
    assert_eq!(content_signature.as_deref(), Some(signature));
    assert_eq!(
        first.content,
        [
            AssistantContent::Thinking(ThinkingContent {
                thinking: "Let me think. ✓".into(),
                thinking_signature: Some(signature.into()),
                redacted: None,
            }),
            AssistantContent::Thinking(ThinkingContent {
                thinking: "[Reasoning redacted]".into(),
                thinking_signature: Some("EmwKAhgBEgy3va3pzix/LafPsn4a".into()),
                redacted: Some(true),
            }),
            AssistantContent::Text(TextContent::new("Answer.")),
        ]
    );

    context.messages.push(Message::Assistant(first));
    context
        .messages
        .push(Message::User(UserMessage::text("again")));
    let second = ai::complete(&model, &context, &options).await;
    assert_eq!(second.text(), "Again.");
    let requests = server.requests();
    let replayed = &requests[1].body["messages"][1];
    assert_eq!(
        *replayed,
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Let me think. ✓", "signature": signature},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "text", "text": "Answer."}
        ]})
    );
}

#[tokio::test]
async fn tool_use_arguments_arrive_in_many_pieces() {
    let server = MockServer::start().await.unwrap();
    let arguments =
        r#"{"expression": "(1 + 2) * 3 — ünïcödé", "precision": 4, "flags": [true, null]}"#;
    server.push(sse(vec![
        vec![message_start(50, 0, 0)],
        text_block(0, &["Computing."]),
        tool_block(1, "toolu_01AbC", "calculator", arguments, 3),
        message_end("tool_use", 40),
    ]));
    let (events, message) = collect(&model_for(&server), &context("compute"), &options()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e.kind() == "toolcall_delta")
        .filter_map(AssistantMessageEvent::delta)
        .collect();
    assert!(deltas.len() > 20);
    assert_eq!(deltas.concat(), arguments);
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("toolu_01AbC", "calculator")
    );
    let expected =
        json!({"expression": "(1 + 2) * 3 — ünïcödé", "precision": 4, "flags": [true, null]});
    assert_eq!(calls[0].arguments, expected);
    let Some(AssistantMessageEvent::ToolCallEnd {
        content_index,
        tool_call,
    }) = events.iter().find(|e| e.kind() == "toolcall_end")
    else {
        panic!()
    };
    assert_eq!(*content_index, 1);
    assert_eq!(tool_call.arguments, expected);
    let json = serde_json::to_string(&message).unwrap();
    assert!(!json.contains("partialJson") && !json.contains("\"index\""));
}

#[tokio::test]
async fn tool_input_given_whole_at_block_start_is_kept() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![message_start(5, 0, 0)],
        vec![
            block_start(
                0,
                json!({"type": "tool_use", "id": "toolu_1", "name": "calculator",
                                  "input": {"expression": "2+2"}}),
            ),
            block_stop(0),
        ],
        message_end("tool_use", 3),
    ]));
    let (_, message) = collect(&model_for(&server), &context("hi"), &options()).await;
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.arguments, json!({"expression": "2+2"}));
}

#[tokio::test]
async fn any_chunk_boundaries_give_the_same_message() {
    let mut reference: Option<Vec<Value>> = None;
    for shaping in [
        json!({}),
        json!({"split": 1}),
        json!({"split": 13}),
        json!({"split_random": 7}),
        json!({"split_random": 99}),
    ] {
        let server = MockServer::start().await.unwrap();
        let mut script = json!({"sse": THINKING_TEXT_TOOL_USE});
        for (key, value) in shaping.as_object().unwrap() {
            script[key] = value.clone();
        }
        server.push(script);
        let (events, message) = collect(&model_for(&server), &context("hi"), &options()).await;
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
        let mut final_message = serde_json::to_value(&message).unwrap();
        final_message["timestamp"] = json!(0);
        // Measured, so it differs from run to run.
        final_message
            .as_object_mut()
            .unwrap()
            .shift_remove("timing");
        summary.push(final_message);
        match &reference {
            None => {
                let AssistantContent::Thinking(thinking) = &message.content[0] else {
                    panic!("{message:?}")
                };
                assert_eq!(
                    thinking.thinking,
                    "The user wants 6 × 7 — ünïcödé ✓. I'll use the calculator tool."
                );
                assert_eq!(
                    thinking.thinking_signature.as_deref(),
                    Some(FIXTURE_SIGNATURE)
                );
                assert_eq!(message.text(), "Sure — let me compute that ✓");
                assert_eq!(
                    message.tool_calls().next().unwrap().arguments,
                    json!({"expression": "6*7", "note": "ünïcödé ✓"})
                );
                assert_eq!((message.usage.input, message.usage.output), (2095, 187));
                assert_eq!(
                    (message.usage.cache_read, message.usage.cache_write),
                    (4096, 1024)
                );
                assert_eq!(message.usage.total_tokens, 2095 + 187 + 4096 + 1024);
                reference = Some(summary);
            }
            Some(reference) => assert_eq!(&summary, reference, "{shaping}"),
        }
    }
}

#[tokio::test]
async fn sends_the_request_pi_sends() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![message_start(1, 0, 0)],
        text_block(0, &["ok"]),
        message_end("end_turn", 1),
    ]));
    let model = model_for(&server);
    let context = Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![
            Message::User(UserMessage::text("add and look")),
            Message::Assistant(AssistantMessage {
                content: vec![
                    AssistantContent::Text(TextContent::new("Two calls.")),
                    AssistantContent::ToolCall(ToolCall {
                        id: "toolu_a".into(),
                        name: "calculator".into(),
                        arguments: json!({"expression": "1+1"}),
                        thought_signature: None,
                    }),
                    AssistantContent::ToolCall(ToolCall {
                        id: "toolu_b".into(),
                        name: "screenshot".into(),
                        arguments: json!({}),
                        thought_signature: None,
                    }),
                ],
                api: "anthropic-messages".into(),
                provider: "anthropic".into(),
                model: "claude-sonnet-4-5".into(),
                stop_reason: StopReason::ToolUse,
                ..AssistantMessage::default()
            }),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "toolu_a".into(),
                tool_name: "calculator".into(),
                content: vec![UserContent::text("2"), UserContent::text("(exact)")],
                ..ToolResultMessage::default()
            }),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "toolu_b".into(),
                tool_name: "screenshot".into(),
                content: vec![UserContent::Image(ImageContent {
                    data: "iVBORw0KGgo=".into(),
                    mime_type: "image/png".into(),
                })],
                is_error: true,
                ..ToolResultMessage::default()
            }),
        ],
        tools: Some(vec![
            calculator(),
            Tool {
                name: "screenshot".into(),
                description: "Takes a screenshot".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
        ]),
    };
    let options = StreamOptions {
        max_tokens: Some(32_000),
        temperature: Some(0.2),
        reasoning: Some(ThinkingLevel::Medium),
        tool_choice: Some(ToolChoice::Auto),
        headers: [("x-extra".to_owned(), "1".to_owned())].into(),
        cache_retention: Some(CacheRetention::Short),
        ..options()
    };
    // The agent's path: `reasoning` is mapped onto the thinking options.
    let message = ai::complete_simple(&model, &context, &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let requests = server.requests();
    let request = &requests[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-api03-test"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        request.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-extra"), Some("1"));
    let cache = json!({"type": "ephemeral"});
    assert_eq!(
        request.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 40_192,
            "stream": true,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": cache}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "add and look"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Two calls."},
                    {"type": "tool_use", "id": "toolu_a", "name": "calculator",
                     "input": {"expression": "1+1"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "screenshot", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "2\n(exact)",
                     "is_error": false},
                    {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true,
                     "content": [
                        {"type": "text", "text": "(see attached image)"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                     "data": "iVBORw0KGgo="}}
                     ],
                     "cache_control": cache}
                ]}
            ],
            "tools": [
                {"name": "calculator", "description": "Evaluates arithmetic",
                 "eager_input_streaming": true,
                 "input_schema": {"type": "object",
                                  "properties": {"expression": {"type": "string"}},
                                  "required": ["expression"]}},
                {"name": "screenshot", "description": "Takes a screenshot",
                 "eager_input_streaming": true,
                 "input_schema": {"type": "object", "properties": {}, "required": []},
                 "cache_control": cache}
            ],
            "thinking": {"type": "enabled", "budget_tokens": 8192, "display": "summarized"},
            "tool_choice": {"type": "auto"}
        })
    );
}

#[tokio::test]
async fn thinking_off_temperature_and_cache_retention_variants() {
    let server = MockServer::start().await.unwrap();
    for _ in 0..5 {
        server.push(sse(vec![
            vec![message_start(1, 0, 0)],
            text_block(0, &["ok"]),
            message_end("end_turn", 1),
        ]));
    }
    let mut model = model_for(&server);
    let plain = Context {
        system_prompt: Some("sys".into()),
        messages: vec![Message::User(UserMessage {
            content: pi_agent::ai::UserMessageContent::Text("hello".into()),
            timestamp: 0,
        })],
        tools: None,
    };
    // Reasoning model without a level through `stream_simple`: thinking is switched off
    // explicitly, temperature is kept, max_tokens defaults to min(model limit, 32000).
    let with_temperature = StreamOptions {
        temperature: Some(0.7),
        cache_retention: Some(CacheRetention::Short),
        ..options()
    };
    ai::complete_simple(&model, &plain, &with_temperature).await;
    // Long retention: one-hour markers.
    let long = StreamOptions {
        cache_retention: Some(CacheRetention::Long),
        ..options()
    };
    ai::complete(&model, &plain, &long).await;
    // No retention: no markers at all.
    let none = StreamOptions {
        cache_retention: Some(CacheRetention::None),
        ..options()
    };
    ai::complete(&model, &plain, &none).await;
    // Plain `stream` sends no thinking field at all (the api's default applies, as in pi's
    // `stream`), and max_tokens defaults to a third of the model's limit.
    ai::complete(&model, &plain, &options()).await;
    // A model without reasoning gets no thinking field; a level alone keeps temperature.
    model.reasoning = false;
    let level = StreamOptions {
        reasoning: Some(ThinkingLevel::High),
        temperature: Some(0.3),
        ..options()
    };
    ai::complete_simple(&model, &plain, &level).await;

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies[0]["thinking"], json!({"type": "disabled"}));
    assert_eq!(bodies[0]["temperature"], 0.7);
    assert_eq!(bodies[0]["max_tokens"], 32_000);
    assert_eq!(
        bodies[0]["messages"][0],
        json!({"role": "user", "content": [
            {"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]})
    );
    assert!(bodies[0].get("tools").is_none());
    let one_hour = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(bodies[1]["system"][0]["cache_control"], one_hour);
    assert_eq!(
        bodies[1]["messages"][0]["content"][0]["cache_control"],
        one_hour
    );
    assert!(bodies[2]["system"][0].get("cache_control").is_none());
    assert_eq!(
        bodies[2]["messages"][0],
        json!({"role": "user", "content": "hello"})
    );
    assert!(bodies[3].get("thinking").is_none(), "{}", bodies[3]);
    assert_eq!(bodies[3]["max_tokens"], 64_000 / 3);
    assert!(bodies[4].get("thinking").is_none());
    assert_eq!(bodies[4]["temperature"], 0.3);
}

#[tokio::test]
async fn adaptive_models_get_an_effort_instead_of_a_budget() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![message_start(1, 0, 0)],
        text_block(0, &["ok"]),
        message_end("end_turn", 1),
    ]));
    let mut model = model_for(&server);
    model.id = "claude-opus-4-6".into();
    let options = StreamOptions {
        reasoning: Some(ThinkingLevel::Minimal),
        max_tokens: Some(20_000),
        temperature: Some(1.0),
        ..options()
    };
    ai::complete_simple(&model, &context("hi"), &options).await;
    let request = &server.requests()[0];
    assert_eq!(
        request.body["thinking"],
        json!({"type": "adaptive", "display": "summarized"})
    );
    assert_eq!(request.body["output_config"], json!({"effort": "low"}));
    assert_eq!(request.body["max_tokens"], 20_000);
    assert!(request.body.get("temperature").is_none());
    assert_eq!(request.header("anthropic-beta"), None);
}

#[tokio::test]
async fn oauth_tokens_speak_as_claude_code() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![message_start(1, 0, 0)],
        tool_block(0, "toolu_r", "Read", r#"{"path": "a.txt"}"#, 4),
        message_end("tool_use", 1),
    ]));
    let model = model_for(&server);
    let context = Context {
        system_prompt: Some("Project rules.".into()),
        messages: vec![Message::User(UserMessage::text("read it"))],
        tools: Some(vec![Tool {
            name: "read".into(),
            description: "Reads a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }]),
    };
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-ant-oat01-secret")),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model, &context, &options).await;
    assert_eq!(message.tool_calls().next().unwrap().name, "read");
    let request = &server.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-ant-oat01-secret")
    );
    assert_eq!(request.header("x-api-key"), None);
    assert_eq!(
        request.header("anthropic-beta"),
        Some("claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14")
    );
    assert_eq!(request.header("x-app"), Some("cli"));
    let system: Vec<&str> = request.body["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        system,
        [
            "You are Claude Code, Anthropic's official CLI for Claude.",
            "Project rules."
        ]
    );
    assert_eq!(request.body["tools"][0]["name"], "Read");
}

#[tokio::test]
async fn http_errors_carry_status_and_anthropic_message() {
    for (status, kind, text) in [
        (
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
        ),
        (401, "authentication_error", "invalid x-api-key"),
        (
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ),
        (529, "overloaded_error", "Overloaded"),
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(json!({"status": status,
                           "body": {"type": "error", "error": {"type": kind, "message": text},
                                    "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}}));
        let options = StreamOptions {
            max_retries: Some(0),
            api_key: Some(ApiKey::new("sk-ant-api03-very-secret")),
            ..StreamOptions::default()
        };
        let (events, message) = collect(&model_for(&server), &context("hi"), &options).await;
        assert_eq!(
            kinds(&events),
            ["error"],
            "no start before a failed request"
        );
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(
            message.error_message.as_deref(),
            Some(format!("{status} {text}").as_str())
        );
        let everything = format!("{events:?} {}", serde_json::to_string(&events).unwrap());
        assert!(!everything.contains("very-secret"));
    }
}

#[tokio::test]
async fn overloaded_is_retried_and_recorded() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 529, "headers": {"retry-after": "0"},
                       "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}));
    server.push(sse(vec![
        vec![message_start(1, 0, 0)],
        text_block(0, &["fine"]),
        message_end("end_turn", 1),
    ]));
    let message = ai::complete(&model_for(&server), &context("hi"), &options()).await;
    assert_eq!(message.text(), "fine");
    let diagnostics = message.diagnostics.expect("retry recorded");
    assert_eq!(diagnostics[0]["error"]["message"], "529 Overloaded");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn error_event_mid_stream_keeps_partial_content() {
    let server = MockServer::start().await.unwrap();
    let mut events = vec![
        message_start(300, 0, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        block_delta(0, json!({"type": "text_delta", "text": "Partial ans"})),
    ];
    events.push(event(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    server.push(sse(vec![events]));
    let (events, message) = collect(&model_for(&server), &context("hi"), &options()).await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "error"],
        "no *_end after a failure"
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_message.as_deref(), Some("Overloaded"));
    assert_eq!(message.text(), "Partial ans");
    assert_eq!(message.usage.input, 300);
}

#[tokio::test]
async fn non_normal_stop_reasons_are_errors_that_name_them() {
    for reason in ["refusal", "sensitive", "brand_new_reason"] {
        let server = MockServer::start().await.unwrap();
        server.push(sse(vec![
            vec![message_start(1, 0, 0)],
            text_block(0, &["I can"]),
            message_end(reason, 2),
        ]));
        let (events, message) = collect(&model_for(&server), &context("hi"), &options()).await;
        assert_eq!(kinds(&events).last(), Some(&"error"));
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(
            message.error_message,
            Some(format!("Provider stop_reason: {reason}"))
        );
        assert_eq!(message.text(), "I can");
        assert_eq!(message.usage.output, 2);
    }
    for (reason, expected) in [
        ("max_tokens", StopReason::Length),
        ("pause_turn", StopReason::Stop),
        ("stop_sequence", StopReason::Stop),
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(sse(vec![
            vec![message_start(1, 0, 0)],
            text_block(0, &["x"]),
            message_end(reason, 2),
        ]));
        let (events, message) = collect(&model_for(&server), &context("hi"), &options()).await;
        assert_eq!(kinds(&events).last(), Some(&"done"));
        assert_eq!(message.stop_reason, expected, "{reason}");
    }
}

#[tokio::test]
async fn unknown_events_blocks_and_deltas_are_skipped() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![
            ": comment line\n\n".to_owned(),
            message_start(1, 0, 0),
            event("brand_new_event", json!({"type": "brand_new_event", "x": 1})),
            event("ping", json!({"type": "ping"})),
            block_start(0, json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}})),
            block_delta(0, json!({"type": "input_json_delta", "partial_json": "{\"query\": \"x\"}"})),
            block_stop(0),
            block_start(1, json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []})),
            block_stop(1),
        ],
        vec![
            block_start(2, json!({"type": "text", "text": ""})),
            block_delta(2, json!({"type": "text_delta", "text": "Found it"})),
            block_delta(2, json!({"type": "citations_delta", "citation": {"type": "web_search_result_location"}})),
            block_delta(2, json!({"type": "brand_new_delta", "foo": "bar"})),
            block_stop(2),
        ],
        message_end("end_turn", 5),
    ]));
    let (events, message) = collect(&model_for(&server), &context("hi"), &options()).await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "text_end", "done"]
    );
    assert_eq!(
        message.content,
        [AssistantContent::Text(TextContent::new("Found it"))]
    );
}

#[tokio::test]
async fn abort_mid_stream_keeps_partial_text_and_input_usage() {
    let server = MockServer::start().await.unwrap();
    let pieces: Vec<String> = (0..20).map(|i| format!("word{i} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let mut script = sse(vec![
        vec![message_start(1234, 56, 0)],
        text_block(0, &pieces),
        message_end("end_turn", 40),
    ]);
    script["delay_ms"] = json!(30);
    server.push(script);
    let token = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(token.clone()),
        ..options()
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
    assert_eq!(error.stop_reason, StopReason::Aborted);
    assert_eq!(error.error_message.as_deref(), Some("Request was aborted"));
    assert!(error.text().starts_with("word0 word1"), "{error:?}");
    assert_eq!((error.usage.input, error.usage.cache_read), (1234, 56));
}

#[tokio::test]
async fn abort_before_the_first_byte() {
    let server = MockServer::start().await.unwrap();
    let mut script = sse(vec![vec![message_start(1, 0, 0)]]);
    script["stall_after_bytes"] = json!(0);
    script["stall_ms"] = json!(10_000);
    server.push(script);
    let token = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(token.clone()),
        ..options()
    };
    let stream = ai::stream(&model_for(&server), &context("hi"), &options);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    token.cancel();
    let message = tokio::time::timeout(std::time::Duration::from_secs(5), stream.result())
        .await
        .expect("abort ends the stream promptly");
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
}

#[tokio::test]
async fn dropped_connection_mid_tool_call_keeps_the_partial_call() {
    let cut = THINKING_TEXT_TOOL_USE
        // Cut just before the piece after `{"expression": "6*7"`.
        .find("\"partial_json\":\", \\\"no")
        .expect("fixture has the tool arguments");
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": THINKING_TEXT_TOOL_USE, "split": 64, "drop_after_bytes": cut}));
    let (events, message) = collect(&model_for(&server), &context("hi"), &options()).await;
    assert_eq!(kinds(&events).last(), Some(&"error"));
    assert!(!kinds(&events).contains(&"toolcall_end"));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection error"),
        "{message:?}"
    );
    assert_eq!(message.text(), "Sure — let me compute that ✓");
    let call = message.tool_calls().next().expect("partial tool call kept");
    assert_eq!(call.id, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(call.name, "calculator");
    assert_eq!(call.arguments["expression"], "6*7");
    assert_eq!(message.usage.input, 2095);
}

#[tokio::test]
async fn clean_close_before_message_stop_is_an_error() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![message_start(9, 0, 0)],
        vec![
            block_start(0, json!({"type": "text", "text": ""})),
            block_delta(0, json!({"type": "text_delta", "text": "half an ans"})),
        ],
    ]));
    let (_, message) = collect(&model_for(&server), &context("hi"), &options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Anthropic stream ended before message_stop")
    );
    assert_eq!(message.text(), "half an ans");
}

#[tokio::test]
async fn malformed_event_data_is_a_clear_error() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![message_start(1, 0, 0)],
        vec!["event: content_block_start\ndata: {not json\n\n".to_owned()],
    ]));
    let (_, message) = collect(&model_for(&server), &context("hi"), &options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Could not parse Anthropic SSE event content_block_start"),
        "{message:?}"
    );
}

#[tokio::test]
async fn missing_key_for_a_remote_endpoint_names_the_variables() {
    if std::env::var("ANTHROPIC_API_KEY").is_ok() || std::env::var("ANTHROPIC_OAUTH_TOKEN").is_ok()
    {
        return;
    }
    let model = Model::new(
        "anthropic-messages",
        "anthropic",
        "claude-sonnet-4-5",
        "https://api.anthropic.invalid",
    );
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(kinds(&events), ["error"]);
    assert_eq!(message.stop_reason, StopReason::Error);
    let text = message.error_message.unwrap();
    assert!(text.contains("ANTHROPIC_API_KEY"), "{text}");
    assert!(text.contains("ANTHROPIC_OAUTH_TOKEN"), "{text}");
}

#[tokio::test]
async fn another_providers_transcript_is_replayed_for_anthropic() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![message_start(1, 0, 0)],
        text_block(0, &["42"]),
        message_end("end_turn", 1),
    ]));
    let foreign_id = "call_abc|fc_123.x";
    let context = Context {
        system_prompt: None,
        messages: vec![
            Message::User(UserMessage::text("what is 6*7")),
            Message::Assistant(AssistantMessage {
                content: vec![
                    AssistantContent::Thinking(ThinkingContent {
                        thinking: "Use the calculator.".into(),
                        thinking_signature: Some("reasoning_content".into()),
                        redacted: None,
                    }),
                    AssistantContent::ToolCall(ToolCall {
                        id: foreign_id.into(),
                        name: "calculator".into(),
                        arguments: json!({"expression": "6*7"}),
                        thought_signature: Some("{\"encrypted\":true}".into()),
                    }),
                ],
                api: "openai-completions".into(),
                provider: "openrouter".into(),
                model: "some/model".into(),
                stop_reason: StopReason::ToolUse,
                ..AssistantMessage::default()
            }),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: foreign_id.into(),
                tool_name: "calculator".into(),
                content: vec![UserContent::text("42")],
                ..ToolResultMessage::default()
            }),
        ],
        tools: Some(vec![calculator()]),
    };
    let message = ai::complete(&model_for(&server), &context, &options()).await;
    assert_eq!(message.text(), "42");
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Use the calculator."},
            {"type": "tool_use", "id": "call_abc_fc_123_x", "name": "calculator",
             "input": {"expression": "6*7"}}
        ]})
    );
    assert_eq!(
        body["messages"][2]["content"][0]["tool_use_id"],
        "call_abc_fc_123_x"
    );
    assert_eq!(body["messages"][2]["content"][0]["content"], "42");
    assert!(body.get("system").is_none());
}

#[tokio::test]
async fn orphaned_and_failed_turns_are_repaired_before_sending() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        vec![message_start(1, 0, 0)],
        text_block(0, &["ok"]),
        message_end("end_turn", 1),
    ]));
    let model = model_for(&server);
    let assistant = |content, stop_reason| {
        Message::Assistant(AssistantMessage {
            content,
            api: "anthropic-messages".into(),
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            stop_reason,
            ..AssistantMessage::default()
        })
    };
    let context = Context {
        system_prompt: None,
        messages: vec![
            Message::User(UserMessage::text("go")),
            assistant(
                vec![AssistantContent::ToolCall(ToolCall {
                    id: "toolu_x".into(),
                    name: "calculator".into(),
                    arguments: json!({"expression": "1"}),
                    thought_signature: None,
                })],
                StopReason::ToolUse,
            ),
            Message::User(UserMessage::text("never mind")),
            assistant(
                vec![AssistantContent::Text(TextContent::new("partial"))],
                StopReason::Error,
            ),
            Message::User(UserMessage::text("   ")),
        ],
        tools: Some(vec![calculator()]),
    };
    ai::complete(&model, &context, &options()).await;
    let body = &server.requests()[0].body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "user"]);
    assert_eq!(
        body["messages"][2]["content"][0]["content"],
        NO_RESULT_PROVIDED
    );
    assert_eq!(body["messages"][2]["content"][0]["is_error"], true);
}

/// What pi 0.73.1 emitted for [`THINKING_TEXT_TOOL_USE`] (recorded by running pi against the
/// mock server).
const PI_RECORDING: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/anthropic/thinking_text_tool_use.pi.json"
));

#[tokio::test]
async fn same_events_and_message_as_pi_for_a_recorded_stream() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": THINKING_TEXT_TOOL_USE}));
    let (events, message) = collect(&model_for(&server), &context("hi"), &options()).await;
    let pi: Value = serde_json::from_str(PI_RECORDING).unwrap();
    let pi_events = pi["events"].as_array().unwrap();
    assert_eq!(events.len(), pi_events.len());
    for (ours, theirs) in events.iter().zip(pi_events) {
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
    let mut ours = serde_json::to_value(Message::Assistant(message)).unwrap();
    ours.as_object_mut().unwrap().remove("timestamp");
    ours.as_object_mut().unwrap().remove("timing");
    assert_eq!(ours, pi["message"]);
}
