//! Every model of the catalog resolves to a registered provider and streams a short answer from
//! the mock server speaking its wire API (issue 11): all 969 of pi 0.73.1's models, through
//! `stream_simple` as an agent calls them, each pointed at the mock.

mod reliability_support;

use std::collections::BTreeMap;

use base64::Engine as _;
use futures::future::join_all;
use pi_agent::ai::providers::eventstream::{self, HeaderValue};
use pi_agent::ai::{
    self, ApiKey, Context, Message, Model, StopReason, StreamOptions, Transport, UserMessage,
};
use pi_mock_server::MockServer;
use reliability_support::{Api, HANG_GUARD, KEY};
use serde_json::{Value, json};

/// The catalog's apis and how many models each has (spec 1.10).
const APIS: [(&str, usize); 9] = [
    ("openai-completions", 405),
    ("anthropic-messages", 263),
    ("bedrock-converse-stream", 93),
    ("openai-responses", 86),
    ("azure-openai-responses", 42),
    ("google-generative-ai", 29),
    ("mistral-conversations", 28),
    ("google-vertex", 13),
    ("openai-codex-responses", 10),
];

fn bedrock_frame(kind: &str, payload: Value) -> Vec<u8> {
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

/// A complete answer `hi` (5 input, 2 output tokens) in `api`'s wire format.
fn answer(api: &str) -> Value {
    let sse = |api: Api| json!({"sse": api.answer()});
    match api {
        "openai-completions" => sse(Api::Completions),
        "openai-responses" | "azure-openai-responses" => sse(Api::Responses),
        "anthropic-messages" => sse(Api::Anthropic),
        "google-generative-ai" => sse(Api::Google),
        "google-vertex" => sse(Api::Vertex),
        "mistral-conversations" => sse(Api::Mistral),
        "openai-codex-responses" => sse(Api::Codex),
        "bedrock-converse-stream" => {
            let frames = [
                bedrock_frame("messageStart", json!({"role": "assistant"})),
                bedrock_frame(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": 0, "delta": {"text": "hi"}}),
                ),
                bedrock_frame("contentBlockStop", json!({"contentBlockIndex": 0})),
                bedrock_frame("messageStop", json!({"stopReason": "end_turn"})),
                bedrock_frame(
                    "metadata",
                    json!({"usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}}),
                ),
            ]
            .concat();
            json!({"bytes_b64": [base64::engine::general_purpose::STANDARD.encode(frames)],
                   "headers": {"content-type": "application/vnd.amazon.eventstream"}})
        }
        other => panic!("no answer for api {other}"),
    }
}

/// The request options of `model` against `server`: a key every api takes (a ChatGPT-shaped
/// token for Codex, over SSE), Azure's base URL.
fn options(model: &Model, server: &MockServer) -> StreamOptions {
    let mut options = StreamOptions {
        api_key: Some(ApiKey::new(KEY)),
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    match model.api.as_str() {
        "openai-codex-responses" => options.transport = Some(Transport::Sse),
        "azure-openai-responses" => options.azure_base_url = Some(server.base_url()),
        _ => {}
    }
    options
}

fn context() -> Context {
    Context {
        system_prompt: Some("Be brief.".into()),
        messages: vec![Message::User(UserMessage::text("hi"))],
        tools: None,
    }
}

#[test]
fn every_catalog_api_has_a_registered_provider() {
    let mut per_api: BTreeMap<String, usize> = BTreeMap::new();
    for model in ai::all_models() {
        assert!(
            ai::get_api_provider(&model.api).is_some(),
            "{}/{}: no provider for api {}",
            model.provider,
            model.id,
            model.api
        );
        *per_api.entry(model.api.clone()).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = APIS
        .iter()
        .map(|(api, n)| ((*api).to_owned(), *n))
        .collect();
    assert_eq!(per_api, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_catalog_model_streams_from_the_mock() {
    let walk = join_all(APIS.map(|(api, count)| async move {
        let server = MockServer::start().await.unwrap();
        let models: Vec<Model> = ai::all_models().filter(|m| m.api == api).collect();
        assert_eq!(models.len(), count, "{api}");
        for model in models {
            server.push(answer(api));
            let options = options(&model, &server);
            let model = Model {
                base_url: server.base_url(),
                ..model
            };
            let message = ai::complete_simple(&model, &context(), &options).await;
            let name = format!("{}/{}", model.provider, model.id);
            assert_eq!(message.stop_reason, StopReason::Stop, "{name}: {message:?}");
            assert_eq!(message.text(), "hi", "{name}");
            assert_eq!(message.usage.output, 2, "{name}");
            assert_eq!(message.api, model.api, "{name}");
            assert_eq!(message.provider, model.provider, "{name}");
            let request = server.requests().pop().expect("a request");
            assert_eq!(request.method, "POST", "{name}");
            assert_eq!(server.pending(), 0, "{name}: one request per model");
        }
        count
    }));
    let counts = tokio::time::timeout(HANG_GUARD * 4, walk)
        .await
        .expect("the catalog walk hung");
    assert_eq!(counts.iter().sum::<usize>(), 969);
}
