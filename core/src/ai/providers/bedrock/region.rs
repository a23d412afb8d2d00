//! The region of a request whose profile must supply it (pi leaves it to the AWS SDK when
//! `AWS_PROFILE` is set and neither the request nor `AWS_REGION` / `AWS_DEFAULT_REGION` names
//! one): the SDK's own region providers after the environment, in the SDK's order,
//!
//! 1. the profile's `region` in the shared config file (following `source_profile`, as the
//!    SDK does),
//! 2. EC2 instance metadata (`/latest/meta-data/placement/region`, IMDSv2), unless
//!    `AWS_EC2_METADATA_DISABLED=true`,
//!
//! each bounded by [`REGION_TIMEOUT`] (and instance metadata by the credential chain's short
//! connect/read timeouts and attempts), so a machine that is not on EC2 gets the error "Region
//! is missing" within seconds, never a hang. A region found is kept for the configuration (the
//! same key as the credentials' cache).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use aws_config::imds::region::ImdsRegionProvider;
use aws_config::meta::region::ProvideRegion;
use aws_config::profile::ProfileFileRegionProvider;
use aws_config::provider_config::ProviderConfig;

use super::chain::{cache_key, imds_client};
use super::config::ConfigError;
use super::sdk_http::ReqwestHttpClient;

/// The bound on each region source.
pub(crate) const REGION_TIMEOUT: Duration = Duration::from_secs(10);

/// Regions found, per configuration.
static FOUND: LazyLock<Mutex<HashMap<[u8; 32], String>>> = LazyLock::new(Default::default);

/// The region for `profile` from its shared config, else from instance metadata.
pub(crate) async fn profile_region(profile: &str) -> Result<String, ConfigError> {
    // `\u{1}` keeps these keys apart from the credentials' (which hash a real region).
    let key = cache_key(Some(profile), "\u{1}region");
    if let Some(region) = FOUND
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return Ok(region.clone());
    }
    let config = ProviderConfig::default().with_http_client(ReqwestHttpClient);
    let from_profile = ProfileFileRegionProvider::builder()
        .configure(&config)
        .profile_name(profile)
        .build();
    let from_imds = ImdsRegionProvider::builder()
        .configure(&config)
        .imds_client(imds_client(&config))
        .build();
    let sources: [(&str, Box<dyn ProvideRegion>); 2] = [
        ("the profile", Box::new(from_profile)),
        ("EC2 instance metadata", Box::new(from_imds)),
    ];
    let mut tried = Vec::new();
    for (name, source) in sources {
        match tokio::time::timeout(REGION_TIMEOUT, source.region()).await {
            Ok(Some(region)) if !region.as_ref().is_empty() => {
                let region = region.as_ref().to_owned();
                tracing::debug!(target: "pi_agent::bedrock", source = name, %region, "AWS region resolved");
                FOUND
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key, region.clone());
                return Ok(region);
            }
            Ok(_) => tried.push(name.to_owned()),
            Err(_) => tried.push(format!(
                "{name} (no answer within {} s)",
                REGION_TIMEOUT.as_secs()
            )),
        }
    }
    Err(ConfigError::RegionNotFound {
        profile: profile.to_owned(),
        tried,
    })
}
