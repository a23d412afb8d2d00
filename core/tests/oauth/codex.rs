//! The ChatGPT Plus/Pro (Codex) flow against the mock authorization server.

use std::sync::Arc;

use pi_agent::ai::oauth::openai_codex::account_id;
use pi_agent::ai::oauth::{
    OAuthCredentials, OAuthError, OAuthProvider, OpenAICodexOAuthConfig, OpenAICodexOAuthProvider,
};
use pi_agent::ai::types::now_ms;
use tokio_util::sync::CancellationToken;

use crate::support::auth_server::{AuthServer, CODEX_CLIENT_ID, codex_access_token};
use crate::support::{TestHost, guard, open, query, redirect_target};

fn config(server: &AuthServer) -> OpenAICodexOAuthConfig {
    OpenAICodexOAuthConfig {
        authorize_url: server.url("/codex/authorize"),
        token_url: server.url("/codex/token"),
        callback_port: 0,
        ..OpenAICodexOAuthConfig::default()
    }
}

type Login = tokio::task::JoinHandle<Result<OAuthCredentials, OAuthError>>;

fn start_login(
    config: OpenAICodexOAuthConfig,
    host: &Arc<TestHost>,
    cancel: &CancellationToken,
) -> Login {
    let host = Arc::clone(host);
    let cancel = cancel.clone();
    let provider = OpenAICodexOAuthProvider::new(config);
    tokio::spawn(async move { provider.login(&*host, cancel).await })
}

#[tokio::test]
async fn login_through_the_browser_callback() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(true);
        let before = now_ms();
        let login = start_login(config(&server), &host, &CancellationToken::new());

        let auth = control.next_auth().await;
        let params = query(&auth.url);
        let keys: Vec<String> = url::Url::parse(&auth.url)
            .unwrap()
            .query_pairs()
            .map(|(k, _)| k.into_owned())
            .collect();
        assert_eq!(
            keys,
            [
                "response_type",
                "client_id",
                "redirect_uri",
                "scope",
                "code_challenge",
                "code_challenge_method",
                "state",
                "id_token_add_organizations",
                "codex_cli_simplified_flow",
                "originator"
            ]
        );
        assert_eq!(params["client_id"], CODEX_CLIENT_ID);
        assert_eq!(params["scope"], "openid profile email offline_access");
        assert_eq!(params["code_challenge_method"], "S256");
        assert_eq!(params["originator"], "pi");
        assert_eq!(params["state"].len(), 32);
        assert!(params["state"].bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(params["redirect_uri"].ends_with("/auth/callback"));
        assert_eq!(
            auth.instructions.as_deref(),
            Some("A browser window should open. Complete login to finish.")
        );

        let (status, page) = open(&auth.url).await;
        assert_eq!(status, 200);
        assert!(page.contains("OpenAI authentication completed"));

        let credentials = login.await.unwrap().unwrap();
        let after = now_ms();
        assert_eq!(credentials.account_id(), Some("acc-test"));
        assert!(credentials.refresh.expose().starts_with("codex-refresh-"));
        // Codex keeps the server's expiry with no margin.
        assert!(credentials.expires >= before + 3_600_000);
        assert!(credentials.expires <= after + 3_600_000);
        assert!(host.prompts().is_empty());

        let exchange = &server.requests_to("/codex/token")[0];
        assert_eq!(
            exchange.header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
        let fields: Vec<String> = exchange.form().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            fields,
            [
                "grant_type",
                "client_id",
                "code",
                "code_verifier",
                "redirect_uri"
            ]
        );

        // pi's auth.json entry for Codex.
        let json = serde_json::to_value(&credentials).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["refresh", "access", "expires", "accountId"]);
    })
    .await;
}

#[tokio::test]
async fn the_callback_checks_state_before_code() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(false);
        let login = start_login(config(&server), &host, &CancellationToken::new());
        let auth = control.next_auth().await;
        let params = query(&auth.url);
        let callback = params["redirect_uri"].replace("localhost", "127.0.0.1");
        let (status, page) = open(&format!("{callback}?code=x&state=wrong")).await;
        assert_eq!((status, page.contains("State mismatch.")), (400, true));
        let (status, page) = open(&format!("{callback}?state={}", params["state"])).await;
        assert_eq!(
            (status, page.contains("Missing authorization code.")),
            (400, true)
        );
        assert_eq!(open(&auth.url).await.0, 200);
        assert!(login.await.unwrap().is_ok());
    })
    .await;
}

#[tokio::test]
async fn a_taken_port_falls_back_to_pasting_the_redirect_url() {
    guard(async {
        let server = AuthServer::start().await;
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let (host, mut control) = TestHost::new(false);
        let login = start_login(
            OpenAICodexOAuthConfig {
                callback_port: port,
                ..config(&server)
            },
            &host,
            &CancellationToken::new(),
        );
        let auth = control.next_auth().await;
        assert_eq!(
            query(&auth.url)["redirect_uri"],
            format!("http://localhost:{port}/auth/callback")
        );
        control.answer(&redirect_target(&auth.url).await);
        let credentials = login.await.unwrap().unwrap();
        assert_eq!(credentials.account_id(), Some("acc-test"));
        assert_eq!(
            host.prompts()[0].message,
            "Paste the authorization code (or full redirect URL):"
        );
    })
    .await;
}

#[tokio::test]
async fn a_pasted_url_with_another_state_is_rejected() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(true);
        let login = start_login(config(&server), &host, &CancellationToken::new());
        let auth = control.next_auth().await;
        let params = query(&redirect_target(&auth.url).await);
        control.paste(&format!(
            "http://localhost:1455/auth/callback?code={}&state=0123",
            params["code"]
        ));
        let error = login.await.unwrap().unwrap_err();
        assert!(matches!(error, OAuthError::StateMismatch), "{error}");
    })
    .await;
}

#[tokio::test]
async fn a_token_without_an_account_fails() {
    guard(async {
        let server = AuthServer::start().await;
        server.with(|s| s.codex_account = None);
        let (host, mut control) = TestHost::new(false);
        let login = start_login(config(&server), &host, &CancellationToken::new());
        let auth = control.next_auth().await;
        assert_eq!(open(&auth.url).await.0, 200);
        let error = login.await.unwrap().unwrap_err();
        assert!(matches!(error, OAuthError::MissingAccountId), "{error}");
        assert_eq!(error.to_string(), "failed to extract accountId from token");
    })
    .await;
}

#[tokio::test]
async fn cancelling_while_waiting_for_the_user() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(false);
        let cancel = CancellationToken::new();
        let login = start_login(config(&server), &host, &cancel);
        control.next_auth().await;
        cancel.cancel();
        let error = login.await.unwrap().unwrap_err();
        assert!(matches!(error, OAuthError::Cancelled), "{error}");
    })
    .await;
}

#[tokio::test]
async fn refresh_keeps_the_account_and_an_invalid_token_fails_clearly() {
    guard(async {
        let server = AuthServer::start().await;
        server.with(|s| s.valid_refresh_tokens.insert("codex-refresh-0".into()));
        let provider = OpenAICodexOAuthProvider::new(config(&server));
        let old = OAuthCredentials::new(
            codex_access_token(Some("acc-test"), 0),
            "codex-refresh-0",
            0,
        );
        let fresh = provider.refresh_token(&old).await.unwrap();
        assert_eq!(fresh.account_id(), Some("acc-test"));
        assert_eq!(
            account_id(fresh.access.expose()).as_deref(),
            Some("acc-test")
        );
        assert_eq!(
            server.requests_to("/codex/token")[0].form(),
            [
                ("grant_type".to_owned(), "refresh_token".to_owned()),
                ("refresh_token".to_owned(), "codex-refresh-0".to_owned()),
                ("client_id".to_owned(), CODEX_CLIENT_ID.to_owned()),
            ]
        );
        let error = provider.refresh_token(&old).await.unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(error, OAuthError::Http { status: 400, .. }),
            "{message}"
        );
        assert!(message.contains("invalid_grant"), "{message}");
        assert!(!message.contains("codex-refresh-0"), "{message}");
    })
    .await;
}
