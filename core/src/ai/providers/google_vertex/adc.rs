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
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use super::super::environment::Environment;
use super::super::http::{self, Limits, read_error_body};
use super::answer::capped_text;
use super::credentials::{CLOUD_PLATFORM_SCOPE, Credentials, CredentialsFileError};
use super::external::{external_token, impersonated_token};
use super::jwt::signed_assertion;
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::options::{ApiKey, StreamOptions};

/// The JWT bearer grant of a service account.
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// A token is fetched again this long before it expires.
const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);
/// The longest a token is kept, whatever lifetime its server gave (Google's last an hour).
const MAX_CACHED: Duration = Duration::from_secs(24 * 60 * 60);

/// Lifetime of a token whose response says none.
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

/// Why no Application Default Credentials could be loaded. The messages name the file and
/// what is wrong with it (see [`CredentialsFileError`]), never a secret.
#[derive(Debug, Error)]
pub(crate) enum AdcError {
    /// No file (none named, and gcloud's is not there) and no metadata server to ask.
    #[error("{}", NO_CREDENTIALS)]
    NoCredentials,
    /// The file is there (or named) but cannot be read.
    #[error("Could not read the Application Default Credentials file {}: {source}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// The file is read but does not hold usable credentials.
    #[error("Could not use the Application Default Credentials file {}: {source}", .path.display())]
    Unusable {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: CredentialsFileError,
    },
}

impl From<AdcError> for ProviderError {
    /// Missing or broken credentials are an `auth` failure.
    fn from(error: AdcError) -> Self {
        ProviderError::other(error.to_string(), Some(ErrorKind::Auth))
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
pub(crate) fn load(env: &Environment) -> Result<Credentials, AdcError> {
    let from_file = match credentials_path(env) {
        Some(path) => read_file(&path, env.var("GOOGLE_APPLICATION_CREDENTIALS").is_some())
            .map(|credentials| credentials.with_environment(env)),
        None => Err(AdcError::NoCredentials),
    };
    match from_file {
        Err(AdcError::NoCredentials) => metadata_server(env)
            .map(Credentials::Metadata)
            .ok_or(AdcError::NoCredentials),
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
    // Past its size bound, as unreadable: no token.
    let text = match tokio::time::timeout(METADATA_TIMEOUT, capped_text(response)).await {
        Ok(Ok(Some(text))) => text,
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

fn read_file(path: &Path, named: bool) -> Result<Credentials, AdcError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && !named => {
            return Err(AdcError::NoCredentials);
        }
        Err(source) => {
            return Err(AdcError::Unreadable {
                path: path.to_owned(),
                source,
            });
        }
    };
    Credentials::parse(&text).map_err(|source| AdcError::Unusable {
        path: path.to_owned(),
        source,
    })
}

/// A token and when to stop using it.
#[derive(Clone)]
struct CachedToken {
    token: ApiKey,
    refresh_at: Instant,
}

/// One credential's token, and its last failed fetch: requests that waited for that fetch get
/// its error instead of fetching again, one after another (ten requests at a failing token
/// endpoint would otherwise take ten times its retries). A request that comes later fetches.
#[derive(Default)]
struct TokenSlot {
    token: Option<CachedToken>,
    failed: Option<(Instant, ProviderError)>,
}

type Slot = Arc<tokio::sync::Mutex<TokenSlot>>;

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
    let waiting_since = Instant::now();
    let mut cached = slot.lock().await;
    if let Some(token) = cached
        .token
        .as_ref()
        .filter(|token| Instant::now() < token.refresh_at)
    {
        return Ok(token.token.clone());
    }
    if let Some((_, error)) = cached
        .failed
        .as_ref()
        .filter(|(at, _)| *at >= waiting_since)
    {
        return Err(error.clone());
    }
    let (token, lifetime) = match fetch_token(credentials, options).await {
        Ok(fetched) => fetched,
        Err(error) => {
            // A timeout is the fetching request's own limit: a waiter tries under its own.
            if !matches!(error, ProviderError::Timeout(_)) {
                cached.failed = Some((Instant::now(), error.clone()));
            }
            return Err(error);
        }
    };
    cached.failed = None;
    cached.token = Some(CachedToken {
        token: token.clone(),
        // The server's lifetime, up to a day (an absurd `expires_in` would overflow `Instant`).
        refresh_at: Instant::now() + lifetime.min(MAX_CACHED).saturating_sub(REFRESH_MARGIN),
    });
    Ok(token)
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<Value>,
}

/// The longest a token request waits for its answer when the request timeout is off.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a token request may wait for its answer: the request timeout; with that turned
/// off (a model that may think for long), the idle timeout up to [`TOKEN_TIMEOUT`]. A token
/// endpoint answers at once, and one that never does must not hold the request for ever.
fn token_timeout(limits: &Limits) -> Duration {
    limits.request_timeout.unwrap_or_else(|| {
        limits
            .idle_timeout
            .map_or(TOKEN_TIMEOUT, |idle| idle.min(TOKEN_TIMEOUT))
    })
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
            // The source credentials' token comes first (cached like any other); asking for it
            // here keeps the recursion in this module, so the exchanges never call back up.
            let source = Box::pin(access_token(&impersonated.source, options)).await?;
            return impersonated_token(impersonated, &source).await;
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
        let timeout = token_timeout(&limits);
        let sent: Result<reqwest::Response, ProviderError> =
            match tokio::time::timeout(timeout, request).await {
                Ok(result) => result.map_err(|error| http::transport_error(&error)),
                Err(_) => Err(ProviderError::Timeout(format!(
                    "timed out after {} ms",
                    timeout.as_millis()
                ))),
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
        assert_eq!(load(&missing).unwrap_err().to_string(), NO_CREDENTIALS);
        let named_missing =
            Environment::fixed([("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent-pi/sa.json")]);
        let error = load(&named_missing).unwrap_err().to_string();
        assert!(
            error.starts_with(
                "Could not read the Application Default Credentials file /nonexistent-pi/sa.json"
            ),
            "{error}"
        );
    }
}
