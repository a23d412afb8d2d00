//! Application Default Credentials: the JSON file `GOOGLE_APPLICATION_CREDENTIALS` names, else
//! the one `gcloud auth application-default login` writes
//! (`~/.config/gcloud/application_default_credentials.json`), turned into an OAuth access token
//! for the `cloud-platform` scope (what google-auth-library does for pi's Vertex provider):
//!
//! - `service_account`: a JWT signed with the account's RSA key (RS256) is exchanged at the
//!   file's `token_uri` (grant `urn:ietf:params:oauth:grant-type:jwt-bearer`);
//! - `authorized_user`: the refresh token is exchanged at `token_uri` if the file has one, else
//!   at Google's (`grant_type=refresh_token`).
//!
//! - without a file: the **metadata server** of GCE, GKE and Cloud Run (`GCE_METADATA_HOST`,
//!   else `GCE_METADATA_IP`, else `169.254.169.254`; google-auth-library's variables), asked for
//!   the default service account's token with `Metadata-Flavor: Google`, within
//!   [`METADATA_TIMEOUT`]. `METADATA_SERVER_DETECTION=none` turns it off; a provider with a
//!   fixed environment asks it only when one of the two host variables is in its map.
//!
//! - `external_account` (workload identity federation) and `impersonated_service_account`:
//!   see [`super::external`].
//!
//! Tokens are cached per credential, process-wide, and fetched again five minutes before they
//! expire (google-auth-library's margin); concurrent requests share one fetch.
//!
//! Secrets (the private key, the refresh token, the client secret, the assertion, the access
//! token) never appear in `Debug` output or in an error message.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::environment::Environment;
use super::super::http::{self, Limits, read_error_body};
use super::external::{ExternalAccount, Impersonated, external_token, impersonated_token};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::options::{ApiKey, StreamOptions};
use crate::ai::redact::Redactor;
use crate::ai::short_hash::short_hash;

/// Google's token endpoint (when a file names none).
pub(crate) const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// The scope Vertex needs.
pub(crate) const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// The JWT bearer grant of a service account.
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// A token is fetched again this long before it expires.
const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Lifetime of a token whose response says none, and of the signed assertion.
const DEFAULT_LIFETIME_SECS: u64 = 3600;

/// Attempts at the token endpoint (connection failures, 429 and 5xx are tried again).
const TOKEN_ATTEMPTS: u32 = 3;

/// The message when neither a key nor a credentials file is there.
pub(crate) const NO_CREDENTIALS: &str = "No credentials for Vertex AI: set GOOGLE_CLOUD_API_KEY \
     or pass an API key, or set up Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, \
     or `gcloud auth application-default login`).";

/// The bound on one metadata server request (google-auth-library waits about as long).
pub(crate) const METADATA_TIMEOUT: Duration = Duration::from_secs(3);

/// The metadata server when no variable names one.
const METADATA_DEFAULT_HOST: &str = "169.254.169.254";

/// A service account key file.
#[derive(Clone, Deserialize)]
pub(crate) struct ServiceAccount {
    client_email: String,
    private_key: String,
    #[serde(default)]
    private_key_id: Option<String>,
    #[serde(default)]
    token_uri: Option<String>,
    #[serde(default)]
    quota_project_id: Option<String>,
}

/// The file `gcloud auth application-default login` writes.
#[derive(Clone, Deserialize)]
pub(crate) struct AuthorizedUser {
    client_id: String,
    client_secret: String,
    refresh_token: String,
    #[serde(default)]
    token_uri: Option<String>,
    #[serde(default)]
    quota_project_id: Option<String>,
}

/// Credentials read from an ADC file.
#[derive(Clone)]
pub(crate) enum Credentials {
    /// `"type": "service_account"`.
    ServiceAccount(ServiceAccount),
    /// `"type": "authorized_user"`.
    AuthorizedUser(AuthorizedUser),
    /// The metadata server at this origin (`http://host[:port]`).
    Metadata(String),
    /// `"type": "external_account"`.
    External(Box<ExternalAccount>),
    /// `"type": "impersonated_service_account"`.
    Impersonated(Box<Impersonated>),
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Identifiers only: the key, secret and refresh token stay hidden.
        match self {
            Self::ServiceAccount(account) => f
                .debug_struct("ServiceAccount")
                .field("client_email", &account.client_email)
                .field("token_uri", &account.token_uri())
                .finish_non_exhaustive(),
            Self::AuthorizedUser(user) => f
                .debug_struct("AuthorizedUser")
                .field("client_id", &user.client_id)
                .field("token_uri", &user.token_uri())
                .finish_non_exhaustive(),
            Self::Metadata(origin) => f.debug_tuple("Metadata").field(origin).finish(),
            Self::External(account) => f
                .debug_struct("ExternalAccount")
                .field("audience", &account.audience)
                .field("token_url", &account.token_url())
                .finish_non_exhaustive(),
            Self::Impersonated(impersonated) => f
                .debug_struct("Impersonated")
                .field("url", &impersonated.url)
                .field("source", &impersonated.source)
                .finish_non_exhaustive(),
        }
    }
}

impl ServiceAccount {
    fn token_uri(&self) -> &str {
        self.token_uri
            .as_deref()
            .filter(|uri| !uri.is_empty())
            .unwrap_or(GOOGLE_TOKEN_URI)
    }
}

impl AuthorizedUser {
    fn token_uri(&self) -> &str {
        self.token_uri
            .as_deref()
            .filter(|uri| !uri.is_empty())
            .unwrap_or(GOOGLE_TOKEN_URI)
    }
}

impl Credentials {
    /// Parses an ADC file's JSON.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|error| format!("not JSON ({error})"))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let missing = |error: serde_json::Error| format!("a {kind} file without {error}");
        match kind.as_str() {
            "service_account" => serde_json::from_value(value)
                .map(Self::ServiceAccount)
                .map_err(missing),
            "authorized_user" => serde_json::from_value(value)
                .map(Self::AuthorizedUser)
                .map_err(missing),
            "external_account" => serde_json::from_value(value)
                .map(|account| Self::External(Box::new(account)))
                .map_err(missing),
            "impersonated_service_account" => {
                let url = value
                    .get("service_account_impersonation_url")
                    .and_then(Value::as_str)
                    .filter(|url| !url.is_empty())
                    .ok_or("an impersonated_service_account file without service_account_impersonation_url")?
                    .to_owned();
                let source = value
                    .get("source_credentials")
                    .ok_or("an impersonated_service_account file without source_credentials")?;
                let source = Self::parse(&source.to_string())
                    .map_err(|why| format!("its source_credentials: {why}"))?;
                let delegates = value
                    .get("delegates")
                    .and_then(Value::as_array)
                    .map(|list| {
                        list.iter()
                            .filter_map(|d| d.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                let quota_project_id = value
                    .get("quota_project_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Ok(Self::Impersonated(Box::new(Impersonated {
                    url,
                    delegates,
                    source,
                    quota_project_id,
                })))
            }
            "" => Err("no `type` field".to_owned()),
            other => Err(format!(
                "credentials of type `{other}` are not supported (use a service account key, \
                 `gcloud auth application-default login`, or an API key)"
            )),
        }
    }

    /// These credentials reading `env` (an external account's `AWS_*` variables and
    /// `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES`).
    fn with_environment(self, env: &Environment) -> Self {
        match self {
            Self::External(mut account) => {
                account.env = env.clone();
                Self::External(account)
            }
            Self::Impersonated(mut impersonated) => {
                impersonated.source = impersonated.source.with_environment(env);
                Self::Impersonated(impersonated)
            }
            other => other,
        }
    }

    /// The project billed for quota (`x-goog-user-project`), if the file names one.
    pub(crate) fn quota_project(&self) -> Option<&str> {
        match self {
            Self::ServiceAccount(account) => account.quota_project_id.as_deref(),
            Self::AuthorizedUser(user) => user.quota_project_id.as_deref(),
            Self::Metadata(_) => None,
            Self::External(account) => account.quota_project_id.as_deref(),
            Self::Impersonated(impersonated) => impersonated.quota_project_id.as_deref(),
        }
        .filter(|project| !project.is_empty())
    }

    /// The endpoint tokens come from.
    pub(crate) fn token_uri(&self) -> &str {
        match self {
            Self::ServiceAccount(account) => account.token_uri(),
            Self::AuthorizedUser(user) => user.token_uri(),
            Self::Metadata(origin) => origin,
            Self::External(account) => account.token_url(),
            Self::Impersonated(impersonated) => &impersonated.url,
        }
    }

    /// Identifies these credentials in the token cache (secrets only hashed).
    fn cache_key(&self) -> String {
        match self {
            Self::ServiceAccount(account) => format!(
                "sa|{}|{}|{}",
                account.token_uri(),
                account.client_email,
                short_hash(&account.private_key)
            ),
            Self::AuthorizedUser(user) => format!(
                "user|{}|{}|{}",
                user.token_uri(),
                user.client_id,
                short_hash(&user.refresh_token)
            ),
            Self::Metadata(origin) => format!("metadata|{origin}"),
            Self::External(account) => format!(
                "external|{}|{}|{}",
                account.token_url(),
                account.audience,
                short_hash(&format!("{account:?}"))
            ),
            Self::Impersonated(impersonated) => format!(
                "impersonated|{}|{}",
                impersonated.url,
                impersonated.source.cache_key()
            ),
        }
    }

    /// Every secret of these credentials, for hiding them in messages.
    fn redactor(&self) -> Redactor {
        let mut redactor = Redactor::default();
        match self {
            Self::ServiceAccount(account) => {
                redactor.add(&account.private_key);
                for line in account.private_key.lines() {
                    redactor.add(line);
                }
            }
            Self::AuthorizedUser(user) => {
                redactor.add(&user.client_secret);
                redactor.add(&user.refresh_token);
            }
            Self::Metadata(_) | Self::External(_) => {}
            Self::Impersonated(impersonated) => return impersonated.source.redactor(),
        }
        redactor
    }
}

/// The ADC file's path: `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's well-known file.
pub(crate) fn credentials_path(env: &Environment) -> Option<PathBuf> {
    if let Some(path) = env.var("GOOGLE_APPLICATION_CREDENTIALS") {
        return Some(PathBuf::from(path));
    }
    well_known_file(env)
}

#[cfg(not(windows))]
fn well_known_file(env: &Environment) -> Option<PathBuf> {
    Some(
        env.home()?
            .join(".config")
            .join("gcloud")
            .join("application_default_credentials.json"),
    )
}

#[cfg(windows)]
fn well_known_file(env: &Environment) -> Option<PathBuf> {
    let base = env.var("APPDATA").map(PathBuf::from)?;
    Some(
        base.join("gcloud")
            .join("application_default_credentials.json"),
    )
}

/// Reads the ADC file (see [`credentials_path`]).
pub(crate) fn load(env: &Environment) -> Result<Credentials, String> {
    let from_file = match credentials_path(env) {
        Some(path) => read_file(&path, env.var("GOOGLE_APPLICATION_CREDENTIALS").is_some())
            .map(|credentials| credentials.with_environment(env)),
        None => Err(NO_CREDENTIALS.to_owned()),
    };
    match from_file {
        Err(message) if message == NO_CREDENTIALS => metadata_server(env)
            .map(Credentials::Metadata)
            .ok_or(message),
        other => other,
    }
}

/// The metadata server's origin, when it may be asked (see the module docs).
fn metadata_server(env: &Environment) -> Option<String> {
    if env
        .var("METADATA_SERVER_DETECTION")
        .is_some_and(|v| v.eq_ignore_ascii_case("none"))
    {
        return None;
    }
    let named = env
        .var("GCE_METADATA_HOST")
        .or_else(|| env.var("GCE_METADATA_IP"));
    let host = match (named, env) {
        (Some(host), _) => host,
        (None, Environment::Process) => METADATA_DEFAULT_HOST.to_owned(),
        (None, Environment::Fixed(_)) => return None,
    };
    Some(format!("http://{}", host.trim_end_matches('/')))
}

/// A token from the metadata server at `origin`.
async fn metadata_token(origin: &str) -> Result<(ApiKey, Duration), ProviderError> {
    let auth = |message: String| ProviderError::other(message, Some(ErrorKind::Auth));
    let url = format!(
        "{origin}/computeMetadata/v1/instance/service-accounts/default/token?scopes={CLOUD_PLATFORM_SCOPE}"
    );
    let request = http::client()
        .get(&url)
        .header("metadata-flavor", "Google")
        .send();
    let response = match tokio::time::timeout(METADATA_TIMEOUT, request).await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => {
            return Err(auth(format!(
                "{NO_CREDENTIALS} The metadata server at {origin} did not answer: {}",
                http::transport_error_message(&error)
            )));
        }
        Err(_) => {
            return Err(auth(format!(
                "{NO_CREDENTIALS} The metadata server at {origin} did not answer within {} s.",
                METADATA_TIMEOUT.as_secs()
            )));
        }
    };
    let status = response.status();
    let flavor_ok = response
        .headers()
        .get("metadata-flavor")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"google"));
    let text = match tokio::time::timeout(METADATA_TIMEOUT, response.text()).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    if !status.is_success() || !flavor_ok {
        return Err(auth(format!(
            "Could not get a Google access token from the metadata server at {origin}: {}{}",
            status.as_u16(),
            if flavor_ok {
                ""
            } else {
                " (not a metadata server: no Metadata-Flavor: Google)"
            }
        )));
    }
    let parsed: TokenResponse = serde_json::from_str(&text)
        .ok()
        .filter(|parsed: &TokenResponse| !parsed.access_token.is_empty())
        .ok_or_else(|| {
            auth(format!(
                "Could not get a Google access token from the metadata server at {origin}: the answer holds no access_token"
            ))
        })?;
    let lifetime = parsed
        .expires_in
        .as_ref()
        .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
        .unwrap_or(DEFAULT_LIFETIME_SECS);
    Ok((
        ApiKey::new(parsed.access_token),
        Duration::from_secs(lifetime),
    ))
}

fn read_file(path: &Path, named: bool) -> Result<Credentials, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && !named => {
            return Err(NO_CREDENTIALS.to_owned());
        }
        Err(error) => {
            return Err(format!(
                "Could not read the Application Default Credentials file {}: {error}",
                path.display()
            ));
        }
    };
    Credentials::parse(&text).map_err(|why| {
        format!(
            "Could not use the Application Default Credentials file {}: {why}",
            path.display()
        )
    })
}

/// The DER bytes of a PEM private key (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY`), and
/// whether it is PKCS#8.
fn pem_der(pem: &str) -> Result<(Vec<u8>, bool), String> {
    let pkcs8 = pem.contains("-----BEGIN PRIVATE KEY-----");
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let der = STANDARD
        .decode(body.as_bytes())
        .map_err(|_| "its private_key is not a PEM key".to_owned())?;
    Ok((der, pkcs8))
}

/// The signed JWT a service account exchanges for a token (RS256, valid for an hour).
pub(crate) fn signed_assertion(account: &ServiceAccount, now_secs: u64) -> Result<String, String> {
    use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
    let (der, pkcs8) = pem_der(&account.private_key)?;
    let key = if pkcs8 {
        RsaKeyPair::from_pkcs8(&der)
    } else {
        RsaKeyPair::from_der(&der)
    }
    .map_err(|why| format!("its private_key is not a usable RSA key ({why})"))?;
    let mut header = json!({"alg": "RS256", "typ": "JWT"});
    if let Some(id) = account
        .private_key_id
        .as_deref()
        .filter(|id| !id.is_empty())
    {
        header["kid"] = json!(id);
    }
    let claims = json!({
        "iss": account.client_email,
        "scope": CLOUD_PLATFORM_SCOPE,
        "aud": account.token_uri(),
        "iat": now_secs,
        "exp": now_secs + DEFAULT_LIFETIME_SECS,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "signing with its private_key failed".to_owned())?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

/// A token and when to stop using it.
#[derive(Clone)]
struct CachedToken {
    token: ApiKey,
    refresh_at: Instant,
}

type Slot = Arc<tokio::sync::Mutex<Option<CachedToken>>>;

/// One slot per credential; the async lock makes concurrent requests share one fetch.
static TOKENS: LazyLock<Mutex<HashMap<String, Slot>>> = LazyLock::new(Mutex::default);

/// An access token for `credentials`: the cached one while it has more than five minutes left,
/// else a fresh one from the token endpoint (within the request's time limits).
pub(crate) async fn access_token(
    credentials: &Credentials,
    options: &StreamOptions,
) -> Result<ApiKey, ProviderError> {
    let slot = Arc::clone(
        TOKENS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(credentials.cache_key())
            .or_default(),
    );
    let mut cached = slot.lock().await;
    if let Some(token) = cached
        .as_ref()
        .filter(|token| Instant::now() < token.refresh_at)
    {
        return Ok(token.token.clone());
    }
    let (token, lifetime) = fetch_token(credentials, options).await?;
    *cached = Some(CachedToken {
        token: token.clone(),
        refresh_at: Instant::now() + lifetime.saturating_sub(REFRESH_MARGIN),
    });
    Ok(token)
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<Value>,
}

/// Asks the token endpoint for a token; returns it and its lifetime. A refused token request
/// is an `auth` error (a rate limit, a server failure, a network failure or a timeout when
/// that is what stopped it).
async fn fetch_token(
    credentials: &Credentials,
    options: &StreamOptions,
) -> Result<(ApiKey, Duration), ProviderError> {
    let auth = |message: String| ProviderError::other(message, Some(ErrorKind::Auth));
    let mut redactor = credentials.redactor();
    let form: Vec<(&str, String)> = match credentials {
        Credentials::Metadata(origin) => return metadata_token(origin).await,
        Credentials::External(account) => return external_token(account).await,
        Credentials::Impersonated(impersonated) => {
            return impersonated_token(impersonated, options).await;
        }
        Credentials::ServiceAccount(account) => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let assertion = signed_assertion(account, now).map_err(|why| {
                auth(format!(
                    "Could not use the service account {}: {why}",
                    account.client_email
                ))
            })?;
            redactor.add(&assertion);
            vec![
                ("grant_type", JWT_BEARER_GRANT.to_owned()),
                ("assertion", assertion),
            ]
        }
        Credentials::AuthorizedUser(user) => vec![
            ("grant_type", "refresh_token".to_owned()),
            ("client_id", user.client_id.clone()),
            ("client_secret", user.client_secret.clone()),
            ("refresh_token", user.refresh_token.clone()),
        ],
    };
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    let uri = credentials.token_uri();
    let limits = Limits::new(options);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let request = http::client()
            .post(uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body.clone())
            .send();
        let sent: Result<reqwest::Response, ProviderError> = match limits.request_timeout {
            Some(timeout) => match tokio::time::timeout(timeout, request).await {
                Ok(result) => result.map_err(|error| http::transport_error(&error)),
                Err(_) => Err(ProviderError::Timeout(format!(
                    "timed out after {} ms",
                    timeout.as_millis()
                ))),
            },
            None => request.await.map_err(|error| http::transport_error(&error)),
        };
        let failure = match sent {
            Ok(response) => {
                let status = response.status();
                let (text, _) = read_error_body(response, &limits).await;
                if status.is_success() {
                    let parsed: TokenResponse = serde_json::from_str(&text).map_err(|_| {
                        auth(format!("Could not get a Google access token from {uri}: the answer holds no access_token"))
                    })?;
                    redactor.add(&parsed.access_token);
                    let lifetime = parsed
                        .expires_in
                        .as_ref()
                        .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
                        .unwrap_or(DEFAULT_LIFETIME_SECS);
                    if parsed.access_token.is_empty() {
                        return Err(auth(format!(
                            "Could not get a Google access token from {uri}: the answer holds no access_token"
                        )));
                    }
                    return Ok((
                        ApiKey::new(parsed.access_token),
                        Duration::from_secs(lifetime),
                    ));
                }
                let message = format!(
                    "Could not get a Google access token from {uri}: {} {}",
                    status.as_u16(),
                    token_error_message(&text)
                );
                let retryable = status.as_u16() == 429 || status.is_server_error();
                let kind = match ErrorKind::from_status(status.as_u16()) {
                    Some(kind @ (ErrorKind::RateLimit | ErrorKind::Server)) => kind,
                    _ => ErrorKind::Auth,
                };
                let message = redactor.redact(&message);
                (ProviderError::other(message, Some(kind)), retryable)
            }
            Err(why) => (
                why.map_message(|why| {
                    redactor.redact(&format!(
                        "Could not get a Google access token from {uri}: {why}"
                    ))
                }),
                true,
            ),
        };
        match failure {
            (_, true) if attempt < TOKEN_ATTEMPTS => {
                tokio::time::sleep(Duration::from_millis(250 << attempt)).await;
            }
            (error, _) => return Err(error),
        }
    }
}

/// `error: error_description` of an OAuth error body, else the vendor message.
fn token_error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<Value>(body)
        && let Some(error) = value.get("error").and_then(Value::as_str)
    {
        return match value.get("error_description").and_then(Value::as_str) {
            Some(description) => format!("{error}: {description}"),
            None => error.to_owned(),
        };
    }
    http::error_body_message(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICE_ACCOUNT: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/google-vertex/service_account.json"
    ));
    const AUTHORIZED_USER: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/google-vertex/authorized_user.json"
    ));

    fn decode_part(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn files_parse_and_debug_hides_secrets() {
        let account = Credentials::parse(SERVICE_ACCOUNT).unwrap();
        let user = Credentials::parse(AUTHORIZED_USER).unwrap();
        assert_eq!(user.quota_project(), Some("pi-quota-project"));
        assert_eq!(user.token_uri(), GOOGLE_TOKEN_URI);
        assert_eq!(account.quota_project(), None);
        let shown = format!("{account:?} {user:?}");
        for secret in [
            "PRIVATE KEY",
            "pi-test-client-secret",
            "pi-test-refresh-token",
        ] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("pi-test@pi-test-project.iam.gserviceaccount.com"));
        for (text, why) in [
            ("{", "not JSON"),
            ("{}", "no `type` field"),
            (r#"{"type":"external_account"}"#, "missing field `audience`"),
            (
                r#"{"type":"authorized_user","client_id":"a"}"#,
                "without missing field",
            ),
        ] {
            let error = Credentials::parse(text).unwrap_err();
            assert!(error.contains(why), "{text}: {error}");
        }
    }

    #[test]
    fn assertions_are_rs256_jwts_that_verify() {
        use ring::signature::{
            KeyPair as _, RSA_PKCS1_2048_8192_SHA256, RsaKeyPair, UnparsedPublicKey,
        };
        let Credentials::ServiceAccount(mut account) = Credentials::parse(SERVICE_ACCOUNT).unwrap()
        else {
            panic!("a service account");
        };
        account.token_uri = Some("http://127.0.0.1:9/token".into());
        let jwt = signed_assertion(&account, 1_700_000_000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(
            decode_part(parts[0]),
            json!({"alg": "RS256", "typ": "JWT", "kid": "0123456789abcdef0123456789abcdef01234567"})
        );
        assert_eq!(
            decode_part(parts[1]),
            json!({"iss": "pi-test@pi-test-project.iam.gserviceaccount.com",
                   "scope": CLOUD_PLATFORM_SCOPE, "aud": "http://127.0.0.1:9/token",
                   "iat": 1_700_000_000u64, "exp": 1_700_003_600u64})
        );
        let (der, _) = pem_der(&account.private_key).unwrap();
        let key = RsaKeyPair::from_pkcs8(&der).unwrap();
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, key.public_key().as_ref())
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the signature verifies with the account's public key");

        account.private_key =
            "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n".into();
        let error = signed_assertion(&account, 0).unwrap_err();
        assert!(error.contains("not a usable RSA key"), "{error}");
    }

    #[test]
    fn the_well_known_file_is_under_home() {
        let env = Environment::fixed([("HOME", "/home/someone")]);
        let path = credentials_path(&env).unwrap();
        assert!(
            path.ends_with(".config/gcloud/application_default_credentials.json") || cfg!(windows)
        );
        let named = Environment::fixed([("GOOGLE_APPLICATION_CREDENTIALS", "/etc/sa.json")]);
        assert_eq!(
            credentials_path(&named).unwrap(),
            PathBuf::from("/etc/sa.json")
        );
        let missing = Environment::fixed([("HOME", "/nonexistent-pi-home")]);
        assert_eq!(load(&missing).unwrap_err(), NO_CREDENTIALS);
        let named_missing =
            Environment::fixed([("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent-pi/sa.json")]);
        let error = load(&named_missing).unwrap_err();
        assert!(
            error.starts_with(
                "Could not read the Application Default Credentials file /nonexistent-pi/sa.json"
            ),
            "{error}"
        );
    }
}
