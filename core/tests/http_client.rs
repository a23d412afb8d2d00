//! A program's own `reqwest::Client` (`ai::set_http_client`): every built-in provider sends
//! with it until it is unset. Its own test binary: the client is process-wide, and the tests
//! here take turns with it.

use std::sync::{Mutex, MutexGuard, PoisonError};

use pi_agent::ai::{self, Context, Message, Model, StreamOptions, UserMessage};
use pi_agent::reqwest;
use pi_mock_server::{MockServer, reply};

/// Held by each test while it sets the process-wide client.
static CLIENT: Mutex<()> = Mutex::new(());

fn take_turn() -> MutexGuard<'static, ()> {
    CLIENT.lock().unwrap_or_else(PoisonError::into_inner)
}

fn context() -> Context {
    Context {
        messages: vec![Message::User(UserMessage::text("hi"))],
        ..Context::default()
    }
}

#[test]
fn providers_send_with_the_programs_client_until_it_is_unset() {
    let _turn = take_turn();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(programs_client_until_unset());
}

async fn programs_client_until_unset() {
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

/// A stream whose request goes through reqwest (here: the program's client) read on a thread
/// of its own: its waits go through the runtime (hyper's connection task), which wakes the
/// thread.
#[test]
fn a_thread_reads_a_stream_sent_through_reqwest() {
    let _turn = take_turn();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    server.push(serde_json::json!({"text": "through hyper", "delta_size": 3, "delay_ms": 5}));
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    ai::set_http_client(Some(client));
    let model = Model::new("openai-completions", "mock", "m", server.base_url());
    let options = StreamOptions {
        api_key: Some("sk-test".into()),
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let mut stream = {
        let _runtime = runtime.enter();
        ai::stream(&model, &context(), &options)
    };
    let mut kinds = Vec::new();
    while let Some(event) = stream.blocking_next() {
        kinds.push(event.kind());
    }
    ai::set_http_client(None);
    assert_eq!(kinds.first(), Some(&"start"));
    assert_eq!(kinds.last(), Some(&"done"));
    assert_eq!(stream.final_message().unwrap().text(), "through hyper");
}
