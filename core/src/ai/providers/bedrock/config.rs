//! Where a request goes: the region it is signed for and the endpoint it is sent to (pi's
//! client configuration, `amazon-bedrock.ts` `streamBedrock`).
//!
//! - The configured region is the request's, else `AWS_REGION`, else `AWS_DEFAULT_REGION`.
//! - The model's `baseUrl` is used as the endpoint when it is not a standard
//!   `bedrock-runtime.<region>.amazonaws.com` URL (a VPC endpoint, a proxy, a test server), or
//!   when neither a region nor `AWS_PROFILE` is configured; a standard URL then also gives the
//!   region.
//! - Otherwise the region defaults to `us-east-1`, unless `AWS_PROFILE` is set, in which case
//!   pi's SDK resolves it: the profile's `region` (shared config file), then — with a provider
//!   that reads the process environment — EC2 instance metadata, through the AWS SDK's own
//!   region providers ([`super::region`], asked when the request runs: [`Resolution::Pending`]).

use super::super::http;
use super::credentials::named_profile;
use super::profile_file::load_profile;
use crate::ai::error::ProviderError;
use crate::ai::providers::environment::Environment;

/// The region and endpoint of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClientConfig {
    /// The signing region.
    pub region: String,
    /// `scheme://host[:port][/path]` without a trailing slash.
    pub endpoint: String,
}

/// Where the region of a request comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Resolution {
    /// Known now.
    Ready(ClientConfig),
    /// The AWS SDK's region providers for `profile` ([`super::region::profile_region`]), asked
    /// when the request runs; `endpoint` is the explicit one, if any (else the region's).
    Pending {
        /// The profile (the request's, else `AWS_PROFILE`).
        profile: String,
        /// An explicit endpoint.
        endpoint: Option<String>,
    },
}

/// The configuration for a region found later (see [`Resolution::Pending`]).
pub(crate) fn finish(
    env: &Environment,
    region: String,
    endpoint: Option<String>,
) -> Result<ClientConfig, ConfigError> {
    if !is_valid_region(&region) {
        return Err(ConfigError::InvalidRegion { region });
    }
    let endpoint = endpoint.unwrap_or_else(|| default_endpoint(env, &region));
    Ok(ClientConfig { region, endpoint })
}

/// The region configured for the request (pi's `getConfiguredBedrockRegion`).
pub(crate) fn configured_region(env: &Environment, requested: Option<&str>) -> Option<String> {
    requested
        .filter(|region| !region.is_empty())
        .map(str::to_owned)
        .or_else(|| env.var("AWS_REGION"))
        .or_else(|| env.var("AWS_DEFAULT_REGION"))
}

/// The region of a standard Bedrock runtime URL (`bedrock-runtime[-fips].<region>.amazonaws.com`
/// or `.amazonaws.com.cn`), `None` for any other URL.
pub(crate) fn standard_endpoint_region(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    let rest = host
        .strip_prefix("bedrock-runtime-fips.")
        .or_else(|| host.strip_prefix("bedrock-runtime."))?;
    let region = rest
        .strip_suffix(".amazonaws.com")
        .or_else(|| rest.strip_suffix(".amazonaws.com.cn"))?;
    is_valid_region(region).then(|| region.to_owned())
}

/// Regions are lowercase letters, digits and dashes; anything else would change the URL.
fn is_valid_region(region: &str) -> bool {
    !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The AWS endpoint for `region` (FIPS with `AWS_USE_FIPS_ENDPOINT=true`, `.com.cn` for China).
fn default_endpoint(env: &Environment, region: &str) -> String {
    let fips = env
        .var("AWS_USE_FIPS_ENDPOINT")
        .is_some_and(|value| value.eq_ignore_ascii_case("true"));
    let suffix = if region.starts_with("cn-") {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    let service = if fips {
        "bedrock-runtime-fips"
    } else {
        "bedrock-runtime"
    };
    format!("https://{service}.{region}.{suffix}")
}

/// Why no region or endpoint could be resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConfigError {
    /// A profile is in use, but neither it nor the environment names a region.
    #[error("Region is missing: set AWS_REGION or `region` in AWS profile `{profile}`")]
    MissingRegion {
        /// The profile read.
        profile: String,
    },
    /// The AWS SDK's region providers asked for a profile ([`Resolution::Pending`]) found none.
    #[error(
        "Region is missing: set AWS_REGION or `region` in AWS profile `{profile}` (tried: {})",
        .tried.join(", ")
    )]
    RegionNotFound {
        /// The profile read.
        profile: String,
        /// Each source asked, and why it gave nothing.
        tried: Vec<String>,
    },
    /// The region is not a valid AWS region name.
    #[error("Invalid AWS region `{region}`")]
    InvalidRegion {
        /// The region as given.
        region: String,
    },
}

impl From<ConfigError> for ProviderError {
    fn from(error: ConfigError) -> Self {
        ProviderError::from(error.to_string())
    }
}

/// Resolves the region and endpoint for a model whose catalog URL is `base_url`.
pub(crate) fn resolve(
    env: &Environment,
    base_url: &str,
    requested_region: Option<&str>,
    requested_profile: Option<&str>,
) -> Result<Resolution, ConfigError> {
    let configured = configured_region(env, requested_region);
    // pi looks at the variable only, not at the request's `profile`.
    let has_profile = env.var("AWS_PROFILE").is_some();
    let endpoint_region = standard_endpoint_region(base_url);
    let explicit_endpoint = !base_url.trim().is_empty()
        && (endpoint_region.is_none() || (configured.is_none() && !has_profile));
    let region = match configured {
        Some(region) => region,
        None => match endpoint_region.filter(|_| explicit_endpoint) {
            Some(region) => region,
            None if !has_profile => "us-east-1".to_owned(),
            None => {
                let profile = named_profile(env, requested_profile).unwrap_or_default();
                if matches!(env, Environment::Process) {
                    return Ok(Resolution::Pending {
                        profile,
                        endpoint: explicit_endpoint
                            .then(|| base_url.trim().trim_end_matches('/').to_owned()),
                    });
                }
                load_profile(env, &profile)
                    .and_then(|found| found.get("region").cloned())
                    .filter(|region| !region.is_empty())
                    .ok_or(ConfigError::MissingRegion { profile })?
            }
        },
    };
    let endpoint = explicit_endpoint.then(|| base_url.trim().trim_end_matches('/').to_owned());
    finish(env, region, endpoint).map(Resolution::Ready)
}

/// `POST {endpoint}/model/{modelId}/converse-stream`, the id one path segment encoded as the
/// AWS SDK encodes labels (`amazon.nova-lite-v1:0` becomes `amazon.nova-lite-v1%3A0`, an
/// inference-profile ARN keeps its `/` encoded) by the providers' shared
/// [`path_segment`](crate::ai::providers::http::path_segment); `.` and `..` are refused.
pub(crate) fn converse_stream_url(endpoint: &str, model_id: &str) -> Result<String, ProviderError> {
    Ok(format!(
        "{endpoint}/model/{}/converse-stream",
        http::path_segment("model id", model_id)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const US_EAST: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";
    const EU_CENTRAL: &str = "https://bedrock-runtime.eu-central-1.amazonaws.com";

    fn env(vars: &[(&str, &str)]) -> Environment {
        Environment::Fixed(
            vars.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    /// `resolve`, known now (a fixed environment never defers).
    fn resolve(
        env: &Environment,
        base_url: &str,
        region: Option<&str>,
        profile: Option<&str>,
    ) -> Result<ClientConfig, ConfigError> {
        match super::resolve(env, base_url, region, profile)? {
            Resolution::Ready(config) => Ok(config),
            pending => panic!("{pending:?}"),
        }
    }

    fn config(region: &str, endpoint: &str) -> ClientConfig {
        ClientConfig {
            region: region.into(),
            endpoint: endpoint.into(),
        }
    }

    #[test]
    fn standard_urls_give_their_region() {
        assert_eq!(
            standard_endpoint_region(EU_CENTRAL).as_deref(),
            Some("eu-central-1")
        );
        assert_eq!(
            standard_endpoint_region("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com/")
                .as_deref(),
            Some("us-gov-west-1")
        );
        assert_eq!(
            standard_endpoint_region("https://bedrock-runtime.cn-north-1.amazonaws.com.cn")
                .as_deref(),
            Some("cn-north-1")
        );
        for other in [
            "http://127.0.0.1:9000",
            "https://vpce-1.bedrock-runtime.x.vpce.amazonaws.com",
            "",
        ] {
            assert_eq!(standard_endpoint_region(other), None, "{other}");
        }
    }

    #[test]
    fn catalog_url_is_used_only_without_configuration() {
        // Nothing configured: the catalog URL and its region.
        assert_eq!(
            resolve(&env(&[]), EU_CENTRAL, None, None).unwrap(),
            config("eu-central-1", EU_CENTRAL)
        );
        // A configured region overrides the catalog's standard URL.
        assert_eq!(
            resolve(&env(&[("AWS_REGION", "us-west-2")]), US_EAST, None, None).unwrap(),
            config(
                "us-west-2",
                "https://bedrock-runtime.us-west-2.amazonaws.com"
            )
        );
        assert_eq!(
            resolve(
                &env(&[("AWS_DEFAULT_REGION", "ap-south-1"), ("AWS_REGION", "")]),
                US_EAST,
                None,
                None
            )
            .unwrap()
            .region,
            "ap-south-1"
        );
        // The request's region wins over the environment.
        assert_eq!(
            resolve(
                &env(&[("AWS_REGION", "us-west-2")]),
                US_EAST,
                Some("eu-west-1"),
                None
            )
            .unwrap()
            .region,
            "eu-west-1"
        );
        // GovCloud and FIPS.
        assert_eq!(
            resolve(
                &env(&[
                    ("AWS_REGION", "us-gov-west-1"),
                    ("AWS_USE_FIPS_ENDPOINT", "true")
                ]),
                US_EAST,
                None,
                None
            )
            .unwrap(),
            config(
                "us-gov-west-1",
                "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com"
            )
        );
        assert_eq!(
            resolve(&env(&[("AWS_REGION", "cn-north-1")]), US_EAST, None, None)
                .unwrap()
                .endpoint,
            "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"
        );
    }

    #[test]
    fn custom_endpoints_are_always_used() {
        let proxy = "http://127.0.0.1:8080/bedrock/";
        assert_eq!(
            resolve(&env(&[]), proxy, None, None).unwrap(),
            config("us-east-1", "http://127.0.0.1:8080/bedrock")
        );
        assert_eq!(
            resolve(
                &env(&[("AWS_REGION", "eu-west-1"), ("AWS_PROFILE", "p")]),
                proxy,
                None,
                None
            )
            .unwrap(),
            config("eu-west-1", "http://127.0.0.1:8080/bedrock")
        );
    }

    #[test]
    fn a_profile_supplies_the_region() {
        let dir = std::env::temp_dir().join(format!("pi-bedrock-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config");
        std::fs::write(
            &file,
            "[profile work]\nregion = eu-north-1\n[profile bare]\n",
        )
        .unwrap();
        let vars = |profile: &'static str| {
            env(&[
                ("AWS_PROFILE", profile),
                ("AWS_CONFIG_FILE", file.to_str().unwrap()),
                ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
            ])
        };
        assert_eq!(
            resolve(&vars("work"), US_EAST, None, None).unwrap(),
            config(
                "eu-north-1",
                "https://bedrock-runtime.eu-north-1.amazonaws.com"
            )
        );
        let error = resolve(&vars("bare"), US_EAST, None, None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("Region is missing"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn regions_cannot_inject_into_the_url() {
        let error =
            resolve(&env(&[("AWS_REGION", "evil.com/x")]), US_EAST, None, None).unwrap_err();
        assert_eq!(error.to_string(), "Invalid AWS region `evil.com/x`");
    }

    #[test]
    fn model_ids_are_encoded_like_the_sdk() {
        assert_eq!(
            converse_stream_url(US_EAST, "amazon.nova-lite-v1:0").unwrap(),
            format!("{US_EAST}/model/amazon.nova-lite-v1%3A0/converse-stream")
        );
        assert_eq!(
            converse_stream_url(
                US_EAST,
                "arn:aws:bedrock:us-east-1:1:application-inference-profile/ab c!é"
            )
            .unwrap(),
            format!(
                "{US_EAST}/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Aapplication-inference-profile%2Fab%20c%21%C3%A9/converse-stream"
            )
        );
        assert!(converse_stream_url(US_EAST, "..").is_err());
    }
}
