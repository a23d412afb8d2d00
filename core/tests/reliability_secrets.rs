//! Issue 9, "never leak a key": keys echoed by a server, credentials on a redirect to another
//! origin, and credential headers in `Debug` output, on every wire API.

mod reliability_support;

use futures::future::join_all;
use pi_agent::ai::{ApiKey, Model, StopReason, StreamOptions};
use pi_mock_server::{MockServer, RecordedRequest, reply};
use reliability_support::{ALL, Api, KEY, library_texts, no_retries, run};
use serde_json::json;

/// Credential headers a caller may add; each value is a secret of its own.
fn credential_headers() -> [(&'static str, &'static str); 6] {
    [
        ("api-key", "azure-secret-value-1234"),
        ("cf-aig-authorization", "Bearer gateway-secret-5678"),
        ("cookie", "session=cookie-secret-9012"),
        ("x-portkey-api-key", "portkey-secret-3456"),
        // Issue 17: names a deny-list of words would miss (Cloudflare's API-key header).
        ("X-Auth-Key", "cloudflare-global-key-7890"),
        ("X-Custom-Auth", "custom-auth-value-2345"),
    ]
}

fn secrets() -> Vec<&'static str> {
    let mut out = vec![
        KEY,
        "gateway-secret-5678",
        "cookie-secret-9012",
        "portkey-secret-3456",
    ];
    out.extend(credential_headers().map(|(_, value)| value));
    out
}

fn options_with_credentials() -> StreamOptions {
    let mut headers: std::collections::BTreeMap<String, String> = credential_headers()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .into();
    headers.insert("x-extra".into(), "kept".into());
    headers.insert("anthropic-beta".into(), "safe-beta".into());
    StreamOptions {
        api_key: Some(ApiKey::new(KEY)),
        headers,
        ..no_retries()
    }
}

fn assert_no_secret(label: &str, text: &str) {
    for secret in secrets() {
        assert!(
            !text.contains(secret),
            "{label}: `{secret}` leaked in {text}"
        );
    }
}

fn echo(text: &str) -> String {
    format!(
        "you sent {KEY} with {text} and {}",
        credential_headers().map(|(_, v)| v).join(", ")
    )
}

#[tokio::test]
async fn echoed_credentials_are_redacted_from_errors_and_diagnostics() {
    join_all(ALL.map(|api| async move {
        // An error status echoing everything, retried once.
        let server = MockServer::start().await.unwrap();
        let body = json!({"error": {"message": echo("a 500")}});
        server.push(json!({"status": 500, "body": body}));
        server.push(json!({"status": 401, "body": {"error": {"message": echo("a 401")}}}));
        let options = StreamOptions {
            max_retries: Some(1),
            max_retry_delay_ms: Some(10),
            ..options_with_credentials()
        };
        let (events, message) = run(&api.model(&server), &options).await;
        assert_eq!(message.stop_reason, StopReason::Error);
        let texts = library_texts(&message);
        assert!(
            texts.contains(&api.http_error(401, "you sent")),
            "{api:?}: {texts}"
        );
        assert!(
            texts.contains("a 500"),
            "{api:?}: the retry is recorded: {texts}"
        );
        assert_no_secret(&format!("{api:?} status"), &texts);
        assert_no_secret(&format!("{api:?} events"), &format!("{events:?}"));

        // An error event inside a 200 stream.
        let server = MockServer::start().await.unwrap();
        server.push(json!({"sse": [api.stream_error(&echo("a stream"))]}));
        let (_, message) = run(&api.model(&server), &options_with_credentials()).await;
        let texts = library_texts(&message);
        assert!(texts.contains("you sent"), "{api:?}: {texts}");
        assert_no_secret(&format!("{api:?} stream"), &texts);
    }))
    .await;
}

fn credential_values(request: &RecordedRequest) -> Vec<String> {
    request
        .headers
        .iter()
        .filter(|(_, value)| secrets().iter().any(|secret| value.contains(secret)))
        .map(|(name, _)| name.clone())
        .collect()
}

#[tokio::test]
async fn a_redirect_to_another_origin_carries_no_credentials() {
    join_all(ALL.map(|api| async move {
        let first = MockServer::start().await.unwrap();
        let second = MockServer::start().await.unwrap();
        first.push(reply::redirect(
            307,
            format!("{}/elsewhere", second.base_url()),
        ));
        second.push(json!({"sse": api.answer()}));
        let (_, message) = run(&api.model(&first), &options_with_credentials()).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{api:?}: {message:?}"
        );
        let sent = &first.requests()[0];
        assert!(
            !credential_values(sent).is_empty(),
            "{api:?}: the first origin gets the key"
        );
        let followed = &second.requests()[0];
        assert_eq!(followed.method, "POST", "307 keeps the method");
        assert_eq!(followed.body, sent.body, "307 keeps the body");
        // Only headers known to be safe follow (issue 17: an allow-list, not a deny-list).
        assert_eq!(followed.header("anthropic-beta"), Some("safe-beta"));
        assert_eq!(followed.header("x-extra"), None, "{api:?}: unknown header");
        assert_eq!(followed.header("x-auth-key"), None, "{api:?}");
        assert_eq!(followed.header("x-custom-auth"), None, "{api:?}");
        assert_eq!(
            credential_values(followed),
            Vec::<String>::new(),
            "{api:?}: credentials followed the redirect"
        );
        for name in [
            "authorization",
            "x-api-key",
            "x-goog-api-key",
            "api-key",
            "cookie",
        ] {
            assert_eq!(followed.header(name), None, "{api:?}: {name}");
        }
    }))
    .await;
}

#[tokio::test]
async fn a_redirect_within_the_origin_keeps_the_credentials() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::redirect(
        308,
        format!("{}/moved/chat/completions", server.base_url()),
    ));
    server.push(json!({"sse": Api::Completions.answer()}));
    let (_, message) = run(
        &Api::Completions.model(&server),
        &options_with_credentials(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    let requests = server.requests();
    assert_eq!(requests[1].path, "/v1/moved/chat/completions");
    assert_eq!(
        requests[1].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        requests[1].header("cookie"),
        Some("session=cookie-secret-9012")
    );
}

#[tokio::test]
async fn too_many_redirects_end_with_an_error_that_is_not_retried() {
    let server = MockServer::start().await.unwrap();
    for _ in 0..40 {
        server.push(reply::redirect(307, server.base_url()));
    }
    let (_, message) = run(&Api::Completions.model(&server), &StreamOptions::default()).await;
    let error = message.error_message.unwrap_or_default();
    assert_eq!(error, "Too many redirects: more than 10 in a row");
    assert_eq!(server.requests().len(), 11);
    assert!(message.diagnostics.is_none());
}

#[test]
fn debug_output_hides_credential_headers() {
    let mut model = Model::new("openai-completions", "mock", "m", "http://127.0.0.1:1/v1");
    model.headers = Some(
        [
            ("Authorization".to_owned(), format!("Bearer {KEY}")),
            ("x-visible".to_owned(), "plain-value".to_owned()),
        ]
        .into(),
    );
    let options = options_with_credentials();
    let shown = format!("{model:?} {options:?} {model:#?} {options:#?}");
    assert_no_secret("Debug", &shown);
    assert!(shown.contains("plain-value"), "{shown}");
    assert!(
        shown.contains("Authorization"),
        "names stay visible: {shown}"
    );
    assert!(shown.contains("x-portkey-api-key"), "{shown}");
    assert!(shown.contains("kept"), "{shown}");
}
