//! Vertex workload identity federation with AWS- and executable-sourced subject tokens, against
//! stand-ins on 127.0.0.1 for EC2 instance metadata (IMDSv2) and Google's STS:
//!
//! - `environment_id: aws1`: the region (availability zone) and role credentials come from
//!   instance metadata, or from `AWS_*` variables (then no metadata call); the subject token is
//!   the URL-encoded JSON of a SigV4-signed `GetCallerIdentity` request for the audience;
//! - `executable`: refused without `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1`; the program
//!   gets Google's variables; a valid `output_file` is used without running it, an expired one
//!   is not; a program that outlives `timeout_millis` is stopped with an `auth` error.
//!
//! Each success ends in a Vertex request (the mock server) with the federated token. No key,
//! token or subject token appears in an error. Credentials come from
//! [`GoogleVertexProvider::with_environment`], so this runs beside the other tests.

#[path = "support/aws_stand_ins.rs"]
#[allow(dead_code, unreachable_pub)]
mod stand_ins;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use pi_agent::ai::providers::GoogleVertexProvider;
use pi_agent::ai::{
    self, ApiProvider, AssistantMessage, Context, ErrorKind, Message, Model, StopReason,
    StreamOptions, UserMessage,
};
use pi_mock_server::MockServer;
use serde_json::{Value, json};
use stand_ins::StandIn;

const AUDIENCE: &str =
    "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/aws";
const IMDS_TOKEN: &str = "imds-session-SECRET-for-google";
const ROLE_SECRET: &str = "role/secret/KEY+1212121212121212121212";
const ROLE_SESSION: &str = "role-session-SECRET-token";
const ENV_SECRET: &str = "env/secret/KEY+3434343434343434343434";
const EXEC_TOKEN: &str = "eyJ.exec-SECRET-oidc.token";
const CACHED_TOKEN: &str = "eyJ.cached-SECRET-oidc.token";
const FEDERATED: &str = "ya29.federated-from-aws-SECRET";

const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/google/thinking_text_function_call.sse"
));

fn model(server: &MockServer) -> Model {
    let mut model = ai::get_model("google-vertex", "gemini-2.5-flash").expect("catalog model");
    model.base_url = format!("{}/", server.base_url());
    model
}

async fn ask(provider: &GoogleVertexProvider, server: &MockServer) -> AssistantMessage {
    let context = Context {
        messages: vec![Message::User(UserMessage::text("hi"))],
        ..Context::default()
    };
    let options = StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let mut stream = provider.stream(&model(server), &context, &options);
    while stream.next().await.is_some() {}
    stream.final_message().expect("a terminal event")
}

fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// What the STS stand-in saw as subject tokens, in order.
type Subjects = Arc<Mutex<Vec<(String, String)>>>;

/// Instance metadata and Google's STS on one stand-in.
async fn google_and_imds() -> (StandIn, Subjects) {
    let subjects: Subjects = Arc::default();
    let log = subjects.clone();
    let stand_in = StandIn::start(move |seen| {
        let token_ok = seen.header("x-aws-ec2-metadata-token") == Some(IMDS_TOKEN);
        match (seen.method.as_str(), seen.path.as_str()) {
            ("PUT", "/latest/api/token") => {
                assert_eq!(
                    seen.header("x-aws-ec2-metadata-token-ttl-seconds"),
                    Some("300")
                );
                Some((200, "text/plain", IMDS_TOKEN.to_owned()))
            }
            ("GET", path) if path.starts_with("/latest/") && !token_ok => {
                Some((401, "text/plain", String::new()))
            }
            ("GET", "/latest/meta-data/placement/availability-zone") => {
                Some((200, "text/plain", "us-east-2b".to_owned()))
            }
            ("GET", "/latest/meta-data/iam/security-credentials") => {
                Some((200, "text/plain", "federated-role".to_owned()))
            }
            ("GET", "/latest/meta-data/iam/security-credentials/federated-role") => Some((
                200,
                "application/json",
                stand_ins::json_credentials("ASIAFORGOOGLE", ROLE_SECRET, ROLE_SESSION, 3600),
            )),
            ("POST", "/sts") => {
                let form: Vec<(String, String)> = url::form_urlencoded::parse(seen.body.as_bytes())
                    .into_owned()
                    .collect();
                let get = |k: &str| {
                    form.iter()
                        .find(|(n, _)| n == k)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default()
                };
                assert_eq!(get("audience"), AUDIENCE);
                log.lock()
                    .unwrap()
                    .push((get("subject_token_type"), get("subject_token")));
                Some((
                    200,
                    "application/json",
                    json!({"access_token": FEDERATED, "expires_in": 3600,
                           "token_type": "Bearer"})
                    .to_string(),
                ))
            }
            _ => Some((404, "text/plain", String::new())),
        }
    })
    .await;
    (stand_in, subjects)
}

/// A credentials file of its own (the token cache is per credential file content).
fn credentials_file(dir: &Path, name: &str, source: Value, token_type: &str, sts: &str) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(
        &path,
        json!({"type": "external_account", "audience": AUDIENCE,
               "subject_token_type": token_type, "token_url": sts,
               "credential_source": source})
        .to_string(),
    )
    .unwrap();
    path
}

fn provider(file: &Path, extra: &[(&str, &str)]) -> GoogleVertexProvider {
    let mut vars = vec![
        ("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string()),
        ("GOOGLE_CLOUD_PROJECT", "pi-project".to_owned()),
        ("GOOGLE_CLOUD_LOCATION", "us-central1".to_owned()),
    ];
    vars.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    GoogleVertexProvider::with_environment(vars)
}

fn assert_no_secret(text: &str) {
    for secret in [
        IMDS_TOKEN,
        ROLE_SECRET,
        ROLE_SESSION,
        ENV_SECRET,
        EXEC_TOKEN,
        CACHED_TOKEN,
        FEDERATED,
    ] {
        assert!(!text.contains(secret), "{secret} leaked in {text}");
    }
}

/// The signed request a subject token describes, checked field by field.
fn assert_signed_caller_identity(subject: &str, key_id: &str, region: &str, session: &str) {
    let request: Value = serde_json::from_str(&percent_decode(subject)).expect("JSON");
    assert_eq!(request["method"], "POST");
    assert_eq!(
        request["url"],
        format!("https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15")
    );
    let header = |name: &str| -> String {
        request["headers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["key"].as_str().unwrap().eq_ignore_ascii_case(name))
            .and_then(|h| h["value"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(header("x-goog-cloud-target-resource"), AUDIENCE);
    assert_eq!(header("host"), format!("sts.{region}.amazonaws.com"));
    assert_eq!(header("x-amz-date").len(), 16, "{request}");
    let authorization = header("Authorization");
    assert!(
        authorization.starts_with(&format!("AWS4-HMAC-SHA256 Credential={key_id}/")),
        "{authorization}"
    );
    assert!(
        authorization.contains(&format!("/{region}/sts/aws4_request")),
        "{authorization}"
    );
    assert!(
        authorization.contains("x-goog-cloud-target-resource"),
        "signed: {authorization}"
    );
    assert_eq!(header("x-amz-security-token"), session);
}

#[tokio::test]
async fn aws_sourced_subject_tokens_sign_get_caller_identity() {
    let (google, subjects) = google_and_imds().await;
    let server = MockServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("pi-vertex-aws-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sts = format!("{}/sts", google.url);
    let source = json!({
        "environment_id": "aws1",
        "region_url": format!("{}/latest/meta-data/placement/availability-zone", google.url),
        "url": format!("{}/latest/meta-data/iam/security-credentials", google.url),
        "regional_cred_verification_url":
            "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15",
        "imdsv2_session_token_url": format!("{}/latest/api/token", google.url),
    });
    let aws_type = "urn:ietf:params:aws:token-type:aws4_request";

    // On EC2: region and role credentials from instance metadata (IMDSv2).
    let file = credentials_file(&dir, "imds", source.clone(), aws_type, &sts);
    server.push(json!({"sse": FIXTURE.split_inclusive("\r\n\r\n").collect::<Vec<_>>()}));
    let message = ask(&provider(&file, &[]), &server).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {FEDERATED}").as_str())
    );
    let (token_type, subject) = subjects.lock().unwrap().pop().unwrap();
    assert_eq!(token_type, aws_type);
    assert_signed_caller_identity(&subject, "ASIAFORGOOGLE", "us-east-2", ROLE_SESSION);
    assert_eq!(google.to("/latest/api/token").len(), 1);

    // AWS_* variables: no metadata call at all.
    let metadata_calls = google.to("/latest/").len();
    let mut from_env = source.clone();
    from_env["region_url"] = json!("http://127.0.0.1:9/unused");
    let file = credentials_file(&dir, "env", from_env, aws_type, &sts);
    server.reset();
    server.push(json!({"sse": FIXTURE.split_inclusive("\r\n\r\n").collect::<Vec<_>>()}));
    let env_provider = provider(
        &file,
        &[
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKIAFROMENV"),
            ("AWS_SECRET_ACCESS_KEY", ENV_SECRET),
        ],
    );
    let message = ask(&env_provider, &server).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let (_, subject) = subjects.lock().unwrap().pop().unwrap();
    assert_signed_caller_identity(&subject, "AKIAFROMENV", "eu-west-1", "");
    assert_eq!(google.to("/latest/").len(), metadata_calls);

    // The same file with another tenant's AWS keys: a token of its own, not the first one's.
    server.push(json!({"sse": FIXTURE.split_inclusive("\r\n\r\n").collect::<Vec<_>>()}));
    let other_tenant = provider(
        &file,
        &[
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKIATENANTB"),
            ("AWS_SECRET_ACCESS_KEY", ENV_SECRET),
        ],
    );
    let message = ask(&other_tenant, &server).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let (_, subject) = subjects
        .lock()
        .unwrap()
        .pop()
        .expect("a token exchange of its own");
    assert_signed_caller_identity(&subject, "AKIATENANTB", "eu-west-1", "");

    // Metadata that never answers: an auth error within the bound, naming the call.
    let black_hole = StandIn::start(|_| None).await;
    let mut dead = source.clone();
    dead["imdsv2_session_token_url"] = json!(format!("{}/latest/api/token", black_hole.url));
    let file = credentials_file(&dir, "dead", dead, aws_type, &sts);
    let before = Instant::now();
    let message = ask(&provider(&file, &[]), &server).await;
    assert!(before.elapsed() < Duration::from_secs(60));
    assert_eq!(message.error_kind, Some(ErrorKind::Auth), "{message:?}");
    let error = message.error_message.unwrap();
    assert!(error.contains("metadata session token"), "{error}");
    assert_no_secret(&error);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn executable(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    path
}

fn response(token: &str, expires_in: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    json!({"version": 1, "success": true,
           "token_type": "urn:ietf:params:oauth:token-type:jwt",
           "id_token": token, "expiration_time": now + expires_in})
    .to_string()
}

#[tokio::test]
async fn executable_sourced_subject_tokens_run_the_program_with_bounds() {
    let (google, subjects) = google_and_imds().await;
    let server = MockServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("pi-vertex-exec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sts = format!("{}/sts", google.url);
    let jwt = "urn:ietf:params:oauth:token-type:jwt";
    let allow = [("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "1")];
    let ran = dir.join("ran");
    // Checks Google's variables, counts its runs, prints the response.
    let program = executable(
        &dir,
        "token.sh",
        &format!(
            "[ \"$GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE\" = \"{AUDIENCE}\" ] || exit 3\n\
             [ \"$GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE\" = \"{jwt}\" ] || exit 4\n\
             [ \"$GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE\" = 0 ] || exit 5\n\
             echo run >> {}\n\
             echo '{}'",
            ran.display(),
            response(EXEC_TOKEN, 3600)
        ),
    );
    let source = json!({"executable": {"command": format!("{} --flag", program.display()),
                                       "timeout_millis": 10000}});
    let file = credentials_file(&dir, "exec", source, jwt, &sts);

    // Not allowed: an auth error naming the variable; nothing ran.
    let message = ask(&provider(&file, &[]), &server).await;
    assert_eq!(message.error_kind, Some(ErrorKind::Auth), "{message:?}");
    let error = message.error_message.unwrap();
    assert!(
        error.contains("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1"),
        "{error}"
    );
    assert!(!ran.exists());

    // Allowed: its token is exchanged at STS.
    server.push(json!({"sse": FIXTURE.split_inclusive("\r\n\r\n").collect::<Vec<_>>()}));
    let message = ask(&provider(&file, &allow), &server).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(
        subjects.lock().unwrap().pop().unwrap(),
        (jwt.to_owned(), EXEC_TOKEN.to_owned())
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap().lines().count(), 1);

    // A valid response in the output file: used, the program does not run.
    let output = dir.join("output.json");
    std::fs::write(&output, response(CACHED_TOKEN, 3600)).unwrap();
    let source = json!({"executable": {"command": program.display().to_string(),
                                       "output_file": output.display().to_string()}});
    let file = credentials_file(&dir, "cached", source.clone(), jwt, &sts);
    server.reset();
    server.push(json!({"sse": FIXTURE.split_inclusive("\r\n\r\n").collect::<Vec<_>>()}));
    let message = ask(&provider(&file, &allow), &server).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(subjects.lock().unwrap().pop().unwrap().1, CACHED_TOKEN);
    assert_eq!(std::fs::read_to_string(&ran).unwrap().lines().count(), 1);

    // An expired one is not: the program runs.
    std::fs::write(&output, response(CACHED_TOKEN, -10)).unwrap();
    let mut expired = source;
    expired["executable"]["timeout_millis"] = json!(20000);
    let file = credentials_file(&dir, "expired", expired, jwt, &sts);
    server.reset();
    server.push(json!({"sse": FIXTURE.split_inclusive("\r\n\r\n").collect::<Vec<_>>()}));
    let message = ask(&provider(&file, &allow), &server).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(subjects.lock().unwrap().pop().unwrap().1, EXEC_TOKEN);
    assert_eq!(std::fs::read_to_string(&ran).unwrap().lines().count(), 2);

    // A failure it reports, and one that never ends: auth errors, the second within its bound.
    let failing = executable(
        &dir,
        "fail.sh",
        r#"echo '{"version": 1, "success": false, "code": "401", "message": "caller not authorized"}'"#,
    );
    let file = credentials_file(
        &dir,
        "failing",
        json!({"executable": {"command": failing.display().to_string()}}),
        jwt,
        &sts,
    );
    let message = ask(&provider(&file, &allow), &server).await;
    assert_eq!(message.error_kind, Some(ErrorKind::Auth), "{message:?}");
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .contains("caller not authorized"),
        "{message:?}"
    );
    let hanging = executable(&dir, "hang.sh", "exec sleep 300");
    let file = credentials_file(
        &dir,
        "hanging",
        json!({"executable": {"command": hanging.display().to_string(), "timeout_millis": 5000}}),
        jwt,
        &sts,
    );
    let before = Instant::now();
    let message = ask(&provider(&file, &allow), &server).await;
    assert!(
        before.elapsed() < Duration::from_secs(60),
        "{:?}",
        before.elapsed()
    );
    assert_eq!(message.error_kind, Some(ErrorKind::Auth), "{message:?}");
    let error = message.error_message.unwrap();
    assert!(error.contains("did not finish within 5000 ms"), "{error}");
    assert_no_secret(&error);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_subject_token_larger_than_a_mebibyte_is_refused_not_sent() {
    // A misconfigured source (a URL or a file that is not a token) is read only up to 1 MiB:
    // past it, an auth error, and Google's STS never sees it.
    let (google, subjects) = google_and_imds().await;
    let big = StandIn::start(|_| Some((200, "text/plain", "x".repeat(2 << 20)))).await;
    let server = MockServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("pi-vertex-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sts = format!("{}/sts", google.url);
    let jwt = "urn:ietf:params:oauth:token-type:jwt";
    let big_file = dir.join("token.txt");
    std::fs::write(&big_file, "y".repeat(2 << 20)).unwrap();
    for (name, source) in [
        ("url", json!({"url": format!("{}/token", big.url)})),
        ("file", json!({"file": big_file.display().to_string()})),
    ] {
        let file = credentials_file(&dir, name, source, jwt, &sts);
        let message = ask(&provider(&file, &[]), &server).await;
        assert_eq!(
            message.error_kind,
            Some(ErrorKind::Auth),
            "{name}: {message:?}"
        );
        let error = message.error_message.unwrap();
        assert!(error.contains("larger than 1 MiB"), "{name}: {error}");
    }
    assert!(subjects.lock().unwrap().is_empty(), "nothing reached STS");
    assert!(server.requests().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
