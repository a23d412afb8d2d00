//! The GitHub Copilot device flow against the mock GitHub and Copilot endpoints.

use std::sync::Arc;
use std::time::Duration;

use pi_agent::ai::oauth::{
    GitHubCopilotOAuthConfig, GitHubCopilotOAuthProvider, OAuthCredentials, OAuthError,
    OAuthProvider,
};
use pi_agent::ai::{Model, get_models};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::auth_server::{AuthServer, COPILOT_CLIENT_ID};
use crate::support::{TestHost, guard};

pub(crate) fn config(server: &AuthServer) -> GitHubCopilotOAuthConfig {
    GitHubCopilotOAuthConfig {
        github_url: server.url("/gh/{domain}"),
        github_api_url: server.url("/ghapi/{domain}"),
        copilot_api_url: Some(server.url("/copilot")),
        // A device-flow second lasts a millisecond here: GitHub's 5 s interval is 6 ms.
        device_flow_second: Duration::from_millis(1),
        ..GitHubCopilotOAuthConfig::default()
    }
}

type Login = tokio::task::JoinHandle<Result<OAuthCredentials, OAuthError>>;

fn start_login(
    config: GitHubCopilotOAuthConfig,
    host: &Arc<TestHost>,
    cancel: &CancellationToken,
) -> Login {
    let host = Arc::clone(host);
    let cancel = cancel.clone();
    let provider = GitHubCopilotOAuthProvider::new(config);
    tokio::spawn(async move { provider.login(&*host, cancel).await })
}

#[tokio::test]
async fn device_flow_on_github_com_with_pending_and_slow_down() {
    guard(async {
        let server = AuthServer::start().await;
        server.with(|s| {
            s.device_script.extend([
                json!({"error": "authorization_pending"}),
                json!({"error": "slow_down", "interval": 2}),
                json!({"error": "slow_down"}),
                json!({"error": "authorization_pending"}),
                json!({"access_token": "gh-token-1", "token_type": "bearer", "scope": "read:user"}),
            ]);
        });
        let (host, mut control) = TestHost::new(false);
        control.answer("");
        let login = start_login(config(&server), &host, &CancellationToken::new());

        let auth = control.next_auth().await;
        assert_eq!(auth.url, "https://github.com/login/device");
        assert_eq!(auth.instructions.as_deref(), Some("Enter code: ABCD-1234"));
        let credentials = login.await.unwrap().unwrap();

        assert_eq!(credentials.refresh.expose(), "gh-token-1");
        assert!(
            credentials
                .access
                .expose()
                .contains("proxy-ep=proxy.individual.githubcopilot.com")
        );
        assert_eq!(credentials.expires, 2_000_000_000_000 - 300_000);
        assert_eq!(credentials.enterprise_url(), None);
        assert!(credentials.extra.is_empty());

        let prompt = &host.prompts()[0];
        assert_eq!(
            prompt.message,
            "GitHub Enterprise URL/domain (blank for github.com)"
        );
        assert_eq!(prompt.placeholder.as_deref(), Some("company.ghe.com"));
        assert_eq!(prompt.allow_empty, Some(true));
        assert_eq!(host.progress(), ["Enabling models..."]);

        let device = &server.requests_to("/gh/github.com/login/device/code")[0];
        assert_eq!(
            device.form(),
            [
                ("client_id".to_owned(), COPILOT_CLIENT_ID.to_owned()),
                ("scope".to_owned(), "read:user".to_owned())
            ]
        );
        assert_eq!(device.header("accept"), Some("application/json"));
        assert_eq!(
            device.header("user-agent"),
            Some("GitHubCopilotChat/0.35.0")
        );
        assert_eq!(
            server
                .requests_to("/gh/github.com/login/oauth/access_token")
                .len(),
            5
        );

        let exchange = &server.requests_to("/ghapi/github.com/copilot_internal/v2/token")[0];
        assert_eq!(exchange.header("authorization"), Some("Bearer gh-token-1"));
        assert_eq!(exchange.header("editor-version"), Some("vscode/1.107.0"));
        assert_eq!(
            exchange.header("editor-plugin-version"),
            Some("copilot-chat/0.35.0")
        );
        assert_eq!(
            exchange.header("copilot-integration-id"),
            Some("vscode-chat")
        );

        // Every catalog Copilot model's policy was accepted with the Copilot token.
        let mut enabled = server.with(|s| s.policy_models.clone());
        enabled.sort();
        let catalog: Vec<String> = get_models("github-copilot")
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert!(!catalog.is_empty());
        assert_eq!(enabled, catalog);
        let policy = server
            .with(|s| {
                s.requests
                    .iter()
                    .find(|r| r.path.ends_with("/policy"))
                    .cloned()
            })
            .unwrap();
        assert_eq!(policy.header("openai-intent"), Some("chat-policy"));
        assert_eq!(policy.header("x-interaction-type"), Some("chat-policy"));
        assert_eq!(policy.json(), json!({"state": "enabled"}));
        assert_eq!(
            policy
                .header("authorization")
                .map(|h| h.contains("proxy-ep=")),
            Some(true)
        );
    })
    .await;
}

#[tokio::test]
async fn enterprise_domain_routes_every_request_and_is_stored() {
    guard(async {
        let server = AuthServer::start().await;
        server.with(|s| {
            s.device_script
                .push_back(json!({"access_token": "gh-token-ent"}))
        });
        let (host, mut control) = TestHost::new(false);
        control.answer("  https://Company.GHE.com/some/page ");
        let login = start_login(
            GitHubCopilotOAuthConfig {
                enable_models: false,
                ..config(&server)
            },
            &host,
            &CancellationToken::new(),
        );
        let auth = control.next_auth().await;
        assert_eq!(auth.url, "https://company.ghe.com/login/device");
        let credentials = login.await.unwrap().unwrap();
        assert_eq!(credentials.enterprise_url(), Some("company.ghe.com"));
        assert_eq!(
            server
                .requests_to("/ghapi/company.ghe.com/copilot_internal/v2/token")
                .len(),
            1
        );
        assert!(host.progress().is_empty());
        assert!(server.with(|s| s.policy_models.is_empty()));

        // modifyModels: Copilot models move to the token's API host, others stay.
        let pi_urls = GitHubCopilotOAuthProvider::default();
        let copilot = get_models("github-copilot").remove(0);
        let other = Model::new(
            "openai-completions",
            "openai",
            "gpt-x",
            "https://api.openai.com/v1",
        );
        let models = pi_urls.modify_models(vec![copilot, other], &credentials);
        assert_eq!(models[0].base_url, "https://api.enterprise.company.ghe.com");
        assert_eq!(models[1].base_url, "https://api.openai.com/v1");

        // Refresh asks the enterprise endpoint again with the stored GitHub token.
        let provider = GitHubCopilotOAuthProvider::new(config(&server));
        let fresh = provider.refresh_token(&credentials).await.unwrap();
        assert_eq!(fresh.refresh, credentials.refresh);
        assert_ne!(fresh.access, credentials.access);
        assert_eq!(fresh.enterprise_url(), Some("company.ghe.com"));
    })
    .await;
}

#[tokio::test]
async fn an_invalid_enterprise_domain_is_refused() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, control) = TestHost::new(false);
        control.answer("not a domain");
        let provider = GitHubCopilotOAuthProvider::new(config(&server));
        let error = provider
            .login(&*host, CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(error, OAuthError::InvalidEnterpriseDomain),
            "{error}"
        );
        assert!(server.with(|s| s.requests.is_empty()));
    })
    .await;
}

#[tokio::test]
async fn a_denied_device_ends_the_login() {
    guard(async {
        let server = AuthServer::start().await;
        server.with(|s| {
            s.device_script.extend([
                json!({"error": "authorization_pending"}),
                json!({"error": "access_denied", "error_description": "The user cancelled."}),
            ]);
        });
        let (host, control) = TestHost::new(false);
        control.answer("");
        let provider = GitHubCopilotOAuthProvider::new(config(&server));
        let error = provider
            .login(&*host, CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "device flow failed: access_denied: The user cancelled."
        );
    })
    .await;
}

#[tokio::test]
async fn an_expired_device_code_times_out_and_mentions_slow_down() {
    guard(async {
        let server = AuthServer::start().await;
        server.with(|s| {
            s.device_expires_in = 40;
            s.device_script
                .push_back(json!({"error": "slow_down", "interval": 1}));
        });
        let (host, control) = TestHost::new(false);
        control.answer("");
        let provider = GitHubCopilotOAuthProvider::new(config(&server));
        let error = provider
            .login(&*host, CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(error, OAuthError::DeviceFlowTimedOut { slow_down: true }),
            "{error}"
        );
        assert!(error.to_string().contains("slow_down"));
    })
    .await;
}

#[tokio::test]
async fn cancelling_while_polling() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, control) = TestHost::new(false);
        control.answer("");
        let cancel = CancellationToken::new();
        let login = start_login(config(&server), &host, &cancel);
        server.wait_for_polls(2).await;
        cancel.cancel();
        let error = login.await.unwrap().unwrap_err();
        assert!(matches!(error, OAuthError::Cancelled), "{error}");
    })
    .await;
}

#[tokio::test]
async fn a_revoked_github_token_cannot_refresh() {
    guard(async {
        let server = AuthServer::start().await;
        let provider = GitHubCopilotOAuthProvider::new(config(&server));
        let credentials = OAuthCredentials::new("tid=old", "gh-revoked", 0);
        let error = provider.refresh_token(&credentials).await.unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(error, OAuthError::Http { status: 401, .. }),
            "{message}"
        );
        assert!(message.contains("Bad credentials"), "{message}");
        assert!(!message.contains("gh-revoked"), "{message}");
    })
    .await;
}
