//! GitHub Copilot login (pi's `utils/oauth/github-copilot.ts`): GitHub's device flow on
//! github.com or a GitHub Enterprise domain, then the exchange of the GitHub token for a
//! short-lived Copilot token, whose `proxy-ep` names the API host the models must use.
//!
//! The credentials keep the GitHub token as `refresh` and the Copilot token as `access`;
//! refreshing asks for a new Copilot token with the same GitHub token.

use std::time::Duration;

use futures::future::BoxFuture;
use futures::{StreamExt, stream};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::callbacks::{OAuthAuthInfo, OAuthLoginCallbacks, OAuthPrompt};
use super::credentials::{OAuthCredentials, expiry_after};
use super::error::OAuthError;
use super::http::{Fields, fetch_json, http, number_field, string_field, succeeds};
use super::provider::OAuthProvider;
use super::wait::{bounded, cancellable, deadline_after};
use crate::ai::catalog::get_models;
use crate::ai::model::Model;

/// The provider id of Copilot's models in the catalog.
const PROVIDER_ID: &str = "github-copilot";

/// How much earlier than GitHub says a Copilot token is treated as expired.
const EXPIRY_MARGIN_MS: i64 = 5 * 60 * 1000;

/// The editor identity Copilot's token and policy endpoints expect.
const COPILOT_HEADERS: [(&str, &str); 4] = [
    ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ("Editor-Version", "vscode/1.107.0"),
    ("Editor-Plugin-Version", "copilot-chat/0.35.0"),
    ("Copilot-Integration-Id", "vscode-chat"),
];

/// pi waits a little longer than GitHub's interval, and longer still after `slow_down`,
/// because clocks in VMs drift.
const INITIAL_POLL_INTERVAL_MULTIPLIER: f64 = 1.2;
const SLOW_DOWN_POLL_INTERVAL_MULTIPLIER: f64 = 1.4;

/// Model-policy requests in flight at once after a login: pi sends them all together; this
/// only bounds a catalog that grows.
const POLICY_CONCURRENCY: usize = 32;

/// Endpoints, timing and limits of the GitHub Copilot flow; [`Default`] is pi's.
///
/// The URL templates take the GitHub domain (`github.com` or the enterprise domain) in place
/// of `{domain}`.
#[derive(Clone, Debug)]
pub struct GitHubCopilotOAuthConfig {
    /// The OAuth client id (the Copilot editor app).
    pub client_id: String,
    /// Base of the device-flow endpoints (`/login/device/code`, `/login/oauth/access_token`);
    /// default `https://{domain}`.
    pub github_url: String,
    /// Base of the Copilot token endpoint (`/copilot_internal/v2/token`); default
    /// `https://api.{domain}`.
    pub github_api_url: String,
    /// The Copilot API base URL for model-policy requests and
    /// [`modify_models`](OAuthProvider::modify_models); `None` (the default) derives it from
    /// the token and domain with [`get_github_copilot_base_url`], as pi does.
    pub copilot_api_url: Option<String>,
    /// Whether a login enables every catalog Copilot model's policy afterwards (pi does).
    pub enable_models: bool,
    /// How long one second of the device flow lasts: GitHub's `interval` and `expires_in`
    /// and pi's slow-down steps are counted in these (1 s by default; tests shrink it).
    pub device_flow_second: Duration,
    /// The limit on each request.
    pub request_timeout: Duration,
    /// The longest the login waits for the user, whatever `expires_in` says.
    pub login_timeout: Duration,
}

impl Default for GitHubCopilotOAuthConfig {
    fn default() -> Self {
        Self {
            client_id: "Iv1.b507a08c87ecfe98".into(),
            github_url: "https://{domain}".into(),
            github_api_url: "https://api.{domain}".into(),
            copilot_api_url: None,
            enable_models: true,
            device_flow_second: Duration::from_secs(1),
            request_timeout: Duration::from_secs(30),
            login_timeout: Duration::from_secs(15 * 60),
        }
    }
}

/// The `github-copilot` OAuth provider.
#[derive(Clone, Debug, Default)]
pub struct GitHubCopilotOAuthProvider {
    config: GitHubCopilotOAuthConfig,
}

/// The host name of a GitHub Enterprise URL or bare domain, or `None` for blank or invalid
/// input (pi's `normalizeDomain`).
pub fn normalize_domain(input: &str) -> Option<String> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return None;
    }
    let url = if trimmed.contains("://") {
        url::Url::parse(trimmed)
    } else {
        url::Url::parse(&format!("https://{trimmed}"))
    };
    url.ok()?.host_str().map(str::to_owned)
}

/// The Copilot API base URL for a Copilot token: `https://api.<x>` from the token's
/// `proxy-ep=proxy.<x>`, else `https://copilot-api.<enterprise domain>`, else
/// `https://api.individual.githubcopilot.com` (pi's `getGitHubCopilotBaseUrl`).
pub fn get_github_copilot_base_url(token: Option<&str>, enterprise_domain: Option<&str>) -> String {
    if let Some(url) = token.and_then(base_url_from_token) {
        return url;
    }
    match enterprise_domain.filter(|d| !d.is_empty()) {
        Some(domain) => format!("https://copilot-api.{domain}"),
        None => "https://api.individual.githubcopilot.com".into(),
    }
}

/// `https://api.<x>` from `...;proxy-ep=proxy.<x>;...`.
fn base_url_from_token(token: &str) -> Option<String> {
    let start = token.find("proxy-ep=")? + "proxy-ep=".len();
    let host = token[start..].split(';').next().filter(|h| !h.is_empty())?;
    let host = host
        .strip_prefix("proxy.")
        .map_or_else(|| host.to_owned(), |rest| format!("api.{rest}"));
    Some(format!("https://{host}"))
}

/// A started device flow.
struct DeviceCode {
    device_code: String,
    user_code: String,
    verification_uri: String,
    interval: f64,
    expires_in: f64,
}

impl GitHubCopilotOAuthProvider {
    /// A provider with these endpoints and limits.
    pub fn new(config: GitHubCopilotOAuthConfig) -> Self {
        Self { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &GitHubCopilotOAuthConfig {
        &self.config
    }

    fn github_url(&self, domain: &str, path: &str) -> String {
        format!(
            "{}{path}",
            self.config.github_url.replace("{domain}", domain)
        )
    }

    fn copilot_token_url(&self, domain: &str) -> String {
        format!(
            "{}/copilot_internal/v2/token",
            self.config.github_api_url.replace("{domain}", domain)
        )
    }

    fn copilot_api_url(&self, token: &str, enterprise_domain: Option<&str>) -> String {
        self.config
            .copilot_api_url
            .clone()
            .unwrap_or_else(|| get_github_copilot_base_url(Some(token), enterprise_domain))
    }

    async fn run_login(
        &self,
        callbacks: &dyn OAuthLoginCallbacks,
        cancel: &CancellationToken,
    ) -> Result<OAuthCredentials, OAuthError> {
        let answer = bounded(
            callbacks.on_prompt(OAuthPrompt {
                message: "GitHub Enterprise URL/domain (blank for github.com)".into(),
                placeholder: Some("company.ghe.com".into()),
                allow_empty: Some(true),
            }),
            cancel,
            deadline_after(self.config.login_timeout),
            "the GitHub Enterprise domain",
        )
        .await?;
        let enterprise_domain = normalize_domain(&answer);
        if !answer.trim().is_empty() && enterprise_domain.is_none() {
            return Err(OAuthError::InvalidEnterpriseDomain);
        }
        let domain = enterprise_domain.as_deref().unwrap_or("github.com");
        let device = cancellable(self.start_device_flow(domain), cancel).await?;
        callbacks.on_auth(OAuthAuthInfo {
            url: device.verification_uri.clone(),
            instructions: Some(format!("Enter code: {}", device.user_code)),
        });
        let github_token = self.poll_for_github_token(domain, &device, cancel).await?;
        let credentials = cancellable(
            self.copilot_token(&github_token, enterprise_domain.as_deref()),
            cancel,
        )
        .await?;
        if self.config.enable_models {
            callbacks.on_progress("Enabling models...");
            let enable = async {
                self.enable_all_models(credentials.access.expose(), enterprise_domain.as_deref())
                    .await;
                Ok(())
            };
            cancellable(enable, cancel).await?;
        }
        Ok(credentials)
    }

    /// A device-flow POST to GitHub: the client id, then `first` and `second` as the form.
    fn device_flow_request(
        &self,
        url: &str,
        first: (&str, &str),
        second: Option<(&str, &str)>,
    ) -> reqwest::RequestBuilder {
        let mut form = vec![("client_id", self.config.client_id.as_str()), first];
        form.extend(second);
        http()
            .post(url)
            .header("Accept", "application/json")
            .header("User-Agent", COPILOT_HEADERS[0].1)
            .form(&form)
    }

    async fn start_device_flow(&self, domain: &str) -> Result<DeviceCode, OAuthError> {
        let url = self.github_url(domain, "/login/device/code");
        let request = self.device_flow_request(&url, ("scope", "read:user"), None);
        let json = fetch_json(request, &url, self.config.request_timeout).await?;
        let mut fields = Fields::new(&json);
        let device = DeviceCode {
            device_code: fields.string("device_code").to_owned(),
            user_code: fields.string("user_code").to_owned(),
            verification_uri: fields.string("verification_uri").to_owned(),
            interval: fields.number("interval"),
            expires_in: fields.number("expires_in"),
        };
        fields.check(&url)?;
        Ok(device)
    }

    /// Polls until the user authorises the device, GitHub refuses, or the code expires.
    async fn poll_for_github_token(
        &self,
        domain: &str,
        device: &DeviceCode,
        cancel: &CancellationToken,
    ) -> Result<String, OAuthError> {
        let second = self.config.device_flow_second;
        let url = self.github_url(domain, "/login/oauth/access_token");
        let expires = second.mul_f64(device.expires_in.clamp(0.0, 86_400.0));
        let deadline = Instant::now() + expires.min(self.config.login_timeout);
        let mut interval = second.mul_f64(device.interval.clamp(1.0, 3_600.0));
        let mut multiplier = INITIAL_POLL_INTERVAL_MULTIPLIER;
        let mut slow_downs = 0_u32;
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let wait = interval.mul_f64(multiplier).min(deadline - now);
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(OAuthError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
            let request = self.device_flow_request(
                &url,
                ("device_code", &device.device_code),
                Some(("grant_type", "urn:ietf:params:oauth:grant-type:device_code")),
            );
            let json = cancellable(
                fetch_json(request, &url, self.config.request_timeout),
                cancel,
            )
            .await?;
            if let Some(token) = string_field(&json, "access_token") {
                return Ok(token.to_owned());
            }
            match string_field(&json, "error") {
                Some("authorization_pending") | None => {}
                Some("slow_down") => {
                    slow_downs += 1;
                    interval = match number_field(&json, "interval") {
                        Some(seconds) if seconds > 0.0 => second.mul_f64(seconds.min(3_600.0)),
                        _ => (interval + second * 5).max(second),
                    };
                    multiplier = SLOW_DOWN_POLL_INTERVAL_MULTIPLIER;
                }
                Some(error) => {
                    return Err(OAuthError::DeviceFlow {
                        error: error.to_owned(),
                        description: string_field(&json, "error_description")
                            .filter(|d| !d.is_empty())
                            .map(str::to_owned),
                    });
                }
            }
        }
        Err(OAuthError::DeviceFlowTimedOut {
            slow_down: slow_downs > 0,
        })
    }

    /// Exchanges a GitHub token for a Copilot token (pi's `refreshGitHubCopilotToken`).
    async fn copilot_token(
        &self,
        github_token: &str,
        enterprise_domain: Option<&str>,
    ) -> Result<OAuthCredentials, OAuthError> {
        let domain = enterprise_domain
            .filter(|d| !d.is_empty())
            .unwrap_or("github.com");
        let url = self.copilot_token_url(domain);
        let mut request = http()
            .get(&url)
            .header("Accept", "application/json")
            .bearer_auth(github_token);
        for (name, value) in COPILOT_HEADERS {
            request = request.header(name, value);
        }
        let json = fetch_json(request, &url, self.config.request_timeout).await?;
        let mut fields = Fields::new(&json);
        let token = fields.string("token");
        let expires_at = fields.number("expires_at");
        fields.check(&url)?;
        let mut credentials = OAuthCredentials::new(
            token,
            github_token,
            expiry_after(0, expires_at, EXPIRY_MARGIN_MS),
        );
        if let Some(domain) = enterprise_domain {
            credentials
                .extra
                .insert("enterpriseUrl".into(), Value::String(domain.to_owned()));
        }
        Ok(credentials)
    }

    /// Accepts the policy of every catalog Copilot model; failures are ignored, as in pi
    /// (some models need it before first use, others refuse it).
    async fn enable_all_models(&self, token: &str, enterprise_domain: Option<&str>) {
        let base_url = self.copilot_api_url(token, enterprise_domain);
        let requests = get_models(PROVIDER_ID).into_iter().map(|model| {
            let url = format!("{base_url}/models/{}/policy", model.id);
            async move {
                let mut request = http()
                    .post(&url)
                    .header("Content-Type", "application/json")
                    .bearer_auth(token)
                    .header("openai-intent", "chat-policy")
                    .header("x-interaction-type", "chat-policy")
                    .body(r#"{"state":"enabled"}"#);
                for (name, value) in COPILOT_HEADERS {
                    request = request.header(name, value);
                }
                succeeds(request, &url, self.config.request_timeout).await
            }
        });
        stream::iter(requests)
            .buffer_unordered(POLICY_CONCURRENCY)
            .for_each(|_| async {})
            .await;
    }
}

impl OAuthProvider for GitHubCopilotOAuthProvider {
    fn id(&self) -> &str {
        PROVIDER_ID
    }

    fn name(&self) -> &str {
        "GitHub Copilot"
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
        Box::pin(self.copilot_token(credentials.refresh.expose(), credentials.enterprise_url()))
    }

    /// Points every `github-copilot` model at the API host of this account's token.
    fn modify_models(&self, models: Vec<Model>, credentials: &OAuthCredentials) -> Vec<Model> {
        let domain = credentials.enterprise_url().and_then(normalize_domain);
        let base_url = self.copilot_api_url(credentials.access.expose(), domain.as_deref());
        models
            .into_iter()
            .map(|mut model| {
                if model.provider == PROVIDER_ID {
                    model.base_url.clone_from(&base_url);
                }
                model
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_normalised_like_pi() {
        assert_eq!(normalize_domain("  "), None);
        assert_eq!(
            normalize_domain("company.ghe.com").as_deref(),
            Some("company.ghe.com")
        );
        assert_eq!(
            normalize_domain("https://Company.GHE.com/login?x=1").as_deref(),
            Some("company.ghe.com")
        );
        assert_eq!(normalize_domain("http://"), None);
        assert_eq!(normalize_domain("bad domain"), None);
    }

    #[test]
    fn base_url_comes_from_the_token_then_the_domain() {
        let token = "tid=1;exp=2;proxy-ep=proxy.business.githubcopilot.com;sku=x";
        assert_eq!(
            get_github_copilot_base_url(Some(token), Some("company.ghe.com")),
            "https://api.business.githubcopilot.com"
        );
        assert_eq!(
            get_github_copilot_base_url(Some("tid=1;proxy-ep=copilot.example;"), None),
            "https://copilot.example"
        );
        assert_eq!(
            get_github_copilot_base_url(Some("tid=1"), Some("company.ghe.com")),
            "https://copilot-api.company.ghe.com"
        );
        assert_eq!(
            get_github_copilot_base_url(None, None),
            "https://api.individual.githubcopilot.com"
        );
    }
}
