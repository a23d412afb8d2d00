//! The `OAuthProvider` trait every login flow implements (pi's `OAuthProviderInterface`).

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::callbacks::OAuthLoginCallbacks;
use super::credentials::OAuthCredentials;
use super::error::OAuthError;
use crate::ai::model::Model;
use crate::ai::options::ApiKey;

/// An OAuth login flow for one subscription (Claude Pro/Max, GitHub Copilot, ChatGPT
/// Plus/Pro, or one a host registers with
/// [`register_oauth_provider`](super::register_oauth_provider)).
///
/// Contract:
/// - [`login`](Self::login) and [`refresh_token`](Self::refresh_token) run inside a tokio
///   runtime. They never hang: every network request and every wait for the user has a
///   timeout, and `login` also ends with [`OAuthError::Cancelled`] soon after `cancel` fires,
///   closing any localhost server it opened.
/// - The credentials they return are what the host persists (e.g. with
///   [`write_auth_file`](super::write_auth_file)).
/// - Errors never contain a token.
pub trait OAuthProvider: Send + Sync {
    /// The provider id: `anthropic`, `github-copilot`, `openai-codex`, ...
    fn id(&self) -> &str;

    /// A human-readable name.
    fn name(&self) -> &str;

    /// Whether [`login`](Self::login) runs a localhost callback server and so accepts a
    /// pasted code through [`OAuthLoginCallbacks::on_manual_code_input`] (pi's
    /// `usesCallbackServer`). `false` by default.
    fn uses_callback_server(&self) -> bool {
        false
    }

    /// Runs the login flow and returns the credentials to persist.
    fn login<'a>(
        &'a self,
        callbacks: &'a dyn OAuthLoginCallbacks,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<OAuthCredentials, OAuthError>>;

    /// Exchanges expired credentials for fresh ones to persist.
    fn refresh_token<'a>(
        &'a self,
        credentials: &'a OAuthCredentials,
    ) -> BoxFuture<'a, Result<OAuthCredentials, OAuthError>>;

    /// The API key the provider's models take: the access token by default (as for every
    /// built-in provider).
    fn get_api_key(&self, credentials: &OAuthCredentials) -> ApiKey {
        credentials.access.to_api_key()
    }

    /// Adjusts models for these credentials, e.g. GitHub Copilot's per-account base URL
    /// (pi's `modifyModels`). Returns them unchanged by default.
    fn modify_models(&self, models: Vec<Model>, credentials: &OAuthCredentials) -> Vec<Model> {
        let _ = credentials;
        models
    }
}
