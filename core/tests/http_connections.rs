//! Connections of plain-`http://` provider requests (the library's own HTTP/1.1 client): kept
//! alive and reused once a response was read to its end, never reused after a stream was
//! dropped midway, one per stream when streams run at the same time, and kept when the body's
//! last chunk comes apart from the protocol's end marker.

use futures::StreamExt;
use pi_agent::ai::{self, ApiKey, Context, Model, StreamOptions, UserMessage};
use pi_mock_server::{MockServer, reply};
use serde_json::json;

fn context() -> Context {
    Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Context::default()
    }
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("k")),
        max_retries: Some(0),
        ..StreamOptions::default()
    }
}

fn model(server: &MockServer) -> Model {
    Model::new("openai-completions", "mock", "m", server.base_url())
}

#[tokio::test]
async fn streams_one_after_another_share_one_connection() {
    let server = MockServer::start().await.unwrap();
    for n in 0..3 {
        server.push(reply::text(format!("answer {n}")));
    }
    for n in 0..3 {
        let message = ai::complete(&model(&server), &context(), &options()).await;
        assert_eq!(message.text(), format!("answer {n}"));
    }
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn streams_at_the_same_time_open_one_connection_each_and_keep_them() {
    let server = MockServer::start().await.unwrap();
    for _ in 0..8 {
        server.push(json!({"text": "slow enough to overlap", "delta_size": 4, "delay_ms": 20}));
    }
    let round = || async {
        let (model, context, options) = (model(&server), context(), options());
        let answers =
            futures::future::join_all((0..4).map(|_| ai::complete(&model, &context, &options)))
                .await;
        for answer in answers {
            assert_eq!(answer.text(), "slow enough to overlap");
        }
    };
    round().await;
    assert_eq!(server.connections(), 4);
    round().await;
    assert_eq!(server.connections(), 4);
}

#[tokio::test]
async fn a_stream_dropped_midway_does_not_give_back_its_connection() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"text": "never finished", "delta_size": 2,
                       "stall_after_bytes": 150, "stall_ms": 60000}));
    server.push(reply::text("fresh"));
    let mut stream = ai::stream(&model(&server), &context(), &options());
    let first = stream.next().await.expect("an event");
    assert_eq!(first.kind(), "start");
    drop(stream);
    let message = ai::complete(&model(&server), &context(), &options()).await;
    assert_eq!(message.text(), "fresh");
    assert_eq!(server.connections(), 2);
}

#[tokio::test]
async fn an_error_answer_read_to_its_end_keeps_the_connection() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::http_error(400, json!({"error": {"message": "bad"}})));
    server.push(reply::text("after"));
    let failed = ai::complete(&model(&server), &context(), &options()).await;
    assert_eq!(failed.error_message.as_deref(), Some("400 bad"));
    let message = ai::complete(&model(&server), &context(), &options()).await;
    assert_eq!(message.text(), "after");
    assert_eq!(server.connections(), 1);
}

/// The body's last chunk (the framing's end) comes 50 ms after `data: [DONE]`, as from a
/// server that writes it apart on a loaded machine: the stream reads it before `done`, so the
/// next request finds the connection idle.
#[tokio::test]
async fn a_last_chunk_that_comes_late_still_keeps_the_connection() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"text": "late end", "end_delay_ms": 50}));
    server.push(reply::text("next"));
    let message = ai::complete(&model(&server), &context(), &options()).await;
    assert_eq!(message.text(), "late end");
    let message = ai::complete(&model(&server), &context(), &options()).await;
    assert_eq!(message.text(), "next");
    assert_eq!(server.connections(), 1);
}

/// A server that never ends the body after `data: [DONE]` holds the answer back for at most
/// the end's short wait: the answer is whole, and its connection is not reused.
#[tokio::test]
async fn a_body_that_never_ends_after_its_end_marker_still_completes() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"text": "whole", "stall_after_bytes": 1_000_000, "stall_ms": 60_000}));
    server.push(reply::text("next"));
    let message = ai::complete(&model(&server), &context(), &options()).await;
    assert_eq!(message.text(), "whole");
    assert_eq!(message.stop_reason, ai::StopReason::Stop);
    let message = ai::complete(&model(&server), &context(), &options()).await;
    assert_eq!(message.text(), "next");
    assert_eq!(server.connections(), 2);
}
