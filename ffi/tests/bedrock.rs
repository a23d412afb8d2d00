//! Amazon Bedrock (`bedrock-converse-stream`) through the C ABI, against the mock server serving
//! binary `application/vnd.amazon.eventstream` bodies.
//!
//! `tests/fixtures/bedrock/<case>.eventstream` is what the mock server sends (encoded by the AWS
//! SDK's codec); `<case>.pi.json` is what pi 0.73.1 emitted and sent for it, with the model, the
//! AWS variables, the call, the context and the options it was given (`record-pi.mjs`). The C
//! program `tests/c/stream_json.c` (built like the other C programs, see `support/c_build.rs`)
//! streams pi's call with `pi_stream_open`/`pi_stream_open_simple` in a process whose whole
//! environment is the fixture's AWS variables, and prints each event's `pi_event` fields and
//! `pi_stream_event_json`, then `pi_stream_result_json`. Those JSON bytes must be pi's events
//! and final message after the normalisation `core/tests/bedrock.rs` applies; the request must
//! be pi's (path, JSON body), signed the way pi signed it, never carrying the secret key.

#[path = "support/c_build.rs"]
mod c_build;
#[path = "../../core/tests/support/aws_stand_ins.rs"]
#[allow(dead_code, unreachable_pub)]
mod stand_ins;
#[path = "support/stream_json.rs"]
mod stream_json;

use base64::Engine as _;
use c_build::repo_root;
use pi_mock_server::{MockServer, RecordedRequest};
use serde_json::{Value, json};
use stream_json::Observed;

const CASES: [&str; 3] = [
    "thinking_text_tool_use",
    "text_max_tokens",
    "throttled_mid_stream",
];
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

fn fixture(name: &str) -> Vec<u8> {
    let path = repo_root().join("tests/fixtures/bedrock").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn recording(case: &str) -> Value {
    serde_json::from_slice(&fixture(&format!("{case}.pi.json"))).expect("pi recording JSON")
}

fn reply(bytes: &[u8], shaping: Value) -> Value {
    let mut reply = json!({
        "bytes_b64": [base64::engine::general_purpose::STANDARD.encode(bytes)],
        "headers": {"content-type": "application/vnd.amazon.eventstream"},
    });
    for (key, value) in shaping.as_object().expect("shaping object") {
        reply[key] = value.clone();
    }
    reply
}

/// The mock server, on a runtime of its own (the C program blocks this thread).
fn mock_server() -> (tokio::runtime::Runtime, MockServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let server = runtime.block_on(MockServer::start()).expect("mock server");
    (runtime, server)
}

/// The catalog model `id` with the mock server as its explicit Bedrock endpoint (no `/v1`).
fn catalog_model_json(id: &str, server: &MockServer) -> Value {
    let mut model = pi_agent::ai::get_model("amazon-bedrock", id).expect("catalog model");
    model.base_url = format!("http://{}", server.addr());
    serde_json::to_value(model).expect("model JSON")
}

/// Runs pi's call of `pi` (model, context, options, call) through the C program with exactly
/// the fixture's AWS variables as its environment (no ambient `AWS_*`, no `~/.aws`).
fn stream_through_c(pi: &Value, server: &MockServer) -> Observed {
    let model = catalog_model_json(pi["model"].as_str().expect("model id"), server);
    let mut env = vec![
        ("HOME".to_owned(), "/nonexistent-home".to_owned()),
        ("AWS_CONFIG_FILE".to_owned(), "/nonexistent".to_owned()),
        (
            "AWS_SHARED_CREDENTIALS_FILE".to_owned(),
            "/nonexistent".to_owned(),
        ),
    ];
    for (name, value) in pi["env"].as_object().expect("env object") {
        env.push((
            name.clone(),
            value.as_str().expect("string variable").to_owned(),
        ));
    }
    stream_json::run(
        &model,
        &pi["context"],
        &pi["options"],
        pi["call"] == "streamSimple",
        &env,
    )
}

/// Our event as pi's recording has it: without the message snapshots the recorder dropped
/// (`partial`, `message`, `error`), and without our documented additions (README, "Differences
/// from pi", difference 1: `id`/`toolName` on `toolcall_start`, `contentSignature` on
/// `*_end`), as `normalise` in `core/tests/support/pi_fixtures.rs`.
fn comparable_event(event: &Value) -> Value {
    let mut event = event.clone();
    let object = event.as_object_mut().expect("event object");
    for key in ["partial", "message", "error"] {
        object.shift_remove(key);
    }
    let extras: &[&str] = match object["type"].as_str() {
        Some("toolcall_start") => &["id", "toolName"],
        Some("text_end" | "thinking_end") => &["contentSignature"],
        _ => &[],
    };
    for key in extras {
        object.shift_remove(*key);
    }
    event
}

/// Our message without the wall-clock `timestamp` (the recorder dropped pi's), the measured
/// `timing` and the machine-readable `errorKind`, `httpStatus`, `retryAfterMs` (pi has none).
fn comparable_message(message: &Value) -> Value {
    let mut message = message.clone();
    let object = message.as_object_mut().expect("message object");
    for key in [
        "timestamp",
        "timing",
        "errorKind",
        "httpStatus",
        "retryAfterMs",
    ] {
        object.shift_remove(key);
    }
    message
}

/// Equal as JSON (`0` and `0.0` are the same number), objects with pi's key order.
fn assert_same_json(ours: &Value, pi: &Value, at: &str) {
    match (ours, pi) {
        (Value::Object(a), Value::Object(b)) => {
            assert!(a.keys().eq(b.keys()), "{at}: keys {a:?} vs pi's {b:?}");
            for (key, value) in b {
                assert_same_json(&a[key], value, &format!("{at}/{key}"));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{at}: {ours} vs pi's {pi}");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert_same_json(x, y, &format!("{at}/{i}"));
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            assert_eq!(a.as_f64(), b.as_f64(), "{at}");
        }
        _ => assert_eq!(ours, pi, "{at}"),
    }
}

fn assert_same_stream(observed: &Observed, pi: &Value, case: &str) {
    let pi_events = pi["events"].as_array().expect("pi events");
    let kinds = |events: &[Value]| -> Vec<String> {
        events.iter().map(|e| e["type"].to_string()).collect()
    };
    assert_eq!(kinds(&observed.events), kinds(pi_events), "{case}");
    for (i, (ours, theirs)) in observed.events.iter().zip(pi_events).enumerate() {
        assert_same_json(
            &comparable_event(ours),
            theirs,
            &format!("{case} /events/{i}"),
        );
    }
    // The terminal event carries the final message.
    let last = observed.events.last().expect("events");
    let terminal = if last["type"] == "done" {
        &last["message"]
    } else {
        &last["error"]
    };
    assert_eq!(terminal, &observed.result, "{case}");
    assert_same_json(
        &comparable_message(&observed.result),
        &pi["message"],
        &format!("{case} /message"),
    );
}

/// `AKID/<region>/bedrock/aws4_request`: the credential scope without its date (the day of the
/// request).
fn credential_scope(authorization: &str) -> String {
    let credential = authorization
        .split("Credential=")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no credential in {authorization}"));
    let mut parts: Vec<&str> = credential.split('/').collect();
    parts.remove(1);
    parts.join("/")
}

/// pi's request with each run of same-role messages joined into one, as ours are (Converse
/// refuses roles that do not alternate: README "Differences from pi", item 43).
fn with_alternating_roles(mut body: Value) -> Value {
    if let Some(messages) = body["messages"].as_array_mut() {
        let mut joined: Vec<Value> = Vec::new();
        for message in messages.drain(..) {
            match joined.last_mut() {
                Some(last) if last["role"] == message["role"] => {
                    let more = message["content"].as_array().cloned().unwrap_or_default();
                    last["content"].as_array_mut().unwrap().extend(more);
                }
                _ => joined.push(message),
            }
        }
        *messages = joined;
    }
    body
}

fn assert_request_like_pis(request: &RecordedRequest, pi: &Value, case: &str) {
    let expected = &pi["request"];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, expected["path"], "{case}");
    assert_eq!(
        request.body,
        with_alternating_roles(expected["body"].clone()),
        "{case}"
    );
    assert_eq!(
        request.header("content-type"),
        expected["contentType"].as_str()
    );
    let authorization = request.header("authorization").expect("authorization");
    let pi_authorization = expected["authorization"].as_str().expect("pi's");
    if pi_authorization.starts_with("Bearer ") {
        assert_eq!(authorization, pi_authorization, "{case}");
    } else {
        // SigV4 with the example access key id, for pi's region; our signed header set is
        // smaller than the JS SDK's (no SDK bookkeeping headers).
        assert!(
            authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"),
            "{authorization}"
        );
        assert_eq!(
            credential_scope(authorization),
            credential_scope(pi_authorization),
            "{case}"
        );
        let signature = authorization.rsplit("Signature=").next().unwrap();
        assert!(
            signature.len() == 64 && signature.bytes().all(|b| b.is_ascii_hexdigit()),
            "{authorization}"
        );
        assert!(request.header("x-amz-date").is_some());
        assert_eq!(
            request.header("x-amz-content-sha256").map(str::len),
            Some(64)
        );
        let session = pi["env"]["AWS_SESSION_TOKEN"].as_str();
        assert_eq!(request.header("x-amz-security-token"), session, "{case}");
        assert_eq!(
            expected["signedHeaders"]
                .as_str()
                .unwrap()
                .contains("x-amz-security-token"),
            session.is_some()
        );
    }
    // The secret key signs; it is never sent.
    for (name, value) in &request.headers {
        assert!(!value.contains(SECRET_KEY), "{case}: {name}");
    }
    assert!(!request.body.to_string().contains(SECRET_KEY));
}

#[test]
fn same_events_message_and_request_as_pi_through_c() {
    let (runtime, server) = mock_server();
    for case in CASES {
        let pi = recording(case);
        server.reset();
        server.push(reply(&fixture(&format!("{case}.eventstream")), json!({})));
        let observed = stream_through_c(&pi, &server);
        assert_same_stream(&observed, &pi, case);
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{case}");
        assert_request_like_pis(&requests[0], &pi, case);
        let seen = format!("{:?} {}", observed.events, observed.result);
        assert!(!seen.contains(SECRET_KEY), "{case}");
    }
    runtime.block_on(async move { drop(server) });
}

#[test]
fn any_chunk_boundaries_give_the_same_events_through_c() {
    let case = "thinking_text_tool_use";
    let pi = recording(case);
    let (runtime, server) = mock_server();
    for shaping in [json!({"split": 1}), json!({"split_random": 7})] {
        server.reset();
        server.push(reply(&fixture(&format!("{case}.eventstream")), shaping));
        assert_same_stream(&stream_through_c(&pi, &server), &pi, case);
    }
    runtime.block_on(async move { drop(server) });
}

/// Splits an eventstream body into its frames (each starts with its big-endian total length).
fn frames(mut body: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let length = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
        out.push(body[..length].to_vec());
        body = &body[length..];
    }
    out
}

#[test]
fn a_corrupted_frame_is_an_error_event_through_c() {
    let case = "text_max_tokens";
    let pi = recording(case);
    let mut parts = frames(&fixture(&format!("{case}.eventstream")));
    // Frame 2 is the second text delta: flip one payload bit, so its message CRC no longer
    // matches (the prelude, and so the framing, stays intact).
    let flip = parts[2].len() - 8;
    parts[2][flip] ^= 0x20;
    let (runtime, server) = mock_server();
    server.push(reply(&parts.concat(), json!({"split_random": 11})));
    let observed = stream_through_c(&pi, &server);
    let kinds: Vec<&str> = observed
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["start", "text_start", "text_delta", "error"]);
    assert_eq!(observed.events[2]["delta"], "Nova here: ");
    assert_eq!(observed.events[3]["reason"], "error");
    assert_eq!(observed.events[3]["error"], observed.result);
    let result = &observed.result;
    assert_eq!(result["stopReason"], "error");
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "Nova here: "}])
    );
    let error = result["errorMessage"].as_str().unwrap();
    assert!(
        error.starts_with("corrupted eventstream frame: message CRC mismatch"),
        "{error}"
    );
    runtime.block_on(async move { drop(server) });
}

/// The AWS credential chain through C: a C program on ECS/Fargate (the container credentials
/// endpoint, a local stand-in) signs its request with the endpoint's credentials; with no
/// source at all the result is an `auth` error naming the sources tried.
#[test]
fn container_credentials_sign_the_request_through_c() {
    const ECS_AUTH: &str = "ecs-authorization-SECRET-token";
    const ECS_SECRET: &str = "ecs/secret/KEY+4444444444444444444444";
    let (runtime, server) = mock_server();
    let ecs = runtime.block_on(stand_ins::StandIn::start(|seen| {
        (seen.header("authorization") == Some(ECS_AUTH)).then(|| {
            (
                200,
                "application/json",
                stand_ins::json_credentials("ASIAECSC", ECS_SECRET, "ecs-session-token", 3600),
            )
        })
    }));
    let model = catalog_model_json("amazon.nova-lite-v1:0", &server);
    let context = json!({"messages": [{"role": "user", "content": "hi", "timestamp": 1}]});
    let options = json!({"maxRetries": 0});
    let base = |extra: &[(&str, String)]| {
        let mut env: Vec<(String, String)> = [
            ("HOME", "/nonexistent-home".to_owned()),
            ("AWS_CONFIG_FILE", "/nonexistent".to_owned()),
            ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent".to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
        env.dedup();
        env
    };

    server.push(reply(&fixture("text_max_tokens.eventstream"), json!({})));
    let env = base(&[
        (
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            format!("{}/v2/credentials/task", ecs.url),
        ),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", ECS_AUTH.to_owned()),
    ]);
    let observed = stream_json::run(&model, &context, &options, false, &env);
    assert_ne!(
        observed.result["stopReason"], "error",
        "{}",
        observed.result
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let authorization = requests[0].header("authorization").unwrap();
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=ASIAECSC/"),
        "{authorization}"
    );
    assert_eq!(
        requests[0].header("x-amz-security-token"),
        Some("ecs-session-token")
    );
    assert_eq!(ecs.to("/v2/credentials/task").len(), 1);

    // Nothing configured: an auth error naming the sources, and nothing sent.
    server.reset();
    let observed = stream_json::run(&model, &context, &options, false, &base(&[]));
    assert_eq!(observed.result["stopReason"], "error");
    assert_eq!(observed.result["errorKind"], "auth", "{}", observed.result);
    let message = observed.result["errorMessage"].as_str().unwrap();
    for source in [
        "environment",
        "profile `default`",
        "web identity",
        "ECS container endpoint",
    ] {
        assert!(message.contains(source), "{source}: {message}");
    }
    assert!(server.requests().is_empty());
    let seen = format!("{:?} {}", observed.events, observed.result);
    for secret in [ECS_AUTH, ECS_SECRET] {
        assert!(!seen.contains(secret));
    }
    runtime.block_on(async move {
        drop(ecs);
        drop(server);
    });
}

/// Web identity (EKS IRSA: a token file exchanged at STS) and an assume-role profile chain
/// (`role_arn` + `source_profile`) through C, against an STS stand-in; the profile also gives
/// the region (no `AWS_REGION`: the AWS SDK's profile region provider).
#[test]
fn web_identity_and_assume_role_sign_the_request_through_c() {
    const WEB_TOKEN: &str = "eyJhbGciOi.web-identity-SECRET-c.jwt";
    const STS_SECRET: &str = "sts/secret/KEY+9999999999999999999999";
    const BASE_SECRET: &str = "base/secret/KEY+0101010101010101010101";
    let (runtime, server) = mock_server();
    let sts = runtime.block_on(stand_ins::StandIn::start(|seen| {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(seen.body.as_bytes())
            .into_owned()
            .collect();
        let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let signed_by_base = seen
            .header("authorization")
            .is_some_and(|a| a.contains("Credential=AKIABASEC/"));
        let (action, key, token) = match get("Action") {
            Some("AssumeRoleWithWebIdentity") if get("WebIdentityToken") == Some(WEB_TOKEN) => {
                ("AssumeRoleWithWebIdentity", "ASIAWEBC", "web-c-session")
            }
            Some("AssumeRole") if signed_by_base => ("AssumeRole", "ASIAROLEC", "role-c-session"),
            _ => return Some((403, "text/xml", "<Error/>".to_owned())),
        };
        Some((
            200,
            "text/xml",
            stand_ins::sts_credentials(action, key, STS_SECRET, token),
        ))
    }));
    let dir = std::env::temp_dir().join(format!("pi-ffi-bedrock-sts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, WEB_TOKEN).unwrap();
    let config = dir.join("config");
    std::fs::write(
        &config,
        format!(
            "[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/dev\nsource_profile = base\n\
             region = eu-west-3\n\n[profile base]\naws_access_key_id = AKIABASEC\n\
             aws_secret_access_key = {BASE_SECRET}\n"
        ),
    )
    .unwrap();
    let model = catalog_model_json("amazon.nova-lite-v1:0", &server);
    let context = json!({"messages": [{"role": "user", "content": "hi", "timestamp": 1}]});
    let options = json!({"maxRetries": 0});
    let env = |vars: &[(&str, String)]| -> Vec<(String, String)> {
        [
            ("HOME", "/nonexistent-home".to_owned()),
            ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent".to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
            ("AWS_ENDPOINT_URL_STS", sts.url.clone()),
        ]
        .iter()
        .chain(vars)
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
    };
    let scenarios = [
        (
            env(&[
                ("AWS_REGION", "us-east-1".to_owned()),
                ("AWS_CONFIG_FILE", "/nonexistent".to_owned()),
                (
                    "AWS_WEB_IDENTITY_TOKEN_FILE",
                    token_file.display().to_string(),
                ),
                (
                    "AWS_ROLE_ARN",
                    "arn:aws:iam::123456789012:role/web".to_owned(),
                ),
                ("AWS_ROLE_SESSION_NAME", "pi-agent-c".to_owned()),
            ]),
            "ASIAWEBC",
            "web-c-session",
            "us-east-1",
        ),
        (
            env(&[
                ("AWS_CONFIG_FILE", config.display().to_string()),
                ("AWS_PROFILE", "dev".to_owned()),
            ]),
            "ASIAROLEC",
            "role-c-session",
            "eu-west-3",
        ),
    ];
    for (env, key_id, session, region) in scenarios {
        server.reset();
        server.push(reply(&fixture("text_max_tokens.eventstream"), json!({})));
        let observed = stream_json::run(&model, &context, &options, false, &env);
        assert_ne!(
            observed.result["stopReason"], "error",
            "{}",
            observed.result
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let authorization = requests[0].header("authorization").unwrap();
        assert!(
            authorization.starts_with(&format!("AWS4-HMAC-SHA256 Credential={key_id}/")),
            "{authorization}"
        );
        assert!(
            authorization.contains(&format!("/{region}/bedrock/aws4_request")),
            "{authorization}"
        );
        assert_eq!(requests[0].header("x-amz-security-token"), Some(session));
        let seen = format!("{:?} {}", observed.events, observed.result);
        for secret in [WEB_TOKEN, STS_SECRET, BASE_SECRET] {
            assert!(!seen.contains(secret));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    runtime.block_on(async move {
        drop(sts);
        drop(server);
    });
}
