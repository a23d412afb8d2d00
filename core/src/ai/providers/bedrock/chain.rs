//! AWS credentials from the AWS SDK's own providers (`aws-config`), in the SDK's standard
//! order, for a provider that reads the process environment:
//!
//! 1. **environment**: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`);
//!    skipped when a profile is named (the request's `profile` or `AWS_PROFILE`), as pi's SDK
//!    does;
//! 2. **profile** (named, else `default`) in the shared files (`AWS_CONFIG_FILE`,
//!    `AWS_SHARED_CREDENTIALS_FILE`, `~/.aws/`): static keys, SSO (`sso_session` /
//!    `sso_start_url`, from the SSO token cache), assume-role chains (`role_arn` with
//!    `source_profile` or `credential_source`), `web_identity_token_file`, `credential_process`;
//! 3. **web identity**: `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN` (EKS IRSA), through STS
//!    `AssumeRoleWithWebIdentity`;
//! 4. **ECS container** endpoint: `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` /
//!    `AWS_CONTAINER_CREDENTIALS_FULL_URI` (+ `AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]`);
//! 5. **EC2 instance metadata** (IMDSv2: a session token, then the role's credentials), unless
//!    `AWS_EC2_METADATA_DISABLED=true`.
//!
//! The SDK's endpoint overrides apply (`AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL_SSO`,
//! `AWS_EC2_METADATA_SERVICE_ENDPOINT`, ...). A source that is not configured passes to the
//! next; one that is configured but fails ends the search with its error (as the SDK's default
//! chain). The error names every source tried and never holds a credential.
//!
//! Credentials are cached per configuration (profile, region and the `AWS_*` variables) and
//! fetched again [`REFRESH_BEFORE_EXPIRY`] before they expire; concurrent requests share one
//! fetch. Every metadata call is bounded
//! (the SDK's connect/read timeouts, fewer IMDS attempts) and the whole search by
//! [`CHAIN_TIMEOUT`], so a missing endpoint gives an error, never a hang.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use aws_config::ecs::EcsCredentialsProvider;
use aws_config::environment::credentials::EnvironmentVariableCredentialsProvider;
use aws_config::imds;
use aws_config::imds::credentials::ImdsCredentialsProvider;
use aws_config::profile::ProfileFileCredentialsProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::web_identity_token::WebIdentityTokenCredentialsProvider;
use aws_credential_types::Credentials;
use aws_credential_types::provider::ProvideCredentials;
use aws_credential_types::provider::error::CredentialsError as SdkError;
use aws_types::region::Region;
use sha2::{Digest, Sha256};
use thiserror::Error;

use super::credentials::AwsCredentials;
use super::sdk_http::ReqwestHttpClient;
use crate::ai::options::ApiKey;

/// Cached credentials are fetched again this long before they expire (the SDK's identity cache
/// refreshes in the same window), so a request is never signed with credentials about to lapse.
pub(crate) const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(5 * 60);

/// The bound on one source (its STS/SSO round trips or metadata calls included).
pub(crate) const SOURCE_TIMEOUT: Duration = Duration::from_secs(20);

/// The bound on the whole search.
pub(crate) const CHAIN_TIMEOUT: Duration = Duration::from_secs(45);

/// The instance metadata connect and read timeouts (the SDK's), and attempts (the SDK makes 4;
/// two keep a machine that is not on EC2 from waiting long).
const IMDS_TIMEOUT: Duration = Duration::from_secs(1);
const IMDS_ATTEMPTS: u32 = 2;

/// Why the chain gave no credentials. Never contains a secret.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub(crate) enum ChainError {
    /// No source is configured.
    #[error(
        "No AWS credentials for Amazon Bedrock; tried: {tried}. Set AWS_ACCESS_KEY_ID and \
         AWS_SECRET_ACCESS_KEY, AWS_PROFILE, a web identity or container credentials, or \
         AWS_BEARER_TOKEN_BEDROCK"
    )]
    NotFound {
        /// Each source with why it gave nothing.
        tried: String,
    },
    /// A configured source failed.
    #[error("AWS credentials from {source_name} failed: {reason} (tried: {tried})")]
    Failed {
        /// The source that failed.
        source_name: String,
        /// Its error.
        reason: String,
        /// The sources tried before it, and it.
        tried: String,
    },
    /// The search took longer than [`CHAIN_TIMEOUT`].
    #[error("No AWS credentials for Amazon Bedrock within {seconds} s (tried: {tried})")]
    TimedOut {
        /// The bound.
        seconds: u64,
        /// The sources tried.
        tried: String,
    },
}

struct Cached {
    credentials: AwsCredentials,
    expiry: Option<SystemTime>,
}

type Slot = Arc<tokio::sync::Mutex<Option<Cached>>>;

/// One slot per configuration; its async lock makes concurrent requests share one fetch.
static CACHE: LazyLock<Mutex<HashMap<[u8; 32], Slot>>> = LazyLock::new(Default::default);

/// What the cache is keyed on: the profile, the region and every `AWS_*` variable (hashed, so
/// no secret is kept twice), so that a changed environment never reuses old credentials.
pub(super) fn cache_key(profile: Option<&str>, region: &str) -> [u8; 32] {
    let mut vars: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| name.starts_with("AWS_") || name == "HOME")
        .collect();
    vars.sort();
    let mut hash = Sha256::new();
    hash.update(profile.unwrap_or("\0").as_bytes());
    hash.update([0]);
    hash.update(region.as_bytes());
    for (name, value) in vars {
        hash.update([0]);
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update(value.as_bytes());
    }
    hash.finalize().into()
}

fn fresh(cached: &Cached, now: SystemTime) -> bool {
    cached
        .expiry
        .is_none_or(|expiry| now + REFRESH_BEFORE_EXPIRY < expiry)
}

/// The credentials of the chain for `profile` (the request's, else `AWS_PROFILE` is read by the
/// SDK) with STS in `region`: from the cache while they are fresh, else from the sources.
pub(crate) async fn credentials(
    profile: Option<&str>,
    region: &str,
) -> Result<AwsCredentials, ChainError> {
    let slot = Arc::clone(
        CACHE
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(cache_key(profile, region))
            .or_default(),
    );
    let mut cached = slot.lock().await;
    if let Some(fresh) = cached.as_ref().filter(|c| fresh(c, SystemTime::now())) {
        return Ok(fresh.credentials.clone());
    }
    let found = load(profile, region).await?;
    let credentials = AwsCredentials {
        access_key_id: found.access_key_id().to_owned(),
        secret_access_key: ApiKey::new(found.secret_access_key()),
        session_token: found.session_token().map(ApiKey::new),
    };
    *cached = Some(Cached {
        credentials: credentials.clone(),
        expiry: found.expiry(),
    });
    Ok(credentials)
}

type Source = (String, Box<dyn ProvideCredentials>);

/// The sources in order (see the module docs).
fn sources(profile: Option<&str>, region: &str) -> Vec<Source> {
    let config = ProviderConfig::default()
        .with_http_client(ReqwestHttpClient)
        .with_region(Some(Region::new(region.to_owned())));
    let named = profile
        .map(str::to_owned)
        .or_else(|| std::env::var("AWS_PROFILE").ok().filter(|p| !p.is_empty()));
    let mut out: Vec<Source> = Vec::new();
    if named.is_none() {
        out.push((
            "environment".into(),
            Box::new(EnvironmentVariableCredentialsProvider::new()),
        ));
    }
    let mut profile_provider = ProfileFileCredentialsProvider::builder().configure(&config);
    if let Some(name) = profile {
        profile_provider = profile_provider.profile_name(name);
    }
    out.push((
        format!("profile `{}`", named.as_deref().unwrap_or("default")),
        Box::new(profile_provider.build()),
    ));
    out.push((
        "web identity".into(),
        Box::new(
            WebIdentityTokenCredentialsProvider::builder()
                .configure(&config)
                .build(),
        ),
    ));
    out.push((
        "ECS container endpoint".into(),
        Box::new(EcsCredentialsProvider::builder().configure(&config).build()),
    ));
    out.push((
        "EC2 instance metadata".into(),
        Box::new(
            ImdsCredentialsProvider::builder()
                .configure(&config)
                .imds_client(imds_client(&config))
                .build(),
        ),
    ));
    out
}

/// An instance metadata client with short timeouts and few attempts (see [`IMDS_TIMEOUT`]).
pub(super) fn imds_client(config: &ProviderConfig) -> imds::Client {
    imds::Client::builder()
        .configure(config)
        .connect_timeout(IMDS_TIMEOUT)
        .read_timeout(IMDS_TIMEOUT)
        .max_attempts(IMDS_ATTEMPTS)
        .build()
}

/// The reason of an SDK error: the `Display` of it and of its sources, joined. Never their
/// `Debug` (which the SDK's `DisplayErrorContext` appends): that shows raw responses, whose
/// bodies can hold a metadata token or credentials.
fn reason(error: &SdkError) -> String {
    let mut out = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(next) = source {
        let text = next.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = next.source();
    }
    out
}

async fn load(profile: Option<&str>, region: &str) -> Result<Credentials, ChainError> {
    let mut tried = String::new();
    let search = async {
        for (name, source) in sources(profile, region) {
            if !tried.is_empty() {
                tried.push_str("; ");
            }
            let outcome = tokio::time::timeout(SOURCE_TIMEOUT, source.provide_credentials()).await;
            match outcome {
                Ok(Ok(credentials)) => {
                    let _ = write!(tried, "{name} (used)");
                    tracing::debug!(target: "pi_agent::bedrock", source = %name, "AWS credentials loaded");
                    return Ok(credentials);
                }
                Ok(Err(error @ SdkError::CredentialsNotLoaded(_))) => {
                    let _ = write!(tried, "{name} (not configured: {})", reason(&error));
                }
                Ok(Err(error)) => {
                    let reason = reason(&error);
                    let _ = write!(tried, "{name} (failed)");
                    return Err(ChainError::Failed {
                        source_name: name,
                        reason,
                        tried: tried.clone(),
                    });
                }
                Err(_) => {
                    let _ = write!(
                        tried,
                        "{name} (no answer within {} s)",
                        SOURCE_TIMEOUT.as_secs()
                    );
                    return Err(ChainError::Failed {
                        source_name: name,
                        reason: format!("no answer within {} s", SOURCE_TIMEOUT.as_secs()),
                        tried: tried.clone(),
                    });
                }
            }
        }
        Err(ChainError::NotFound {
            tried: tried.clone(),
        })
    };
    match tokio::time::timeout(CHAIN_TIMEOUT, search).await {
        Ok(result) => result,
        Err(_) => Err(ChainError::TimedOut {
            seconds: CHAIN_TIMEOUT.as_secs(),
            tried: "every source in order".into(),
        }),
    }
}
