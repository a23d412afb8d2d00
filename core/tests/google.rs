//! The `google-generative-ai` provider against the mock server, which replays Gemini's SSE
//! bytes verbatim (`data: <GenerateContentResponse>` events separated by CRLF CRLF, chunk
//! boundaries anywhere).

use futures::StreamExt;
use pi_agent::ai::{
    self, ApiKey, AssistantContent, AssistantMessage, AssistantMessageEvent, Context, Message,
    Model, StopReason, StreamOptions, TextContent, ThinkingContent, ThinkingLevel, Tool, ToolCall,
    ToolChoice, ToolResultMessage, UserContent, UserMessage,
};
use pi_mock_server::MockServer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A Gemini 2.5 Flash answer: two thought parts, two text parts, then a signed function call
/// with the finish reason and the full usage.
const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/google/thinking_text_function_call.sse"
));
const FIXTURE_SIGNATURE: &str = "CiQBcsjafLnOVr3Xnkbn3sSuYqvxP0mMhI8BBRMTqpYE0hXMBYMKZgFyyNp8Qz7Kb1Q2wV9x+/dF3d5WJm3pN4h8eT0aLsYrG0uVc1Ew2iZx";

fn model_for(server: &MockServer, id: &str) -> Model {
    let mut model = Model::new("google-generative-ai", "google", id, server.base_url());
    model.reasoning = true;
    model.cost.input = 0.3;
    model.cost.output = 2.5;
    model.cost.cache_read = 0.075;
    model
}

fn context(prompt: &str) -> Context {
    Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![Message::User(UserMessage::text(prompt))],
        tools: Some(vec![Tool {
            name: "calculator".into(),
            description: "Evaluates arithmetic".into(),
            parameters: json!({"$schema": "http://json-schema.org/draft-07/schema#",
                               "type": "object", "properties": {"expression": {"type": "string"}},
                               "required": ["expression"]}),
        }]),
    }
}

/// One SSE event per element, as Gemini frames them.
fn data(response: Value) -> String {
    format!("data: {response}\r\n\r\n")
}

/// The fixture as one SSE piece per event.
fn fixture_events() -> Vec<String> {
    FIXTURE
        .split_inclusive("\r\n\r\n")
        .map(str::to_owned)
        .collect()
}

fn sse(events: Vec<String>) -> Value {
    json!({"sse": events})
}

fn parts_chunk(parts: Value) -> Value {
    json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
           "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"})
}

fn final_chunk(parts: Value, finish: &str, usage: Value) -> Value {
    json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": finish,
                            "index": 0}],
           "usageMetadata": usage, "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"})
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

fn no_retries() -> StreamOptions {
    StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    }
}

#[tokio::test]
async fn streams_text_with_usage_cost_and_response_id() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        data(parts_chunk(json!([{"text": "Hello"}]))),
        data(parts_chunk(json!([{"text": " there,"}]))),
        data(final_chunk(
            json!([{"text": " world!"}]),
            "STOP",
            json!({"promptTokenCount": 1000, "candidatesTokenCount": 400,
                   "thoughtsTokenCount": 100, "cachedContentTokenCount": 200,
                   "totalTokenCount": 1500}),
        )),
    ]));
    let model = model_for(&server, "gemini-2.5-flash");
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
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
    assert_eq!(message.api, "google-generative-ai");
    assert_eq!(message.provider, "google");
    assert_eq!(message.model, "gemini-2.5-flash");
    assert_eq!(message.response_id.as_deref(), Some("resp-1"));
    assert_eq!(message.response_model, None, "modelVersion equals the id");
    let usage = message.usage;
    assert_eq!(
        (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write
        ),
        (800, 500, 200, 0)
    );
    assert_eq!(usage.total_tokens, 1500);
    let expected = (800.0 * 0.3 + 500.0 * 2.5 + 200.0 * 0.075) / 1_000_000.0;
    assert!((usage.cost.total - expected).abs() < 1e-12, "{usage:?}");
}

#[tokio::test]
async fn thought_parts_become_thinking_with_the_last_non_empty_signature() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        data(parts_chunk(
            json!([{"text": "Thinking one. ", "thought": true, "thoughtSignature": "c2lnLTE="}]),
        )),
        // A later part without a signature (or with an empty one) keeps the block's signature.
        data(parts_chunk(
            json!([{"text": "Thinking two. ", "thought": true}]),
        )),
        data(parts_chunk(
            json!([{"text": "Thinking three.", "thought": true, "thoughtSignature": ""}]),
        )),
        // A signature alone does not make a part thinking.
        data(parts_chunk(
            json!([{"text": "Visible ", "thoughtSignature": "dGV4dC0x"}]),
        )),
        // A new non-empty signature replaces the old one.
        data(final_chunk(
            json!([{"text": "answer.", "thoughtSignature": "dGV4dC0y"}]),
            "STOP",
            json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}),
        )),
    ]));
    let model = model_for(&server, "gemini-2.5-flash");
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(
        message.content,
        [
            AssistantContent::Thinking(ThinkingContent {
                thinking: "Thinking one. Thinking two. Thinking three.".into(),
                thinking_signature: Some("c2lnLTE=".into()),
                redacted: None,
            }),
            AssistantContent::Text(TextContent {
                text: "Visible answer.".into(),
                text_signature: Some("dGV4dC0y".into()),
            }),
        ]
    );
    let kinds = kinds(&events);
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.ends_with("_start") || k.ends_with("_end"))
            .collect::<Vec<_>>(),
        [
            &"thinking_start",
            &"thinking_end",
            &"text_start",
            &"text_end"
        ]
    );
    let thinking_end = events
        .iter()
        .find(|e| e.kind() == "thinking_end")
        .map(|e| serde_json::to_value(e).unwrap())
        .unwrap();
    assert_eq!(thinking_end["contentSignature"], "c2lnLTE=");
}

#[tokio::test]
async fn function_call_arrives_whole_as_start_delta_end() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(fixture_events()));
    let model = model_for(&server, "gemini-2.5-flash");
    let (events, message) = collect(&model, &context("6*7?"), &StreamOptions::default()).await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );
    let delta = events
        .iter()
        .find_map(|e| match e {
            AssistantMessageEvent::ToolCallDelta { delta, .. } => Some(delta.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&delta).unwrap(),
        json!({"expression": "6*7"})
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let AssistantContent::Thinking(thinking) = &message.content[0] else {
        panic!("thinking first: {message:?}")
    };
    assert!(thinking.thinking.contains("ünïcödé ✓"));
    assert_eq!(message.text(), "Let me compute that for you.");
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.name, "calculator");
    assert_eq!(call.arguments, json!({"expression": "6*7"}));
    assert_eq!(call.thought_signature.as_deref(), Some(FIXTURE_SIGNATURE));
    assert!(
        call.id.starts_with("calculator_"),
        "generated id: {}",
        call.id
    );
    assert_eq!(
        message.response_id.as_deref(),
        Some("kTn1aJ2pLOWbz7IPpLy7mQ4")
    );
    let usage = message.usage;
    assert_eq!((usage.input, usage.output, usage.cache_read), (64, 84, 32));
    assert_eq!(usage.total_tokens, 180);
}

#[tokio::test]
async fn function_call_ids_are_kept_when_unique_and_generated_otherwise() {
    let server = MockServer::start().await.unwrap();
    let call = |id: Option<&str>| {
        let mut function_call = json!({"name": "calculator", "args": {"expression": "1"}});
        if let Some(id) = id {
            function_call["id"] = json!(id);
        }
        json!({"functionCall": function_call})
    };
    server.push(sse(vec![data(final_chunk(
        json!([
            call(Some("fc-1")),
            call(Some("fc-1")),
            call(None),
            call(None)
        ]),
        "STOP",
        json!({"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}),
    ))]));
    let model = model_for(&server, "gemini-2.5-flash");
    let message = ai::complete(&model, &context("hi"), &StreamOptions::default()).await;
    let ids: Vec<&str> = message.tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), 4);
    assert_eq!(ids[0], "fc-1");
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), 4, "{ids:?}");
    assert!(ids[1..].iter().all(|id| id.starts_with("calculator_")));
}

#[tokio::test]
async fn any_chunk_boundaries_give_the_same_message() {
    let mut reference: Option<Vec<Value>> = None;
    for shaping in [
        json!({}),
        json!({"split": 1}),
        json!({"split_random": 7}),
        json!({"split_random": 1234}),
        json!({"split": 13}),
    ] {
        let server = MockServer::start().await.unwrap();
        let mut script = sse(fixture_events());
        for (key, value) in shaping.as_object().unwrap() {
            script[key] = value.clone();
        }
        server.push(script);
        let model = model_for(&server, "gemini-2.5-flash");
        let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
        assert_eq!(message.stop_reason, StopReason::ToolUse, "{shaping}");
        let mut summary: Vec<Value> = events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .filter(|e| e["type"] != "start" && e["type"] != "done")
            .collect();
        let mut final_message = serde_json::to_value(&message).unwrap();
        final_message["timestamp"] = json!(0);
        // Measured, so it differs from run to run.
        final_message
            .as_object_mut()
            .unwrap()
            .shift_remove("timing");
        // Generated ids contain the clock.
        final_message["content"][2]["id"] = json!("");
        for event in &mut summary {
            if event.get("toolCall").is_some() {
                event["toolCall"]["id"] = json!("");
            }
            if event.get("id").is_some() {
                event["id"] = json!("");
            }
        }
        summary.push(final_message);
        match &reference {
            None => reference = Some(summary),
            Some(reference) => assert_eq!(&summary, reference, "{shaping}"),
        }
    }
}

#[tokio::test]
async fn sends_the_request_pi_sends() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(fixture_events()));
    let mut model = model_for(&server, "gemini-2.5-flash");
    model.headers = Some([("x-model-header".to_owned(), "m".to_owned())].into());
    let options = StreamOptions {
        api_key: Some(ApiKey::new("AIza-test-key")),
        max_tokens: Some(256),
        temperature: Some(0.2),
        reasoning: Some(ThinkingLevel::Medium),
        tool_choice: Some(ToolChoice::Required),
        headers: [("x-extra".to_owned(), "1".to_owned())].into(),
        ..StreamOptions::default()
    };
    let message = ai::complete_simple(&model, &context("hi"), &options).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        request.path,
        "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert!(
        !request.path.contains("key="),
        "the key never goes in the URL"
    );
    assert_eq!(request.header("x-goog-api-key"), Some("AIza-test-key"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("x-model-header"), Some("m"));
    assert_eq!(request.header("x-extra"), Some("1"));
    assert_eq!(
        request.body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."}]},
            "tools": [{"functionDeclarations": [{
                "name": "calculator",
                "description": "Evaluates arithmetic",
                "parametersJsonSchema": {"$schema": "http://json-schema.org/draft-07/schema#",
                    "type": "object", "properties": {"expression": {"type": "string"}},
                    "required": ["expression"]}
            }]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            "generationConfig": {
                "temperature": 0.2,
                "maxOutputTokens": 256,
                "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}
            }
        })
    );
}

#[tokio::test]
async fn thinking_config_for_gemini_3_and_for_thinking_off() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(fixture_events()));
    server.push(sse(fixture_events()));
    let gemini3 = model_for(&server, "gemini-3-flash-preview");
    let high = StreamOptions {
        reasoning: Some(ThinkingLevel::High),
        ..StreamOptions::default()
    };
    server.push(sse(fixture_events()));
    server.push(sse(fixture_events()));
    ai::complete_simple(&gemini3, &context("hi"), &high).await;
    ai::complete_simple(&gemini3, &context("hi"), &StreamOptions::default()).await;
    // Plain `stream` (pi's `stream()`) sends no thinkingConfig: the provider's default applies
    // (Gemini 2.5 thinks by default); only `stream_simple` turns thinking off.
    let gemini25 = model_for(&server, "gemini-2.5-flash");
    ai::complete(&gemini25, &context("hi"), &StreamOptions::default()).await;
    ai::complete_simple(&gemini25, &context("hi"), &StreamOptions::default()).await;
    let requests = server.requests();
    assert!(
        requests[2].body["generationConfig"]
            .get("thinkingConfig")
            .is_none(),
        "{}",
        requests[2].body
    );
    assert_eq!(
        requests[3].body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 0})
    );
    assert_eq!(
        requests[0].body["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingLevel": "HIGH"})
    );
    assert_eq!(
        requests[1].body["generationConfig"]["thinkingConfig"],
        json!({"thinkingLevel": "MINIMAL"})
    );
}

#[tokio::test]
async fn thought_signatures_are_replayed_only_to_the_model_that_made_them() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(fixture_events()));
    let model = model_for(&server, "gemini-2.5-flash");
    let mut context = context("6*7?");
    let first = ai::complete(&model, &context, &StreamOptions::default()).await;
    let call = first.tool_calls().next().unwrap().clone();
    context.messages.push(Message::Assistant(first));
    context
        .messages
        .push(Message::ToolResult(ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![UserContent::text("42")],
            details: None,
            is_error: false,
            timestamp: 0,
            timing: None,
        }));
    // Same provider and model: thinking goes back as thought parts, signatures come along.
    server.push(sse(fixture_events()));
    ai::complete(&model, &context, &StreamOptions::default()).await;
    // Another Gemini model: no signature, thinking as plain text.
    server.push(sse(fixture_events()));
    let other = model_for(&server, "gemini-2.5-pro");
    ai::complete(&other, &context, &StreamOptions::default()).await;

    let requests = server.requests();
    let same = &requests[1].body["contents"];
    assert_eq!(same[1]["role"], "model");
    let parts = same[1]["parts"].as_array().unwrap();
    assert_eq!(parts[0]["thought"], true);
    assert!(parts[0].get("thoughtSignature").is_none(), "none was sent");
    assert_eq!(parts[1], json!({"text": "Let me compute that for you."}));
    assert_eq!(
        parts[2],
        json!({"functionCall": {"name": "calculator", "args": {"expression": "6*7"}},
               "thoughtSignature": FIXTURE_SIGNATURE})
    );
    assert_eq!(
        same[2],
        json!({"role": "user", "parts": [{"functionResponse": {"name": "calculator",
               "response": {"output": "42"}}}]})
    );

    let foreign = &requests[2].body["contents"];
    let parts = foreign[1]["parts"].as_array().unwrap();
    assert!(parts[0].get("thought").is_none());
    assert!(parts[0]["text"].as_str().unwrap().contains("ünïcödé"));
    assert_eq!(
        parts[2],
        json!({"functionCall": {"name": "calculator", "args": {"expression": "6*7"}}})
    );
    assert!(!foreign.to_string().contains("thoughtSignature"));
}

#[tokio::test]
async fn unsigned_calls_get_no_invented_signature() {
    for id in ["gemini-2.5-flash", "gemini-3-pro-preview"] {
        let server = MockServer::start().await.unwrap();
        server.push(sse(fixture_events()));
        let model = model_for(&server, id);
        let mut context = context("go");
        context.messages.push(Message::Assistant(AssistantMessage {
            content: vec![AssistantContent::ToolCall(ToolCall {
                id: "c1".into(),
                name: "calculator".into(),
                arguments: json!({"expression": "1"}),
                thought_signature: None,
            })],
            api: "google-generative-ai".into(),
            provider: "google".into(),
            model: id.into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }));
        ai::complete(&model, &context, &StreamOptions::default()).await;
        let body = server.requests()[0].body.to_string();
        assert!(!body.contains("thoughtSignature"), "{id}: {body}");
        assert!(!body.contains("skip_thought_signature_validator"), "{id}");
        // The orphaned call got pi's synthetic result.
        assert!(body.contains("No result provided"), "{id}");
    }
}

#[tokio::test]
async fn another_providers_thinking_signature_is_dropped() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(fixture_events()));
    let model = model_for(&server, "gemini-2.5-flash");
    let mut context = context("first");
    context.messages.push(Message::Assistant(AssistantMessage {
        content: vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "Claude's reasoning".into(),
                thinking_signature: Some("EqQBCkgIBxABGAIiQL3j8mJ0Lr2nq1ZkQ8cL0WfG".into()),
                redacted: None,
            }),
            AssistantContent::Text(TextContent {
                text: "Claude's answer".into(),
                text_signature: Some("c2lnbmF0dXJl".into()),
            }),
            AssistantContent::ToolCall(ToolCall {
                id: "toolu_01A".into(),
                name: "calculator".into(),
                arguments: json!({"expression": "2"}),
                thought_signature: Some("c2lnbmF0dXJl".into()),
            }),
        ],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    }));
    context
        .messages
        .push(Message::User(UserMessage::text("next")));
    ai::complete(&model, &context, &StreamOptions::default()).await;
    let body = &server.requests()[0].body;
    assert!(!body.to_string().contains("thoughtSignature"), "{body}");
    assert_eq!(
        body["contents"][1]["parts"],
        json!([{"text": "Claude's reasoning"}, {"text": "Claude's answer"},
               {"functionCall": {"name": "calculator", "args": {"expression": "2"}}}])
    );
}

#[tokio::test]
async fn safety_finish_is_an_error_that_names_it() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        data(parts_chunk(json!([{"text": "Here is how"}]))),
        data(final_chunk(
            json!([]),
            "SAFETY",
            json!({"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13}),
        )),
    ]));
    let model = model_for(&server, "gemini-2.5-flash");
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Provider finishReason: SAFETY")
    );
    assert_eq!(message.text(), "Here is how");
    assert_eq!(message.usage.output, 3);
}

#[tokio::test]
async fn blocked_prompt_is_an_error() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![data(json!({
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
        "modelVersion": "gemini-2.5-flash", "responseId": "resp-9"
    }))]));
    let model = model_for(&server, "gemini-2.5-flash");
    let message = ai::complete(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Prompt blocked by provider: PROHIBITED_CONTENT")
    );
    assert_eq!(message.usage.input, 12);
}

#[tokio::test]
async fn tool_call_makes_the_turn_tool_use_even_at_max_tokens() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![data(final_chunk(
        json!([{"functionCall": {"name": "calculator", "args": {"expression": "1"}}}]),
        "MAX_TOKENS",
        json!({"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}),
    ))]));
    let model = model_for(&server, "gemini-2.5-flash");
    let message = ai::complete(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn max_tokens_is_length() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![data(final_chunk(
        json!([{"text": "cut"}]),
        "MAX_TOKENS",
        json!({"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}),
    ))]));
    let model = model_for(&server, "gemini-2.5-flash");
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(kinds(&events).last(), Some(&"done"));
}

#[tokio::test]
async fn http_errors_carry_status_and_googles_message() {
    for (status, body, expected) in [
        (
            400,
            json!({"error": {"code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                             "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}),
            "400 API key not valid. Please pass a valid API key.",
        ),
        (
            429,
            json!([{"error": {"code": 429,
                "message": "Resource has been exhausted (e.g. check quota).",
                "status": "RESOURCE_EXHAUSTED"}}]),
            "429 Resource has been exhausted (e.g. check quota).",
        ),
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(json!({"status": status, "body": body}));
        let model = model_for(&server, "gemini-2.5-flash");
        let (events, message) = collect(&model, &context("hi"), &no_retries()).await;
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
async fn error_inside_the_stream_keeps_partial_content() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![
        data(parts_chunk(json!([{"text": "partial"}]))),
        data(
            json!({"error": {"code": 503, "message": "The model is overloaded.",
                              "status": "UNAVAILABLE"}}),
        ),
    ]));
    let model = model_for(&server, "gemini-2.5-flash");
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
    assert!(!kinds(&events).contains(&"text_end"));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("503 The model is overloaded.")
    );
    assert_eq!(message.text(), "partial");
}

#[tokio::test]
async fn abort_mid_stream_keeps_partial_text() {
    let server = MockServer::start().await.unwrap();
    let mut events: Vec<String> = (0..20)
        .map(|i| data(parts_chunk(json!([{"text": format!("word{i} ")}]))))
        .collect();
    events.push(data(final_chunk(
        json!([]),
        "STOP",
        json!({"promptTokenCount": 1, "candidatesTokenCount": 20, "totalTokenCount": 21}),
    )));
    let mut script = sse(events);
    script["delay_ms"] = json!(30);
    server.push(script);
    let token = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(token.clone()),
        ..StreamOptions::default()
    };
    let model = model_for(&server, "gemini-2.5-flash");
    let mut stream = ai::stream(&model, &context("hi"), &options);
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
    assert!(error.text().starts_with("word0 word1"));
}

#[tokio::test]
async fn dropped_connection_keeps_partial_content_and_usage() {
    let server = MockServer::start().await.unwrap();
    let mut script = sse(fixture_events());
    // Cut inside the fourth event, after the thinking and the first text part.
    let cut: usize = fixture_events()[..3].iter().map(String::len).sum::<usize>() + 40;
    script["drop_after_bytes"] = json!(cut);
    server.push(script);
    let model = model_for(&server, "gemini-2.5-flash");
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(kinds(&events).first(), Some(&"start"));
    // As pi, the open block is ended first; unlike pi, the stream then ends with `error`.
    let all = kinds(&events);
    assert_eq!(&all[all.len() - 2..], ["text_end", "error"]);
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection error"),
        "{message:?}"
    );
    assert_eq!(message.text(), "Let me compute that ");
    assert!(matches!(message.content[0], AssistantContent::Thinking(_)));
    // Usage arrives on every chunk, so a cut stream still reports the prompt.
    assert_eq!(message.usage.input, 96);
}

#[tokio::test]
async fn clean_close_without_a_finish_reason_is_an_error() {
    let server = MockServer::start().await.unwrap();
    server.push(sse(vec![data(parts_chunk(
        json!([{"text": "half an ans"}]),
    ))]));
    let model = model_for(&server, "gemini-2.5-flash");
    let message = ai::complete(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "half an ans");
}

#[tokio::test]
async fn missing_key_names_gemini_api_key() {
    if std::env::var("GEMINI_API_KEY").is_ok() {
        return;
    }
    let model = Model::new(
        "google-generative-ai",
        "google",
        "gemini-2.5-flash",
        "https://generativelanguage.googleapis.com/v1beta",
    );
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(kinds(&events), ["error"]);
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message.error_message.unwrap().contains("GEMINI_API_KEY"),
        "names the variable"
    );
}

#[tokio::test]
async fn the_key_never_appears_in_errors_or_events() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 400, "body": {"error": {"code": 400,
        "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}}}));
    let options = StreamOptions {
        api_key: Some(ApiKey::new("AIza-very-secret")),
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let model = model_for(&server, "gemini-2.5-flash");
    let (events, message) = collect(&model, &context("hi"), &options).await;
    let everything = format!(
        "{events:?} {message:?} {}",
        serde_json::to_string(&events).unwrap()
    );
    assert!(!everything.contains("AIza-very-secret"));
    assert!(!server.requests()[0].path.contains("AIza"));
}

#[tokio::test]
async fn on_payload_replaces_the_body() {
    use pi_agent::ai::Callback;
    use std::sync::Arc;
    let server = MockServer::start().await.unwrap();
    server.push(sse(fixture_events()));
    let options = StreamOptions {
        on_payload: Some(Callback(Arc::new(|body: &Value, _: &Model| {
            let mut body = body.clone();
            body["safetySettings"] =
                json!([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]);
            Ok(Some(body))
        }))),
        ..StreamOptions::default()
    };
    let model = model_for(&server, "gemini-2.5-flash");
    ai::complete(&model, &context("hi"), &options).await;
    assert_eq!(
        server.requests()[0].body["safetySettings"][0]["threshold"],
        "BLOCK_NONE"
    );
}
