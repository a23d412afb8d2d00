//! Messages that help (issue 18): failures name the thing the caller can fix — the host and
//! port that refused a connection, a missing model, a faux provider used after it was
//! unregistered.

use pi_agent::agent::{Agent, AgentOptions};
use pi_agent::ai::providers::faux::{FauxProvider, faux_assistant_message, faux_text};
use pi_agent::ai::{
    self, Context, ErrorKind, Message, Model, StopReason, StreamOptions, UserMessage,
};

fn context() -> Context {
    Context {
        messages: vec![Message::User(UserMessage::text("hi"))],
        ..Context::default()
    }
}

#[tokio::test]
async fn a_dead_port_names_host_and_port() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = Model::new(
        "openai-completions",
        "mock",
        "m",
        format!("http://127.0.0.1:{port}/v1?key=secret"),
    );
    let options = StreamOptions {
        max_retries: Some(0),
        api_key: Some("sk-test".into()),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model, &context(), &options).await;
    assert_eq!(message.error_kind, Some(ErrorKind::Network));
    let text = message.error_message.unwrap();
    assert!(
        text.starts_with(&format!(
            "Connection error: could not connect to the provider at 127.0.0.1:{port}"
        )),
        "{text}"
    );
    assert!(!text.contains("secret") && !text.contains("/v1"), "{text}");
}

#[tokio::test]
async fn an_agent_without_a_model_says_so() {
    let agent = Agent::new(AgentOptions::default());
    agent.prompt("hi").await.unwrap();
    let error = agent.error_message().unwrap();
    assert!(
        error.starts_with("No API provider registered for api: unknown (the agent has no model"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unregistered_faux_provider_says_so() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("hi")]));
    faux.unregister();
    let message = ai::complete(&faux.model(), &context(), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let text = message.error_message.unwrap();
    assert_eq!(
        text,
        format!(
            "No API provider registered for api: {} (a faux provider that was unregistered: its \
             `with` block ended or `unregister()` was called)",
            faux.api()
        )
    );
}
