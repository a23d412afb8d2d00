//! A real inference server in the suite: llama.cpp's `llama-server` (built from the
//! llama-cpp-python sdist by `scripts/llama-server/build.sh`) serving SmolLM2-135M-Instruct on
//! 127.0.0.1, greedy, four slots of 512 tokens. Through Rust on its three routes
//! (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`): streamed text ends `done` with
//! the server's own token count, a max-tokens stop is `length`, an abort ends the stream at
//! once and the server stops generating (`/slots`, `/metrics`), a prompt longer than the
//! context is `context_overflow`, 16 concurrent streams against `--parallel 4` complete, and a
//! JSON-schema `response_format` answer validates. Skipped only with `PI_LLAMA_SERVER_TESTS=0`.

#[path = "support/llama_server.rs"]
mod llama_server;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use llama_server::{LlamaServer, SLOT_CONTEXT, enabled, overlong_prompt};
use pi_agent::ai::{
    self, ApiKey, AssistantMessage, AssistantMessageEvent, Context, ErrorKind, Message, Model,
    StopReason, StreamOptions, UserMessage,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const APIS: [&str; 3] = [
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
];
const PREDICTED: &str = "llamacpp:tokens_predicted_total";

fn model(server: &LlamaServer, api: &str) -> Model {
    let mut model = Model::new(
        api,
        "llama.cpp",
        "SmolLM2-135M-Instruct",
        server.base_url(api),
    );
    model.context_window = SLOT_CONTEXT as u64;
    model.max_tokens = 256;
    model
}

fn context(prompt: &str) -> Context {
    Context {
        system_prompt: None,
        messages: vec![Message::User(UserMessage::text(prompt))],
        tools: None,
    }
}

fn options(max_tokens: u64) -> StreamOptions {
    StreamOptions {
        // The server wants none; Anthropic's and the Responses client send one anyway.
        api_key: Some(ApiKey::new("local")),
        max_tokens: Some(max_tokens),
        // llama-server closes a keep-alive connection idle for 5 s; a request that races the
        // close fails with "connection closed before message completed", a network error the
        // shared policy retries.
        max_retries: Some(2),
        ..StreamOptions::default()
    }
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
    (events, stream.final_message().expect("the stream ended"))
}

async fn text_ends_done_with_the_servers_usage(server: &LlamaServer, api: &str) {
    let before = server.metric(PREDICTED);
    let (events, message) =
        collect(&model(server, api), &context("Say hello."), &options(12)).await;
    assert_eq!(
        events.last().map(|e| e.kind()),
        Some("done"),
        "{api}: {message:?}"
    );
    assert!(
        matches!(message.stop_reason, StopReason::Stop | StopReason::Length),
        "{api}: {message:?}"
    );
    assert!(!message.text().is_empty(), "{api}");
    let predicted = server.metric(PREDICTED) - before;
    assert_eq!(message.usage.output as f64, predicted, "{api}: {message:?}");
    assert!(message.usage.input + message.usage.cache_read > 0, "{api}");
}

async fn max_tokens_is_length(server: &LlamaServer, api: &str) {
    let (_, message) = collect(
        &model(server, api),
        &context("Tell me about the sea."),
        &options(3),
    )
    .await;
    // llama.cpp's `/v1/responses` reports every finished response as `completed` (never
    // `incomplete` with `max_output_tokens`), so a capped answer reads as `stop` there.
    let expected = if api == "openai-responses" {
        StopReason::Stop
    } else {
        StopReason::Length
    };
    assert_eq!(message.stop_reason, expected, "{api}: {message:?}");
    assert_eq!(message.usage.output, 3, "{api}: {message:?}");
}

async fn abort_stops_the_generation(server: &LlamaServer, api: &str) {
    let token = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(token.clone()),
        ..options(400)
    };
    let before = server.metric(PREDICTED);
    let mut stream = ai::stream(
        &model(server, api),
        &context("Write a very long story about a dragon."),
        &options,
    );
    let mut last = None;
    while let Some(event) = stream.next().await {
        if event.kind() == "text_delta" {
            token.cancel();
        }
        last = Some(event.kind());
    }
    assert_eq!(last, Some("error"), "{api}");
    let message = stream.final_message().unwrap();
    assert_eq!(message.stop_reason, StopReason::Aborted, "{api}");
    // The server notices the closed connection and frees the slot long before 400 tokens.
    assert!(
        server.wait_idle(Duration::from_secs(120)),
        "{api}: a slot is still generating:\n{}",
        server.log_tail()
    );
    let predicted = server.metric(PREDICTED) - before;
    assert!(
        predicted < 400.0,
        "{api}: {predicted} tokens after the abort"
    );
}

async fn overlong_prompt_is_context_overflow(server: &LlamaServer, api: &str) {
    let (_, message) = collect(
        &model(server, api),
        &context(&overlong_prompt()),
        &options(8),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error, "{api}: {message:?}");
    assert_eq!(
        message.error_kind,
        Some(ErrorKind::ContextOverflow),
        "{api}: {message:?}"
    );
    assert!(ai::is_context_overflow(&message, Some(SLOT_CONTEXT as u64)));
}

async fn sixteen_concurrent_streams_complete(server: &LlamaServer, api: &str) {
    let model = Arc::new(model(server, api));
    let runs = (0..16).map(|i| {
        let model = Arc::clone(&model);
        tokio::spawn(async move {
            let prompt = format!("Count to {}.", i + 2);
            collect(&model, &context(&prompt), &options(6)).await.1
        })
    });
    for run in futures::future::join_all(runs).await {
        let message = run.unwrap();
        assert!(
            matches!(message.stop_reason, StopReason::Stop | StopReason::Length),
            "{api}: {message:?}"
        );
        assert!(message.usage.output > 0, "{api}");
    }
}

/// `response_format` through the request hook (the library has no structured-output option
/// yet): llama.cpp turns the schema into a grammar, so the answer is JSON of that shape.
/// `/v1/messages` drops `response_format` when it converts the request, so only the two
/// OpenAI routes are asked.
async fn json_schema_answer_validates(server: &LlamaServer, api: &str) {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"},
        "population": {"type": "integer"}}, "required": ["city", "population"],
        "additionalProperties": false});
    let format = json!({"type": "json_schema",
        "json_schema": {"name": "city", "strict": true, "schema": schema}});
    let options = StreamOptions {
        on_payload: Some(pi_agent::ai::Callback(Arc::new(
            move |body: &Value, _: &Model| {
                let mut body = body.clone();
                body["response_format"] = format.clone();
                Ok(Some(body))
            },
        ))),
        ..options(64)
    };
    let (_, message) = collect(
        &model(server, api),
        &context("Give the largest city of France and its population as JSON."),
        &options,
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{api}: {message:?}");
    let answer: Value = serde_json::from_str(message.text().trim())
        .unwrap_or_else(|e| panic!("{api}: not JSON ({e}): {}", message.text()));
    let object = answer.as_object().expect("an object");
    assert!(object["city"].is_string(), "{api}: {answer}");
    assert!(
        object["population"].is_i64() || object["population"].is_u64(),
        "{answer}"
    );
    assert_eq!(object.len(), 2, "{api}: {answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_llama_server_on_three_apis() {
    if !enabled() {
        return;
    }
    let server = LlamaServer::start(&[]);
    for api in APIS {
        text_ends_done_with_the_servers_usage(&server, api).await;
        max_tokens_is_length(&server, api).await;
        abort_stops_the_generation(&server, api).await;
        overlong_prompt_is_context_overflow(&server, api).await;
        sixteen_concurrent_streams_complete(&server, api).await;
    }
    for api in ["openai-completions", "openai-responses"] {
        json_schema_answer_validates(&server, api).await;
    }
}
