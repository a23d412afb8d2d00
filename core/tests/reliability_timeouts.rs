//! Issue 9, "never hang": hostile `Retry-After` values, stalls before the headers, after them
//! and mid-body, error bodies that stall, and stalls after a complete answer, on every wire API.

mod reliability_support;

use futures::future::join_all;
use pi_agent::ai::{StopReason, StreamOptions};
use pi_mock_server::MockServer;
use reliability_support::{ALL, Api, no_retries, run};
use serde_json::json;

fn with_timeouts(request_ms: u64, idle_ms: u64) -> StreamOptions {
    StreamOptions {
        request_timeout_ms: Some(request_ms),
        idle_timeout_ms: Some(idle_ms),
        ..no_retries()
    }
}

fn mentions_a_timeout(text: &str) -> bool {
    let text = text.to_lowercase();
    text.contains("timed out") || text.contains("timeout")
}

#[tokio::test]
async fn hostile_retry_after_values_are_reported_not_panicked_on() {
    // Far beyond any cap: the request fails at once and says what the server asked for.
    let hostile = [
        ("retry-after", "inf"),
        ("retry-after", "1e20"),
        ("retry-after-ms", "1e300"),
        ("retry-after", "99999999999999999999999"),
    ];
    let cases = ALL
        .iter()
        .flat_map(|&api| hostile.map(|header| (api, header)));
    join_all(cases.map(|(api, (name, value))| async move {
        let server = MockServer::start().await.unwrap();
        server.push(
            json!({"status": 429, "body": {"error": {"message": "slow down"}},
                           "headers": {name: value}}),
        );
        let (_, message) = run(&api.model(&server), &StreamOptions::default()).await;
        let error = message.error_message.clone().unwrap_or_default();
        assert_eq!(
            message.stop_reason,
            StopReason::Error,
            "{api:?} {name}: {value}"
        );
        assert!(
            error.starts_with(&api.http_error(429, "slow down")),
            "{api:?} {name}: {value}: {error}"
        );
        assert!(error.contains(value), "{api:?} {name}: {value}: {error}");
        assert_eq!(server.requests().len(), 1, "no retry after {name}: {value}");
    }))
    .await;
}

#[tokio::test]
async fn meaningless_retry_after_values_fall_back_to_an_immediate_or_normal_retry() {
    for (name, value) in [
        ("retry-after", "NaN"),
        ("retry-after", "-5"),
        ("retry-after-ms", "-inf"),
        ("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(
            json!({"status": 503, "body": {"error": {"message": "busy"}},
                           "headers": {name: value}}),
        );
        server.push(json!({"sse": Api::Completions.answer()}));
        let options = StreamOptions {
            max_retries: Some(1),
            max_retry_delay_ms: Some(2_000),
            ..StreamOptions::default()
        };
        let (_, message) = run(&Api::Completions.model(&server), &options).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{name}: {value}: {message:?}"
        );
        let retries = message.diagnostics.expect("the retry is recorded");
        assert_eq!(retries.len(), 1);
        assert!(retries[0]["details"]["delayMs"].as_u64().unwrap() <= 2_000);
    }
}

#[tokio::test]
async fn a_retry_after_within_the_cap_is_honoured() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 429, "headers": {"retry-after-ms": "20.5"}}));
    server.push(json!({"sse": Api::Completions.answer()}));
    let options = StreamOptions {
        max_retries: Some(1),
        ..StreamOptions::default()
    };
    let (_, message) = run(&Api::Completions.model(&server), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    let retries = message.diagnostics.unwrap();
    assert_eq!(retries[0]["details"]["delayMs"], 20);
    assert_eq!(retries[0]["details"]["status"], 429);
}

#[tokio::test]
async fn every_stall_ends_with_a_timeout_error_on_every_api() {
    let stalls = [
        ("before the headers", json!({"head_stall_ms": 60_000})),
        ("after the headers", json!({"stall_after_bytes": 0})),
        ("mid-body", json!({"stall_after_bytes": 40})),
    ];
    let cases = ALL
        .iter()
        .flat_map(|&api| stalls.clone().map(|stall| (api, stall)));
    join_all(cases.map(|(api, (label, stall))| async move {
        let server = MockServer::start().await.unwrap();
        let mut reply = json!({"sse": api.answer()});
        for (key, value) in stall.as_object().unwrap() {
            reply[key] = value.clone();
        }
        server.push(reply);
        let (events, message) = run(&api.model(&server), &with_timeouts(300, 300)).await;
        let error = message.error_message.clone().unwrap_or_default();
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?} {label}");
        assert!(mentions_a_timeout(&error), "{api:?} {label}: {error}");
        assert_eq!(events.last().unwrap().kind(), "error");
    }))
    .await;
}

#[tokio::test]
async fn zero_disables_a_timeout() {
    let server = MockServer::start().await.unwrap();
    server.push(
        json!({"sse": Api::Completions.answer(), "stall_after_bytes": 10,
                       "stall_ms": 400, "head_stall_ms": 400}),
    );
    let options = StreamOptions {
        request_timeout_ms: Some(0),
        idle_timeout_ms: Some(0),
        ..no_retries()
    };
    let (_, message) = run(&Api::Completions.model(&server), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.text(), "hi");
}

#[tokio::test]
async fn an_error_status_whose_body_stalls_is_bounded() {
    join_all(ALL.map(|api| async move {
        let server = MockServer::start().await.unwrap();
        server.push(json!({"status": 500,
                           "body": {"error": {"message": "internal trouble, details follow"}},
                           "stall_after_bytes": 40}));
        let (_, message) = run(&api.model(&server), &with_timeouts(10_000, 1_000)).await;
        let error = message.error_message.clone().unwrap_or_default();
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert!(
            error.starts_with(&api.http_error(500, "")),
            "{api:?}: {error}"
        );
        // What did arrive is shown, and the message says the body was cut short.
        assert!(error.contains("internal tr"), "{api:?}: {error}");
        assert!(mentions_a_timeout(&error), "{api:?}: {error}");
    }))
    .await;
}

#[tokio::test]
async fn a_complete_answer_is_not_held_by_a_stall_after_its_end() {
    // With default options: the stall comes after the protocol's end marker, before the body's
    // terminating chunk; reading stops at the marker.
    join_all(ALL.map(|api| async move {
        let server = MockServer::start().await.unwrap();
        server.push(json!({"sse": api.answer(), "stall_after_bytes": 1_000_000}));
        let (_, message) = run(&api.model(&server), &StreamOptions::default()).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{api:?}: {message:?}"
        );
        assert_eq!(message.text(), "hi", "{api:?}");
        assert_eq!(message.usage.output, 2, "{api:?}");
    }))
    .await;
}

#[tokio::test]
async fn a_stall_or_cut_before_the_end_marker_does_not_downgrade_a_complete_answer() {
    // The answer is complete (finish reason and usage arrived); only the end marker is missing.
    for api in [Api::Completions, Api::Mistral, Api::Anthropic] {
        let mut events = api.answer();
        let marker = events.pop().unwrap();
        let body_len: usize = events.iter().map(String::len).sum();
        assert!(!marker.is_empty());
        for fault in [
            json!({"stall_after_bytes": body_len}),
            json!({"drop_after_bytes": body_len}),
        ] {
            let server = MockServer::start().await.unwrap();
            let mut reply = json!({"sse": events.clone()});
            for (key, value) in fault.as_object().unwrap() {
                reply[key] = value.clone();
            }
            server.push(reply);
            let (_, message) = run(&api.model(&server), &with_timeouts(10_000, 1_000)).await;
            assert_eq!(
                message.stop_reason,
                StopReason::Stop,
                "{api:?} {fault}: {message:?}"
            );
            assert_eq!(message.text(), "hi");
            assert_eq!(message.usage.input, 5, "{api:?} {fault}");
            assert_eq!(message.usage.output, 2, "{api:?} {fault}");
        }
    }
}
