//! The Claude Pro/Max flow against the mock authorization server.

use std::sync::Arc;
use std::time::Duration;

use pi_agent::ai::now_ms;
use pi_agent::ai::oauth::{
    AnthropicOAuthConfig, AnthropicOAuthProvider, OAuthCredentials, OAuthError, OAuthProvider,
};
use tokio_util::sync::CancellationToken;

use crate::support::auth_server::{ANTHROPIC_CLIENT_ID, AuthServer};
use crate::support::{TestHost, guard, open, query, redirect_target};

pub(crate) fn provider(server: &AuthServer) -> AnthropicOAuthProvider {
    AnthropicOAuthProvider::new(AnthropicOAuthConfig {
        authorize_url: server.url("/anthropic/authorize"),
        token_url: server.url("/anthropic/token"),
        callback_port: 0,
        ..AnthropicOAuthConfig::default()
    })
}

type Login = tokio::task::JoinHandle<Result<OAuthCredentials, OAuthError>>;

fn start_login(
    provider: AnthropicOAuthProvider,
    host: &Arc<TestHost>,
    cancel: &CancellationToken,
) -> Login {
    let host = Arc::clone(host);
    let cancel = cancel.clone();
    tokio::spawn(async move { provider.login(&*host, cancel).await })
}

#[tokio::test]
async fn login_through_the_browser_callback() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(false);
        let before = now_ms();
        let login = start_login(provider(&server), &host, &CancellationToken::new());

        let auth = control.next_auth().await;
        assert!(
            auth.url
                .starts_with(&server.url("/anthropic/authorize?code=true&client_id="))
        );
        let params = query(&auth.url);
        assert_eq!(params["client_id"], ANTHROPIC_CLIENT_ID);
        assert_eq!(params["response_type"], "code");
        assert_eq!(params["code_challenge_method"], "S256");
        assert_eq!(
            params["scope"],
            "org:create_api_key user:profile user:inference user:sessions:claude_code \
             user:mcp_servers user:file_upload"
        );
        assert!(params["redirect_uri"].starts_with("http://localhost:"));
        assert!(params["redirect_uri"].ends_with("/callback"));
        // pi uses the PKCE verifier as the state.
        assert_eq!(params["state"].len(), 43);
        assert!(
            auth.instructions
                .unwrap()
                .contains("paste the final redirect URL")
        );

        let (status, page) = open(&auth.url).await;
        assert_eq!(status, 200);
        assert!(page.contains("Anthropic authentication completed"));

        let credentials = login.await.unwrap().unwrap();
        let after = now_ms();
        assert!(credentials.access.expose().starts_with("anthropic-access-"));
        assert!(
            credentials
                .refresh
                .expose()
                .starts_with("anthropic-refresh-")
        );
        // expires_in 3600 s minus pi's five-minute margin.
        let margin = 3_600_000 - 300_000;
        assert!(credentials.expires >= before + margin && credentials.expires <= after + margin);
        assert!(credentials.extra.is_empty());
        assert_eq!(
            host.progress(),
            ["Exchanging authorization code for tokens..."]
        );
        assert!(host.prompts().is_empty());

        // The exchange sent pi's JSON body; the mock checked PKCE, state and redirect URI.
        let exchange = &server.requests_to("/anthropic/token")[0];
        assert_eq!(exchange.header("content-type"), Some("application/json"));
        let body = exchange.json();
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "grant_type",
                "client_id",
                "code",
                "state",
                "redirect_uri",
                "code_verifier"
            ]
        );
        assert_eq!(body["state"], body["code_verifier"]);
        assert_eq!(
            body["redirect_uri"].as_str(),
            Some(params["redirect_uri"].as_str())
        );
    })
    .await;
}

#[tokio::test]
async fn the_callback_rejects_a_wrong_state_and_keeps_waiting() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(false);
        let login = start_login(provider(&server), &host, &CancellationToken::new());
        let auth = control.next_auth().await;
        let callback = query(&auth.url)["redirect_uri"].replace("localhost", "127.0.0.1");

        let (status, page) = open(&format!("{callback}?code=stolen&state=wrong")).await;
        assert_eq!(status, 400);
        assert!(page.contains("State mismatch."));
        let (status, page) = open(&format!("{callback}?error=access_denied")).await;
        assert_eq!(status, 400);
        assert!(page.contains("Error: access_denied"));
        let (status, page) = open(&format!("{callback}?code=only-a-code")).await;
        assert_eq!(status, 400);
        assert!(page.contains("Missing code or state parameter."));
        let other_path = callback.replace("/callback", "/elsewhere");
        let (status, page) = open(&format!("{other_path}?code=x&state=y")).await;
        assert_eq!(status, 404);
        assert!(page.contains("Callback route not found."));

        // The real redirect still completes the login.
        assert_eq!(open(&auth.url).await.0, 200);
        let credentials = login.await.unwrap().unwrap();
        assert!(credentials.access.expose().starts_with("anthropic-access-"));
    })
    .await;
}

#[tokio::test]
async fn a_pasted_redirect_url_wins_the_race() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(true);
        let login = start_login(provider(&server), &host, &CancellationToken::new());
        let auth = control.next_auth().await;
        // The browser ran on another machine: the user pastes where it ended up.
        let redirected = redirect_target(&auth.url).await;
        control.paste(&redirected);
        let credentials = login.await.unwrap().unwrap();
        assert!(credentials.access.expose().starts_with("anthropic-access-"));
        assert!(host.prompts().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_pasted_code_hash_state_works_too() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(true);
        let login = start_login(provider(&server), &host, &CancellationToken::new());
        let auth = control.next_auth().await;
        let params = query(&redirect_target(&auth.url).await);
        control.paste(&format!("{}#{}", params["code"], params["state"]));
        assert!(login.await.unwrap().is_ok());
    })
    .await;
}

#[tokio::test]
async fn a_pasted_foreign_state_is_rejected() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(true);
        let login = start_login(provider(&server), &host, &CancellationToken::new());
        let auth = control.next_auth().await;
        let params = query(&redirect_target(&auth.url).await);
        control.paste(&format!("{}#another-login", params["code"]));
        let error = login.await.unwrap().unwrap_err();
        assert!(matches!(error, OAuthError::StateMismatch), "{error}");
        assert!(server.requests_to("/anthropic/token").is_empty());
    })
    .await;
}

#[tokio::test]
async fn an_empty_paste_falls_back_to_the_prompt() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(true);
        let login = start_login(provider(&server), &host, &CancellationToken::new());
        let auth = control.next_auth().await;
        let redirected = redirect_target(&auth.url).await;
        control.paste("   ");
        control.answer(&redirected);
        assert!(login.await.unwrap().is_ok());
        let prompts = host.prompts();
        assert_eq!(prompts.len(), 1);
        assert_eq!(
            prompts[0].message,
            "Paste the authorization code or full redirect URL:"
        );
        assert_eq!(
            prompts[0].placeholder.as_deref(),
            Some(query(&auth.url)["redirect_uri"].as_str())
        );
    })
    .await;
}

#[tokio::test]
async fn cancelling_mid_login_closes_the_callback_server() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, mut control) = TestHost::new(true);
        let cancel = CancellationToken::new();
        let login = start_login(provider(&server), &host, &cancel);
        let auth = control.next_auth().await;
        let port: u16 = url::Url::parse(&query(&auth.url)["redirect_uri"])
            .unwrap()
            .port()
            .unwrap();
        cancel.cancel();
        let error = login.await.unwrap().unwrap_err();
        assert!(matches!(error, OAuthError::Cancelled), "{error}");
        assert_eq!(error.to_string(), "login cancelled");
        assert!(
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_err()
        );
    })
    .await;
}

#[tokio::test]
async fn an_unanswered_login_times_out() {
    guard(async {
        let server = AuthServer::start().await;
        let (host, _control) = TestHost::new(false);
        let provider = AnthropicOAuthProvider::new(AnthropicOAuthConfig {
            login_timeout: Duration::from_millis(50),
            ..provider(&server).config().clone()
        });
        let error = provider
            .login(&*host, CancellationToken::new())
            .await
            .unwrap_err();
        assert!(matches!(error, OAuthError::TimedOut { .. }), "{error}");
    })
    .await;
}

#[tokio::test]
async fn an_absurd_lifetime_from_the_server_saturates() {
    // `1e300` seconds, or a negative lifetime: the far future or the past, never an overflow
    // (a panic in a debug build, an expiry wrapped into the past in a release one).
    guard(async {
        let server = AuthServer::start().await;
        let provider = provider(&server);
        for (n, (lifetime, far_future)) in [(1e300, true), (-1e300, false)].into_iter().enumerate()
        {
            let refresh = format!("anthropic-refresh-absurd-{n}");
            server.with(|s| {
                s.valid_refresh_tokens.insert(refresh.clone());
                s.token_expires_in = Some(lifetime);
            });
            let old = OAuthCredentials::new("anthropic-access-0", refresh.as_str(), 0);
            let fresh = provider.refresh_token(&old).await.unwrap();
            if far_future {
                assert!(
                    fresh.expires > now_ms() + 1_000_000_000_000,
                    "{}",
                    fresh.expires
                );
            } else {
                assert!(fresh.expires < now_ms(), "{}", fresh.expires);
            }
        }
    })
    .await;
}

#[tokio::test]
async fn refresh_rotates_tokens_and_a_revoked_token_fails_clearly() {
    guard(async {
        let server = AuthServer::start().await;
        server.with(|s| s.valid_refresh_tokens.insert("anthropic-refresh-0".into()));
        let provider = provider(&server);
        let old = OAuthCredentials::new("anthropic-access-0", "anthropic-refresh-0", 0);
        let before = now_ms();
        let fresh = provider.refresh_token(&old).await.unwrap();
        assert!(fresh.access.expose().starts_with("anthropic-access-"));
        assert_ne!(fresh.refresh, old.refresh);
        assert!(fresh.expires >= before + 3_300_000);
        let body = server.requests_to("/anthropic/token")[0].json();
        assert_eq!(
            body,
            serde_json::json!({
                "grant_type": "refresh_token",
                "client_id": ANTHROPIC_CLIENT_ID,
                "refresh_token": "anthropic-refresh-0",
            })
        );

        // The old refresh token was rotated out: the server now refuses it.
        let error = provider.refresh_token(&old).await.unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(error, OAuthError::Http { status: 400, .. }),
            "{message}"
        );
        assert!(message.contains("invalid_grant: Refresh token not found or invalid"));
        assert!(!message.contains("anthropic-refresh-0"), "{message}");
    })
    .await;
}

#[tokio::test]
async fn a_port_in_use_is_a_clear_error() {
    guard(async {
        let server = AuthServer::start().await;
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let provider = AnthropicOAuthProvider::new(AnthropicOAuthConfig {
            callback_port: port,
            ..provider(&server).config().clone()
        });
        let (host, _control) = TestHost::new(false);
        let error = provider
            .login(&*host, CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(error, OAuthError::CallbackServer { port: p, .. } if p == port),
            "{error}"
        );
    })
    .await;
}
