//! ChatGPT Plus/Pro login for Codex (pi's `utils/oauth/openai-codex.ts`): authorization code +
//! PKCE (S256) with a random hex `state`, the code arriving at a localhost callback (or pasted
//! when that port is taken), a form-encoded token endpoint, and the ChatGPT account id read
//! from the access token's `https://api.openai.com/auth` claim.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::authorization::{CodeSources, receive_code};
use super::callback_server::{CallbackCheck, CallbackReply, CallbackServer};
use super::callbacks::{OAuthAuthInfo, OAuthLoginCallbacks, OAuthPrompt};
use super::credentials::{OAuthCredentials, expiry_after};
use super::error::OAuthError;
use super::http::{Fields, fetch_json, http, invalid};
use super::pkce::{generate_pkce, random_state};
use super::provider::OAuthProvider;
use super::wait::{cancellable, deadline_after};
use crate::ai::types::now_ms;

/// The JWT claim that holds the ChatGPT account.
const JWT_CLAIM_PATH: &str = "https://api.openai.com/auth";

/// Endpoints and limits of the OpenAI Codex flow; [`Default`] is pi's.
#[derive(Clone, Debug)]
pub struct OpenAICodexOAuthConfig {
    /// The OAuth client id.
    pub client_id: String,
    /// The browser authorization page.
    pub authorize_url: String,
    /// The token endpoint (code exchange and refresh).
    pub token_url: String,
    /// The scopes asked for, space-separated.
    pub scope: String,
    /// The `originator` parameter of the authorization URL.
    pub originator: String,
    /// The localhost callback port; 0 picks a free one (the redirect URI follows it).
    pub callback_port: u16,
    /// The callback path.
    pub callback_path: String,
    /// The limit on each token request.
    pub request_timeout: Duration,
    /// How long the login waits for the browser or the user.
    pub login_timeout: Duration,
}

impl Default for OpenAICodexOAuthConfig {
    fn default() -> Self {
        Self {
            client_id: "app_EMoamEEZ73f0CkXaXp7hrann".into(),
            authorize_url: "https://auth.openai.com/oauth/authorize".into(),
            token_url: "https://auth.openai.com/oauth/token".into(),
            scope: "openid profile email offline_access".into(),
            originator: "pi".into(),
            callback_port: 1455,
            callback_path: "/auth/callback".into(),
            request_timeout: Duration::from_secs(30),
            login_timeout: Duration::from_secs(15 * 60),
        }
    }
}

/// The `openai-codex` OAuth provider (ChatGPT Plus/Pro subscription).
#[derive(Clone, Debug, Default)]
pub struct OpenAICodexOAuthProvider {
    config: OpenAICodexOAuthConfig,
}

impl OpenAICodexOAuthProvider {
    /// A provider with these endpoints and limits.
    pub fn new(config: OpenAICodexOAuthConfig) -> Self {
        Self { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &OpenAICodexOAuthConfig {
        &self.config
    }

    async fn run_login(
        &self,
        callbacks: &dyn OAuthLoginCallbacks,
        cancel: &CancellationToken,
    ) -> Result<OAuthCredentials, OAuthError> {
        let config = &self.config;
        let pkce = generate_pkce()?;
        let state = random_state()?;
        // pi carries on without the server when the port is taken: the user pastes the code.
        let server = CallbackServer::bind(
            config.callback_port,
            &config.callback_path,
            callback_check(state.clone()),
        )
        .await
        .ok();
        let port = server
            .as_ref()
            .map_or(config.callback_port, CallbackServer::port);
        let redirect_uri = format!("http://localhost:{port}{}", config.callback_path);
        let mut url = url::Url::parse(&config.authorize_url)
            .map_err(|err| invalid(&config.authorize_url, format!("not a valid URL: {err}")))?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &config.client_id)
            .append_pair("redirect_uri", &redirect_uri)
            .append_pair("scope", &config.scope)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .append_pair("id_token_add_organizations", "true")
            .append_pair("codex_cli_simplified_flow", "true")
            .append_pair("originator", &config.originator);
        callbacks.on_auth(OAuthAuthInfo {
            url: url.into(),
            instructions: Some("A browser window should open. Complete login to finish.".into()),
        });
        let input = receive_code(CodeSources {
            server,
            callbacks,
            expected_state: &state,
            prompt: OAuthPrompt {
                message: "Paste the authorization code (or full redirect URL):".into(),
                placeholder: None,
                allow_empty: None,
            },
            cancel,
            deadline: deadline_after(config.login_timeout),
        })
        .await?;
        let code = input.code.ok_or(OAuthError::MissingCode)?;
        let form = [
            ("grant_type", "authorization_code"),
            ("client_id", config.client_id.as_str()),
            ("code", code.as_str()),
            ("code_verifier", pkce.verifier.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
        ];
        cancellable(self.token_request(&form), cancel).await
    }

    /// POSTs `form` to the token endpoint and reads the token response and account id.
    async fn token_request(&self, form: &[(&str, &str)]) -> Result<OAuthCredentials, OAuthError> {
        let url = &self.config.token_url;
        let json = fetch_json(
            http().post(url).form(form),
            url,
            self.config.request_timeout,
        )
        .await?;
        let mut fields = Fields::new(&json);
        let access = fields.non_empty_string("access_token");
        let refresh = fields.non_empty_string("refresh_token");
        let expires_in = fields.number("expires_in");
        fields.check(url)?;
        let account_id = account_id(access).ok_or(OAuthError::MissingAccountId)?;
        // Unlike Anthropic and Copilot, pi keeps Codex's expiry without a margin.
        let mut credentials =
            OAuthCredentials::new(access, refresh, expiry_after(now_ms(), expires_in, 0));
        credentials
            .extra
            .insert("accountId".into(), Value::String(account_id));
        Ok(credentials)
    }
}

/// pi's checks, in pi's order: the state first, then a code. A rejected request leaves the
/// login waiting.
fn callback_check(expected_state: String) -> Arc<CallbackCheck> {
    Arc::new(move |query| {
        let reject = |message: &str| CallbackReply::rejected(400, message, None);
        if query.get("state") != Some(expected_state.as_str()) {
            return reject("State mismatch.");
        }
        let Some(code) = query.get("code").filter(|c| !c.is_empty()) else {
            return reject("Missing authorization code.");
        };
        CallbackReply::accepted(
            "OpenAI authentication completed. You can close this window.",
            code,
            &expected_state,
        )
    })
}

/// The ChatGPT account id in an access token (a JWT), if it has one.
pub fn account_id(access_token: &str) -> Option<String> {
    let payload = jwt_payload(access_token)?;
    let id = payload
        .get(JWT_CLAIM_PATH)?
        .get("chatgpt_account_id")?
        .as_str()?;
    (!id.is_empty()).then(|| id.to_owned())
}

/// The JSON payload of a JWT, unverified (only the account id is read from it). Accepts
/// base64url, as JWTs are written, and standard base64, padded or not.
fn jwt_payload(token: &str) -> Option<Value> {
    const LENIENT: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
    let mut parts = token.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let bytes = URL_SAFE
        .decode(payload)
        .or_else(|_| STANDARD.decode(payload))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

impl OAuthProvider for OpenAICodexOAuthProvider {
    fn id(&self) -> &str {
        "openai-codex"
    }

    fn name(&self) -> &str {
        "ChatGPT Plus/Pro (Codex Subscription)"
    }

    fn uses_callback_server(&self) -> bool {
        true
    }

    fn login<'a>(
        &'a self,
        callbacks: &'a dyn OAuthLoginCallbacks,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<OAuthCredentials, OAuthError>> {
        Box::pin(async move { self.run_login(callbacks, &cancel).await })
    }

    fn refresh_token<'a>(
        &'a self,
        credentials: &'a OAuthCredentials,
    ) -> BoxFuture<'a, Result<OAuthCredentials, OAuthError>> {
        Box::pin(async move {
            let form = [
                ("grant_type", "refresh_token"),
                ("refresh_token", credentials.refresh.expose()),
                ("client_id", self.config.client_id.as_str()),
            ];
            self.token_request(&form).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{self, URL_SAFE_NO_PAD};

    fn jwt(payload: &Value) -> String {
        format!(
            "eyJhbGciOiJub25lIn0.{}.sig",
            URL_SAFE_NO_PAD.encode(payload.to_string())
        )
    }

    #[test]
    fn account_id_comes_from_the_auth_claim() {
        let token = jwt(&serde_json::json!({
            "https://api.openai.com/auth": {"chatgpt_account_id": "acc-123"}
        }));
        assert_eq!(account_id(&token).as_deref(), Some("acc-123"));
        let padded = format!(
            "h.{}.s",
            general_purpose::STANDARD.encode(
                serde_json::json!({"https://api.openai.com/auth": {"chatgpt_account_id": "x"}})
                    .to_string()
            )
        );
        assert_eq!(account_id(&padded).as_deref(), Some("x"));
    }

    #[test]
    fn tokens_without_an_account_have_none() {
        assert_eq!(account_id("not-a-jwt"), None);
        assert_eq!(account_id("a.b.c.d"), None);
        assert_eq!(account_id(&jwt(&serde_json::json!({"sub": "u"}))), None);
        assert_eq!(
            account_id(&jwt(&serde_json::json!({
                "https://api.openai.com/auth": {"chatgpt_account_id": ""}
            }))),
            None
        );
    }
}
