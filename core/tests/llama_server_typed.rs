//! Typed answers against a real server that enforces the schema with a grammar: llama.cpp's
//! `llama-server` (see `core/tests/llama_server.rs` and its harness) turns `response_format`'s
//! JSON Schema into a sampling grammar, so a real model's answer must validate and parse. Through
//! `outputSchema` on openai-completions: the stream's partial objects and the validated final
//! answer, `complete_structured::<T>`, and an agent run that ends in the value. Skipped only with
//! `PI_LLAMA_SERVER_TESTS=0`.

#[path = "support/llama_server.rs"]
mod llama_server;

use futures::StreamExt;
use llama_server::{LlamaServer, SLOT_CONTEXT, enabled};
use pi_agent::agent::{Agent, AgentOptions, AgentSettings};
use pi_agent::ai::{
    self, ApiKey, AssistantMessageEvent, Context, Message, Model, OutputSchema, StopReason,
    StreamOptions, UserMessage,
};
use serde_json::{Value, json};

fn model(server: &LlamaServer) -> Model {
    let mut model = Model::new(
        "openai-completions",
        "llama.cpp",
        "SmolLM2-135M-Instruct",
        server.base_url("openai-completions"),
    );
    model.context_window = SLOT_CONTEXT as u64;
    model.max_tokens = 256;
    model
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("local")),
        max_tokens: Some(64),
        // llama-server closes a keep-alive connection idle for 5 s; a request that races the
        // close fails with "connection closed before message completed", a network error the
        // shared policy retries.
        max_retries: Some(2),
        ..StreamOptions::default()
    }
}

fn context() -> Context {
    Context {
        system_prompt: None,
        messages: vec![Message::User(UserMessage::text(
            "Give the largest city of France and its population as JSON.",
        ))],
        tools: None,
    }
}

fn city_schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"},
        "population": {"type": "integer"}}, "required": ["city", "population"],
        "additionalProperties": false})
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct City {
    city: String,
    population: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_grammar_constrained_answer_validates_and_parses() {
    if !enabled() {
        return;
    }
    let server = LlamaServer::start(&[]);
    let model = model(&server);

    // The stream: partial objects while it arrives, then a validated answer.
    let typed_options = StreamOptions {
        output_schema: Some(OutputSchema::new("city", city_schema()).with_strict(true)),
        ..options()
    };
    let mut stream = ai::stream(&model, &context(), &typed_options);
    let mut objects = Vec::new();
    while let Some(event) = stream.next().await {
        if let AssistantMessageEvent::ObjectDelta { object, .. } = event {
            objects.push(object);
        }
    }
    let message = stream.final_message().expect("ended");
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{message:?}\n{}",
        server.log_tail()
    );
    let answer = ai::parse_output(&message.text()).expect("JSON");
    assert!(
        answer["city"].is_string() && answer["population"].is_u64(),
        "{answer}"
    );
    assert!(!objects.is_empty(), "no object_delta");
    assert_eq!(objects.last(), Some(&answer));

    // The typed call: the schema derived from the Rust type.
    let typed = ai::complete_structured::<City>(&model, &context(), &options())
        .await
        .unwrap_or_else(|error| panic!("{error}\n{}", server.log_tail()));
    assert!(!typed.value.city.is_empty(), "{:?}", typed.value);

    // An agent run that ends in the value. More room than the calls above: with 64 tokens a
    // longer city name or the grammar's whitespace can end the answer at `length`, which is
    // not what this checks.
    let agent = Agent::new(AgentOptions {
        model: Some(model.clone()),
        settings: AgentSettings {
            stream_options: StreamOptions {
                max_tokens: Some(256),
                ..options()
            },
            output_schema: Some(OutputSchema::new("city", city_schema())),
            ..AgentSettings::default()
        },
        ..AgentOptions::default()
    });
    let outcome = agent
        .prompt("Give the largest city of Italy and its population as JSON.")
        .await
        .unwrap();
    let output = outcome.output.clone().unwrap_or_else(|| {
        panic!(
            "the run ends in a value: {:?}\n{}",
            outcome.new_messages,
            server.log_tail()
        )
    });
    assert!(
        output["city"].is_string() && output["population"].is_u64(),
        "{output}"
    );
}
