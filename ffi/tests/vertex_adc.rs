//! Google Vertex AI with Application Default Credentials through the C ABI: a service account
//! JSON file (`tests/fixtures/google-vertex/service_account.json`) whose token endpoint is the
//! mock server, named by `GOOGLE_APPLICATION_CREDENTIALS` in the environment of the C program
//! `tests/c/stream_json.c`, then pi's recorded Vertex transcript `text_then_tool_call`.
//!
//! pi's recording was made with an API key; here the same model, context and options (without
//! the key) must give pi's events, final message and request body, with the access token the
//! token endpoint handed out as the bearer token in place of pi's `x-goog-api-key`. The
//! comparison is the pi fixture replay's (`core/tests/support/pi_fixtures.rs`), rule for rule.

#[path = "support/c_build.rs"]
mod c_build;
#[path = "../../core/tests/support/pi_fixtures.rs"]
mod pi_fixtures;
#[path = "support/stream_json.rs"]
mod stream_json;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pi_fixtures::Fixture;
use pi_mock_server::MockServer;
use serde_json::{Value, json};

const ACCESS_TOKEN: &str = "ya29.pi-c-adc-token-0123456789";

fn jwt_part(jwt: &str, index: usize) -> Value {
    let part = jwt.split('.').nth(index).expect("a JWT part");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64url")).expect("JSON")
}

#[test]
fn service_account_adc_replays_pis_vertex_transcript_through_c() {
    let name = "google-vertex/text_then_tool_call";
    let fixture = pi_fixtures::load_all()
        .into_iter()
        .find(|f| f.name == name)
        .expect("the fixture");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let server = runtime.block_on(MockServer::start()).expect("mock server");
    let origin = format!("http://{}", server.addr());

    let template = c_build::repo_root().join("tests/fixtures/google-vertex/service_account.json");
    let mut account: Value =
        serde_json::from_slice(&std::fs::read(&template).expect("service account")).unwrap();
    account["client_email"] = json!("c-adc@pi-test.iam.gserviceaccount.com");
    account["token_uri"] = json!(format!("{origin}/token"));
    let credentials = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("vertex-adc-{}.json", std::process::id()));
    std::fs::write(&credentials, account.to_string()).expect("credentials file");
    let env: Vec<(String, String)> = [
        ("HOME", "/nonexistent-home"),
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            credentials.to_str().unwrap(),
        ),
        ("GOOGLE_CLOUD_PROJECT", "pi-project"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();

    server.push(
        json!({"body": {"access_token": ACCESS_TOKEN, "expires_in": 3599,
                                "token_type": "Bearer"}}),
    );
    server.push_all(fixture.replies());
    let mut options = fixture.json["options"].clone();
    assert_eq!(
        options.as_object_mut().unwrap().shift_remove("apiKey"),
        Some(json!("test-key"))
    );
    let observed = stream_json::run(
        &fixture.model(&origin),
        &fixture.json["context"],
        &options,
        fixture.json["call"] == "streamSimple",
        &env,
    );
    std::fs::remove_file(&credentials).expect("credentials file removed");

    let log = server.requests();
    let paths: Vec<&str> = log.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/token",
            fixture.json["requests"][0]["path"].as_str().unwrap()
        ]
    );
    // The token exchange: a JWT bearer grant signed with the service account's key.
    let token_request = &log[0];
    assert_eq!(
        token_request.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let form: Vec<(String, String)> =
        url::form_urlencoded::parse(token_request.body.as_str().expect("a form").as_bytes())
            .into_owned()
            .collect();
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        field("grant_type"),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    let assertion = field("assertion").expect("an assertion");
    assert_eq!(jwt_part(assertion, 0)["alg"], "RS256");
    let claims = jwt_part(assertion, 1);
    assert_eq!(claims["iss"], "c-adc@pi-test.iam.gserviceaccount.com");
    assert_eq!(claims["aud"], format!("{origin}/token"));
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        3600
    );
    let private_key = account["private_key"].as_str().unwrap();
    assert!(!format!("{log:?}").contains(private_key));

    // pi's request with the access token in place of the key.
    let mut expected = fixture.json.clone();
    let headers = expected["requests"][0]["headers"].as_object_mut().unwrap();
    assert_eq!(
        headers.shift_remove("x-goog-api-key"),
        Some(json!("test-key"))
    );
    headers.insert(
        "authorization".into(),
        json!(format!("Bearer {ACCESS_TOKEN}")),
    );
    let request = &log[1];
    let requests = pi_fixtures::requests_json(
        [(
            request.method.as_str(),
            request.path.as_str(),
            request.headers.as_slice(),
            &request.body,
        )],
        &origin,
    );
    let observed = pi_fixtures::unmock(
        json!({"events": observed.events, "result": observed.result, "requests": requests}),
        &origin,
    );
    let fixture = Fixture {
        name: name.to_owned(),
        json: expected,
    };
    let outcome = pi_fixtures::compare(&fixture, &observed);
    assert!(outcome.mismatches.is_empty(), "{:#?}", outcome.mismatches);
    assert_eq!(observed["result"]["stopReason"], "toolUse");
    runtime.block_on(async move { drop(server) });
}
