//! A program's own `reqwest::Client` (`ai::set_http_client`): every built-in provider sends
//! with it until it is unset. Its own test binary: the client is process-wide.

use pi_agent::ai::{self, Context, Message, Model, StreamOptions, UserMessage};
use pi_agent::reqwest;
use pi_mock_server::{MockServer, reply};

fn context() -> Context {
    Context {
        messages: vec![Message::User(UserMessage::text("hi"))],
        ..Context::default()
    }
}

#[tokio::test]
async fn providers_send_with_the_programs_client_until_it_is_unset() {
    let server = MockServer::start().await.unwrap();
    for _ in 0..3 {
        server.push(reply::text("ok"));
    }
    let completions = Model::new("openai-completions", "mock", "m", server.base_url());
    let anthropic = Model::new(
        "anthropic-messages",
        "anthropic",
        "claude",
        server.base_url().trim_end_matches("/v1"),
    );
    let options = StreamOptions {
        api_key: Some("sk-test".into()),
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-client", "the-programs".parse().unwrap());
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    ai::set_http_client(Some(client));
    let message = ai::complete(&completions, &context(), &options).await;
    assert_eq!(message.text(), "ok");
    // Another provider: the Anthropic request fails (the mock answers in OpenAI's format) but
    // it was sent with the same client.
    let _ = ai::complete(&anthropic, &context(), &options).await;
    ai::set_http_client(None);
    let message = ai::complete(&completions, &context(), &options).await;
    assert_eq!(message.text(), "ok");

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].header("x-client"), Some("the-programs"));
    assert_eq!(requests[1].header("x-client"), Some("the-programs"));
    assert_eq!(requests[2].header("x-client"), None);
}
