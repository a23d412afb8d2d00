//! The `openai-codex-responses` provider against the mock server: the SSE transport (headers,
//! body, Codex's events and errors, its retry rules, service-tier pricing) and the WebSocket
//! transport (one request per message, session reuse, `previous_response_id` continuation,
//! fallback to SSE, failures after events).
//!
//! WebSocket sessions are process-wide: every test uses its own session ids.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::StreamExt;
use pi_agent::ai::TextContent;
use pi_agent::ai::providers::{
    close_openai_codex_websocket_sessions, openai_codex_websocket_stats,
};
use pi_agent::ai::{
    self, ApiKey, AssistantMessage, AssistantMessageEvent, Context, Message, Model, StopReason,
    StreamOptions, Tool, ToolResultMessage, Transport, UserContent, UserMessage,
};
use pi_mock_server::{MockServer, RecordedRequest};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A Codex answer: reasoning summary, text, a function call, then `response.done`.
const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/openai-codex/reasoning_text_function_call.sse"
));

const ACCOUNT: &str = "acct-pi-test-0001";

/// A ChatGPT OAuth access token shape: a JWT whose auth claim names the account.
fn token() -> String {
    let payload = json!({"https://api.openai.com/auth": {"chatgpt_account_id": ACCOUNT},
                         "exp": 4_102_444_800u64});
    format!(
        "eyJhbGciOiJSUzI1NiJ9.{}.c2lnbmF0dXJl",
        URL_SAFE_NO_PAD.encode(payload.to_string())
    )
}

fn fixture_pieces() -> Vec<String> {
    FIXTURE.split_inclusive("\n\n").map(str::to_owned).collect()
}

fn sse_reply() -> Value {
    json!({"sse": fixture_pieces()})
}

/// The fixture's events as WebSocket messages.
fn ws_messages() -> Vec<Value> {
    FIXTURE
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

fn ws_reply() -> Value {
    json!({"ws": ws_messages()})
}

fn sse_event(data: Value) -> String {
    format!("data: {data}\n\n")
}

/// A short answer `hi` (id `resp_n`).
fn short_answer(n: u32) -> Vec<Value> {
    vec![
        json!({"type": "response.created", "response": {"id": format!("resp_{n}")}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": format!("msg_{n}"), "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": format!("msg_{n}"), "output_index": 0,
               "content_index": 0, "delta": "hi"}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "message", "id": format!("msg_{n}"), "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "hi", "annotations": []}]}}),
        json!({"type": "response.completed", "response": {"id": format!("resp_{n}"), "status": "completed",
               "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}}}),
    ]
}

fn model(server: &MockServer) -> Model {
    let mut model = ai::get_model("openai-codex", "gpt-5.2-codex").expect("catalog model");
    model.base_url = server.base_url();
    model
}

fn context() -> Context {
    Context {
        system_prompt: Some("You are Codex.".into()),
        messages: vec![Message::User(UserMessage::text("What is 6*7?"))],
        tools: Some(vec![Tool {
            name: "calculator".into(),
            description: "Evaluates arithmetic".into(),
            parameters: json!({"type": "object", "properties": {"expression": {"type": "string"}},
                               "required": ["expression"]}),
        }]),
    }
}

fn options(transport: Transport) -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new(token())),
        transport: Some(transport),
        max_retries: Some(0),
        ..StreamOptions::default()
    }
}

async fn run(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let mut stream = ai::stream(model, context, options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    (events, stream.final_message().expect("a terminal event"))
}

fn kinds(events: &[AssistantMessageEvent]) -> Vec<&'static str> {
    events.iter().map(AssistantMessageEvent::kind).collect()
}

fn methods(requests: &[RecordedRequest]) -> Vec<&str> {
    requests.iter().map(|r| r.method.as_str()).collect()
}

#[tokio::test]
async fn sse_sends_pis_headers_and_body() {
    let server = MockServer::start().await.unwrap();
    server.push(sse_reply());
    let options = StreamOptions {
        session_id: Some("codex-sse-headers".into()),
        headers: [("x-extra".to_owned(), "1".to_owned())].into(),
        text_verbosity: Some("medium".into()),
        reasoning_effort: Some("high".into()),
        ..options(Transport::Sse)
    };
    let (_, message) = run(&model(&server), &context(), &options).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let requests = server.requests();
    assert_eq!(methods(&requests), ["POST"]);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/codex/responses");
    let token = token();
    for (name, value) in [
        ("authorization", format!("Bearer {token}")),
        ("chatgpt-account-id", ACCOUNT.to_owned()),
        ("originator", "pi".to_owned()),
        ("openai-beta", "responses=experimental".to_owned()),
        ("accept", "text/event-stream".to_owned()),
        ("content-type", "application/json".to_owned()),
        ("session_id", "codex-sse-headers".to_owned()),
        ("x-client-request-id", "codex-sse-headers".to_owned()),
        ("x-extra", "1".to_owned()),
    ] {
        assert_eq!(request.header(name), Some(value.as_str()), "{name}");
    }
    assert!(request.header("user-agent").unwrap().starts_with("pi ("));
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-5.2-codex",
            "store": false,
            "stream": true,
            "instructions": "You are Codex.",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "What is 6*7?"}]}],
            "text": {"verbosity": "medium"},
            "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "codex-sse-headers",
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "tools": [{"type": "function", "name": "calculator", "description": "Evaluates arithmetic",
                       "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                                      "required": ["expression"]},
                       "strict": null}],
            "reasoning": {"effort": "high", "summary": "auto"}
        })
    );
}

#[tokio::test]
async fn any_chunk_boundaries_give_the_same_message() {
    let mut reference: Option<Value> = None;
    for shaping in [
        json!({}),
        json!({"split": 1}),
        json!({"split_random": 3}),
        json!({"split_random": 2024}),
        json!({"split": 29}),
    ] {
        let server = MockServer::start().await.unwrap();
        let mut reply = sse_reply();
        for (key, value) in shaping.as_object().unwrap() {
            reply[key] = value.clone();
        }
        server.push(reply);
        let (events, message) = run(&model(&server), &context(), &options(Transport::Sse)).await;
        assert_eq!(
            message.stop_reason,
            StopReason::ToolUse,
            "{shaping}: {message:?}"
        );
        let mut observed = json!({"kinds": kinds(&events), "message": message});
        observed["message"]["timestamp"] = json!(0);
        // Clock readings (timing, if the message has it) differ from run to run.
        if let Some(message) = observed["message"].as_object_mut() {
            message.shift_remove("timing");
        }
        match &reference {
            None => reference = Some(observed),
            Some(reference) => assert_eq!(&observed, reference, "{shaping}"),
        }
    }
    let message = &reference.unwrap()["message"];
    assert_eq!(
        message["responseId"],
        "resp_68c1f0a2b3d481a09b7e5c4d3f2a1b0c"
    );
    assert_eq!(
        message["content"][2]["id"],
        "call_Xk3vQp9LmT2wRz7YbN4sHd1F|fc_68c1f0a6e4a081a0c1d2e3f4a5b6c7d8"
    );
    assert_eq!(message["usage"]["input"], 2100 - 1024);
    assert_eq!(message["usage"]["cacheRead"], 1024);
}

#[tokio::test]
async fn codex_errors_end_the_stream_with_pis_messages() {
    let cut = 3;
    let cases = [
        (
            json!({"type": "error", "code": "server_error", "message": "upstream exploded"}),
            "Codex error: upstream exploded",
        ),
        (
            json!({"type": "response.failed", "response": {"error": {"code": "x", "message": "model crashed"}}}),
            "model crashed",
        ),
        (json!({"type": "response.failed"}), "Codex response failed"),
    ];
    for (event, expected) in cases {
        let server = MockServer::start().await.unwrap();
        let mut pieces: Vec<String> = fixture_pieces().into_iter().take(cut).collect();
        pieces.push(sse_event(event));
        server.push(json!({"sse": pieces}));
        let (_, message) = run(&model(&server), &context(), &options(Transport::Sse)).await;
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(message.error_message.as_deref(), Some(expected));
    }
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": ["data: {\"type\":\"response.created\",\n\n"]}));
    let (_, message) = run(&model(&server), &context(), &options(Transport::Sse)).await;
    assert!(
        message
            .error_message
            .unwrap()
            .starts_with("Invalid Codex SSE JSON:")
    );
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": fixture_pieces().into_iter().take(8).collect::<Vec<_>>()}));
    let (_, message) = run(&model(&server), &context(), &options(Transport::Sse)).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message
            .error_message
            .unwrap()
            .contains("before the response was complete"),
        "a body cut before the response completes is an error"
    );
}

#[tokio::test]
async fn retries_follow_codex_rules() {
    let retrying = |retries| StreamOptions {
        max_retries: Some(retries),
        max_retry_delay_ms: Some(20),
        ..options(Transport::Sse)
    };
    // 503, then success.
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 503, "body": {"error": {"message": "overloaded"}}}));
    server.push(sse_reply());
    let (_, message) = run(&model(&server), &context(), &retrying(3)).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(server.requests().len(), 2);
    let diagnostics = message.diagnostics.unwrap();
    assert_eq!(diagnostics[0]["type"], "retry");

    // A body that reads like an overload is retried whatever the status.
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 400, "body": "upstream connect error or disconnect"}));
    server.push(sse_reply());
    let (_, message) = run(&model(&server), &context(), &retrying(3)).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);

    // A 401 is final, with the API's message.
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 401, "body": {"error": {"message": "Token expired"}}}));
    let (_, message) = run(&model(&server), &context(), &retrying(3)).await;
    assert_eq!(message.error_message.as_deref(), Some("Token expired"));
    assert_eq!(server.requests().len(), 1);

    // An exhausted plan is final too, in pi's words; a plain 429 is retried, then reads the same.
    let server = MockServer::start().await.unwrap();
    server.push(
        json!({"status": 429, "body": {"error": {"type": "usage_limit_reached",
        "plan_type": "PLUS", "message": "The usage limit has been reached"}}}),
    );
    let (_, message) = run(&model(&server), &context(), &retrying(3)).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("You have hit your ChatGPT usage limit (plus plan).")
    );
    assert_eq!(server.requests().len(), 1);
    let server = MockServer::start().await.unwrap();
    for _ in 0..2 {
        server.push(json!({"status": 429, "body": {"error": {"message": "Rate limited"}}}));
    }
    let (_, message) = run(&model(&server), &context(), &retrying(1)).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("You have hit your ChatGPT usage limit.")
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_default_tier_echo_is_priced_at_the_requested_tier() {
    let answer = |tier: &str| {
        let mut events = short_answer(1);
        events[4]["response"]["service_tier"] = json!(tier);
        events[4]["response"]["usage"] = json!({"input_tokens": 100_000, "output_tokens": 10_000,
                                                 "total_tokens": 110_000});
        json!({"sse": events.into_iter().map(sse_event).collect::<Vec<_>>()})
    };
    let server = MockServer::start().await.unwrap();
    server.push(answer("default"));
    server.push(answer("default"));
    let model = model(&server);
    let (_, standard) = run(&model, &context(), &options(Transport::Sse)).await;
    let flex = StreamOptions {
        service_tier: Some("flex".into()),
        ..options(Transport::Sse)
    };
    let (_, discounted) = run(&model, &context(), &flex).await;
    assert!(standard.usage.cost.total > 0.0);
    assert!((discounted.usage.cost.total - standard.usage.cost.total * 0.5).abs() < 1e-12);
    assert_eq!(server.requests()[1].body["service_tier"], "flex");
}

#[tokio::test]
async fn keys_must_be_chatgpt_tokens() {
    let server = MockServer::start().await.unwrap();
    let model = model(&server);
    let none = StreamOptions {
        api_key: None,
        ..options(Transport::Sse)
    };
    let (events, message) = run(&model, &context(), &none).await;
    assert_eq!(kinds(&events), ["error"]);
    assert!(
        message
            .error_message
            .unwrap()
            .starts_with("No API key for provider: openai-codex")
    );
    let plain = StreamOptions {
        api_key: Some(ApiKey::new("sk-not-a-jwt")),
        ..options(Transport::Sse)
    };
    let (_, message) = run(&model, &context(), &plain).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("Failed to extract accountId from token")
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn websocket_sends_one_message_per_request() {
    let server = MockServer::start().await.unwrap();
    server.push(ws_reply());
    let session = "codex-ws-basic";
    let options = StreamOptions {
        session_id: Some(session.into()),
        ..options(Transport::Websocket)
    };
    let (events, message) = run(&model(&server), &context(), &options).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(kinds(&events)[0], "start");
    assert_eq!(message.diagnostics, None);
    let requests = server.requests();
    assert_eq!(methods(&requests), ["GET", "WS"]);
    let upgrade = &requests[0];
    assert_eq!(upgrade.path, "/v1/codex/responses");
    assert_eq!(
        upgrade.header("openai-beta"),
        Some("responses_websockets=2026-02-06")
    );
    assert_eq!(upgrade.header("session_id"), Some(session));
    assert_eq!(upgrade.header("x-client-request-id"), Some(session));
    assert_eq!(upgrade.header("chatgpt-account-id"), Some(ACCOUNT));
    assert_eq!(upgrade.header("accept"), None);
    let body = &requests[1].body;
    assert_eq!(body["type"], "response.create");
    assert_eq!(body["model"], "gpt-5.2-codex");
    assert_eq!(body["instructions"], "You are Codex.");
    assert_eq!(body.get("previous_response_id"), None);
    let stats = openai_codex_websocket_stats(session).unwrap();
    assert_eq!((stats.requests, stats.connections_created), (1, 1));
    close_openai_codex_websocket_sessions(Some(session));
}

/// The second turn of `context()`: the answer, its tool result, a new question.
fn follow_up(first: &AssistantMessage) -> Context {
    let mut context = context();
    context.messages.push(Message::Assistant(first.clone()));
    if let Some(call) = first.tool_calls().next() {
        context
            .messages
            .push(Message::ToolResult(ToolResultMessage {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: vec![UserContent::Text(TextContent {
                    text: "42".into(),
                    text_signature: None,
                })],
                ..ToolResultMessage::default()
            }));
    }
    context
}

#[tokio::test]
async fn a_cached_session_continues_from_the_previous_response() {
    let server = MockServer::start().await.unwrap();
    server.push(ws_reply());
    server.push(json!({"ws": short_answer(2)}));
    let session = "codex-ws-cached";
    let options = StreamOptions {
        session_id: Some(session.into()),
        ..options(Transport::Auto)
    };
    let model = model(&server);
    let (_, first) = run(&model, &context(), &options).await;
    assert_eq!(first.stop_reason, StopReason::ToolUse, "{first:?}");
    let (_, second) = run(&model, &follow_up(&first), &options).await;
    assert_eq!(second.stop_reason, StopReason::Stop, "{second:?}");
    assert_eq!(second.response_id.as_deref(), Some("resp_2"));

    let requests = server.requests();
    assert_eq!(methods(&requests), ["GET", "WS", "WS"], "one connection");
    let delta = &requests[2].body;
    assert_eq!(
        delta["previous_response_id"],
        "resp_68c1f0a2b3d481a09b7e5c4d3f2a1b0c"
    );
    assert_eq!(
        delta["input"],
        json!([{"type": "function_call_output", "call_id": "call_Xk3vQp9LmT2wRz7YbN4sHd1F",
                "output": "42"}]),
        "only what the previous request and its answer did not hold"
    );
    let stats = openai_codex_websocket_stats(session).unwrap();
    assert_eq!(
        (
            stats.requests,
            stats.connections_created,
            stats.connections_reused,
            stats.delta_requests,
            stats.full_context_requests
        ),
        (2, 1, 1, 1, 1)
    );
    assert_eq!(stats.last_delta_input_items, Some(1));
    close_openai_codex_websocket_sessions(Some(session));
}

#[tokio::test]
async fn websocket_mode_reuses_the_socket_but_sends_the_whole_context() {
    let server = MockServer::start().await.unwrap();
    server.push(ws_reply());
    server.push(json!({"ws": short_answer(2)}));
    let session = "codex-ws-uncached";
    let options = StreamOptions {
        session_id: Some(session.into()),
        ..options(Transport::Websocket)
    };
    let model = model(&server);
    let (_, first) = run(&model, &context(), &options).await;
    let (_, second) = run(&model, &follow_up(&first), &options).await;
    assert_eq!(second.stop_reason, StopReason::Stop);
    let requests = server.requests();
    assert_eq!(methods(&requests), ["GET", "WS", "WS"]);
    assert_eq!(requests[2].body.get("previous_response_id"), None);
    assert_eq!(requests[2].body["input"].as_array().unwrap().len(), 5);
    close_openai_codex_websocket_sessions(Some(session));
}

#[tokio::test]
async fn a_refused_websocket_falls_back_to_sse_for_the_session() {
    let server = MockServer::start().await.unwrap();
    server.push(sse_reply());
    server.push(sse_reply());
    let session = "codex-ws-fallback";
    let options = StreamOptions {
        session_id: Some(session.into()),
        ..options(Transport::Auto)
    };
    let model = model(&server);
    let (events, first) = run(&model, &context(), &options).await;
    assert_eq!(first.stop_reason, StopReason::ToolUse, "{first:?}");
    assert_eq!(kinds(&events)[0], "start");
    let diagnostics = first.diagnostics.clone().unwrap();
    assert_eq!(diagnostics.len(), 1);
    let diagnostic = &diagnostics[0];
    assert_eq!(diagnostic["type"], "provider_transport_failure");
    assert_eq!(
        diagnostic["error"]["message"],
        "WebSocket handshake failed: HTTP 400"
    );
    assert_eq!(
        diagnostic["details"],
        json!({"configuredTransport": "auto", "eventsEmitted": false,
               "phase": "before_message_stream_start",
               "requestBytes": diagnostic["details"]["requestBytes"],
               "fallbackTransport": "sse"})
    );
    // The session now goes straight to SSE.
    let (_, second) = run(&model, &context(), &options).await;
    assert_eq!(second.stop_reason, StopReason::ToolUse);
    assert_eq!(second.diagnostics, None);
    assert_eq!(methods(&server.requests()), ["GET", "POST", "POST"]);
    let stats = openai_codex_websocket_stats(session).unwrap();
    assert_eq!((stats.websocket_failures, stats.sse_fallbacks), (1, 2));
    assert_eq!(stats.websocket_fallback_active, Some(true));
    assert_eq!(
        stats.last_websocket_error.as_deref(),
        Some("WebSocket handshake failed: HTTP 400")
    );
}

#[tokio::test]
async fn a_websocket_failure_after_events_is_an_error_not_a_fallback() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"ws": ws_messages(), "ws_drop_after": 6}));
    server.push(sse_reply());
    let options = StreamOptions {
        session_id: Some("codex-ws-dropped".into()),
        ..options(Transport::Auto)
    };
    let (events, message) = run(&model(&server), &context(), &options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(kinds(&events)[0], "start");
    assert!(!message.content.is_empty(), "the partial answer is kept");
    assert_eq!(
        message.diagnostics.unwrap()[0]["details"]["eventsEmitted"],
        json!(true)
    );
    assert_eq!(methods(&server.requests()), ["GET", "WS"], "no SSE request");
}

#[tokio::test]
async fn a_codex_error_on_the_websocket_is_not_retried_over_sse() {
    let server = MockServer::start().await.unwrap();
    server.push(
        json!({"ws": [{"type": "error", "code": "invalid_prompt", "message": "bad prompt"}]}),
    );
    server.push(sse_reply());
    let (_, message) = run(&model(&server), &context(), &options(Transport::Websocket)).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("Codex error: bad prompt")
    );
    assert_eq!(message.diagnostics, None);
    assert_eq!(methods(&server.requests()), ["GET", "WS"]);
}

#[tokio::test]
async fn a_socket_closed_while_idle_is_replaced() {
    let server = MockServer::start().await.unwrap();
    // The server closes the socket right after the first answer.
    server.push(json!({"ws": short_answer(1), "ws_close": {"code": 1000, "reason": "bye"}}));
    server.push(json!({"ws": short_answer(2)}));
    let session = "codex-ws-stale";
    let options = StreamOptions {
        session_id: Some(session.into()),
        ..options(Transport::Websocket)
    };
    let model = model(&server);
    let (_, first) = run(&model, &context(), &options).await;
    assert_eq!(first.stop_reason, StopReason::Stop);
    let (_, second) = run(&model, &context(), &options).await;
    assert_eq!(second.stop_reason, StopReason::Stop, "{second:?}");
    assert_eq!(second.diagnostics, None, "no fallback");
    assert_eq!(methods(&server.requests()), ["GET", "WS", "GET", "WS"]);
    close_openai_codex_websocket_sessions(Some(session));
}

#[tokio::test]
async fn closing_sessions_drops_the_cached_socket() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"ws": short_answer(1)}));
    server.push(json!({"ws": short_answer(2)}));
    let session = "codex-ws-close";
    let options = StreamOptions {
        session_id: Some(session.into()),
        ..options(Transport::Websocket)
    };
    let model = model(&server);
    run(&model, &context(), &options).await;
    close_openai_codex_websocket_sessions(Some(session));
    let (_, second) = run(&model, &context(), &options).await;
    assert_eq!(second.stop_reason, StopReason::Stop);
    assert_eq!(methods(&server.requests()), ["GET", "WS", "GET", "WS"]);
    assert_eq!(
        openai_codex_websocket_stats(session)
            .unwrap()
            .connections_created,
        2
    );
    close_openai_codex_websocket_sessions(Some(session));
}

#[tokio::test]
async fn abort_mid_websocket_answer_keeps_the_partial_text() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"ws": short_answer(1), "ws_stall_after": 3, "stall_ms": 60_000}));
    let signal = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(signal.clone()),
        session_id: Some("codex-ws-abort".into()),
        ..options(Transport::Websocket)
    };
    let mut stream = ai::stream(&model(&server), &context(), &options);
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            signal.cancel();
        }
    }
    let message = stream.final_message().unwrap();
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
    assert_eq!(message.text(), "hi");
    close_openai_codex_websocket_sessions(Some("codex-ws-abort"));
}

#[tokio::test]
async fn the_registry_serves_every_codex_catalog_model() {
    let server = MockServer::start().await.unwrap();
    let models = ai::get_models("openai-codex");
    assert_eq!(models.len(), 10);
    for model in &models {
        server.push(json!({"sse": short_answer(1).into_iter().map(sse_event).collect::<Vec<_>>()}));
        let model = Model {
            base_url: server.base_url(),
            ..model.clone()
        };
        let message = ai::complete_simple(&model, &context(), &options(Transport::Sse)).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{}: {message:?}",
            model.id
        );
        let body = server.requests().last().unwrap().body.clone();
        assert_eq!(body["model"], json!(model.id));
        assert_eq!(body.get("reasoning"), None, "no level, no reasoning");
    }
}

#[tokio::test]
async fn a_stalled_or_oversized_websocket_answer_ends_with_an_error() {
    // Silence after the first events: the idle timeout ends it (no fallback once started).
    let server = MockServer::start().await.unwrap();
    server.push(json!({"ws": short_answer(1), "ws_stall_after": 2, "stall_ms": 60_000}));
    let stalling = StreamOptions {
        idle_timeout_ms: Some(300),
        ..options(Transport::Websocket)
    };
    let (_, message) = run(&model(&server), &context(), &stalling).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap();
    assert!(error.contains("idle timeout"), "{error}");
    assert_eq!(methods(&server.requests()), ["GET", "WS"]);

    // A message larger than max_event_bytes.
    let server = MockServer::start().await.unwrap();
    let mut events = short_answer(1);
    events[2]["delta"] = json!("x".repeat(10_000));
    server.push(json!({"ws": events}));
    let options = StreamOptions {
        max_event_bytes: Some(4096),
        ..options(Transport::Websocket)
    };
    let (_, message) = run(&model(&server), &context(), &options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap();
    assert!(error.contains("too large"), "{error}");
}

/// What pi 0.73.1 sent over the WebSocket for two turns of one `websocket-cached` session
/// (`tests/fixtures/openai-codex/record-pi-websocket.mjs`).
const PI_WEBSOCKET: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/openai-codex/pi_websocket.json"
));

fn numbers_as_f64(value: Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_as_f64).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, numbers_as_f64(v)))
                .collect(),
        ),
        other => other,
    }
}

/// A request as compared with pi's: method, path, the headers the provider chose (not the
/// WebSocket client's own), body.
fn comparable(request: &RecordedRequest) -> Value {
    let client = |name: &str| {
        name.starts_with("sec-websocket-")
            || matches!(
                name,
                "host" | "user-agent" | "upgrade" | "connection" | "pragma" | "cache-control"
            )
    };
    let headers: serde_json::Map<String, Value> = request
        .headers
        .iter()
        .filter(|(name, _)| !client(name))
        .map(|(name, value)| (name.clone(), json!(value)))
        .collect();
    json!({"method": request.method, "path": request.path, "headers": headers, "body": request.body})
}

#[tokio::test]
async fn websocket_requests_match_what_pi_sends() {
    let fixture: Value = serde_json::from_str(PI_WEBSOCKET).unwrap();
    let server = MockServer::start().await.unwrap();
    let origin = format!("http://{}", server.addr());
    server.push_all(fixture["replies"].as_array().unwrap().iter().cloned());
    let model: Model =
        serde_json::from_str(&fixture["model"].to_string().replace("{MOCK}", &origin)).unwrap();
    let mut context: Context = serde_json::from_value(fixture["context"].clone()).unwrap();
    let options = StreamOptions::from_json(&fixture["options"].to_string()).unwrap();
    let first = ai::complete(&model, &context, &options).await;
    context.messages.push(Message::Assistant(first.clone()));
    context
        .messages
        .push(serde_json::from_value(fixture["toolResult"].clone()).unwrap());
    let second = ai::complete(&model, &context, &options).await;
    for (ours, pi) in [first, second]
        .iter()
        .zip(fixture["results"].as_array().unwrap())
    {
        let mut ours = serde_json::to_value(ours).unwrap();
        ours.as_object_mut().unwrap().shift_remove("timestamp");
        // Our own addition (clock readings), absent from pi's messages.
        ours.as_object_mut().unwrap().shift_remove("timing");
        // JavaScript writes 0.0 as 0.
        assert_eq!(numbers_as_f64(ours), numbers_as_f64(pi.clone()));
    }
    let ours: Vec<Value> = server.requests().iter().map(comparable).collect();
    let pi: Vec<Value> = fixture["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| serde_json::from_str(&r.to_string().replace("{MOCK}", &origin)).unwrap())
        .collect();
    assert_eq!(ours, pi);
    close_openai_codex_websocket_sessions(options.session_id.as_deref());
}
