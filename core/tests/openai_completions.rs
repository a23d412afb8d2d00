//! The `openai-completions` provider against the mock server, which speaks the real wire format
//! byte for byte (SSE framing, chunk boundaries anywhere, usage in the last chunk).

use futures::StreamExt;
use pi_agent::ai::{
    self, ApiKey, AssistantContent, AssistantMessageEvent, Context, Message, Model, StopReason,
    StreamOptions, Tool, UserMessage,
};
use pi_mock_server::{MockServer, reply};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn model_for(server: &MockServer) -> Model {
    let mut model = Model::new("openai-completions", "mock", "mock-gpt", server.base_url());
    model.cost.input = 1.0;
    model.cost.output = 2.0;
    model
}

fn context(prompt: &str) -> Context {
    Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![Message::User(UserMessage::text(prompt))],
        tools: Some(vec![Tool {
            name: "calculator".into(),
            description: "Evaluates arithmetic".into(),
            parameters: json!({"type": "object", "properties": {"expression": {"type": "string"}},
                               "required": ["expression"]}),
        }]),
    }
}

async fn collect(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> (Vec<AssistantMessageEvent>, pi_agent::AssistantMessage) {
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
async fn streams_text_with_usage_and_cost() {
    let server = MockServer::start().await.unwrap();
    let mut text_reply = reply::text("Hello there, world!");
    text_reply["usage"] = json!({"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500,
                                  "prompt_tokens_details": {"cached_tokens": 200}});
    server.push(text_reply);
    let model = model_for(&server);
    let (events, message) = collect(&model, &context("hi"), &StreamOptions::default()).await;
    let kinds = kinds(&events);
    assert_eq!(kinds.first(), Some(&"start"));
    assert_eq!(kinds[1], "text_start");
    assert!(kinds[2..kinds.len() - 2].iter().all(|k| *k == "text_delta"));
    assert_eq!(&kinds[kinds.len() - 2..], ["text_end", "done"]);
    assert_eq!(message.text(), "Hello there, world!");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.usage.input, 800);
    assert_eq!(message.usage.cache_read, 200);
    assert_eq!(message.usage.output, 500);
    assert_eq!(message.usage.total_tokens, 1500);
    assert!((message.usage.cost.total - (800.0 + 1000.0) / 1_000_000.0).abs() < 1e-12);
    assert_eq!(message.response_id.as_deref(), Some("chatcmpl-mock-1"));
    assert_eq!(message.api, "openai-completions");
    assert_eq!(message.provider, "mock");
}

#[tokio::test]
async fn sends_the_request_pi_sends() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::text("ok"));
    let model = model_for(&server);
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-test-123")),
        max_tokens: Some(64),
        temperature: Some(0.5),
        headers: [("x-extra".to_owned(), "1".to_owned())].into(),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model, &context("hi"), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(request.header("x-extra"), Some("1"));
    let body = &request.body;
    assert_eq!(body["model"], "mock-gpt");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["store"], false);
    assert_eq!(body["max_completion_tokens"], 64);
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})
    );
    assert_eq!(body["tools"][0]["function"]["name"], "calculator");
    assert_eq!(body["tools"][0]["function"]["strict"], false);
}

#[tokio::test]
async fn key_never_appears_in_errors_or_events() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::http_error(
        401,
        json!({"error": {"message": "Incorrect API key provided"}}),
    ));
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-very-secret")),
        ..StreamOptions::default()
    };
    let (events, message) = collect(&model_for(&server), &context("hi"), &options).await;
    let everything = format!(
        "{events:?} {message:?} {}",
        serde_json::to_string(&events).unwrap()
    );
    assert!(!everything.contains("sk-very-secret"));
    assert_eq!(
        message.error_message.as_deref(),
        Some("401 Incorrect API key provided")
    );
}

#[tokio::test]
async fn reasoning_then_text_and_tool_calls_across_chunks() {
    let server = MockServer::start().await.unwrap();
    let mut both = reply::tool_calls([
        reply::tool_call("call_a", "calculator", json!({"expression": "6*7"})),
        reply::tool_call("call_b", "calculator", json!({"expression": "1+1"})),
    ]);
    both["reasoning"] = json!("Let me compute.");
    both["text"] = json!("Computing.");
    server.push(both);
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let AssistantContent::Thinking(thinking) = &message.content[0] else {
        panic!("expected thinking first: {message:?}")
    };
    assert_eq!(thinking.thinking, "Let me compute.");
    assert_eq!(
        thinking.thinking_signature.as_deref(),
        Some("reasoning_content")
    );
    assert_eq!(message.text(), "Computing.");
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_a", "calculator")
    );
    assert_eq!(calls[0].arguments, json!({"expression": "6*7"}));
    assert_eq!(calls[1].arguments, json!({"expression": "1+1"}));
    // pi's completions ordering: every *_end comes at the end, in content order.
    let ends: Vec<_> = kinds(&events)
        .into_iter()
        .filter(|k| k.ends_with("_end"))
        .collect();
    assert_eq!(
        ends,
        ["thinking_end", "text_end", "toolcall_end", "toolcall_end"]
    );
    assert_eq!(kinds(&events).last(), Some(&"done"));
}

#[tokio::test]
async fn any_chunk_boundaries_give_the_same_events() {
    let mut reference: Option<Vec<Value>> = None;
    for shaping in [
        json!({}),
        json!({"split": 1}),
        json!({"split_random": 7}),
        json!({"split_random": 99}),
        json!({"split": 13}),
    ] {
        let server = MockServer::start().await.unwrap();
        let mut script = reply::tool_call(
            "call_1",
            "calculator",
            json!({"expression": "ünïcödé ✓ 6*7"}),
        );
        script["text"] = json!("Sure — here you go ✓");
        for (key, value) in shaping.as_object().unwrap() {
            script[key] = value.clone();
        }
        server.push(script);
        let (events, message) = collect(
            &model_for(&server),
            &context("hi"),
            &StreamOptions::default(),
        )
        .await;
        assert_eq!(
            message.stop_reason,
            StopReason::ToolUse,
            "{shaping}: {message:?}"
        );
        // Deltas may be grouped differently; the folded result and the event kinds' shape may
        // not. Compare the final message and every *_end event.
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
            None => reference = Some(summary),
            Some(reference) => assert_eq!(&summary, reference, "{shaping}"),
        }
    }
}

#[tokio::test]
async fn http_errors_carry_status_and_provider_message() {
    for (status, body, expected) in [
        (
            401,
            json!({"error": {"message": "Invalid API key", "type": "invalid_request_error"}}),
            "401 Invalid API key",
        ),
        (
            429,
            json!({"error": {"message": "Rate limit reached"}}),
            "429 Rate limit reached",
        ),
        (
            500,
            json!({"error": "upstream exploded"}),
            "500 upstream exploded",
        ),
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(reply::http_error(status, body));
        let no_retries = StreamOptions {
            max_retries: Some(0),
            ..StreamOptions::default()
        };
        let (events, message) = collect(&model_for(&server), &context("hi"), &no_retries).await;
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
async fn dropped_connection_mid_text_keeps_partial_content() {
    let server = MockServer::start().await.unwrap();
    let mut script = reply::text("This answer will be cut off somewhere in the middle of it.");
    script["drop_after_bytes"] = json!(400);
    server.push(script);
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(kinds(&events).first(), Some(&"start"));
    // As pi (whose SDK ends the iteration quietly on a dropped body), the open block is ended;
    // unlike pi, the stream then ends with `error`, not `done`.
    let all = kinds(&events);
    assert_eq!(&all[all.len() - 2..], ["text_end", "error"], "{all:?}");
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection error"),
        "{message:?}"
    );
    assert!(!message.text().is_empty());
}

#[tokio::test]
async fn dropped_connection_mid_tool_call_keeps_best_effort_arguments() {
    let server = MockServer::start().await.unwrap();
    let mut script = reply::tool_call(
        "call_1",
        "calculator",
        json!({"expression": "1+2+3+4+5+6+7+8+9"}),
    );
    script["delta_size"] = json!(3);
    // Cut inside the arguments: after the id/name chunk and some argument pieces.
    script["drop_after_bytes"] = json!(700);
    server.push(script);
    let (_, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let call = message.tool_calls().next().expect("partial tool call kept");
    assert_eq!(call.id, "call_1");
    assert!(call.arguments.is_object());
}

#[tokio::test]
async fn clean_close_before_the_end_is_an_error() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"chunks": [
        {"id": "c1", "object": "chat.completion.chunk", "model": "mock-gpt",
         "choices": [{"index": 0, "delta": {"content": "half an ans"}, "finish_reason": null}]}
    ], "done": false}));
    let (_, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "half an ans");
}

#[tokio::test]
async fn malformed_chunk_is_a_clear_error() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": [
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\n\n",
        "data: {this is not json\n\n",
    ]}));
    let (_, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.clone().unwrap();
    assert!(
        error.starts_with("Malformed chunk from provider"),
        "{error}"
    );
    assert_eq!(message.text(), "ok");
}

#[tokio::test]
async fn comments_null_chunks_and_raw_control_characters_are_tolerated() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": [
        ": keep-alive\r\n\r\n",
        "data: null\r\n\r\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"calculator\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\r\n\r\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"expression\\\": \\\"line1\tline2\\\"}\"}}]},\"finish_reason\":null}]}\r\n\r\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\r\n\r\n",
        "data: [DONE]\r\n\r\n",
    ]}));
    let (_, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.arguments, json!({"expression": "line1\tline2"}));
}

#[tokio::test]
async fn unknown_finish_reason_is_an_error_that_names_it() {
    let server = MockServer::start().await.unwrap();
    let mut script = reply::text("partial");
    script["finish_reason"] = json!("content_filter");
    server.push(script);
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
        Some("Provider finish_reason: content_filter")
    );
}

#[tokio::test]
async fn tool_deltas_coalesce_by_stable_index_when_ids_change() {
    let chunk = |delta: Value| json!({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    let server = MockServer::start().await.unwrap();
    server.push(json!({"chunks": [
        chunk(json!({"tool_calls": [{"index": 0, "id": "first", "function": {"name": "calculator", "arguments": ""}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "id": "second", "function": {"arguments": "{\"expression\":"}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "id": "third", "function": {"arguments": "\"2*3\"}"}}]})),
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]}));
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    let indexes: Vec<_> = events
        .iter()
        .filter_map(AssistantMessageEvent::content_index)
        .collect();
    assert!(indexes.iter().all(|i| *i == 0), "{indexes:?}");
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "first");
    assert_eq!(calls[0].arguments, json!({"expression": "2*3"}));
    let json = serde_json::to_string(&message).unwrap();
    assert!(!json.contains("partialArgs") && !json.contains("streamIndex"));
}

#[tokio::test]
async fn abort_before_the_first_byte() {
    let server = MockServer::start().await.unwrap();
    let mut script = reply::text("never seen");
    script["stall_after_bytes"] = json!(0);
    script["stall_ms"] = json!(10_000);
    server.push(script);
    let token = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(token.clone()),
        ..StreamOptions::default()
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
async fn abort_mid_stream_keeps_partial_text() {
    let server = MockServer::start().await.unwrap();
    let mut script = reply::text("one two three four five six seven eight nine ten");
    script["delay_ms"] = json!(30);
    server.push(script);
    let token = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(token.clone()),
        ..StreamOptions::default()
    };
    let mut stream = ai::stream(&model_for(&server), &context("hi"), &options);
    let mut deltas = 0;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            deltas += 1;
            if deltas == 2 {
                token.cancel();
            }
        }
        events.push(event);
    }
    let kinds: Vec<&str> = events.iter().map(AssistantMessageEvent::kind).collect();
    // As pi: the open text block is ended before the `error` of the abort.
    assert_eq!(
        &kinds[kinds.len() - 2..],
        ["text_end", "error"],
        "{kinds:?}"
    );
    let Some(AssistantMessageEvent::Error { reason, error }) = events.last() else {
        panic!("expected a terminal error")
    };
    assert_eq!(*reason, StopReason::Aborted);
    assert!(!error.text().is_empty());
}

#[tokio::test]
async fn missing_key_for_a_remote_endpoint_names_the_variable() {
    let model = Model::new(
        "openai-completions",
        "groq",
        "llama",
        "https://api.groq.invalid/openai/v1",
    );
    // SAFETY of the test: no other test in this binary reads GROQ_API_KEY.
    if std::env::var("GROQ_API_KEY").is_ok() {
        return;
    }
    let message = ai::complete(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(message.error_message.unwrap().contains("GROQ_API_KEY"));
}

#[tokio::test]
async fn unknown_api_is_an_error_event() {
    let model = Model::new("no-such-api", "x", "y", "");
    let message = ai::complete(&model, &context("hi"), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("No API provider registered for api: no-such-api")
    );
}

#[tokio::test]
async fn replayed_transcript_is_valid_for_the_next_request() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::tool_call(
        "call_9",
        "calculator",
        json!({"expression": "2+2"}),
    ));
    server.push(reply::text("4"));
    let model = model_for(&server);
    let mut context = context("what is 2+2");
    let first = ai::complete(&model, &context, &StreamOptions::default()).await;
    context.messages.push(Message::Assistant(first));
    // No tool result on purpose: the provider must repair the orphaned call.
    context
        .messages
        .push(Message::User(UserMessage::text("never mind")));
    let second = ai::complete(&model, &context, &StreamOptions::default()).await;
    assert_eq!(second.text(), "4");
    let body = &server.requests()[1].body;
    let roles: Vec<_> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(body["messages"][3]["content"], "No result provided");
    assert_eq!(
        body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"expression\":\"2+2\"}"
    );
}

#[tokio::test]
async fn retries_honour_retry_after_and_are_visible() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 429, "body": {"error": {"message": "slow down"}}, "headers": {"retry-after-ms": "20"}}));
    server.push(json!({"status": 503, "body": {"error": {"message": "overloaded"}}, "headers": {"retry-after": "0"}}));
    server.push(reply::text("finally"));
    let message = ai::complete(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(message.text(), "finally");
    let diagnostics = message.diagnostics.expect("retries are recorded");
    assert_eq!(diagnostics.len(), 2);
    assert_eq!(diagnostics[0]["type"], "retry");
    assert_eq!(diagnostics[0]["details"]["status"], 429);
    assert_eq!(diagnostics[0]["details"]["delayMs"], 20);
    assert_eq!(diagnostics[0]["error"]["message"], "429 slow down");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retry_after_beyond_the_cap_fails_fast_with_the_servers_delay() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 429, "body": {"error": {"message": "quota"}}, "headers": {"retry-after": "120"}}));
    let options = StreamOptions {
        max_retry_delay_ms: Some(5_000),
        ..StreamOptions::default()
    };
    let started = std::time::Instant::now();
    let message = ai::complete(&model_for(&server), &context("hi"), &options).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(
        message.error_message.as_deref(),
        Some(
            "429 quota (the server asked to retry after 120000 ms, more than max_retry_delay_ms = 5000 ms)"
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::http_error(
        400,
        json!({"error": {"message": "bad request: messages is empty"}}),
    ));
    let message = ai::complete(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("400 bad request: messages is empty")
    );
    assert!(message.diagnostics.is_none());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let model = Model::new(
        "openai-completions",
        "mock",
        "m",
        format!("http://{address}/v1"),
    );
    let options = StreamOptions {
        max_retries: Some(1),
        max_retry_delay_ms: Some(50),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model, &context("hi"), &options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection error"),
        "{message:?}"
    );
    assert_eq!(message.diagnostics.map(|d| d.len()), Some(1));
}

#[tokio::test]
async fn idle_timeout_fails_a_stalled_stream() {
    let server = MockServer::start().await.unwrap();
    let mut script = reply::text("stalls after the first chunk");
    script["stall_after_bytes"] = json!(200);
    script["stall_ms"] = json!(10_000);
    server.push(script);
    let options = StreamOptions {
        idle_timeout_ms: Some(150),
        ..StreamOptions::default()
    };
    let message = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        ai::complete(&model_for(&server), &context("hi"), &options),
    )
    .await
    .unwrap();
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Stream idle timeout: no data for 150 ms")
    );
}

#[tokio::test]
async fn on_payload_replaces_the_body_and_on_response_sees_headers() {
    use pi_agent::ai::Callback;
    use std::sync::{Arc, Mutex};
    let server = MockServer::start().await.unwrap();
    let mut script = reply::text("ok");
    script["headers"] = json!({"x-request-id": "req-42"});
    server.push(script);
    let seen = Arc::new(Mutex::new(None));
    let sink = Arc::clone(&seen);
    let options = StreamOptions {
        on_payload: Some(Callback(Arc::new(|body: &Value, _: &Model| {
            let mut body = body.clone();
            body["user"] = json!("tenant-7");
            Ok(Some(body))
        }))),
        on_response: Some(Callback(Arc::new(
            move |status: u16, headers: &std::collections::BTreeMap<String, String>, _: &Model| {
                *sink.lock().unwrap() = Some((status, headers.get("x-request-id").cloned()));
            },
        ))),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model_for(&server), &context("hi"), &options).await;
    assert_eq!(message.text(), "ok");
    assert_eq!(server.requests()[0].body["user"], "tenant-7");
    assert_eq!(
        *seen.lock().unwrap(),
        Some((200, Some("req-42".to_owned())))
    );
}

#[tokio::test]
async fn a_failing_on_payload_fails_the_request_unsent() {
    use pi_agent::ai::{Callback, PayloadError};
    use std::sync::Arc;
    let server = MockServer::start().await.unwrap();
    server.push(reply::text("never sent"));
    let options = StreamOptions {
        on_payload: Some(Callback(Arc::new(|_: &Value, _: &Model| {
            Err(PayloadError("on_payload refused the body".to_owned()))
        }))),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model_for(&server), &context("hi"), &options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("on_payload refused the body")
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn an_echoed_key_cut_by_the_error_message_is_still_hidden() {
    const KEY: &str = "sk-echoed-0123456789abcdef";
    let server = MockServer::start().await.unwrap();
    // A plain-text error page echoing the key where the message is cut (2,000 characters).
    let page = format!("{} {KEY} and more", "x".repeat(1_990));
    server.push(json!({"status": 401, "body": page}));
    let options = StreamOptions {
        api_key: Some(ApiKey::new(KEY)),
        ..StreamOptions::default()
    };
    let (events, message) = collect(&model_for(&server), &context("hi"), &options).await;
    let everything = format!("{events:?} {message:?}");
    // Not even the part of the key before the cut.
    assert!(
        !everything.contains(&KEY[..8]),
        "{:?}",
        message.error_message
    );
    assert!(
        message
            .error_message
            .as_deref()
            .is_some_and(|m| m.starts_with("401 xxx")),
        "{:?}",
        message.error_message
    );
}

#[tokio::test]
async fn a_key_in_a_url_that_cannot_be_sent_is_hidden() {
    // No scheme: the client cannot build the request, and its error quotes the URL.
    let mut model = Model::new(
        "openai-completions",
        "mock",
        "mock-gpt",
        "localhost:11434/v1?api_key=sk-in-the-url-0123456789",
    );
    model.cost.input = 1.0;
    let options = StreamOptions {
        api_key: Some(ApiKey::new("k")),
        ..StreamOptions::default()
    };
    let (_, message) = collect(&model, &context("hi"), &options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap_or_default();
    assert!(error.starts_with("Could not build the request"), "{error}");
    assert!(!error.contains("sk-in-the-url"), "{error}");
}

#[tokio::test]
async fn a_body_trickling_on_after_the_end_marker_does_not_hold_back_done() {
    let server = MockServer::start().await.unwrap();
    // The answer and its end marker, then a comment byte every 20 ms for a minute.
    let chunk = json!({"id": "c1", "object": "chat.completion.chunk", "created": 1,
        "model": "mock-gpt", "choices": [{"index": 0, "delta": {"content": "hi"},
        "finish_reason": "stop"}]});
    let body = format!("data: {chunk}\n\ndata: [DONE]\n\n{}", ":".repeat(3_000));
    server.push(json!({"sse": body, "split": 1, "delay_ms": 20}));
    let started = std::time::Instant::now();
    let (events, message) = collect(
        &model_for(&server),
        &context("hi"),
        &StreamOptions::default(),
    )
    .await;
    assert_eq!(
        kinds(&events).last(),
        Some(&"done"),
        "{:?}",
        message.error_message
    );
    // The trickle lasts a minute; the answer is complete after its first seconds.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(45),
        "{:?}",
        started.elapsed()
    );
}
