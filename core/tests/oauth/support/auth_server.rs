//! The mock authorization server: Anthropic's and OpenAI's authorize + token endpoints (with
//! real PKCE checks), GitHub's device-flow endpoints, the Copilot token endpoint and the
//! Copilot model-policy endpoint, all under one 127.0.0.1 base URL.
//!
//! Routes:
//! - `GET  /{anthropic,codex}/authorize` → 302 to the redirect URI with a fresh code
//! - `POST /anthropic/token` (JSON), `POST /codex/token` (form)
//! - `POST /gh/{domain}/login/device/code`, `POST /gh/{domain}/login/oauth/access_token`
//! - `GET  /ghapi/{domain}/copilot_internal/v2/token`
//! - `POST /copilot/models/{id}/policy`

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::http_server::{HttpServer, Request, Response};

pub(crate) const ANTHROPIC_CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
pub(crate) const CODEX_CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
pub(crate) const COPILOT_CLIENT_ID: &str = "Iv1.b507a08c87ecfe98";

/// What an authorize request asked for, kept until its code is exchanged.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    pub(crate) client_id: String,
    pub(crate) challenge: String,
    pub(crate) challenge_method: String,
    pub(crate) redirect_uri: String,
    pub(crate) state: String,
}

/// Everything the mock remembers and every knob a test turns.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) requests: Vec<Request>,
    pub(crate) grants: BTreeMap<String, Grant>,
    pub(crate) valid_refresh_tokens: HashSet<String>,
    pub(crate) issued: u32,
    /// Codex: the account put in issued access tokens (`None`: tokens without the claim).
    pub(crate) codex_account: Option<String>,
    /// Device flow: the answers to successive polls; `authorization_pending` once empty.
    pub(crate) device_script: VecDeque<Value>,
    /// Device flow: the `expires_in` of new device codes.
    pub(crate) device_expires_in: u64,
    pub(crate) valid_github_tokens: HashSet<String>,
    pub(crate) policy_models: Vec<String>,
    /// The `expires_in` of issued tokens (`None`: 3600).
    pub(crate) token_expires_in: Option<f64>,
}

pub(crate) struct AuthServer {
    pub(crate) base_url: String,
    state: Arc<Mutex<State>>,
    polls: watch::Receiver<usize>,
    _http: HttpServer,
}

impl AuthServer {
    pub(crate) async fn start() -> Self {
        let state = Arc::new(Mutex::new(State {
            codex_account: Some("acc-test".into()),
            device_expires_in: 900_000,
            ..State::default()
        }));
        let (polls_tx, polls) = watch::channel(0);
        let handler_state = Arc::clone(&state);
        let http = HttpServer::start(Arc::new(move |request: Request| {
            let mut state = handler_state.lock().unwrap();
            state.requests.push(request.clone());
            let response = route(&mut state, &request);
            if request.path.ends_with("/login/oauth/access_token") {
                polls_tx.send_modify(|n| *n += 1);
            }
            response
        }))
        .await;
        Self {
            base_url: http.base_url.clone(),
            state,
            polls,
            _http: http,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }

    /// The recorded requests to `path`.
    pub(crate) fn requests_to(&self, path: &str) -> Vec<Request> {
        self.with(|s| {
            s.requests
                .iter()
                .filter(|r| r.path == path)
                .cloned()
                .collect()
        })
    }

    /// Waits until the device flow has been polled `count` times.
    pub(crate) async fn wait_for_polls(&self, count: usize) {
        let mut polls = self.polls.clone();
        polls.wait_for(|n| *n >= count).await.unwrap();
    }
}

fn route(state: &mut State, request: &Request) -> Response {
    let path = request.path.as_str();
    match (request.method.as_str(), path) {
        ("GET", "/anthropic/authorize" | "/codex/authorize") => authorize(state, request),
        ("POST", "/anthropic/token") => {
            let body = request.json();
            let field = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
            token(state, "anthropic", &field)
        }
        ("POST", "/codex/token") => {
            let field = |k: &str| request.form_value(k);
            token(state, "codex", &field)
        }
        ("GET", _)
            if path.starts_with("/ghapi/") && path.ends_with("/copilot_internal/v2/token") =>
        {
            copilot_token(state, request)
        }
        ("POST", _) if path.starts_with("/gh/") && path.ends_with("/login/device/code") => {
            let domain = path
                .trim_start_matches("/gh/")
                .trim_end_matches("/login/device/code");
            if request.form_value("client_id").as_deref() != Some(COPILOT_CLIENT_ID) {
                return Response::json(400, json!({"error": "unknown client"}));
            }
            Response::json(
                200,
                json!({
                    "device_code": "device-code-1",
                    "user_code": "ABCD-1234",
                    "verification_uri": format!("https://{domain}/login/device"),
                    "interval": 5,
                    "expires_in": state.device_expires_in,
                }),
            )
        }
        ("POST", _) if path.starts_with("/gh/") && path.ends_with("/login/oauth/access_token") => {
            let ok = request.form_value("client_id").as_deref() == Some(COPILOT_CLIENT_ID)
                && request.form_value("device_code").as_deref() == Some("device-code-1")
                && request.form_value("grant_type").as_deref()
                    == Some("urn:ietf:params:oauth:grant-type:device_code");
            if !ok {
                return Response::json(200, json!({"error": "incorrect_device_code"}));
            }
            let answer = state
                .device_script
                .pop_front()
                .unwrap_or_else(|| json!({"error": "authorization_pending"}));
            if let Some(token) = answer.get("access_token").and_then(Value::as_str) {
                state.valid_github_tokens.insert(token.to_owned());
            }
            Response::json(200, answer)
        }
        ("POST", _) if path.starts_with("/copilot/models/") && path.ends_with("/policy") => {
            let id = path
                .trim_start_matches("/copilot/models/")
                .trim_end_matches("/policy");
            state.policy_models.push(id.to_owned());
            Response::json(200, json!({"state": "enabled"}))
        }
        _ => Response::json(404, json!({"message": "Not Found"})),
    }
}

fn authorize(state: &mut State, request: &Request) -> Response {
    let q = |name: &str| request.query(name).unwrap_or_default().to_owned();
    state.issued += 1;
    let code = format!("code-{}", state.issued);
    let redirect_uri = q("redirect_uri");
    let grant = Grant {
        client_id: q("client_id"),
        challenge: q("code_challenge"),
        challenge_method: q("code_challenge_method"),
        redirect_uri: redirect_uri.clone(),
        state: q("state"),
    };
    let location = format!(
        "{redirect_uri}?{}",
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("code", &code)
            .append_pair("state", &grant.state)
            .finish()
    );
    state.grants.insert(code, grant);
    Response::redirect(&location)
}

fn invalid_grant(description: &str) -> Response {
    Response::json(
        400,
        json!({"error": "invalid_grant", "error_description": description}),
    )
}

/// Both token endpoints: code exchange with PKCE and (for Anthropic) state checks, and
/// refresh with rotation (a used refresh token stops working).
fn token(state: &mut State, flavour: &str, field: &dyn Fn(&str) -> Option<String>) -> Response {
    let client_id = if flavour == "anthropic" {
        ANTHROPIC_CLIENT_ID
    } else {
        CODEX_CLIENT_ID
    };
    if field("client_id").as_deref() != Some(client_id) {
        return Response::json(401, json!({"error": "invalid_client"}));
    }
    match field("grant_type").as_deref() {
        Some("authorization_code") => {
            let code = field("code").unwrap_or_default();
            let Some(grant) = state.grants.remove(&code) else {
                return invalid_grant("unknown or used code");
            };
            let verifier = field("code_verifier").unwrap_or_default();
            let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
            if grant.challenge_method != "S256" || challenge != grant.challenge {
                return invalid_grant("PKCE verification failed");
            }
            if field("redirect_uri").as_deref() != Some(grant.redirect_uri.as_str()) {
                return invalid_grant("redirect_uri mismatch");
            }
            if grant.client_id != client_id {
                return invalid_grant("client mismatch");
            }
            if flavour == "anthropic" && field("state").as_deref() != Some(grant.state.as_str()) {
                return invalid_grant("state mismatch");
            }
        }
        Some("refresh_token") => {
            let refresh = field("refresh_token").unwrap_or_default();
            if !state.valid_refresh_tokens.remove(&refresh) {
                return invalid_grant("Refresh token not found or invalid");
            }
        }
        _ => return Response::json(400, json!({"error": "unsupported_grant_type"})),
    }
    state.issued += 1;
    let n = state.issued;
    let refresh = format!("{flavour}-refresh-{n}");
    state.valid_refresh_tokens.insert(refresh.clone());
    let access = if flavour == "codex" {
        codex_access_token(state.codex_account.as_deref(), n)
    } else {
        format!("{flavour}-access-{n}")
    };
    Response::json(
        200,
        json!({"access_token": access, "refresh_token": refresh,
               "expires_in": state.token_expires_in.unwrap_or(3600.0), "token_type": "Bearer"}),
    )
}

/// An unsigned JWT like OpenAI's, with the ChatGPT account claim when `account` is set.
pub(crate) fn codex_access_token(account: Option<&str>, n: u32) -> String {
    let mut payload = json!({"sub": format!("user-{n}"), "exp": 4_000_000_000_u64});
    if let Some(account) = account {
        payload["https://api.openai.com/auth"] = json!({"chatgpt_account_id": account});
    }
    format!(
        "{}.{}.signature-{n}",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(payload.to_string())
    )
}

fn copilot_token(state: &mut State, request: &Request) -> Response {
    let bearer = request
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !state.valid_github_tokens.contains(bearer) {
        return Response::json(
            401,
            json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}),
        );
    }
    state.issued += 1;
    let domain = request
        .path
        .trim_start_matches("/ghapi/")
        .trim_end_matches("/copilot_internal/v2/token");
    let proxy = if domain == "github.com" {
        "proxy.individual.githubcopilot.com".to_owned()
    } else {
        format!("proxy.enterprise.{domain}")
    };
    Response::json(
        200,
        json!({
            "token": format!("tid=copilot-{};exp=1;sku=x;proxy-ep={proxy};", state.issued),
            "expires_at": 2_000_000_000_u64,
            "refresh_in": 1500,
        }),
    )
}
