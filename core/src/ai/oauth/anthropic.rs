//! Claude Pro/Max login (pi's `utils/oauth/anthropic.ts`): authorization code + PKCE (S256),
//! with the PKCE verifier doubling as `state`, the code arriving at a localhost callback or
//! pasted by the user, and a JSON token endpoint. Access tokens are stored as expiring five
//! minutes early.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::authorization::{CodeSources, receive_code};
use super::callback_server::{CallbackCheck, CallbackReply, CallbackServer};
use super::callbacks::{OAuthAuthInfo, OAuthLoginCallbacks, OAuthPrompt};
use super::credentials::{OAuthCredentials, expiry_after};
use super::error::OAuthError;
use super::http::{Fields, fetch_json, http};
use super::pkce::generate_pkce;
use super::provider::OAuthProvider;
use super::wait::{cancellable, deadline_after};
use crate::ai::types::now_ms;

/// How much earlier than the server says an access token is treated as expired.
const EXPIRY_MARGIN_MS: i64 = 5 * 60 * 1000;

/// Endpoints and limits of the Anthropic flow; [`Default`] is pi's.
#[derive(Clone, Debug)]
pub struct AnthropicOAuthConfig {
    /// The OAuth client id.
    pub client_id: String,
    /// The browser authorization page.
    pub authorize_url: String,
    /// The token endpoint (code exchange and refresh).
    pub token_url: String,
    /// The scopes asked for, space-separated.
    pub scopes: String,
    /// The localhost callback port; 0 picks a free one (the redirect URI follows it).
    pub callback_port: u16,
    /// The callback path.
    pub callback_path: String,
    /// The limit on each token request (pi: 30 s).
    pub request_timeout: Duration,
    /// How long the login waits for the browser or the user.
    pub login_timeout: Duration,
}

impl Default for AnthropicOAuthConfig {
    fn default() -> Self {
        Self {
            client_id: "9d1c250a-e61b-44d9-88ed-5944d1962f5e".into(),
            authorize_url: "https://claude.ai/oauth/authorize".into(),
            token_url: "https://platform.claude.com/v1/oauth/token".into(),
            scopes: "org:create_api_key user:profile user:inference user:sessions:claude_code \
                     user:mcp_servers user:file_upload"
                .into(),
            callback_port: 53692,
            callback_path: "/callback".into(),
            request_timeout: Duration::from_secs(30),
            login_timeout: Duration::from_secs(15 * 60),
        }
    }
}

/// The `anthropic` OAuth provider (Claude Pro/Max).
#[derive(Clone, Debug, Default)]
pub struct AnthropicOAuthProvider {
    config: AnthropicOAuthConfig,
}

impl AnthropicOAuthProvider {
    /// A provider with these endpoints and limits.
    pub fn new(config: AnthropicOAuthConfig) -> Self {
        Self { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &AnthropicOAuthConfig {
        &self.config
    }

    async fn run_login(
        &self,
        callbacks: &dyn OAuthLoginCallbacks,
        cancel: &CancellationToken,
    ) -> Result<OAuthCredentials, OAuthError> {
        let config = &self.config;
        let pkce = generate_pkce()?;
        // pi sends the verifier as `state`; the server echoes it back.
        let state = pkce.verifier.clone();
        let server = CallbackServer::bind(
            config.callback_port,
            &config.callback_path,
            callback_check(state.clone()),
        )
        .await?;
        let redirect_uri = format!("http://localhost:{}{}", server.port(), config.callback_path);
        let query = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("code", "true")
            .append_pair("client_id", &config.client_id)
            .append_pair("response_type", "code")
            .append_pair("redirect_uri", &redirect_uri)
            .append_pair("scope", &config.scopes)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .finish();
        callbacks.on_auth(OAuthAuthInfo {
            url: format!("{}?{query}", config.authorize_url),
            instructions: Some(
                "Complete login in your browser. If the browser is on another machine, paste \
                 the final redirect URL here."
                    .into(),
            ),
        });
        let input = receive_code(CodeSources {
            server: Some(server),
            callbacks,
            expected_state: &state,
            prompt: OAuthPrompt {
                message: "Paste the authorization code or full redirect URL:".into(),
                placeholder: Some(redirect_uri.clone()),
                allow_empty: None,
            },
            cancel,
            deadline: deadline_after(config.login_timeout),
        })
        .await?;
        let code = input.code.ok_or(OAuthError::MissingCode)?;
        let state = input.state.unwrap_or(state);
        callbacks.on_progress("Exchanging authorization code for tokens...");
        let body = json!({
            "grant_type": "authorization_code",
            "client_id": config.client_id,
            "code": code,
            "state": state,
            "redirect_uri": redirect_uri,
            "code_verifier": pkce.verifier,
        });
        cancellable(self.token_request(&body), cancel).await
    }

    /// POSTs `body` to the token endpoint and reads the token response.
    async fn token_request(&self, body: &Value) -> Result<OAuthCredentials, OAuthError> {
        let url = &self.config.token_url;
        let request = http()
            .post(url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .body(body.to_string());
        let json = fetch_json(request, url, self.config.request_timeout).await?;
        let mut fields = Fields::new(&json);
        let access = fields.string("access_token");
        let refresh = fields.string("refresh_token");
        let expires_in = fields.number("expires_in");
        fields.check(url)?;
        Ok(OAuthCredentials::new(
            access,
            refresh,
            expiry_after(now_ms(), expires_in, EXPIRY_MARGIN_MS),
        ))
    }
}

/// pi's checks, in pi's order: an `error` from the server, then a code and a state, then the
/// state's value. A rejected request leaves the login waiting.
fn callback_check(expected_state: String) -> Arc<CallbackCheck> {
    let reject =
        |message: &str, details: Option<&str>| CallbackReply::rejected(400, message, details);
    Arc::new(move |query| {
        if let Some(error) = query.get("error") {
            return reject(
                "Anthropic authentication did not complete.",
                Some(&format!("Error: {error}")),
            );
        }
        let (Some(code), Some(state)) = (
            query.get("code").filter(|c| !c.is_empty()),
            query.get("state").filter(|s| !s.is_empty()),
        ) else {
            return reject("Missing code or state parameter.", None);
        };
        if state != expected_state {
            return reject("State mismatch.", None);
        }
        CallbackReply::accepted(
            "Anthropic authentication completed. You can close this window.",
            code,
            state,
        )
    })
}

impl OAuthProvider for AnthropicOAuthProvider {
    fn id(&self) -> &str {
        "anthropic"
    }

    fn name(&self) -> &str {
        "Anthropic (Claude Pro/Max)"
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
            let body = json!({
                "grant_type": "refresh_token",
                "client_id": self.config.client_id,
                "refresh_token": credentials.refresh.expose(),
            });
            self.token_request(&body).await
        })
    }
}
