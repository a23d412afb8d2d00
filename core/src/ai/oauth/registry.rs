//! The id → OAuth provider registry, seeded with the three built-in flows (pi's
//! `oauthProviderRegistry`). Order is registration order, built-ins first, as pi's `Map`.

use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use super::anthropic::AnthropicOAuthProvider;
use super::github_copilot::GitHubCopilotOAuthProvider;
use super::openai_codex::OpenAICodexOAuthProvider;
use super::provider::OAuthProvider;

static REGISTRY: LazyLock<RwLock<Vec<Arc<dyn OAuthProvider>>>> =
    LazyLock::new(|| RwLock::new(builtin_oauth_providers()));

/// Fresh instances of the built-in providers, with pi's endpoints: `anthropic`,
/// `github-copilot`, `openai-codex`.
pub fn builtin_oauth_providers() -> Vec<Arc<dyn OAuthProvider>> {
    vec![
        Arc::new(AnthropicOAuthProvider::default()),
        Arc::new(GitHubCopilotOAuthProvider::default()),
        Arc::new(OpenAICodexOAuthProvider::default()),
    ]
}

fn builtin(id: &str) -> Option<Arc<dyn OAuthProvider>> {
    builtin_oauth_providers()
        .into_iter()
        .find(|provider| provider.id() == id)
}

/// Puts `provider` at its id's place, or appends it (pi's `Map.set`).
fn set(providers: &mut Vec<Arc<dyn OAuthProvider>>, provider: Arc<dyn OAuthProvider>) {
    match providers.iter_mut().find(|p| p.id() == provider.id()) {
        Some(slot) => *slot = provider,
        None => providers.push(provider),
    }
}

/// The provider registered under `id` (pi's `getOAuthProvider`).
pub fn get_oauth_provider(id: &str) -> Option<Arc<dyn OAuthProvider>> {
    REGISTRY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|provider| provider.id() == id)
        .cloned()
}

/// Registers `provider` under its id, replacing a built-in or earlier one (pi's
/// `registerOAuthProvider`).
pub fn register_oauth_provider(provider: Arc<dyn OAuthProvider>) {
    set(
        &mut REGISTRY.write().unwrap_or_else(PoisonError::into_inner),
        provider,
    );
}

/// Removes the provider registered under `id`; for a built-in id, restores the built-in
/// instead (pi's `unregisterOAuthProvider`).
pub fn unregister_oauth_provider(id: &str) {
    let mut providers = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    match builtin(id) {
        Some(provider) => set(&mut providers, provider),
        None => providers.retain(|provider| provider.id() != id),
    }
}

/// Drops every registration and restores the built-ins (pi's `resetOAuthProviders`).
pub fn reset_oauth_providers() {
    *REGISTRY.write().unwrap_or_else(PoisonError::into_inner) = builtin_oauth_providers();
}

/// Every registered provider, in registration order (pi's `getOAuthProviders`).
pub fn get_oauth_providers() -> Vec<Arc<dyn OAuthProvider>> {
    REGISTRY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}
