//! The provider registry and `get_oauth_api_key` (refresh on expiry). The registry is
//! process-wide, so these tests take `REGISTRY_LOCK`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use pi_agent::ai::oauth::{
    OAuthCredentials, OAuthError, OAuthLoginCallbacks, OAuthProvider, get_oauth_api_key,
    get_oauth_provider, get_oauth_providers, register_oauth_provider, reset_oauth_providers,
    unregister_oauth_provider,
};
use pi_agent::ai::types::now_ms;
use tokio_util::sync::CancellationToken;

use crate::support::auth_server::AuthServer;
use crate::support::guard;
use crate::{REGISTRY_LOCK, anthropic, copilot};

/// A provider a host might register: counts refreshes, adds a suffix to the API key.
struct Counter {
    id: &'static str,
    name: &'static str,
    refreshes: AtomicUsize,
}

impl Counter {
    fn new(id: &'static str, name: &'static str) -> Arc<Self> {
        Arc::new(Self {
            id,
            name,
            refreshes: AtomicUsize::new(0),
        })
    }
}

impl OAuthProvider for Counter {
    fn id(&self) -> &str {
        self.id
    }

    fn name(&self) -> &str {
        self.name
    }

    fn login<'a>(
        &'a self,
        _callbacks: &'a dyn OAuthLoginCallbacks,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<OAuthCredentials, OAuthError>> {
        Box::pin(async { Ok(OAuthCredentials::new("a", "r", i64::MAX)) })
    }

    fn refresh_token<'a>(
        &'a self,
        credentials: &'a OAuthCredentials,
    ) -> BoxFuture<'a, Result<OAuthCredentials, OAuthError>> {
        Box::pin(async move {
            let n = self.refreshes.fetch_add(1, Ordering::SeqCst) + 1;
            let mut fresh = OAuthCredentials::new(
                format!("access-{n}"),
                credentials.refresh.clone(),
                now_ms() + 60_000,
            );
            fresh.extra = credentials.extra.clone();
            Ok(fresh)
        })
    }

    fn get_api_key(&self, credentials: &OAuthCredentials) -> pi_agent::ai::ApiKey {
        pi_agent::ai::ApiKey::new(format!("{}+key", credentials.access.expose()))
    }
}

fn ids() -> Vec<String> {
    get_oauth_providers()
        .iter()
        .map(|p| p.id().to_owned())
        .collect()
}

#[tokio::test]
async fn builtins_register_unregister_and_reset() {
    let _lock = REGISTRY_LOCK.lock().await;
    reset_oauth_providers();
    assert_eq!(ids(), ["anthropic", "github-copilot", "openai-codex"]);
    let names: Vec<(String, bool)> = get_oauth_providers()
        .iter()
        .map(|p| (p.name().to_owned(), p.uses_callback_server()))
        .collect();
    assert_eq!(
        names,
        [
            ("Anthropic (Claude Pro/Max)".to_owned(), true),
            ("GitHub Copilot".to_owned(), false),
            ("ChatGPT Plus/Pro (Codex Subscription)".to_owned(), true),
        ]
    );

    register_oauth_provider(Counter::new("custom-sso", "Custom SSO"));
    register_oauth_provider(Counter::new("anthropic", "Replaced Anthropic"));
    assert_eq!(
        ids(),
        ["anthropic", "github-copilot", "openai-codex", "custom-sso"]
    );
    assert_eq!(
        get_oauth_provider("anthropic").unwrap().name(),
        "Replaced Anthropic"
    );

    // Unregistering a built-in id restores the built-in; a custom id disappears.
    unregister_oauth_provider("anthropic");
    assert_eq!(
        get_oauth_provider("anthropic").unwrap().name(),
        "Anthropic (Claude Pro/Max)"
    );
    unregister_oauth_provider("custom-sso");
    assert!(get_oauth_provider("custom-sso").is_none());
    assert_eq!(ids(), ["anthropic", "github-copilot", "openai-codex"]);

    register_oauth_provider(Counter::new("custom-sso", "Custom SSO"));
    reset_oauth_providers();
    assert_eq!(ids(), ["anthropic", "github-copilot", "openai-codex"]);
}

#[tokio::test]
async fn api_key_without_refresh_and_with_refresh() {
    let _lock = REGISTRY_LOCK.lock().await;
    let counter = Counter::new("test-counter", "Counter");
    register_oauth_provider(counter.clone());

    let error = get_oauth_api_key("no-such-provider", &BTreeMap::new())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown OAuth provider `no-such-provider`"
    );
    assert!(
        get_oauth_api_key("test-counter", &BTreeMap::new())
            .await
            .unwrap()
            .is_none()
    );

    let mut stored = BTreeMap::new();
    stored.insert(
        "test-counter".to_owned(),
        OAuthCredentials::new("still-good", "r", now_ms() + 600_000),
    );
    let key = get_oauth_api_key("test-counter", &stored)
        .await
        .unwrap()
        .unwrap();
    assert!(!key.refreshed);
    assert_eq!(key.api_key.expose(), "still-good+key");
    assert_eq!(key.new_credentials, stored["test-counter"]);
    assert_eq!(counter.refreshes.load(Ordering::SeqCst), 0);

    let mut expired = OAuthCredentials::new("stale", "r", now_ms() - 1);
    expired.extra.insert("accountId".into(), "kept".into());
    stored.insert("test-counter".to_owned(), expired);
    let key = get_oauth_api_key("test-counter", &stored)
        .await
        .unwrap()
        .unwrap();
    assert!(key.refreshed);
    assert_eq!(key.api_key.expose(), "access-1+key");
    assert_eq!(key.new_credentials.account_id(), Some("kept"));
    assert_eq!(counter.refreshes.load(Ordering::SeqCst), 1);

    unregister_oauth_provider("test-counter");
}

#[tokio::test]
async fn expired_anthropic_credentials_refresh_through_the_registry() {
    guard(async {
        let _lock = REGISTRY_LOCK.lock().await;
        let server = AuthServer::start().await;
        server.with(|s| s.valid_refresh_tokens.insert("anthropic-refresh-0".into()));
        register_oauth_provider(Arc::new(anthropic::provider(&server)));

        let mut stored = BTreeMap::new();
        stored.insert(
            "anthropic".to_owned(),
            OAuthCredentials::new("anthropic-access-0", "anthropic-refresh-0", 1_000),
        );
        let key = get_oauth_api_key("anthropic", &stored).await.unwrap().unwrap();
        assert!(key.refreshed);
        assert_ne!(key.new_credentials.refresh.expose(), "anthropic-refresh-0");
        assert_eq!(key.api_key.expose(), key.new_credentials.access.expose());
        assert!(key.new_credentials.expires > now_ms());

        // The same credentials again: that refresh token was rotated out.
        let error = get_oauth_api_key("anthropic", &stored).await.unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(&error, OAuthError::RefreshFailed { provider, cause }
                if provider == "anthropic" && matches!(**cause, OAuthError::Http { status: 400, .. })),
            "{message}"
        );
        assert!(message.starts_with("failed to refresh OAuth token for `anthropic`: "));
        assert!(message.contains("invalid_grant"), "{message}");
        assert!(!message.contains("anthropic-refresh-0"), "{message}");
        unregister_oauth_provider("anthropic");
    })
    .await;
}

#[tokio::test]
async fn expired_copilot_credentials_refresh_through_the_registry() {
    guard(async {
        let _lock = REGISTRY_LOCK.lock().await;
        let server = AuthServer::start().await;
        server.with(|s| s.valid_github_tokens.insert("gh-token-9".into()));
        register_oauth_provider(Arc::new(
            pi_agent::ai::oauth::GitHubCopilotOAuthProvider::new(copilot::config(&server)),
        ));
        let mut stored = BTreeMap::new();
        stored.insert(
            "github-copilot".to_owned(),
            OAuthCredentials::new("tid=old", "gh-token-9", 0),
        );
        let key = get_oauth_api_key("github-copilot", &stored)
            .await
            .unwrap()
            .unwrap();
        assert!(key.refreshed);
        assert!(key.api_key.expose().contains("proxy-ep="));
        assert_eq!(key.new_credentials.refresh.expose(), "gh-token-9");
        unregister_oauth_provider("github-copilot");
    })
    .await;
}
