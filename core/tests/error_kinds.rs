//! Errors a program can act on: every failure class ends the stream with pi's `errorMessage`
//! and our `errorKind` (plus `httpStatus` / `retryAfterMs` when known), against the mock
//! server and the faux provider (no network).

use pi_agent::agent::{Agent, AgentMessage, AgentOptions};
use pi_agent::ai::providers::faux::{FauxProvider, faux_assistant_message, faux_text};
use pi_agent::ai::{
    self, AssistantMessage, Context, ErrorKind, Message, Model, StopReason, StreamOptions,
    UserMessage, is_context_overflow,
};
use pi_mock_server::{MockServer, reply};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn completions(server: &MockServer) -> Model {
    Model::new("openai-completions", "mock", "mock-gpt", server.base_url())
}

fn anthropic(server: &MockServer) -> Model {
    Model::new(
        "anthropic-messages",
        "anthropic",
        "claude-sonnet-4-5",
        server.base_url().trim_end_matches("/v1"),
    )
}

fn context() -> Context {
    Context {
        messages: vec![Message::User(UserMessage::text("hi"))],
        ..Context::default()
    }
}

fn no_retries() -> StreamOptions {
    StreamOptions {
        max_retries: Some(0),
        api_key: Some("sk-test".into()),
        ..StreamOptions::default()
    }
}

async fn failed(model: &Model, options: &StreamOptions) -> AssistantMessage {
    let message = ai::complete(model, &context(), options).await;
    assert!(message.stop_reason.is_failure(), "{message:?}");
    message
}

async fn failed_with(reply: Value) -> AssistantMessage {
    let server = MockServer::start().await.unwrap();
    server.push(reply);
    failed(&completions(&server), &no_retries()).await
}

#[tokio::test]
async fn rate_limit_carries_status_and_the_servers_delay() {
    let message = failed_with(
        json!({"status": 429, "body": {"error": {"message": "slow down"}},
                                     "headers": {"retry-after": "7"}}),
    )
    .await;
    assert_eq!(message.error_message.as_deref(), Some("429 slow down"));
    assert_eq!(message.error_kind, Some(ErrorKind::RateLimit));
    assert_eq!(message.http_status, Some(429));
    assert_eq!(message.retry_after_ms, Some(7000));
    assert!(message.error_kind.unwrap().is_transient());

    let message = failed_with(
        json!({"status": 429, "body": {"error": {"message": "later"}},
                                     "headers": {"retry-after-ms": "250"}}),
    )
    .await;
    assert_eq!(message.retry_after_ms, Some(250));

    // The JSON: pi's keys unchanged, ours after `errorMessage`.
    let json = serde_json::to_string(&message).unwrap();
    let at = |key: &str| json.find(&format!("\"{key}\"")).unwrap();
    assert!(at("errorMessage") < at("errorKind"), "{json}");
    assert!(at("errorKind") < at("httpStatus") && at("httpStatus") < at("retryAfterMs"));
    let value: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["errorKind"], "rate_limit");
    assert_eq!(value["httpStatus"], 429);
    assert_eq!(value["retryAfterMs"], 250);
}

#[tokio::test]
async fn a_delay_beyond_the_cap_fails_at_once_with_the_delay() {
    let server = MockServer::start().await.unwrap();
    server.push(
        json!({"status": 429, "body": {"error": {"message": "quota"}},
                       "headers": {"retry-after": "120"}}),
    );
    let options = StreamOptions {
        max_retries: Some(3),
        max_retry_delay_ms: Some(1000),
        api_key: Some("sk-test".into()),
        ..StreamOptions::default()
    };
    let message = failed(&completions(&server), &options).await;
    assert_eq!(message.error_kind, Some(ErrorKind::RateLimit));
    assert_eq!(message.http_status, Some(429));
    assert_eq!(message.retry_after_ms, Some(120_000));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn statuses_name_their_kind() {
    for (status, kind) in [
        (401, ErrorKind::Auth),
        (403, ErrorKind::Auth),
        (404, ErrorKind::NotFound),
        (400, ErrorKind::BadRequest),
        (500, ErrorKind::Server),
        (503, ErrorKind::Server),
    ] {
        let message =
            failed_with(json!({"status": status, "body": {"error": {"message": "no"}}})).await;
        assert_eq!(message.error_message, Some(format!("{status} no")));
        assert_eq!(message.error_kind, Some(kind), "{status}");
        assert_eq!(message.http_status, Some(status));
        assert_eq!(message.retry_after_ms, None);
    }
}

#[tokio::test]
async fn a_missing_key_is_auth_before_anything_is_sent() {
    // A provider with no environment variable, on a host that is not loopback: no request
    // can be made without a key.
    let model = Model::new(
        "openai-completions",
        "no-such-vendor",
        "m",
        "https://example.invalid/v1",
    );
    let message = failed(&model, &StreamOptions::default()).await;
    assert_eq!(message.error_kind, Some(ErrorKind::Auth), "{message:?}");
    assert_eq!(message.http_status, None);
}

#[tokio::test]
async fn context_overflow_text_is_context_overflow() {
    let text = "This model's maximum context length is 128000 tokens. However, your messages \
                resulted in 200000 tokens.";
    let message = failed_with(json!({"status": 400, "body": {"error": {"message": text}}})).await;
    assert_eq!(message.error_kind, Some(ErrorKind::ContextOverflow));
    assert_eq!(message.http_status, Some(400));
    assert!(is_context_overflow(&message, None));

    // A stream error event (Anthropic's `error` event) is classified by its type.
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": [
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
    ], "headers": {"content-type": "text/event-stream"}}));
    let message = failed(&anthropic(&server), &no_retries()).await;
    assert_eq!(message.error_kind, Some(ErrorKind::Server), "{message:?}");
}

#[tokio::test]
async fn a_dropped_connection_is_network() {
    let message = failed_with(
        json!({"text": "a long answer that is cut off", "delta_size": 2,
                                     "drop_after_bytes": 60}),
    )
    .await;
    assert_eq!(message.error_kind, Some(ErrorKind::Network), "{message:?}");
    assert_eq!(message.http_status, None);

    // Nothing listening: the connection is refused.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = Model::new(
        "openai-completions",
        "mock",
        "mock-gpt",
        format!("http://127.0.0.1:{closed}/v1"),
    );
    let message = failed(&model, &no_retries()).await;
    assert_eq!(message.error_kind, Some(ErrorKind::Network), "{message:?}");
}

#[tokio::test]
async fn time_limits_are_timeout() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"text": "x", "head_stall_ms": 60_000}));
    server.push(json!({"text": "late", "stall_after_bytes": 0}));
    let options = StreamOptions {
        request_timeout_ms: Some(200),
        idle_timeout_ms: Some(200),
        ..no_retries()
    };
    for _ in 0..2 {
        let message = failed(&completions(&server), &options).await;
        assert_eq!(message.error_kind, Some(ErrorKind::Timeout), "{message:?}");
    }
}

#[tokio::test]
async fn an_abort_is_aborted_and_a_refusal_is_refusal() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"text": "never", "head_stall_ms": 60_000}));
    let signal = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(signal.clone()),
        ..no_retries()
    };
    let model = completions(&server);
    let pending = tokio::spawn(async move { ai::complete(&model, &context(), &options).await });
    signal.cancel();
    let message = pending.await.unwrap();
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.error_kind, Some(ErrorKind::Aborted));

    let mut script = reply::text("I cannot");
    script["finish_reason"] = json!("content_filter");
    let message = failed_with(script).await;
    assert_eq!(message.error_kind, Some(ErrorKind::Refusal));
    assert_eq!(
        message.error_message.as_deref(),
        Some("Provider finish_reason: content_filter")
    );
}

#[tokio::test]
async fn faux_failures_and_agent_transcripts_carry_the_kind() {
    let faux = FauxProvider::register();
    let mut overflow = faux_assistant_message(vec![faux_text("")]);
    overflow.stop_reason = StopReason::Error;
    overflow.error_message = Some("prompt is too long: 210000 tokens > 200000 maximum".into());
    faux.push(overflow);
    let mut limited = faux_assistant_message(vec![]);
    limited.stop_reason = StopReason::Error;
    limited.error_message = Some("429 slow down".into());
    limited.error_kind = Some(ErrorKind::RateLimit);
    limited.http_status = Some(429);
    limited.retry_after_ms = Some(1500);
    faux.push(limited);

    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    agent.prompt("one").await.unwrap();
    let last = agent.messages().last().cloned().unwrap();
    let AgentMessage::Llm(Message::Assistant(first)) = last else {
        panic!("{last:?}")
    };
    assert_eq!(first.error_kind, Some(ErrorKind::ContextOverflow));

    let message = ai::complete(&faux.model(), &context(), &StreamOptions::default()).await;
    assert_eq!(message.error_kind, Some(ErrorKind::RateLimit));
    assert_eq!(message.http_status, Some(429));
    assert_eq!(message.retry_after_ms, Some(1500));
}

#[test]
fn transcripts_load_with_and_without_the_fields() {
    let pi: AssistantMessage = serde_json::from_value(json!({
        "role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "error", "errorMessage": "boom", "timestamp": 0
    }))
    .unwrap();
    assert_eq!(pi.error_kind, None);
    let json = serde_json::to_value(&pi).unwrap();
    for key in ["errorKind", "httpStatus", "retryAfterMs"] {
        assert!(json.get(key).is_none(), "{key} is skipped when unknown");
    }
    let mut newer = json;
    newer["errorKind"] = json!("a_kind_from_the_future");
    let newer: AssistantMessage = serde_json::from_value(newer).unwrap();
    assert_eq!(newer.error_kind, None);
}
