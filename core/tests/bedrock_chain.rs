//! Bedrock's AWS credential chain (the AWS SDK's providers) against local stand-ins on
//! 127.0.0.1, each ending in a SigV4-signed ConverseStream request to the mock server: EC2
//! instance metadata (IMDSv2 token + role), the ECS container endpoint (with short-lived
//! credentials that are refreshed), STS web identity, an assume-role profile chain and
//! `credential_process`; a missing or unanswering source gives `errorKind auth` naming the
//! sources tried, within a bound. No secret appears in any message.
//!
//! The SDK reads the process environment, so this file is one test that sets the variables of
//! each scenario in turn (nothing else in this binary reads them).

#[path = "support/aws_stand_ins.rs"]
#[allow(dead_code, unreachable_pub)]
mod stand_ins;

use std::time::{Duration, Instant};

use pi_agent::ai::providers::eventstream::{self, HeaderValue};
use pi_agent::ai::{
    self, AssistantMessage, Context, ErrorKind, Message, Model, StopReason, StreamOptions,
    UserMessage,
};
use pi_mock_server::MockServer;
use serde_json::{Value, json};
use stand_ins::{StandIn, json_credentials, sts_credentials};

const IMDS_SECRET: &str = "imds/secret/KEY+0000000000000000000000";
const IMDS_TOKEN: &str = "imds-session-token-SECRET-1";
const ECS_AUTH: &str = "ecs-authorization-SECRET-token";
const WEB_TOKEN: &str = "eyJhbGciOi.web-identity-SECRET.jwt";
const STS_SECRET: &str = "sts/secret/KEY+1111111111111111111111";
const BASE_SECRET: &str = "base/secret/KEY+2222222222222222222222";
const PROC_SECRET: &str = "proc/secret/KEY+3333333333333333333333";
const SSO_ACCESS_TOKEN: &str = "sso-portal-access-SECRET-token";
const SSO_SECRET: &str = "sso/secret/KEY+6666666666666666666666";
const SSO_START_URL: &str = "https://pi-agent-test.awsapps.com/start";
const SSO_OLD_TOKEN: &str = "sso-session-old-SECRET-token";
const SSO_NEW_TOKEN: &str = "sso-session-new-SECRET-token";
const SSO_REFRESH: &str = "sso-refresh-SECRET-token";
const SSO_CLIENT_SECRET: &str = "sso-client-SECRET";

fn frame(kind: &str, payload: Value) -> Vec<u8> {
    eventstream::encode(&eventstream::Message {
        headers: vec![
            (":event-type".into(), HeaderValue::String(kind.into())),
            (
                ":content-type".into(),
                HeaderValue::String("application/json".into()),
            ),
            (":message-type".into(), HeaderValue::String("event".into())),
        ],
        payload: payload.to_string().into_bytes(),
    })
}

fn ok_reply() -> Value {
    use base64::Engine as _;
    let bytes = [
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "ok"}}),
        ),
        frame("contentBlockStop", json!({"contentBlockIndex": 0})),
        frame("messageStop", json!({"stopReason": "end_turn"})),
    ]
    .concat();
    json!({"bytes_b64": [base64::engine::general_purpose::STANDARD.encode(bytes)],
           "headers": {"content-type": "application/vnd.amazon.eventstream"}})
}

/// Exactly `vars` as the AWS environment (plus an empty `HOME` and no shared files, no IMDS
/// unless asked).
fn set_environment(home: &std::path::Path, vars: &[(&str, String)]) {
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") {
            // SAFETY: this binary's only test; nothing else reads the environment meanwhile.
            unsafe { std::env::remove_var(name) };
        }
    }
    let mut all: Vec<(&str, String)> = vec![
        ("HOME", home.display().to_string()),
        ("AWS_CONFIG_FILE", home.join("config").display().to_string()),
        (
            "AWS_SHARED_CREDENTIALS_FILE",
            home.join("credentials").display().to_string(),
        ),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
    ];
    all.extend(vars.iter().cloned());
    for (name, value) in all {
        // SAFETY: as above. An empty value unsets the variable.
        if value.is_empty() {
            unsafe { std::env::remove_var(name) };
        } else {
            unsafe { std::env::set_var(name, value) };
        }
    }
}

async fn ask(server: &MockServer) -> AssistantMessage {
    let model = Model::new(
        "bedrock-converse-stream",
        "amazon-bedrock",
        "amazon.nova-lite-v1:0",
        format!("http://{}", server.addr()),
    );
    let context = Context {
        messages: vec![Message::User(UserMessage::text("hi"))],
        ..Context::default()
    };
    let options = StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    ai::complete(&model, &context, &options).await
}

/// The last Bedrock request was signed with `key_id` (and `token` as its session token).
fn assert_signed_with(server: &MockServer, key_id: &str, token: &str) {
    assert_signed_in(server, key_id, token, "us-east-1");
}

/// [`assert_signed_with`] for region `region`.
fn assert_signed_in(server: &MockServer, key_id: &str, token: &str, region: &str) {
    let request = server.requests().pop().expect("a Bedrock request");
    let authorization = request.header("authorization").unwrap();
    assert!(
        authorization.starts_with(&format!("AWS4-HMAC-SHA256 Credential={key_id}/")),
        "{authorization}"
    );
    assert!(
        authorization.contains(&format!("/{region}/bedrock/aws4_request")),
        "{authorization}"
    );
    assert_eq!(request.header("x-amz-security-token"), Some(token));
}

/// What `get_env_api_key("amazon-bedrock")` says now.
fn env_key() -> Option<String> {
    ai::get_env_api_key("amazon-bedrock").map(|key| key.expose().to_owned())
}

const AUTHENTICATED: Option<&str> = Some("<authenticated>");

fn assert_no_secret(what: &str) {
    for secret in [
        IMDS_SECRET,
        IMDS_TOKEN,
        ECS_AUTH,
        WEB_TOKEN,
        STS_SECRET,
        BASE_SECRET,
        PROC_SECRET,
        SSO_ACCESS_TOKEN,
        SSO_SECRET,
        SSO_OLD_TOKEN,
        SSO_NEW_TOKEN,
        SSO_REFRESH,
        SSO_CLIENT_SECRET,
        "session-token",
    ] {
        assert!(!what.contains(secret), "{secret} leaked in {what}");
    }
}

/// The SHA-1 of `text` in hex (the SSO token cache's file names), by `sha1sum`.
fn sha1_hex(text: &str) -> String {
    let sha1 = std::process::Command::new("sha1sum")
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .expect("sha1sum");
    String::from_utf8(sha1.stdout).unwrap()[..40].to_owned()
}

async fn succeeds(server: &MockServer) -> AssistantMessage {
    server.push(ok_reply());
    let message = ask(server).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_no_secret(&serde_json::to_string(&message).unwrap());
    assert_no_secret(&format!("{message:?}"));
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_credential_source_ends_in_a_signed_request() {
    // Everything the library logs, from every thread (this binary's only test).
    use pi_agent::observability::{ForwardLogs, LogEvent, LogLevel};
    use tracing_subscriber::layer::SubscriberExt as _;
    let logs: std::sync::Arc<std::sync::Mutex<Vec<LogEvent>>> = std::sync::Arc::default();
    let sink = logs.clone();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(ForwardLogs::new(
        LogLevel::Trace,
        move |event| {
            sink.lock().unwrap().push(event.clone());
        },
    )))
    .unwrap();
    let home = std::env::temp_dir().join(format!("pi-bedrock-chain-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let server = MockServer::start().await.unwrap();
    let black_hole_early = StandIn::start(|_| None).await;

    // --- EC2 instance metadata (IMDSv2): a session token, then the role, then its keys. ---
    let imds = StandIn::start(|seen| {
        let token_ok = seen.header("x-aws-ec2-metadata-token") == Some(IMDS_TOKEN);
        match (seen.method.as_str(), seen.path.as_str()) {
            ("PUT", "/latest/api/token") => {
                assert!(
                    seen.header("x-aws-ec2-metadata-token-ttl-seconds")
                        .is_some()
                );
                Some((200, "text/plain", IMDS_TOKEN.to_owned()))
            }
            (_, _) if !token_ok => Some((401, "text/plain", String::new())),
            ("GET", "/latest/meta-data/iam/security-credentials/") => {
                Some((200, "text/plain", "bedrock-role".to_owned()))
            }
            ("GET", "/latest/meta-data/iam/security-credentials/bedrock-role") => Some((
                200,
                "application/json",
                json_credentials("ASIAIMDS", IMDS_SECRET, "imds-session-token", 3600),
            )),
            _ => Some((404, "text/plain", String::new())),
        }
    })
    .await;
    set_environment(
        &home,
        &[
            ("AWS_EC2_METADATA_DISABLED", "false".into()),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url.clone()),
        ],
    );
    succeeds(&server).await;
    assert_signed_with(&server, "ASIAIMDS", "imds-session-token");
    // Cached: a second request asks IMDS nothing more.
    succeeds(&server).await;
    assert_signed_with(&server, "ASIAIMDS", "imds-session-token");
    assert_eq!(
        imds.to("/latest/meta-data/iam/security-credentials/bedrock-role")
            .len(),
        1
    );
    // Concurrent requests of a new configuration share one fetch.
    set_environment(
        &home,
        &[
            ("AWS_EC2_METADATA_DISABLED", "false".into()),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url.clone()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ROLE_SESSION_NAME", "a-new-configuration".into()),
        ],
    );
    server.push(ok_reply());
    server.push(ok_reply());
    let (a, b) = tokio::join!(ask(&server), ask(&server));
    assert_eq!(
        (a.stop_reason, b.stop_reason),
        (StopReason::Stop, StopReason::Stop)
    );
    assert_eq!(
        imds.to("/latest/meta-data/iam/security-credentials/bedrock-role")
            .len(),
        2,
        "one more fetch for both"
    );

    // --- ECS container endpoint, with credentials that expire within the refresh window. ---
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = calls.clone();
    let ecs = StandIn::start(move |seen| {
        assert_eq!(seen.header("authorization"), Some(ECS_AUTH));
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Some((
            200,
            "application/json",
            // Two minutes: inside the five-minute refresh window, so fetched again each time.
            json_credentials(
                &format!("ASIAECS{n}"),
                IMDS_SECRET,
                &format!("ecs-session-token-{n}"),
                120,
            ),
        ))
    })
    .await;
    set_environment(
        &home,
        &[
            (
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                format!("{}/v2/credentials/task", ecs.url),
            ),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN", ECS_AUTH.into()),
        ],
    );
    assert_eq!(env_key().as_deref(), AUTHENTICATED);
    succeeds(&server).await;
    assert_signed_with(&server, "ASIAECS1", "ecs-session-token-1");
    succeeds(&server).await;
    assert_signed_with(&server, "ASIAECS2", "ecs-session-token-2");

    // --- Web identity (EKS IRSA): the token file, exchanged at STS. ---
    let sts = StandIn::start(|seen| {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(seen.body.as_bytes())
            .into_owned()
            .collect();
        let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        match get("Action").as_deref() {
            Some("AssumeRoleWithWebIdentity") => {
                assert_eq!(get("WebIdentityToken").as_deref(), Some(WEB_TOKEN));
                assert_eq!(
                    get("RoleArn").as_deref(),
                    Some("arn:aws:iam::123456789012:role/web")
                );
                Some((
                    200,
                    "text/xml",
                    sts_credentials(
                        "AssumeRoleWithWebIdentity",
                        "ASIAWEB",
                        STS_SECRET,
                        "web-session-token",
                    ),
                ))
            }
            Some("AssumeRole") => {
                // Signed with the source profile's keys.
                let authorization = seen.header("authorization").unwrap_or_default();
                assert!(
                    authorization.contains("Credential=AKIABASE/"),
                    "{authorization}"
                );
                assert_eq!(
                    get("RoleArn").as_deref(),
                    Some("arn:aws:iam::123456789012:role/dev")
                );
                Some((
                    200,
                    "text/xml",
                    sts_credentials("AssumeRole", "ASIAROLE", STS_SECRET, "role-session-token"),
                ))
            }
            _ => Some((400, "text/xml", "<Error/>".to_owned())),
        }
    })
    .await;
    let token_file = home.join("web-identity-token");
    std::fs::write(&token_file, WEB_TOKEN).unwrap();
    set_environment(
        &home,
        &[
            (
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                token_file.display().to_string(),
            ),
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/web".into()),
            ("AWS_ROLE_SESSION_NAME", "pi-agent-test".into()),
            ("AWS_ENDPOINT_URL_STS", sts.url.clone()),
        ],
    );
    assert_eq!(env_key().as_deref(), AUTHENTICATED);
    succeeds(&server).await;
    assert_signed_with(&server, "ASIAWEB", "web-session-token");

    // --- An assume-role chain in the shared config: role_arn + source_profile. ---
    std::fs::write(
        home.join("config"),
        format!(
            "[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/dev\nsource_profile = base\n\n\
             [profile base]\naws_access_key_id = AKIABASE\naws_secret_access_key = {BASE_SECRET}\n\n\
             [profile proc]\ncredential_process = {}\n\n\
             [profile sso]\nsso_start_url = {SSO_START_URL}\nsso_region = us-east-1\n\
             sso_account_id = 123456789012\nsso_role_name = Developer\n",
            home.join("process.sh").display()
        ),
    )
    .unwrap();
    set_environment(
        &home,
        &[
            ("AWS_PROFILE", "dev".into()),
            ("AWS_ENDPOINT_URL_STS", sts.url.clone()),
            // Ignored: a named profile wins over the environment's keys.
            ("AWS_ACCESS_KEY_ID", "AKIAIGNORED".into()),
            ("AWS_SECRET_ACCESS_KEY", "ignored".into()),
        ],
    );
    assert_eq!(env_key().as_deref(), AUTHENTICATED);
    succeeds(&server).await;
    assert_signed_with(&server, "ASIAROLE", "role-session-token");

    // --- credential_process. ---
    let script = home.join("process.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho '{{\"Version\": 1, \"AccessKeyId\": \"ASIAPROC\", \"SecretAccessKey\": \"{PROC_SECRET}\", \"SessionToken\": \"proc-session-token\", \"Expiration\": \"{}\"}}'\n",
            stand_ins::rfc3339_in(3600)
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    set_environment(&home, &[("AWS_PROFILE", "proc".into())]);
    assert_eq!(env_key().as_deref(), AUTHENTICATED);
    succeeds(&server).await;
    assert_signed_with(&server, "ASIAPROC", "proc-session-token");

    // --- SSO: the token `aws sso login` cached, exchanged at the SSO portal. ---
    let name = sha1_hex(SSO_START_URL);
    let cache = home.join(".aws/sso/cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(
        cache.join(format!("{name}.json")),
        json!({"accessToken": SSO_ACCESS_TOKEN, "expiresAt": stand_ins::rfc3339_in(3600),
               "region": "us-east-1", "startUrl": SSO_START_URL})
        .to_string(),
    )
    .unwrap();
    let portal = StandIn::start(|seen| {
        if seen.header("x-amz-sso_bearer_token") != Some(SSO_ACCESS_TOKEN) {
            return Some((401, "application/json", "{}".to_owned()));
        }
        assert!(
            seen.path.starts_with("/federation/credentials"),
            "{}",
            seen.path
        );
        assert!(seen.path.contains("role_name=Developer"), "{}", seen.path);
        assert!(
            seen.path.contains("account_id=123456789012"),
            "{}",
            seen.path
        );
        let expiration = (std::time::SystemTime::now() + Duration::from_secs(3600))
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        Some((
            200,
            "application/json",
            json!({"roleCredentials": {"accessKeyId": "ASIASSO", "secretAccessKey": SSO_SECRET,
                   "sessionToken": "sso-session-token", "expiration": expiration}})
            .to_string(),
        ))
    })
    .await;
    set_environment(
        &home,
        &[
            ("AWS_PROFILE", "sso".into()),
            ("AWS_ENDPOINT_URL_SSO", portal.url.clone()),
        ],
    );
    assert_eq!(env_key().as_deref(), AUTHENTICATED);
    succeeds(&server).await;
    assert_signed_with(&server, "ASIASSO", "sso-session-token");
    assert_eq!(portal.to("/federation/credentials").len(), 1);

    // --- SSO with a new-style `[sso-session]` section: its cached token (named after the
    // session) is about to expire, so it is refreshed at SSO OIDC first, written back to the
    // cache, and the new token is exchanged at the portal. The region comes from the profile
    // (no AWS_REGION): the SDK's profile region provider. ---
    let name = sha1_hex("corp");
    std::fs::write(
        cache.join(format!("{name}.json")),
        json!({"accessToken": SSO_OLD_TOKEN, "expiresAt": stand_ins::rfc3339_in(60),
               "refreshToken": SSO_REFRESH, "clientId": "pi-client",
               "clientSecret": SSO_CLIENT_SECRET,
               "registrationExpiresAt": stand_ins::rfc3339_in(86_400),
               "region": "us-east-1", "startUrl": SSO_START_URL})
        .to_string(),
    )
    .unwrap();
    let oidc = StandIn::start(|seen| {
        let body: Value = serde_json::from_str(&seen.body).unwrap_or_default();
        if seen.path != "/token"
            || body["grantType"] != "refresh_token"
            || body["refreshToken"] != SSO_REFRESH
            || body["clientSecret"] != SSO_CLIENT_SECRET
        {
            return Some((400, "application/json", "{}".to_owned()));
        }
        Some((
            200,
            "application/json",
            json!({"accessToken": SSO_NEW_TOKEN, "expiresIn": 3600, "tokenType": "Bearer"})
                .to_string(),
        ))
    })
    .await;
    let new_portal = StandIn::start(|seen| {
        if seen.header("x-amz-sso_bearer_token") != Some(SSO_NEW_TOKEN) {
            return Some((401, "application/json", "{}".to_owned()));
        }
        assert!(seen.path.contains("role_name=Reader"), "{}", seen.path);
        let expiration = (std::time::SystemTime::now() + Duration::from_secs(3600))
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        Some((
            200,
            "application/json",
            json!({"roleCredentials": {"accessKeyId": "ASIASSONEW", "secretAccessKey": SSO_SECRET,
                   "sessionToken": "sso-new-session-token", "expiration": expiration}})
            .to_string(),
        ))
    })
    .await;
    std::fs::write(
        home.join("config"),
        format!(
            "[profile sso-new]\nsso_session = corp\nsso_account_id = 123456789012\n\
             sso_role_name = Reader\nregion = eu-west-3\n\n\
             [sso-session corp]\nsso_start_url = {SSO_START_URL}\nsso_region = us-east-1\n\
             sso_registration_scopes = sso:account:access\n\n\
             [profile imds-region]\naws_access_key_id = AKIABASE\n\
             aws_secret_access_key = {BASE_SECRET}\n"
        ),
    )
    .unwrap();
    set_environment(
        &home,
        &[
            ("AWS_PROFILE", "sso-new".into()),
            ("AWS_REGION", String::new()),
            ("AWS_ENDPOINT_URL_SSO", new_portal.url.clone()),
            ("AWS_ENDPOINT_URL_SSO_OIDC", oidc.url.clone()),
        ],
    );
    assert_eq!(env_key().as_deref(), AUTHENTICATED);
    succeeds(&server).await;
    assert_signed_in(&server, "ASIASSONEW", "sso-new-session-token", "eu-west-3");
    assert_eq!(oidc.to("/token").len(), 1, "refreshed once");
    let cached = std::fs::read_to_string(cache.join(format!("{name}.json"))).unwrap();
    assert!(
        cached.contains(SSO_NEW_TOKEN),
        "the refreshed token is cached"
    );

    // --- Region from EC2 instance metadata: the profile names none, nor does AWS_REGION. ---
    let region_imds = StandIn::start(|seen| match (seen.method.as_str(), seen.path.as_str()) {
        ("PUT", "/latest/api/token") => Some((200, "text/plain", IMDS_TOKEN.to_owned())),
        ("GET", "/latest/meta-data/placement/region")
            if seen.header("x-aws-ec2-metadata-token") == Some(IMDS_TOKEN) =>
        {
            Some((200, "text/plain", "ap-southeast-2".to_owned()))
        }
        _ => Some((404, "text/plain", String::new())),
    })
    .await;
    set_environment(
        &home,
        &[
            ("AWS_PROFILE", "imds-region".into()),
            ("AWS_REGION", String::new()),
            ("AWS_EC2_METADATA_DISABLED", "false".into()),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", region_imds.url.clone()),
        ],
    );
    server.push(ok_reply());
    let message = ask(&server).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let request = server.requests().pop().unwrap();
    let authorization = request.header("authorization").unwrap();
    assert!(
        authorization.contains("Credential=AKIABASE/")
            && authorization.contains("/ap-southeast-2/bedrock/"),
        "{authorization}"
    );
    // Kept for the configuration: asked once.
    server.push(ok_reply());
    assert_eq!(ask(&server).await.stop_reason, StopReason::Stop);
    assert_eq!(
        region_imds.to("/latest/meta-data/placement/region").len(),
        1
    );
    // Neither gives one: "Region is missing", naming what was tried, within the bound.
    set_environment(
        &home,
        &[
            ("AWS_PROFILE", "imds-region".into()),
            ("AWS_REGION", String::new()),
            ("AWS_EC2_METADATA_DISABLED", "false".into()),
            (
                "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                black_hole_early.url.clone(),
            ),
        ],
    );
    let before = Instant::now();
    let message = ask(&server).await;
    assert!(
        before.elapsed() < Duration::from_secs(60),
        "{:?}",
        before.elapsed()
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.clone().unwrap();
    assert!(
        error.contains("Region is missing") && error.contains("EC2 instance metadata"),
        "{error}"
    );

    // --- Nothing configured, and an instance metadata endpoint that never answers: an auth
    // error naming every source, well within the bound. ---
    std::fs::remove_file(home.join("config")).unwrap();
    let black_hole = StandIn::start(|_| None).await;
    set_environment(
        &home,
        &[
            ("AWS_EC2_METADATA_DISABLED", "false".into()),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", black_hole.url.clone()),
        ],
    );
    // Nothing the chain could use without asking the network: no marker.
    assert_eq!(env_key(), None);
    // A named profile that is in no file, or a web-identity token file that does not exist,
    // is no credential either (pi reports both as `<authenticated>`).
    set_environment(&home, &[("AWS_PROFILE", "nowhere".into())]);
    assert_eq!(env_key(), None);
    set_environment(
        &home,
        &[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token".into()),
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/web".into()),
        ],
    );
    assert_eq!(env_key(), None);
    set_environment(
        &home,
        &[
            ("AWS_EC2_METADATA_DISABLED", "false".into()),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", black_hole.url.clone()),
        ],
    );
    let before = Instant::now();
    let requests_before = server.requests().len();
    let message = ask(&server).await;
    assert!(
        before.elapsed() < Duration::from_secs(60),
        "{:?}",
        before.elapsed()
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_kind, Some(ErrorKind::Auth), "{message:?}");
    let error = message.error_message.clone().unwrap();
    for source in [
        "environment",
        "profile `default`",
        "web identity",
        "ECS container endpoint",
        "EC2 instance metadata",
    ] {
        assert!(error.contains(source), "{source} missing from: {error}");
    }
    assert_eq!(
        server.requests().len(),
        requests_before,
        "nothing sent unsigned"
    );
    assert_no_secret(&error);

    // --- A configured source that fails stops the search with its error. ---
    set_environment(
        &home,
        &[
            (
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                token_file.display().to_string(),
            ),
            (
                "AWS_ROLE_ARN",
                "arn:aws:iam::123456789012:role/other".into(),
            ),
            ("AWS_ENDPOINT_URL_STS", black_hole.url.clone()),
        ],
    );
    let message = ask(&server).await;
    assert_eq!(message.error_kind, Some(ErrorKind::Auth), "{message:?}");
    let error = message.error_message.unwrap();
    assert!(error.contains("web identity"), "{error}");
    assert_no_secret(&error);

    // The logs say which source answered, and hold no secret.
    let logs: String = logs
        .lock()
        .unwrap()
        .iter()
        .map(|event| format!("{event}\n"))
        .collect();
    assert!(
        logs.contains("AWS credentials loaded source=ECS container endpoint"),
        "{logs}"
    );
    assert_no_secret(&logs);

    std::fs::remove_dir_all(&home).unwrap();
}
