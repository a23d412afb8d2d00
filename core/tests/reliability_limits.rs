//! Issue 9, bounded buffers and clear errors: an endless SSE line, an oversized error body,
//! bodies that are not an event stream at all, in-stream errors, and invalid headers.

mod reliability_support;

use futures::future::join_all;
use pi_agent::ai::{StopReason, StreamOptions};
use pi_mock_server::MockServer;
use reliability_support::{ALL, Api, no_retries, run};
use serde_json::json;

#[tokio::test]
async fn an_endless_line_is_cut_at_the_event_limit() {
    join_all(ALL.map(|api| async move {
        let server = MockServer::start().await.unwrap();
        // 256 MiB without a newline; the server generates it as it writes.
        server.push(json!({"sse": ["data: ", {"repeat": "x", "bytes": 256u64 << 20}]}));
        let options = StreamOptions {
            max_event_bytes: Some(1 << 20),
            ..no_retries()
        };
        let (_, message) = run(&api.model(&server), &options).await;
        let error = message.error_message.clone().unwrap_or_default();
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert!(error.contains("1048576 bytes"), "{api:?}: {error}");
        assert!(error.contains("max_event_bytes"), "{api:?}: {error}");
    }))
    .await;
}

#[tokio::test]
async fn many_lines_of_one_event_count_together() {
    let server = MockServer::start().await.unwrap();
    let line = format!("data: {}\n", "y".repeat(1000));
    server.push(json!({"sse": vec![line; 3000]}));
    let options = StreamOptions {
        max_event_bytes: Some(1 << 20),
        ..no_retries()
    };
    let (_, message) = run(&Api::Completions.model(&server), &options).await;
    let error = message.error_message.unwrap_or_default();
    assert!(error.contains("max_event_bytes"), "{error}");
}

#[tokio::test]
async fn an_oversized_error_body_is_cut() {
    join_all(ALL.map(|api| async move {
        let server = MockServer::start().await.unwrap();
        server.push(
            json!({"status": 500, "sse": ["{\"error\": \"", {"repeat": "z", "bytes": 200_000_000}],
                           "headers": {"content-type": "application/json"}}),
        );
        let options = StreamOptions {
            max_error_body_bytes: Some(4096),
            ..no_retries()
        };
        let (_, message) = run(&api.model(&server), &options).await;
        let error = message.error_message.clone().unwrap_or_default();
        assert!(
            error.starts_with(&api.http_error(500, "{\"error\": \"zzz")),
            "{api:?}: {error:.80}"
        );
        assert!(error.contains("4096 bytes"), "{api:?}: {error:.80}");
        assert!(error.len() < 5_000, "{api:?}: {}", error.len());
    }))
    .await;
}

/// `1f 8b` gzip data of `data: {}\n\n`.
const GZIP: &str = "1f8b0800000000000203 4b492c49b452a8aee5e20200 655748eb0a000000";

#[tokio::test]
async fn bodies_that_are_not_an_event_stream_say_what_arrived() {
    let cases = [
        (
            "gzip",
            json!({"sse": [{"hex": GZIP}], "headers": {"content-encoding": "gzip"}}),
            "gzip",
        ),
        (
            "json error with status 200",
            json!({"status": 200, "body": {"error": {"message": "quota exceeded for today"}}}),
            "quota exceeded for today",
        ),
        (
            "non-streaming json answer",
            json!({"status": 200, "body": {"id": "x", "object": "chat.completion", "choices": []}}),
            "JSON",
        ),
        (
            "binary garbage",
            json!({"sse": [{"hex": "00 01 02 ff fe 80 81 7f 00 00 9c 33"}],
                   "headers": {"content-type": "application/octet-stream"}}),
            "binary",
        ),
        (
            "an html page",
            json!({"sse": ["<html><body>Please log in to the proxy</body></html>"],
                   "headers": {"content-type": "text/html"}}),
            "Please log in to the proxy",
        ),
    ];
    let all = ALL
        .iter()
        .flat_map(|&api| cases.clone().map(|case| (api, case)));
    join_all(all.map(|(api, (label, reply, expected))| async move {
        let server = MockServer::start().await.unwrap();
        server.push(reply);
        let (_, message) = run(&api.model(&server), &no_retries()).await;
        let error = message.error_message.clone().unwrap_or_default();
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?} {label}");
        assert!(error.contains(expected), "{api:?} {label}: {error}");
        assert!(
            !error.contains("closed the stream before"),
            "{api:?} {label}: {error}"
        );
    }))
    .await;
}

#[tokio::test]
async fn in_stream_errors_carry_the_providers_message() {
    join_all(ALL.map(|api| async move {
        let server = MockServer::start().await.unwrap();
        server.push(json!({"sse": [api.stream_error("model overloaded, try later")]}));
        let (_, message) = run(&api.model(&server), &no_retries()).await;
        let error = message.error_message.clone().unwrap_or_default();
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert!(
            error.contains("model overloaded, try later"),
            "{api:?}: {error}"
        );
    }))
    .await;
}

#[tokio::test]
async fn invalid_headers_are_named_before_anything_is_sent() {
    for api in ALL {
        for (name, value, expected) in [
            ("bad header", "1", "`bad header`"),
            ("x-ok", "line\nbreak", "`x-ok`"),
        ] {
            let server = MockServer::start().await.unwrap();
            let options = StreamOptions {
                headers: [(name.to_owned(), value.to_owned())].into(),
                ..no_retries()
            };
            let (_, message) = run(&api.model(&server), &options).await;
            let error = message.error_message.clone().unwrap_or_default();
            assert_eq!(message.stop_reason, StopReason::Error);
            assert!(error.contains(expected), "{api:?}: {error}");
            assert!(!error.contains("line\nbreak"), "values are not shown");
            assert!(server.requests().is_empty(), "{api:?}: nothing was sent");
        }
        let server = MockServer::start().await.unwrap();
        let mut model = api.model(&server);
        model.headers = Some([("bad:name".to_owned(), "1".to_owned())].into());
        let (_, message) = run(&model, &no_retries()).await;
        let error = message.error_message.unwrap_or_default();
        assert!(error.contains("`bad:name`"), "{api:?}: {error}");
    }
}
