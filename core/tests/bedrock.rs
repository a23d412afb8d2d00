//! The `bedrock-converse-stream` provider against the mock server, fed binary
//! `application/vnd.amazon.eventstream` bodies cut anywhere.
//!
//! `tests/fixtures/bedrock/<case>.eventstream` was encoded by the AWS SDK's own codec from
//! `<case>.frames.json`; `<case>.pi.json` is what pi 0.73.1 emitted and sent for it, with the
//! context and options it was given (`record-pi.mjs`).

use base64::Engine as _;
use futures::StreamExt;
use pi_agent::ai::providers::BedrockProvider;
use pi_agent::ai::providers::eventstream::{self, HeaderValue};
use pi_agent::ai::{
    self, ApiKey, ApiProvider, AssistantContent, AssistantMessage, AssistantMessageEvent, Context,
    Message, Model, StopReason, StreamOptions, ThinkingLevel,
};
use pi_agent::ai::{CacheRetention, Callback};
use pi_mock_server::MockServer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../tests/fixtures/bedrock/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn recording(case: &str) -> Value {
    serde_json::from_slice(&fixture(&format!("{case}.pi.json"))).unwrap()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A scripted eventstream reply of `bytes`, with extra shaping keys.
fn reply(bytes: &[u8], shaping: Value) -> Value {
    let mut reply = json!({"bytes_b64": [b64(bytes)],
                           "headers": {"content-type": "application/vnd.amazon.eventstream"}});
    for (key, value) in shaping.as_object().unwrap() {
        reply[key] = value.clone();
    }
    reply
}

fn frame(kind: &str, payload: Value) -> Vec<u8> {
    eventstream::encode(&eventstream::Message {
        headers: vec![
            (":event-type".into(), HeaderValue::String(kind.into())),
            (
                ":content-type".into(),
                HeaderValue::String("application/json".into()),
            ),
            (":message-type".into(), HeaderValue::String("event".into())),
        ],
        payload: payload.to_string().into_bytes(),
    })
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    eventstream::encode(&eventstream::Message {
        headers: vec![
            (":exception-type".into(), HeaderValue::String(kind.into())),
            (
                ":content-type".into(),
                HeaderValue::String("application/json".into()),
            ),
            (
                ":message-type".into(),
                HeaderValue::String("exception".into()),
            ),
        ],
        payload: json!({"message": message}).to_string().into_bytes(),
    })
}

/// messageStart, one text block, messageStop `end_turn`, metadata.
fn text_reply(text: &str) -> Vec<u8> {
    [
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": text}}),
        ),
        frame("contentBlockStop", json!({"contentBlockIndex": 0})),
        frame("messageStop", json!({"stopReason": "end_turn"})),
        frame(
            "metadata",
            json!({"usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}}),
        ),
    ]
    .concat()
}

/// The mock server as an explicit Bedrock endpoint (no `/v1`).
fn endpoint(server: &MockServer) -> String {
    format!("http://{}", server.addr())
}

fn catalog_model(id: &str, server: &MockServer) -> Model {
    let mut model = ai::get_model("amazon-bedrock", id).expect("catalog model");
    model.base_url = endpoint(server);
    model
}

/// AWS variables for a provider that ignores the process environment (and `~/.aws`).
fn provider(vars: &[(&str, &str)]) -> BedrockProvider {
    let mut all = vec![
        ("HOME", "/nonexistent-home"),
        ("AWS_CONFIG_FILE", "/nonexistent"),
        ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
    ];
    all.extend_from_slice(vars);
    BedrockProvider::with_environment(all.iter().map(|(k, v)| (*k, *v)))
}

fn keys() -> BedrockProvider {
    provider(&[
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
    ])
}

fn hi() -> Context {
    Context {
        system_prompt: None,
        messages: vec![Message::User(ai::UserMessage::text("hi"))],
        tools: None,
    }
}

async fn collect(
    provider: &BedrockProvider,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    drain(provider.stream(model, context, options)).await
}

async fn drain(
    mut stream: ai::AssistantMessageEventStream,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
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

/// The options pi was given: pi's JSON shape is ours.
fn options_from(pi: &Value) -> StreamOptions {
    serde_json::from_value(pi["options"].clone()).unwrap()
}

/// Runs one recorded case through our provider; returns events, message and the request.
async fn run_case(
    case: &str,
    shaping: Value,
) -> (
    Vec<AssistantMessageEvent>,
    AssistantMessage,
    pi_mock_server::RecordedRequest,
) {
    let pi = recording(case);
    let server = MockServer::start().await.unwrap();
    server.push(reply(&fixture(&format!("{case}.eventstream")), shaping));
    let model = catalog_model(pi["model"].as_str().unwrap(), &server);
    let vars: Vec<(String, String)> = pi["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let context: Context = serde_json::from_value(pi["context"].clone()).unwrap();
    let options = options_from(&pi);
    let provider = provider(&vars);
    let stream = match pi["call"].as_str() {
        Some("streamSimple") => provider.stream_simple(&model, &context, &options),
        _ => provider.stream(&model, &context, &options),
    };
    let (events, message) = drain(stream).await;
    let request = server.requests().remove(0);
    (events, message, request)
}

fn assert_same_events(case: &str, events: &[AssistantMessageEvent], pi: &Value) {
    let pi_events = pi["events"].as_array().unwrap();
    assert_eq!(kinds(events).len(), pi_events.len(), "{case}: {events:?}");
    for (ours, theirs) in events.iter().zip(pi_events) {
        let context = format!("{case}: {ours:?} vs {theirs}");
        assert_eq!(ours.kind(), theirs["type"], "{context}");
        assert_eq!(
            ours.content_index().map(|i| json!(i)),
            theirs.get("contentIndex").cloned(),
            "{context}"
        );
        assert_eq!(
            ours.delta().map(|d| json!(d)),
            theirs.get("delta").cloned(),
            "{context}"
        );
        match ours {
            AssistantMessageEvent::TextEnd { content, .. }
            | AssistantMessageEvent::ThinkingEnd { content, .. } => {
                assert_eq!(json!(content), theirs["content"], "{context}");
            }
            AssistantMessageEvent::ToolCallEnd { tool_call, .. } => {
                let block = AssistantContent::ToolCall(tool_call.clone());
                assert_eq!(
                    serde_json::to_value(block).unwrap(),
                    theirs["toolCall"],
                    "{context}"
                );
            }
            AssistantMessageEvent::Done { reason, .. }
            | AssistantMessageEvent::Error { reason, .. } => {
                assert_eq!(json!(reason), theirs["reason"], "{context}");
            }
            _ => {}
        }
    }
}

fn message_json(message: &AssistantMessage) -> Value {
    let mut json = serde_json::to_value(Message::Assistant(message.clone())).unwrap();
    json.as_object_mut().unwrap().remove("timestamp");
    json.as_object_mut().unwrap().remove("timing");
    // Ours: pi has no error kind, status or retry delay.
    for key in ["errorKind", "httpStatus", "retryAfterMs"] {
        json.as_object_mut().unwrap().remove(key);
    }
    numbers_as_floats(json)
}

/// JavaScript writes a zero cost as `0`, serde as `0.0`: compare numbers as numbers.
fn numbers_as_floats(value: Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_as_floats).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, numbers_as_floats(v)))
                .collect(),
        ),
        other => other,
    }
}

/// pi's request with each run of same-role messages joined into one, as ours are (pi sends a
/// user message after tool results as a second user message, which Converse refuses: README
/// "Differences from pi").
fn with_alternating_roles(mut body: Value) -> Value {
    let Some(messages) = body["messages"].as_array_mut() else {
        return body;
    };
    let mut joined: Vec<Value> = Vec::new();
    for message in messages.drain(..) {
        match joined.last_mut() {
            Some(last) if last["role"] == message["role"] => {
                let more = message["content"].as_array().cloned().unwrap_or_default();
                last["content"].as_array_mut().unwrap().extend(more);
            }
            _ => joined.push(message),
        }
    }
    *messages = joined;
    body
}

#[tokio::test]
async fn same_events_message_and_request_as_pi() {
    for case in [
        "thinking_text_tool_use",
        "text_max_tokens",
        "throttled_mid_stream",
    ] {
        let pi = recording(case);
        let (events, message, request) = run_case(case, json!({})).await;
        assert_same_events(case, &events, &pi);
        assert_eq!(
            message_json(&message),
            numbers_as_floats(pi["message"].clone()),
            "{case}"
        );
        let pi_request = &pi["request"];
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, pi_request["path"], "{case}");
        assert_eq!(
            request.body,
            with_alternating_roles(pi_request["body"].clone()),
            "{case}"
        );
        assert_eq!(
            request.header("content-type"),
            pi_request["contentType"].as_str()
        );
        let authorization = request.header("authorization").unwrap();
        let pi_authorization = pi_request["authorization"].as_str().unwrap();
        if pi_authorization.starts_with("Bearer ") {
            assert_eq!(authorization, pi_authorization, "{case}");
        } else {
            // Same credential scope (the date is the day of the request) and a signature; our
            // signed header set is smaller than the JS SDK's (no SDK bookkeeping headers).
            let scope = |text: &str| {
                let credential = text.split("Credential=").nth(1).unwrap();
                let credential = credential.split(',').next().unwrap().to_owned();
                let mut parts: Vec<String> = credential.split('/').map(str::to_owned).collect();
                parts[1] = "<date>".into();
                parts.join("/")
            };
            assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential="));
            assert_eq!(scope(authorization), scope(pi_authorization), "{case}");
            assert!(authorization.contains("/bedrock/aws4_request, SignedHeaders="));
            let signature = authorization.rsplit("Signature=").next().unwrap();
            assert_eq!(signature.len(), 64, "{authorization}");
            assert!(request.header("x-amz-date").is_some());
            assert_eq!(
                request.header("x-amz-content-sha256").map(str::len),
                Some(64)
            );
            let pi_signed = pi_request["signedHeaders"].as_str().unwrap();
            assert_eq!(
                request.header("x-amz-security-token").is_some(),
                pi_signed.contains("x-amz-security-token"),
                "{case}"
            );
        }
    }
}

#[tokio::test]
async fn any_chunk_boundaries_give_the_same_message() {
    let case = "thinking_text_tool_use";
    let pi = recording(case);
    for shaping in [
        json!({"split": 1}),
        json!({"split": 7}),
        json!({"split_random": 3}),
        json!({"split_random": 1234}),
    ] {
        let (events, message, _) = run_case(case, shaping.clone()).await;
        assert_same_events(&format!("{case} {shaping}"), &events, &pi);
        assert_eq!(
            message_json(&message),
            numbers_as_floats(pi["message"].clone()),
            "{shaping}"
        );
    }
}

#[test]
fn fixtures_match_our_encoder() {
    // The `.eventstream` files come from the AWS SDK's codec; our encoder gives the same bytes.
    for case in [
        "thinking_text_tool_use",
        "text_max_tokens",
        "throttled_mid_stream",
    ] {
        let frames: Value =
            serde_json::from_slice(&fixture(&format!("{case}.frames.json"))).unwrap();
        let ours: Vec<u8> = frames
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|frame| {
                eventstream::encode(&eventstream::Message {
                    headers: frame["headers"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| (k.clone(), HeaderValue::String(v.as_str().unwrap().into())))
                        .collect(),
                    payload: frame["payload"].to_string().into_bytes(),
                })
            })
            .collect();
        assert_eq!(ours, fixture(&format!("{case}.eventstream")), "{case}");
    }
}

#[tokio::test]
async fn catalog_models_stream_through_the_registry() {
    let bedrock: Vec<Model> = ai::get_models("amazon-bedrock");
    assert_eq!(bedrock.len(), 93);
    assert!(bedrock.iter().all(|m| m.api == "bedrock-converse-stream"));
    assert!(ai::get_api_provider("bedrock-converse-stream").is_some());

    // The registered provider reads the process environment; a Bedrock API key passed as the
    // request's key is sent as a bearer token, whatever AWS variables the machine has.
    let server = MockServer::start().await.unwrap();
    server.push(reply(
        &text_reply("Hello from Nova"),
        json!({"split_random": 5}),
    ));
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    let options = StreamOptions {
        api_key: Some(ApiKey::new("ABSK-test-key")),
        ..StreamOptions::default()
    };
    let message = ai::complete_simple(&model, &hi(), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.text(), "Hello from Nova");
    assert_eq!((message.usage.input, message.usage.output), (10, 2));
    let request = &server.requests()[0];
    assert_eq!(
        request.path,
        "/model/amazon.nova-lite-v1%3A0/converse-stream"
    );
    assert_eq!(
        request.header("authorization"),
        Some("Bearer ABSK-test-key")
    );
    // stream_simple's cap: the model's own limit, below 32000.
    assert_eq!(request.body["inferenceConfig"], json!({"maxTokens": 8192}));
}

#[tokio::test]
async fn corrupted_frame_is_an_error_event_keeping_partial_text() {
    let good = [
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Partial"}}),
        ),
    ]
    .concat();
    let mut bad = frame(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": " more"}}),
    );
    let flip = bad.len() - 8;
    bad[flip] ^= 0x20;
    let server = MockServer::start().await.unwrap();
    server.push(reply(&[good, bad].concat(), json!({"split_random": 11})));
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    let (events, message) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "error"]
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "Partial");
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with("corrupted eventstream frame: message CRC mismatch"),
        "{error}"
    );
}

#[tokio::test]
async fn http_errors_are_worded_like_pi_and_throttling_is_retried() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 400, "body": {"message": "The model returned an error."},
        "headers": {"x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"}}));
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    let (events, message) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(kinds(&events), ["error"]);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Validation error: The model returned an error.")
    );
    assert_eq!(server.requests().len(), 1, "400 is not retried");

    let throttled = json!({"status": 429, "body": {"message": "Too many requests, please wait."},
        "headers": {"x-amzn-errortype": "ThrottlingException", "retry-after": "0"}});
    server.push_all([throttled.clone(), reply(&text_reply("ok"), json!({}))]);
    let (_, message) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.diagnostics.as_ref().map(Vec::len), Some(1));
    assert_eq!(server.requests().len(), 3);
    // Each attempt is signed afresh; both carry a signature.
    assert!(server.requests()[1..].iter().all(|r| {
        r.header("authorization")
            .unwrap()
            .starts_with("AWS4-HMAC-SHA256")
    }));

    server.push(throttled);
    let options = StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let (_, message) = collect(&keys(), &model, &hi(), &options).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("Throttling error: Too many requests, please wait.")
    );
}

#[tokio::test]
async fn stream_errors_and_unknown_events() {
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    // `:message-type: error` frames, and unknown event types in between.
    let error_frame = eventstream::encode(&eventstream::Message {
        headers: vec![
            (":message-type".into(), HeaderValue::String("error".into())),
            (
                ":error-code".into(),
                HeaderValue::String("InternalFailure".into()),
            ),
            (":error-message".into(), HeaderValue::String("boom".into())),
        ],
        payload: Vec::new(),
    });
    server.push(reply(
        &[
            frame("messageStart", json!({"role": "assistant"})),
            frame("somethingNew", json!({"x": 1})),
            frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"citation": {"x": 1}}}),
            ),
            error_frame,
        ]
        .concat(),
        json!({}),
    ));
    let (events, message) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(kinds(&events), ["start", "error"]);
    assert_eq!(
        message.error_message.as_deref(),
        Some("InternalFailure: boom")
    );

    // Other exceptions keep their names; a user-role start is refused.
    server.push(reply(
        &exception("modelStreamErrorException", "bad"),
        json!({}),
    ));
    server.push(reply(
        &frame("messageStart", json!({"role": "user"})),
        json!({}),
    ));
    let (_, first) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(
        first.error_message.as_deref(),
        Some("Model stream error: bad")
    );
    let (_, second) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(
        second.error_message.as_deref(),
        Some("Unexpected assistant message start but got user message start instead")
    );
}

#[tokio::test]
async fn a_reply_without_message_start_still_starts_and_ends() {
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    server.push(reply(
        &[
            frame("messageStop", json!({"stopReason": "end_turn"})),
            frame(
                "metadata",
                json!({"usage": {"inputTokens": 3, "outputTokens": 0}}),
            ),
        ]
        .concat(),
        json!({}),
    ));
    let (events, message) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(kinds(&events), ["start", "done"]);
    assert_eq!((message.usage.input, message.usage.total_tokens), (3, 3));
}

#[tokio::test]
async fn truncated_streams_are_errors() {
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    let body = text_reply("cut short");
    // A clean end before messageStop.
    let until_stop: Vec<u8> = [
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "cut"}}),
        ),
    ]
    .concat();
    server.push(reply(&until_stop, json!({})));
    // A connection dropped inside a frame before messageStop (after it, the answer is
    // complete: see `a_complete_answer_is_not_held_or_lost_by_what_follows_message_stop`).
    let stop_at = body.len()
        - frame(
            "metadata",
            json!({"usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}}),
        )
        .len()
        - frame("messageStop", json!({"stopReason": "end_turn"})).len();
    server.push(reply(&body, json!({"drop_after_bytes": stop_at - 10})));
    let (_, clean) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(clean.stop_reason, StopReason::Error);
    assert_eq!(
        clean.error_message.as_deref(),
        Some("Bedrock stream ended before messageStop")
    );
    assert_eq!(clean.text(), "cut");
    let (_, dropped) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(dropped.stop_reason, StopReason::Error, "{dropped:?}");
    assert_eq!(dropped.text(), "cut short");
}

#[tokio::test]
async fn credentials_come_from_the_environment_profiles_or_skip_auth() {
    let dir = std::env::temp_dir().join(format!("pi-bedrock-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let credentials = dir.join("credentials");
    std::fs::write(
        &credentials,
        "[work]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n",
    )
    .unwrap();
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    let cases = [
        (
            provider(&[
                ("AWS_PROFILE", "work"),
                ("AWS_REGION", "eu-west-1"),
                ("AWS_SHARED_CREDENTIALS_FILE", credentials.to_str().unwrap()),
            ]),
            "Credential=AKIDPROFILE/",
            "/eu-west-1/bedrock/aws4_request",
        ),
        (
            provider(&[
                ("AWS_BEDROCK_SKIP_AUTH", "1"),
                ("AWS_BEARER_TOKEN_BEDROCK", "ignored"),
            ]),
            "Credential=dummy-access-key/",
            "/us-east-1/bedrock/aws4_request",
        ),
        (
            provider(&[("AWS_BEARER_TOKEN_BEDROCK", "ABSK-env-token")]),
            "Bearer ABSK-env-token",
            "",
        ),
    ];
    for (provider, credential, scope) in cases {
        server.push(reply(&text_reply("ok"), json!({})));
        let (_, message) = collect(&provider, &model, &hi(), &StreamOptions::default()).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
        let request = server.requests().pop().unwrap();
        let authorization = request.header("authorization").unwrap();
        assert!(authorization.contains(credential), "{authorization}");
        assert!(authorization.contains(scope), "{authorization}");
    }
    std::fs::remove_dir_all(&dir).unwrap();

    // Nothing configured: an error event naming the variables, before any request.
    let (events, message) = collect(&provider(&[]), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(kinds(&events), ["error"]);
    assert!(
        message
            .error_message
            .unwrap()
            .starts_with("No AWS credentials for Amazon Bedrock: set AWS_ACCESS_KEY_ID")
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn secrets_never_reach_events_or_errors() {
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    let token = "session-token-secret";
    let provider = provider(&[
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("AWS_SESSION_TOKEN", token),
    ]);
    server.push(reply(
        &[
            frame("messageStart", json!({"role": "assistant"})),
            exception("throttlingException", "slow down"),
        ]
        .concat(),
        json!({}),
    ));
    server.push(json!({"status": 403, "body": {"message": "The security token included in the request is invalid."},
        "headers": {"x-amzn-errortype": "UnrecognizedClientException"}}));
    let options = StreamOptions {
        api_key: Some(ApiKey::new("<authenticated>")),
        ..StreamOptions::default()
    };
    let mut shown = format!("{provider:?} {options:?}");
    for _ in 0..2 {
        let (events, _) = collect(&provider, &model, &hi(), &options).await;
        shown.push_str(&serde_json::to_string(&events).unwrap());
    }
    assert!(shown.contains("Throttling error: slow down"), "{shown}");
    assert!(shown.contains("UnrecognizedClientException: The security token"));
    for secret in [SECRET_KEY, token] {
        assert!(!shown.contains(secret), "{shown}");
    }
    // The marker is not a key: the request was signed, not sent as a bearer token.
    assert!(
        server.requests()[0]
            .header("authorization")
            .unwrap()
            .starts_with("AWS4-HMAC-SHA256")
    );
}

#[tokio::test]
async fn abort_mid_stream_keeps_partial_content() {
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    let head = [
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Before the stall"}}),
        ),
    ]
    .concat();
    let stall_at = head.len();
    server.push(reply(
        &[head, text_reply("never")].concat(),
        json!({"stall_after_bytes": stall_at, "stall_ms": 60_000}),
    ));
    let token = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(token.clone()),
        ..StreamOptions::default()
    };
    let provider = keys();
    let mut stream = provider.stream(&model, &hi(), &options);
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            token.cancel();
        }
        seen.push(event.kind());
    }
    assert_eq!(seen, ["start", "text_start", "text_delta", "error"]);
    let message = stream.final_message().unwrap();
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.text(), "Before the stall");
}

#[tokio::test]
async fn on_payload_sees_the_command_and_may_replace_the_model_id() {
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("anthropic.claude-sonnet-4-5-20250929-v1:0", &server);
    server.push(reply(&text_reply("ok"), json!({})));
    let options = StreamOptions {
        reasoning: Some(ThinkingLevel::Low),
        cache_retention: Some(CacheRetention::None),
        on_payload: Some(Callback(std::sync::Arc::new(
            |command: &Value, _: &Model| {
                assert_eq!(
                    command["modelId"],
                    "anthropic.claude-sonnet-4-5-20250929-v1:0"
                );
                let mut replaced = command.clone();
                replaced["modelId"] =
                    json!("arn:aws:bedrock:us-east-1:123:application-inference-profile/abc");
                Ok(Some(replaced))
            },
        ))),
        ..StreamOptions::default()
    };
    let (_, message) = drain(keys().stream_simple(&model, &hi(), &options)).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let request = &server.requests()[0];
    assert_eq!(
        request.path,
        "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Aapplication-inference-profile%2Fabc/converse-stream"
    );
    assert!(request.body.get("modelId").is_none());
    // No cache points with retention `none`; low = 2048 on top of the 32000 cap.
    assert_eq!(
        request.body["messages"],
        json!([{"role": "user", "content": [{"text": "hi"}]}])
    );
    assert_eq!(request.body["inferenceConfig"]["maxTokens"], 34_048);
    assert_eq!(
        request.body["additionalModelRequestFields"]["thinking"]["budget_tokens"],
        2048
    );
}

#[tokio::test]
async fn json_instead_of_an_event_stream_is_a_clear_error() {
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    server.push(json!({"status": 200, "body": {"message": "proxy says no"}}));
    let (events, message) = collect(&keys(), &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(kinds(&events), ["error"]);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Bedrock answered with JSON instead of an event stream: proxy says no")
    );
}

#[tokio::test]
async fn stream_sends_what_the_bedrock_keys_say() {
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("anthropic.claude-opus-4-5-20251101-v1:0", &server);
    server.push(reply(&text_reply("ok"), json!({})));
    server.push(reply(&text_reply("ok"), json!({})));
    let options = StreamOptions::from_json(
        r#"{"maxTokens": 9000, "reasoning": "high", "thinkingBudgets": {"high": 5000},
            "interleavedThinking": false, "thinkingDisplay": "omitted",
            "requestMetadata": {"team": "ai"}, "region": "eu-west-1", "profile": "unused",
            "bearerToken": "ABSK-from-options", "toolChoice": "any"}"#,
    )
    .unwrap();
    let (_, message) = collect(&provider(&[]), &model, &hi(), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let request = &server.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer ABSK-from-options")
    );
    // `stream` does not add the budget to the cap (only `stream_simple` does).
    assert_eq!(request.body["inferenceConfig"], json!({"maxTokens": 9000}));
    assert_eq!(
        request.body["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 5000, "display": "omitted"}})
    );
    assert_eq!(request.body["requestMetadata"], json!({"team": "ai"}));
    assert!(
        request.body.get("toolConfig").is_none(),
        "no tools, no toolConfig"
    );

    // The region option signs for that region.
    let options = StreamOptions::from_json(r#"{"region": "ap-southeast-2"}"#).unwrap();
    let (_, message) = collect(&keys(), &model, &hi(), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let authorization = server.requests()[1]
        .header("authorization")
        .unwrap()
        .to_owned();
    assert!(
        authorization.contains("/ap-southeast-2/bedrock/aws4_request"),
        "{authorization}"
    );
}

#[tokio::test]
async fn a_complete_answer_is_not_held_or_lost_by_what_follows_message_stop() {
    // `metadata` is the stream's last frame, and `messageStop` completes the answer: a stall
    // after either, or a cut before `metadata`, leaves a complete answer (pi's SDK reads to
    // the body's end; a stall there held the answer for the idle timeout, then failed it).
    let whole = text_reply("hi");
    let until_stop = [
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "hi"}}),
        ),
        frame("messageStop", json!({"stopReason": "end_turn"})),
    ]
    .concat();
    let cases = [
        (
            "stall after metadata",
            whole.clone(),
            json!({"stall_after_bytes": whole.len(), "stall_ms": 60_000}),
            2,
        ),
        (
            "stall after messageStop",
            until_stop.clone(),
            json!({"stall_after_bytes": until_stop.len(), "stall_ms": 60_000}),
            0,
        ),
        (
            "cut after messageStop",
            [until_stop.clone(), whole.clone()].concat(),
            json!({"drop_after_bytes": until_stop.len()}),
            0,
        ),
    ];
    for (name, body, fault, output) in cases {
        let server = MockServer::start().await.unwrap();
        let model = catalog_model("amazon.nova-lite-v1:0", &server);
        server.push(reply(&body, fault));
        let options = StreamOptions {
            // Longer than the wait for what follows `messageStop`: a stall that held the answer
            // fails it.
            idle_timeout_ms: Some(30_000),
            ..StreamOptions::default()
        };
        let (_, message) = collect(&keys(), &model, &hi(), &options).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{name}: {message:?}");
        assert_eq!(message.text(), "hi", "{name}");
        assert_eq!(message.usage.output, output, "{name}");
    }
}

#[tokio::test]
async fn the_environments_bearer_token_goes_only_to_bedrock_hosts() {
    // `0.0.0.0` reaches this machine on Linux without being a loopback name: it plays a model
    // JSON's base URL pointing at some other host.
    let server = MockServer::start().await.unwrap();
    let mut model = catalog_model("amazon.nova-lite-v1:0", &server);
    model.base_url = format!("http://0.0.0.0:{}", server.addr().port());
    let from_env = provider(&[("AWS_BEARER_TOKEN_BEDROCK", "ABSK-env-token")]);
    let (events, message) = collect(&from_env, &model, &hi(), &StreamOptions::default()).await;
    assert_eq!(kinds(&events), ["error"]);
    let error = message.error_message.unwrap_or_default();
    assert!(error.contains("AWS_BEARER_TOKEN_BEDROCK"), "{error}");
    assert!(error.contains("`0.0.0.0`"), "{error}");
    assert!(!error.contains("ABSK-env-token"), "{error}");
    assert!(server.requests().is_empty(), "nothing was sent");

    // The caller's own token goes where the caller sends it.
    server.push(reply(&text_reply("ok"), json!({})));
    let options = StreamOptions {
        api_key: Some(ApiKey::new("ABSK-explicit")),
        ..StreamOptions::default()
    };
    let (_, message) = collect(&from_env, &model, &hi(), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer ABSK-explicit")
    );
}

#[tokio::test]
async fn the_roles_sent_alternate_whatever_the_transcript() {
    let server = MockServer::start().await.unwrap();
    let model = catalog_model("amazon.nova-lite-v1:0", &server);
    let assistant = |content: Vec<AssistantContent>, stop_reason: StopReason| {
        Message::Assistant(AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            content,
            stop_reason,
            ..AssistantMessage::default()
        })
    };
    let call = AssistantContent::ToolCall(ai::ToolCall {
        id: "call_1".into(),
        name: "lookup".into(),
        arguments: json!({}),
        thought_signature: None,
    });
    let result: Message = serde_json::from_value(json!({
        "role": "toolResult", "toolCallId": "call_1", "toolName": "lookup",
        "content": [{"type": "text", "text": "found"}], "isError": false, "timestamp": 0
    }))
    .unwrap();
    let user = |text: &str| Message::User(ai::UserMessage::text(text));
    let context = Context {
        system_prompt: None,
        messages: vec![
            user("first"),
            // A failed turn is left out: two user messages follow each other.
            assistant(
                vec![AssistantContent::Text(ai::TextContent::new("half"))],
                StopReason::Error,
            ),
            user("again"),
            assistant(vec![call], StopReason::ToolUse),
            result,
            // A steering message after the turn's tool results.
            user("steer"),
        ],
        tools: None,
    };
    server.push(reply(&text_reply("ok"), json!({})));
    let (_, message) = collect(&keys(), &model, &context, &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let body = &server.requests()[0].body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"], "{body}");
    assert_eq!(
        body["messages"][0]["content"],
        json!([{"text": "first"}, {"text": "again"}])
    );
    let last = &body["messages"][2]["content"];
    assert_eq!(last[0]["toolResult"]["toolUseId"], "call_1", "{last}");
    assert_eq!(last[1], json!({"text": "steer"}), "{last}");
}
