//! OAuth logins for subscription plans (pi's `@mariozechner/pi-ai/oauth`): Claude Pro/Max
//! (`anthropic`), GitHub Copilot (`github-copilot`) and ChatGPT Plus/Pro (`openai-codex`).
//!
//! A login runs once, interactively: the host implements [`OAuthLoginCallbacks`] (show a URL,
//! answer a prompt, optionally accept a pasted code) and calls
//! [`OAuthProvider::login`]; the returned [`OAuthCredentials`] are what it stores, e.g. in a
//! pi-style `auth.json` with [`write_auth_file`]. Before each request the host calls
//! [`get_oauth_api_key`], which refreshes expired credentials and returns the API key to put in
//! [`StreamOptions::api_key`](crate::ai::StreamOptions::api_key), plus the credentials to store
//! back. [`OAuthProvider::modify_models`] adjusts models for an account (Copilot's API host).
//!
//! ```no_run
//! use std::collections::BTreeMap;
//! use futures::future::BoxFuture;
//! use pi_agent::ai::oauth::{self, OAuthAuthInfo, OAuthError, OAuthLoginCallbacks, OAuthPrompt};
//! use tokio_util::sync::CancellationToken;
//!
//! struct Terminal;
//! impl OAuthLoginCallbacks for Terminal {
//!     fn on_auth(&self, info: OAuthAuthInfo) {
//!         println!("Open {}\n{}", info.url, info.instructions.unwrap_or_default());
//!     }
//!     fn on_prompt(&self, prompt: OAuthPrompt) -> BoxFuture<'_, Result<String, OAuthError>> {
//!         Box::pin(async move {
//!             println!("{}", prompt.message);
//!             let mut line = String::new();
//!             std::io::stdin().read_line(&mut line).map_err(|e| OAuthError::callback(e.to_string()))?;
//!             Ok(line)
//!         })
//!     }
//! }
//!
//! # async fn demo() -> Result<(), OAuthError> {
//! let provider = oauth::get_oauth_provider("anthropic").expect("built in");
//! let credentials = provider.login(&Terminal, CancellationToken::new()).await?;
//! let mut data = oauth::read_auth_file("auth.json")?;
//! data.insert("anthropic".into(), oauth::AuthCredential::OAuth(credentials));
//! oauth::write_auth_file("auth.json", &data)?;
//!
//! // Later, before each request:
//! let stored = oauth::oauth_credentials(&oauth::read_auth_file("auth.json")?);
//! if let Some(key) = oauth::get_oauth_api_key("anthropic", &stored).await? {
//!     if key.refreshed {
//!         data.insert("anthropic".into(), oauth::AuthCredential::OAuth(key.new_credentials.clone()));
//!         oauth::write_auth_file("auth.json", &data)?;
//!     }
//!     // StreamOptions { api_key: Some(key.api_key), .. }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Every endpoint is configurable ([`AnthropicOAuthConfig`], [`GitHubCopilotOAuthConfig`],
//! [`OpenAICodexOAuthConfig`], with pi's values as defaults): register a provider built with
//! another configuration under the same id to use it. Tokens never appear in `Debug` or
//! `Display` output or in error messages ([`Secret`]).

pub mod anthropic;
mod auth_file;
mod authorization;
mod callback_server;
mod callbacks;
mod credentials;
mod error;
pub mod github_copilot;
mod http;
pub mod openai_codex;
mod page;
mod pkce;
mod provider;
mod registry;
mod secret;
mod wait;

use std::collections::BTreeMap;

pub use anthropic::{AnthropicOAuthConfig, AnthropicOAuthProvider};
pub use auth_file::{AuthCredential, AuthData, oauth_credentials, read_auth_file, write_auth_file};
pub use callbacks::{
    OAuthAuthInfo, OAuthLoginCallbacks, OAuthPrompt, OAuthSelectOption, OAuthSelectPrompt,
};
pub use credentials::OAuthCredentials;
pub use error::OAuthError;
pub use github_copilot::{
    GitHubCopilotOAuthConfig, GitHubCopilotOAuthProvider, get_github_copilot_base_url,
    normalize_domain,
};
pub use openai_codex::{OpenAICodexOAuthConfig, OpenAICodexOAuthProvider};
pub use provider::OAuthProvider;
pub use registry::{
    builtin_oauth_providers, get_oauth_provider, get_oauth_providers, register_oauth_provider,
    reset_oauth_providers, unregister_oauth_provider,
};
pub use secret::Secret;

use crate::ai::options::ApiKey;
use crate::ai::types::now_ms;

/// What [`get_oauth_api_key`] returns (pi's `{newCredentials, apiKey}`).
#[derive(Clone, Debug)]
pub struct OAuthApiKey {
    /// The credentials to keep: refreshed ones when `refreshed`, else the ones passed in.
    pub new_credentials: OAuthCredentials,
    /// The key for the provider's models.
    pub api_key: ApiKey,
    /// Whether the credentials were refreshed (and should be stored).
    pub refreshed: bool,
}

/// The API key for `provider_id` from `credentials` (provider id → credentials), refreshing
/// them first when `now >= expires` (pi's `getOAuthApiKey`).
///
/// `Ok(None)` when `credentials` has no entry for the provider;
/// [`OAuthError::UnknownProvider`] when no provider is registered under that id;
/// [`OAuthError::RefreshFailed`] (carrying the cause, e.g. the token endpoint's
/// `invalid_grant`) when the refresh fails.
pub async fn get_oauth_api_key(
    provider_id: &str,
    credentials: &BTreeMap<String, OAuthCredentials>,
) -> Result<Option<OAuthApiKey>, OAuthError> {
    let provider = get_oauth_provider(provider_id).ok_or_else(|| OAuthError::UnknownProvider {
        id: provider_id.to_owned(),
    })?;
    let Some(current) = credentials.get(provider_id) else {
        return Ok(None);
    };
    let (new_credentials, refreshed) =
        if current.is_expired(now_ms()) {
            let fresh = provider.refresh_token(current).await.map_err(|cause| {
                OAuthError::RefreshFailed {
                    provider: provider_id.to_owned(),
                    cause: Box::new(cause),
                }
            })?;
            (fresh, true)
        } else {
            (current.clone(), false)
        };
    Ok(Some(OAuthApiKey {
        api_key: provider.get_api_key(&new_credentials),
        new_credentials,
        refreshed,
    }))
}
