//! The `google-vertex` provider against the mock server: API-key and Application Default
//! Credentials modes (a service account's signed JWT and a `gcloud` user's refresh token, each
//! exchanged at a token endpoint the mock plays), token caching and refresh, URLs and headers,
//! and Gemini's SSE replayed with any chunk boundaries.
//!
//! Credentials come from [`GoogleVertexProvider::with_environment`], never from the process
//! environment, so these tests run in parallel.

#[path = "support/aws_stand_ins.rs"]
#[allow(dead_code, unreachable_pub)]
mod stand_ins;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::StreamExt;
use pi_agent::ai::providers::GoogleVertexProvider;
use pi_agent::ai::{
    self, ApiKey, ApiProvider, AssistantMessage, AssistantMessageEvent, Context, Message, Model,
    StopReason, StreamOptions, ThinkingLevel, Tool, UserMessage,
};
use pi_mock_server::{MockServer, RecordedRequest};
use serde_json::{Value, json};

/// A Gemini answer (thinking, text, a signed function call), as Vertex streams it too.
const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/google/thinking_text_function_call.sse"
));
const SERVICE_ACCOUNT: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/google-vertex/service_account.json"
));
const AUTHORIZED_USER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/google-vertex/authorized_user.json"
));

const ACCESS_TOKEN: &str = "ya29.pi-test-access-token-0123456789";

fn fixture() -> Value {
    json!({"sse": FIXTURE.split_inclusive("\r\n\r\n").collect::<Vec<_>>()})
}

fn token_reply(token: &str, expires_in: u64) -> Value {
    json!({"body": {"access_token": token, "expires_in": expires_in, "token_type": "Bearer"}})
}

fn model(id: &str, base_url: &str) -> Model {
    let mut model = ai::get_model("google-vertex", id).expect("a catalog model");
    model.base_url = base_url.to_owned();
    model
}

fn context() -> Context {
    Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![Message::User(UserMessage::text("hi"))],
        tools: Some(vec![Tool {
            name: "calculator".into(),
            description: "Evaluates arithmetic".into(),
            parameters: json!({"type": "object", "properties": {"expression": {"type": "string"}}}),
        }]),
    }
}

async fn run(
    provider: &GoogleVertexProvider,
    model: &Model,
    options: &StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let mut stream = provider.stream(model, &context(), options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    (events, stream.final_message().expect("a terminal event"))
}

/// A credentials file of its own (the token cache is per credential, process-wide).
struct CredentialsFile(PathBuf);

impl CredentialsFile {
    fn new(template: &str, token_uri: Option<String>, edit: impl FnOnce(&mut Value)) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut value: Value = serde_json::from_str(template).unwrap();
        if let Some(uri) = token_uri {
            value["token_uri"] = json!(uri);
        }
        edit(&mut value);
        let path = std::env::temp_dir().join(format!(
            "pi-vertex-{}-{}.json",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, value.to_string()).unwrap();
        Self(path)
    }

    fn path(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for CredentialsFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A service account with a unique email (so that no other test's token is cached for it).
fn service_account(server: &MockServer, name: &str) -> CredentialsFile {
    CredentialsFile::new(
        SERVICE_ACCOUNT,
        Some(format!("http://{}/token", server.addr())),
        |value| value["client_email"] = json!(format!("{name}@pi-test.iam.gserviceaccount.com")),
    )
}

fn adc_env(file: &CredentialsFile) -> GoogleVertexProvider {
    GoogleVertexProvider::with_environment([
        ("GOOGLE_APPLICATION_CREDENTIALS", file.path()),
        ("GOOGLE_CLOUD_PROJECT", "pi-project".to_owned()),
        ("GOOGLE_CLOUD_LOCATION", "us-central1".to_owned()),
    ])
}

fn form(request: &RecordedRequest) -> Vec<(String, String)> {
    let text = request.body.as_str().expect("a form body");
    url_pairs(text)
}

fn url_pairs(text: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(text.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn jwt_part(jwt: &str, index: usize) -> Value {
    let part = jwt.split('.').nth(index).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

#[tokio::test]
async fn api_key_mode_sends_the_key_and_gemini_body_to_the_collection_url() {
    let server = MockServer::start().await.unwrap();
    server.push(fixture());
    let provider = GoogleVertexProvider::with_environment([(
        "GOOGLE_CLOUD_API_KEY",
        "env-key-should-not-win",
    )]);
    let model = model("gemini-2.5-flash", &server.base_url());
    let options = StreamOptions {
        api_key: Some(ApiKey::new("vertex-test-key")),
        temperature: Some(0.2),
        max_tokens: Some(256),
        headers: [("x-extra".to_owned(), "1".to_owned())].into(),
        ..StreamOptions::default()
    };
    let (events, message) = run(&provider, &model, &options).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(message.api, "google-vertex");
    assert_eq!(message.provider, "google-vertex");
    assert_eq!(
        events.first().map(AssistantMessageEvent::kind),
        Some("start")
    );
    let request = &server.requests()[0];
    assert_eq!(
        request.path,
        "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(request.header("x-goog-api-key"), Some("vertex-test-key"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("x-extra"), Some("1"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."}]},
            "tools": [{"functionDeclarations": [{"name": "calculator",
                "description": "Evaluates arithmetic",
                "parametersJsonSchema": {"type": "object",
                    "properties": {"expression": {"type": "string"}}}}]}],
            "generationConfig": {"temperature": 0.2, "maxOutputTokens": 256}
        })
    );
}

#[tokio::test]
async fn any_chunk_boundaries_give_the_same_message() {
    let provider = GoogleVertexProvider::with_environment::<&str, &str>([]);
    let mut reference: Option<Value> = None;
    for shaping in [
        json!({}),
        json!({"split": 1}),
        json!({"split_random": 7}),
        json!({"split_random": 99}),
        json!({"split": 17}),
    ] {
        let server = MockServer::start().await.unwrap();
        let mut reply = fixture();
        for (key, value) in shaping.as_object().unwrap() {
            reply[key] = value.clone();
        }
        server.push(reply);
        let model = model("gemini-2.5-flash", &server.base_url());
        let options = StreamOptions {
            api_key: Some(ApiKey::new("vertex-test-key")),
            ..StreamOptions::default()
        };
        let (events, message) = run(&provider, &model, &options).await;
        assert_eq!(message.stop_reason, StopReason::ToolUse, "{shaping}");
        let mut observed = json!({
            "kinds": events.iter().map(AssistantMessageEvent::kind).collect::<Vec<_>>(),
            "message": message,
        });
        observed["message"]["timestamp"] = json!(0);
        // Clock readings (timing, if the message has it) differ from run to run.
        if let Some(message) = observed["message"].as_object_mut() {
            message.shift_remove("timing");
        }
        // Function-call ids Gemini did not give contain the clock.
        observed["message"]["content"][2]["id"] = json!("");
        match &reference {
            None => reference = Some(observed),
            Some(reference) => assert_eq!(&observed, reference, "{shaping}"),
        }
    }
    let reference = reference.unwrap();
    assert_eq!(reference["message"]["content"][0]["type"], "thinking");
    assert!(reference["message"]["usage"]["input"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn service_account_jwt_is_exchanged_and_the_token_cached() {
    let server = MockServer::start().await.unwrap();
    let file = service_account(&server, "cached");
    let provider = adc_env(&file);
    let model = model(
        "gemini-2.5-flash",
        "https://{location}-aiplatform.googleapis.com",
    );
    // The catalog URL would go to Google: point the same model at the mock through a custom
    // base URL, which the SDK also takes (collection scope).
    let model = Model {
        base_url: format!("{}/", server.base_url()),
        ..model
    };
    server.push(token_reply(ACCESS_TOKEN, 3599));
    server.push(fixture());
    server.push(fixture());
    let (_, first) = run(&provider, &model, &StreamOptions::default()).await;
    assert_eq!(first.stop_reason, StopReason::ToolUse, "{first:?}");
    let (_, second) = run(&provider, &model, &StreamOptions::default()).await;
    assert_eq!(second.stop_reason, StopReason::ToolUse, "{second:?}");

    let requests = server.requests();
    assert_eq!(
        requests.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
        [
            "/token",
            "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        ],
        "one token for both requests"
    );
    let token_request = &requests[0];
    assert_eq!(
        token_request.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let pairs = form(token_request);
    assert_eq!(
        field(&pairs, "grant_type"),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    let assertion = field(&pairs, "assertion").unwrap();
    assert_eq!(jwt_part(assertion, 0)["alg"], "RS256");
    let claims = jwt_part(assertion, 1);
    assert_eq!(claims["iss"], "cached@pi-test.iam.gserviceaccount.com");
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/cloud-platform"
    );
    assert_eq!(claims["aud"], format!("http://{}/token", server.addr()));
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        3600
    );
    for request in &requests[1..] {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {ACCESS_TOKEN}").as_str())
        );
        assert_eq!(request.header("x-goog-api-key"), None);
        assert_eq!(request.header("x-goog-user-project"), None);
    }
}

#[tokio::test]
async fn a_token_close_to_expiry_is_fetched_again() {
    let server = MockServer::start().await.unwrap();
    let file = service_account(&server, "short-lived");
    let provider = adc_env(&file);
    let model = model("gemini-2.5-flash", &server.base_url());
    // Four minutes left: inside the five-minute margin, so never reused.
    server.push(token_reply("ya29.first-token-0001", 240));
    server.push(fixture());
    server.push(token_reply("ya29.second-token-0002", 3600));
    server.push(fixture());
    for _ in 0..2 {
        let (_, message) = run(&provider, &model, &StreamOptions::default()).await;
        assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    }
    let requests = server.requests();
    let auth: Vec<Option<&str>> = requests.iter().map(|r| r.header("authorization")).collect();
    assert_eq!(
        auth,
        [
            None,
            Some("Bearer ya29.first-token-0001"),
            None,
            Some("Bearer ya29.second-token-0002")
        ]
    );
}

#[tokio::test]
async fn a_token_with_an_absurd_lifetime_is_cached_not_a_panic() {
    // `expires_in` of u64::MAX seconds overflowed the cache's instant (a panic, the request
    // failed, nothing cached, every request fetched again): it is cached, and used again.
    let server = MockServer::start().await.unwrap();
    let file = service_account(&server, "forever");
    let provider = adc_env(&file);
    let model = model("gemini-2.5-flash", &server.base_url());
    server.push(token_reply("ya29.forever-token-0001", u64::MAX));
    server.push(fixture());
    server.push(fixture());
    for _ in 0..2 {
        let (_, message) = run(&provider, &model, &StreamOptions::default()).await;
        assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    }
    let auth: Vec<Option<String>> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    let token = Some("Bearer ya29.forever-token-0001".to_owned());
    assert_eq!(auth, [None, token.clone(), token]);
}

#[tokio::test]
async fn authorized_user_refresh_token_and_quota_project() {
    let server = MockServer::start().await.unwrap();
    let file = CredentialsFile::new(
        AUTHORIZED_USER,
        Some(format!("http://{}/oauth/token", server.addr())),
        |value| value["refresh_token"] = json!("1//pi-test-refresh-token-quota-0001"),
    );
    let provider = adc_env(&file);
    let model = model("gemini-2.5-pro", &server.base_url());
    server.push(token_reply(ACCESS_TOKEN, 3599));
    server.push(fixture());
    let (_, message) = run(&provider, &model, &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/oauth/token");
    let pairs = form(&requests[0]);
    assert_eq!(field(&pairs, "grant_type"), Some("refresh_token"));
    assert_eq!(
        field(&pairs, "client_id"),
        Some("pi-test-client.apps.googleusercontent.example")
    );
    assert_eq!(
        field(&pairs, "client_secret"),
        Some("pi-test-client-secret-0123")
    );
    assert_eq!(
        field(&pairs, "refresh_token"),
        Some("1//pi-test-refresh-token-quota-0001")
    );
    assert_eq!(
        requests[1].header("authorization"),
        Some(format!("Bearer {ACCESS_TOKEN}").as_str())
    );
    assert_eq!(
        requests[1].header("x-goog-user-project"),
        Some("pi-quota-project")
    );
}

#[tokio::test]
async fn a_failed_token_exchange_is_an_error_without_secrets() {
    let server = MockServer::start().await.unwrap();
    let file = CredentialsFile::new(
        AUTHORIZED_USER,
        Some(format!("http://{}/token", server.addr())),
        |value| value["refresh_token"] = json!("1//pi-test-refresh-token-failing-0002"),
    );
    let provider = adc_env(&file);
    let model = model("gemini-2.5-flash", &server.base_url());
    server.push(json!({"status": 400, "body": {"error": "invalid_grant",
        "error_description": "Token has been expired or revoked: 1//pi-test-refresh-token-failing-0002 / pi-test-client-secret-0123"}}));
    let (events, message) = run(&provider, &model, &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.clone().unwrap();
    assert!(
        error.starts_with(&format!(
            "Could not get a Google access token from http://{}/token: 400 invalid_grant: Token has been expired or revoked",
            server.addr()
        )),
        "{error}"
    );
    let everything = format!("{events:?} {message:?}");
    assert!(
        !everything.contains("pi-test-refresh-token-failing"),
        "{everything}"
    );
    assert!(
        !everything.contains("pi-test-client-secret"),
        "{everything}"
    );
    assert_eq!(
        events
            .iter()
            .map(AssistantMessageEvent::kind)
            .collect::<Vec<_>>(),
        ["error"],
        "no start before the request succeeded"
    );
    assert_eq!(server.requests().len(), 1, "a 400 is not retried");
}

/// A token endpoint that never answers, with the request timeout turned off: the token request
/// still ends (at the idle timeout here, at most a minute), as a timeout.
#[tokio::test]
async fn a_token_endpoint_that_never_answers_is_a_timeout_even_without_a_request_timeout() {
    let server = MockServer::start().await.unwrap();
    let file = service_account(&server, "silent-token-endpoint");
    let provider = adc_env(&file);
    let model = model("gemini-2.5-flash", &server.base_url());
    // Each of the token request's attempts meets the same silence.
    for _ in 0..3 {
        server.push(json!({"text": "never", "head_stall_ms": 60_000}));
    }
    let options = StreamOptions {
        request_timeout_ms: Some(0),
        idle_timeout_ms: Some(300),
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let (_, message) = run(&provider, &model, &options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_kind,
        Some(ai::ErrorKind::Timeout),
        "{message:?}"
    );
    let error = message.error_message.unwrap_or_default();
    assert!(error.contains("timed out after 300 ms"), "{error}");
}

/// Requests that waited for a token fetch that failed get its error: the endpoint is asked
/// once, not once per request in turn.
#[tokio::test]
async fn requests_waiting_for_a_failing_token_fetch_share_its_error() {
    let server = MockServer::start().await.unwrap();
    let file = service_account(&server, "shared-token-failure");
    let provider = adc_env(&file);
    let model = model("gemini-2.5-flash", &server.base_url());
    // Slow to refuse, so that every request is waiting for this fetch.
    server.push(json!({"status": 400, "body": {"error": "invalid_grant"}, "head_stall_ms": 2000}));
    let options = StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let runs = (0..4).map(|_| run(&provider, &model, &options));
    let messages: Vec<AssistantMessage> = futures::future::join_all(runs)
        .await
        .into_iter()
        .map(|(_, message)| message)
        .collect();
    let token_requests = server
        .requests()
        .iter()
        .filter(|request| request.path.starts_with("/token"))
        .count();
    assert_eq!(token_requests, 1, "{messages:?}");
    for message in &messages {
        let error = message.error_message.as_deref().unwrap_or_default();
        assert!(error.contains("400 invalid_grant"), "{error}");
    }
    // A request that comes after the failure asks again.
    server.push(token_reply("ya29.after-the-failure", 3600));
    server.push(json!({"text": "ok"}));
    let (_, message) = run(&provider, &model, &options).await;
    let token_requests = server
        .requests()
        .iter()
        .filter(|request| request.path.starts_with("/token"))
        .count();
    assert_eq!(token_requests, 2, "{message:?}");
}

#[tokio::test]
async fn setup_errors_name_what_is_missing() {
    let model = model(
        "gemini-2.5-flash",
        "https://{location}-aiplatform.googleapis.com",
    );
    let cases: [(&[(&str, &str)], &str); 4] = [
        (
            &[],
            "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options.",
        ),
        (
            &[("GCLOUD_PROJECT", "p")],
            "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options.",
        ),
        (
            &[
                ("GOOGLE_CLOUD_PROJECT", "p"),
                ("GOOGLE_CLOUD_LOCATION", "global"),
                ("HOME", "/nonexistent-pi-home"),
            ],
            "No credentials for Vertex AI",
        ),
        (
            &[
                ("GOOGLE_CLOUD_PROJECT", "p"),
                ("GOOGLE_CLOUD_LOCATION", "global"),
                ("GOOGLE_CLOUD_API_KEY", "<authenticated>"),
                ("HOME", "/nonexistent-pi-home"),
            ],
            "No credentials for Vertex AI",
        ),
    ];
    for (vars, expected) in cases {
        let provider = GoogleVertexProvider::with_environment(vars.iter().copied());
        let (events, message) = run(&provider, &model, &StreamOptions::default()).await;
        assert_eq!(events.len(), 1);
        let error = message.error_message.unwrap();
        assert!(error.starts_with(expected), "{vars:?}: {error}");
    }
    // An ADC file of a type we cannot use.
    let file = CredentialsFile::new(
        r#"{"type": "external_account_authorized_user"}"#,
        None,
        |_| {},
    );
    let provider = adc_env(&file);
    let (_, message) = run(&provider, &model, &StreamOptions::default()).await;
    let error = message.error_message.unwrap();
    assert!(
        error.contains("`external_account_authorized_user` are not supported"),
        "{error}"
    );
}

#[tokio::test]
async fn environment_keys_and_adc_tokens_stay_on_googles_hosts() {
    // GOOGLE_CLOUD_API_KEY is not sent to a custom host that is not Google's.
    let provider =
        GoogleVertexProvider::with_environment([("GOOGLE_CLOUD_API_KEY", "env-key-0123456789")]);
    let elsewhere = model(
        "gemini-2.5-flash",
        "https://vertex-proxy.example.invalid/v1",
    );
    let (_, message) = run(&provider, &elsewhere, &StreamOptions::default()).await;
    let error = message.error_message.unwrap();
    assert!(
        error.contains("not to `vertex-proxy.example.invalid`"),
        "{error}"
    );
    assert!(!error.contains("env-key-0123456789"));

    // Nor is an ADC token.
    let server = MockServer::start().await.unwrap();
    let file = service_account(&server, "withheld");
    let (_, message) = run(&adc_env(&file), &elsewhere, &StreamOptions::default()).await;
    assert!(
        message
            .error_message
            .unwrap()
            .contains("Application Default Credentials are only sent"),
    );
    assert!(server.requests().is_empty(), "no token was even fetched");

    // A loopback server may have the environment key.
    let server = MockServer::start().await.unwrap();
    server.push(fixture());
    let local = model("gemini-2.5-flash", &server.base_url());
    let (_, message) = run(&provider, &local, &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(
        server.requests()[0].header("x-goog-api-key"),
        Some("env-key-0123456789")
    );
}

#[tokio::test]
async fn a_callers_authorization_header_replaces_adc() {
    let server = MockServer::start().await.unwrap();
    server.push(fixture());
    let provider = GoogleVertexProvider::with_environment([
        ("GOOGLE_CLOUD_PROJECT", "p"),
        ("GOOGLE_CLOUD_LOCATION", "europe-west4"),
        ("HOME", "/nonexistent-pi-home"),
    ]);
    let model = model("gemini-2.5-flash", &server.base_url());
    let options = StreamOptions {
        headers: [(
            "Authorization".to_owned(),
            "Bearer my-own-token-123".to_owned(),
        )]
        .into(),
        ..StreamOptions::default()
    };
    let (_, message) = run(&provider, &model, &options).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let request = &server.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer my-own-token-123")
    );
}

#[tokio::test]
async fn stream_simple_maps_reasoning_with_vertex_rules() {
    let server = MockServer::start().await.unwrap();
    for _ in 0..3 {
        server.push(fixture());
    }
    let provider = GoogleVertexProvider::with_environment::<&str, &str>([]);
    let key = StreamOptions {
        api_key: Some(ApiKey::new("vertex-test-key")),
        ..StreamOptions::default()
    };
    let cases = [
        (
            "gemini-2.5-flash-lite",
            Some(ThinkingLevel::Minimal),
            json!({"includeThoughts": true, "thinkingBudget": 128}),
        ),
        ("gemini-2.5-pro", None, json!({"thinkingBudget": 0})),
        (
            "gemini-3-pro-preview",
            Some(ThinkingLevel::High),
            json!({"includeThoughts": true, "thinkingLevel": "HIGH"}),
        ),
    ];
    for (id, level, expected) in cases {
        let model = model(id, &server.base_url());
        let options = StreamOptions {
            reasoning: level,
            ..key.clone()
        };
        let mut stream = provider.stream_simple(&model, &context(), &options);
        while stream.next().await.is_some() {}
        let body = server.requests().last().unwrap().body.clone();
        assert_eq!(body["generationConfig"]["thinkingConfig"], expected, "{id}");
        assert_eq!(
            body["generationConfig"]["maxOutputTokens"],
            json!(model.max_tokens.min(32_000))
        );
    }
}

#[tokio::test]
async fn the_registry_serves_every_vertex_catalog_model() {
    assert!(ai::get_api_provider("google-vertex").is_some());
    let server = MockServer::start().await.unwrap();
    let models = ai::get_models("google-vertex");
    assert_eq!(models.len(), 13);
    for model in &models {
        server.push(fixture());
        let model = Model {
            base_url: server.base_url(),
            ..model.clone()
        };
        let options = StreamOptions {
            api_key: Some(ApiKey::new("vertex-test-key")),
            ..StreamOptions::default()
        };
        let message = ai::complete(&model, &context(), &options).await;
        assert_eq!(
            message.stop_reason,
            StopReason::ToolUse,
            "{}: {message:?}",
            model.id
        );
        assert_eq!(
            server.requests().last().unwrap().path,
            format!(
                "/v1/publishers/google/models/{}:streamGenerateContent?alt=sse",
                model.id
            )
        );
    }
}

/// On GCE, GKE and Cloud Run: no credentials file, the metadata server (a stand-in named by
/// `GCE_METADATA_HOST`) gives the default service account's token, cached across requests;
/// a metadata server that never answers is an `auth` error within the bound.
#[tokio::test]
async fn the_metadata_server_gives_the_token_when_there_is_no_file() {
    const METADATA_TOKEN: &str = "ya29.metadata-SECRET-token-0123";
    let metadata = stand_ins::StandIn::start(|seen| {
        if seen.header("metadata-flavor") != Some("Google") {
            return Some((403, "text/plain", String::new()));
        }
        assert!(
            seen.path
                .starts_with("/computeMetadata/v1/instance/service-accounts/default/token"),
            "{}",
            seen.path
        );
        Some((
            200,
            "application/json",
            json!({"access_token": METADATA_TOKEN, "expires_in": 3599, "token_type": "Bearer"})
                .to_string(),
        ))
    })
    .await;
    let host = metadata.url.trim_start_matches("http://").to_owned();
    let provider = GoogleVertexProvider::with_environment([
        ("GOOGLE_CLOUD_PROJECT", "pi-project"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
        ("HOME", "/nonexistent-pi-home"),
        ("GCE_METADATA_HOST", host.as_str()),
    ]);
    let server = MockServer::start().await.unwrap();
    let model = Model {
        base_url: format!("{}/", server.base_url()),
        ..model(
            "gemini-2.5-flash",
            "https://{location}-aiplatform.googleapis.com",
        )
    };
    server.push(fixture());
    server.push(fixture());
    for _ in 0..2 {
        let (_, message) = run(&provider, &model, &StreamOptions::default()).await;
        assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    }
    for request in server.requests() {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {METADATA_TOKEN}").as_str())
        );
    }
    assert_eq!(
        metadata
            .to("/computeMetadata/v1/instance/service-accounts/default/token")
            .len(),
        1,
        "one token for both requests"
    );

    let black_hole = stand_ins::StandIn::start(|_| None).await;
    let host = black_hole.url.trim_start_matches("http://").to_owned();
    let provider = GoogleVertexProvider::with_environment([
        ("GOOGLE_CLOUD_PROJECT", "pi-project"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
        ("HOME", "/nonexistent-pi-home"),
        ("GCE_METADATA_HOST", host.as_str()),
    ]);
    let started = std::time::Instant::now();
    let (_, message) = run(&provider, &model, &StreamOptions::default()).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_kind, Some(ai::ErrorKind::Auth), "{message:?}");
    let error = message.error_message.unwrap();
    assert!(error.starts_with("No credentials for Vertex AI"), "{error}");
    assert!(error.contains("metadata server"), "{error}");
    assert!(!error.contains(METADATA_TOKEN));
}

/// Workload identity federation and impersonation against stand-ins for Google's STS, IAM
/// Credentials and a subject-token URL: file- and URL-sourced subject tokens are exchanged at
/// STS, then (when the file says so) for the service account's token; an
/// `impersonated_service_account` file impersonates from its source credentials. Each ends
/// in a Vertex request with the final token; no token appears in an error.
#[tokio::test]
async fn external_accounts_and_impersonation_exchange_their_tokens() {
    const SUBJECT: &str = "eyJ.subject-SECRET-oidc.token";
    const FEDERATED: &str = "ya29.federated-SECRET";
    const IMPERSONATED: &str = "ya29.impersonated-SECRET";
    const USER_TOKEN: &str = "ya29.user-SECRET";
    let google = stand_ins::StandIn::start(|seen| {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(seen.body.as_bytes())
            .into_owned()
            .collect();
        let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        match seen.path.as_str() {
            "/subject" => {
                assert_eq!(seen.header("x-subject-auth"), Some("header-value"));
                Some((200, "application/json", json!({"id_token": SUBJECT}).to_string()))
            }
            "/sts" => {
                assert_eq!(get("grant_type"), Some("urn:ietf:params:oauth:grant-type:token-exchange"));
                assert_eq!(get("subject_token"), Some(SUBJECT));
                assert_eq!(get("subject_token_type"), Some("urn:ietf:params:oauth:token-type:jwt"));
                assert_eq!(get("audience"), Some("//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q"));
                Some((200, "application/json", json!({"access_token": FEDERATED, "expires_in": 3600,
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer"}).to_string()))
            }
            "/token" => Some((200, "application/json", json!({"access_token": USER_TOKEN, "expires_in": 3600}).to_string())),
            path if path.ends_with(":generateAccessToken") => {
                let bearer = seen.header("authorization").unwrap_or_default().to_owned();
                assert!(bearer == format!("Bearer {FEDERATED}") || bearer == format!("Bearer {USER_TOKEN}"), "{bearer}");
                let body: Value = serde_json::from_str(&seen.body).unwrap();
                assert_eq!(body["scope"], json!(["https://www.googleapis.com/auth/cloud-platform"]));
                Some((200, "application/json", json!({"accessToken": IMPERSONATED, "expireTime": "2099-01-01T00:00:00Z"}).to_string()))
            }
            _ => Some((404, "text/plain", String::new())),
        }
    })
    .await;
    let subject_file = std::env::temp_dir().join(format!("pi-subject-{}", std::process::id()));
    std::fs::write(&subject_file, format!("{SUBJECT}\n")).unwrap();
    let audience =
        "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q";
    let impersonation = format!(
        "{}/v1/projects/-/serviceAccounts/vertex@pi.iam.gserviceaccount.com:generateAccessToken",
        google.url
    );
    let files = [
        // File-sourced, impersonated.
        (
            json!({"type": "external_account", "audience": audience,
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": format!("{}/sts", google.url),
                "service_account_impersonation_url": impersonation,
                "credential_source": {"file": subject_file.display().to_string()}}),
            IMPERSONATED,
        ),
        // URL-sourced JSON field, federated token used directly.
        (
            json!({"type": "external_account", "audience": audience,
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": format!("{}/sts", google.url),
                "credential_source": {"url": format!("{}/subject", google.url),
                    "headers": {"x-subject-auth": "header-value"},
                    "format": {"type": "json", "subject_token_field_name": "id_token"}}}),
            FEDERATED,
        ),
        // An impersonated service account from gcloud user credentials.
        (
            json!({"type": "impersonated_service_account",
                "service_account_impersonation_url": impersonation,
                "source_credentials": {"type": "authorized_user", "client_id": "c",
                    "client_secret": "user-client-SECRET", "refresh_token": "user-refresh-SECRET",
                    "token_uri": format!("{}/token", google.url)}}),
            IMPERSONATED,
        ),
    ];
    let server = MockServer::start().await.unwrap();
    let model = Model {
        base_url: format!("{}/", server.base_url()),
        ..model(
            "gemini-2.5-flash",
            "https://{location}-aiplatform.googleapis.com",
        )
    };
    for (file, token) in files {
        let path = std::env::temp_dir().join(format!(
            "pi-external-{}-{}.json",
            std::process::id(),
            short(&file.to_string())
        ));
        std::fs::write(&path, file.to_string()).unwrap();
        let provider = GoogleVertexProvider::with_environment([
            ("GOOGLE_APPLICATION_CREDENTIALS", path.to_str().unwrap()),
            ("GOOGLE_CLOUD_PROJECT", "pi-project"),
            ("GOOGLE_CLOUD_LOCATION", "us-central1"),
        ]);
        server.reset();
        server.push(fixture());
        let (_, message) = run(&provider, &model, &StreamOptions::default()).await;
        assert_eq!(
            message.stop_reason,
            StopReason::ToolUse,
            "{file}: {message:?}"
        );
        assert_eq!(
            server.requests()[0].header("authorization"),
            Some(format!("Bearer {token}").as_str()),
            "{file}"
        );
        let _ = std::fs::remove_file(&path);
    }

    // A refused exchange is an auth error without the subject token.
    let path = std::env::temp_dir().join(format!("pi-external-bad-{}.json", std::process::id()));
    std::fs::write(
        &path,
        json!({"type": "external_account", "audience": audience,
               "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
               "token_url": format!("{}/nowhere", google.url),
               "credential_source": {"file": subject_file.display().to_string()}})
        .to_string(),
    )
    .unwrap();
    let provider = GoogleVertexProvider::with_environment([
        ("GOOGLE_APPLICATION_CREDENTIALS", path.to_str().unwrap()),
        ("GOOGLE_CLOUD_PROJECT", "pi-project"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
    ]);
    let (_, message) = run(&provider, &model, &StreamOptions::default()).await;
    assert_eq!(message.error_kind, Some(ai::ErrorKind::Auth), "{message:?}");
    let error = message.error_message.unwrap();
    assert!(error.contains("404"), "{error}");
    for secret in [
        SUBJECT,
        FEDERATED,
        IMPERSONATED,
        USER_TOKEN,
        "user-refresh-SECRET",
    ] {
        assert!(!error.contains(secret), "{error}");
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&subject_file);
}

fn short(text: &str) -> u64 {
    text.bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
}
