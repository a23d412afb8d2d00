//! API keys from the environment, with pi's variable names per provider (pi's `env-api-keys.ts`).
//!
//! # Where an environment key may go
//!
//! pi sends a provider's environment key to whatever base URL the model names. A model is data
//! (a JSON file, a restored snapshot, a catalog copy someone edited), so that would let a model
//! file collect `OPENAI_API_KEY` at any host. Here an environment key is sent only:
//!
//! - to the provider's own hosts: the hosts of its base URLs in the catalog (`OPENAI_API_KEY`
//!   to `api.openai.com`, `GROQ_API_KEY` to `api.groq.com`, ...), over `https`, plus
//!   `*.openai.azure.com`-style hosts for Azure (and the host of `AZURE_OPENAI_BASE_URL`) and
//!   `api.*.githubcopilot.com` for Copilot;
//! - to loopback servers (`localhost`, `127.0.0.0/8`, `::1`): a local proxy or gateway;
//! - to the hosts listed in [`ENV_KEY_HOSTS_VAR`] (`PI_ENV_KEY_HOSTS`, comma-separated; `*`
//!   inside a label matches one label, e.g. `*.corp.example`; a lone `*` allows every host),
//!   set by whoever owns the environment, which is who owns the keys.
//!
//! Anywhere else the request fails before anything is sent, with a message naming the variable,
//! the host, and both ways out: pass the key explicitly ([`StreamOptions::api_key`], which is
//! sent wherever the caller sends it) or list the host.
//!
//! [`StreamOptions::api_key`]: super::options::StreamOptions::api_key

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::LazyLock;

use super::options::{ApiKey, StreamOptions};

/// What [`get_env_api_key`] reports for a provider that authenticates with ambient credentials
/// (AWS credentials for `amazon-bedrock`, Application Default Credentials for `google-vertex`)
/// rather than a key: pi's `"<authenticated>"`. It is a marker, never a key: no provider sends
/// it (see [`request_key`]).
pub(crate) const AUTHENTICATED: &str = "<authenticated>";

/// The variable listing extra hosts environment keys may be sent to.
pub(crate) const ENV_KEY_HOSTS_VAR: &str = "PI_ENV_KEY_HOSTS";

/// The variables that hold an API key for `provider`, in priority order (empty when the
/// provider has none, e.g. providers that use ambient cloud credentials or OAuth).
pub fn env_key_names(provider: &str) -> &'static [&'static str] {
    match provider {
        "github-copilot" => &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "azure-openai-responses" => &["AZURE_OPENAI_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        _ => &[],
    }
}

/// The first non-empty key variable that is set for `provider` (pi's `getEnvApiKey`); for a
/// provider with ambient credentials and no key variable set, `"<authenticated>"` when those
/// credentials are there, as pi reports them:
///
/// - `amazon-bedrock`: a source of the AWS credential chain is configured, so that it can
///   produce credentials: `AWS_BEARER_TOKEN_BEDROCK`, `AWS_ACCESS_KEY_ID` +
///   `AWS_SECRET_ACCESS_KEY` (when no profile is named), the profile (`AWS_PROFILE`, else
///   `default`) found in the shared files with a way to get credentials (keys, `role_arn`,
///   SSO, `credential_process`, `web_identity_token_file`), `AWS_WEB_IDENTITY_TOKEN_FILE`
///   naming an existing file with `AWS_ROLE_ARN`, or a container endpoint
///   (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` / `_FULL_URI`). Instance metadata (EC2) cannot
///   be known without asking it, so it is not reported (pi reports `AWS_PROFILE` alone and the
///   web-identity variable alone, which then fail at request time);
/// - `google-vertex`: an Application Default Credentials file exists
///   (`GOOGLE_APPLICATION_CREDENTIALS`, else `~/.config/gcloud/application_default_credentials.json`)
///   or a metadata server is named (`GCE_METADATA_HOST` / `GCE_METADATA_IP`), and a project (`GOOGLE_CLOUD_PROJECT` / `GCLOUD_PROJECT`) and `GOOGLE_CLOUD_LOCATION` are set.
///
/// The marker says "credentials are there"; it is never sent as a key.
pub fn get_env_api_key(provider: &str) -> Option<ApiKey> {
    env_key_names(provider)
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.is_empty())
        .map(ApiKey::new)
        .or_else(|| has_ambient_credentials(provider).then(|| ApiKey::new(AUTHENTICATED)))
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|value| !value.is_empty())
}

/// The profile keys through which the AWS SDK gets credentials.
#[cfg(feature = "bedrock")]
const AWS_PROFILE_SOURCES: &[&str] = &[
    "aws_access_key_id",
    "role_arn",
    "sso_session",
    "sso_start_url",
    "credential_process",
    "web_identity_token_file",
];

/// Whether a source of the AWS credential chain is configured (see [`get_env_api_key`]).
fn has_aws_credentials() -> bool {
    let named = std::env::var("AWS_PROFILE")
        .ok()
        .filter(|name| !name.is_empty());
    let web_identity = std::env::var_os("AWS_WEB_IDENTITY_TOKEN_FILE")
        .filter(|path| !path.is_empty())
        .is_some_and(|path| PathBuf::from(path).is_file())
        && env_set("AWS_ROLE_ARN");
    env_set("AWS_BEARER_TOKEN_BEDROCK")
        || (named.is_none() && env_set("AWS_ACCESS_KEY_ID") && env_set("AWS_SECRET_ACCESS_KEY"))
        || aws_profile_has_source(named.as_deref().unwrap_or("default"))
        || web_identity
        || env_set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        || env_set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
}

#[cfg(feature = "bedrock")]
fn aws_profile_has_source(name: &str) -> bool {
    use crate::ai::providers::environment::Environment;
    crate::ai::providers::bedrock::profile_file::load_profile(&Environment::Process, name)
        .is_some_and(|profile| {
            AWS_PROFILE_SOURCES
                .iter()
                .any(|key| profile.contains_key(*key))
        })
}

/// Without the `bedrock` feature the shared files are not read: a named profile counts.
#[cfg(not(feature = "bedrock"))]
fn aws_profile_has_source(name: &str) -> bool {
    name != "default"
}

/// Whether `provider`'s ambient credentials are present (see [`get_env_api_key`]).
fn has_ambient_credentials(provider: &str) -> bool {
    match provider {
        "amazon-bedrock" => has_aws_credentials(),
        "google-vertex" => {
            let credentials = match std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS")
                .filter(|path| !path.is_empty())
            {
                Some(path) => Some(PathBuf::from(path)),
                None => std::env::var_os("HOME").map(|home| {
                    PathBuf::from(home).join(".config/gcloud/application_default_credentials.json")
                }),
            };
            (credentials.is_some_and(|path| path.exists())
                || env_set("GCE_METADATA_HOST")
                || env_set("GCE_METADATA_IP"))
                && (env_set("GOOGLE_CLOUD_PROJECT") || env_set("GCLOUD_PROJECT"))
                && env_set("GOOGLE_CLOUD_LOCATION")
        }
        _ => false,
    }
}

/// The request's own key (`options.api_key`), unless it is empty or the `"<authenticated>"`
/// marker (which an application may pass on from [`get_env_api_key`]).
pub(crate) fn request_key(options: &StreamOptions) -> Option<ApiKey> {
    options
        .api_key
        .clone()
        .filter(|key| !key.is_empty() && key.expose() != AUTHENTICATED)
}

/// The first non-empty key variable set for `provider`, if it may be sent to `url` (see the
/// module docs); `None` otherwise, and never the `"<authenticated>"` marker.
pub(crate) fn get_env_api_key_for_url(provider: &str, url: &str) -> Option<ApiKey> {
    get_env_api_key(provider)
        .filter(|key| key.expose() != AUTHENTICATED)
        .filter(|_| env_key_allowed(provider, url))
}

/// Whether `provider`'s environment key may be sent to `url` (see the module docs).
pub(crate) fn env_key_allowed(provider: &str, url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if is_loopback_host(host) {
        return true;
    }
    let listed = std::env::var(ENV_KEY_HOSTS_VAR).unwrap_or_default();
    if listed
        .split(',')
        .map(str::trim)
        .any(|pattern| pattern == "*" || host_matches(pattern, host))
    {
        return true;
    }
    url.scheme() == "https" && vendor_hosts(provider).iter().any(|p| host_matches(p, host))
}

/// Like [`missing_key_message`], but when a key variable is set and was withheld from `url`,
/// says so and how to send it anyway.
pub(crate) fn missing_key_message_for_url(provider: &str, url: &str) -> String {
    let set = find_env_keys(provider);
    let Some(variable) = set.first().filter(|_| !env_key_allowed(provider, url)) else {
        return missing_key_message(provider);
    };
    let host = withheld_host(url);
    let hosts = vendor_hosts(provider);
    let own = if hosts.is_empty() {
        "loopback servers".to_owned()
    } else {
        format!("{} and loopback servers", hosts.join(", "))
    };
    format!(
        "No API key for provider: {provider}. {variable} is set, but environment keys are only \
         sent to {own}, not to `{host}`. Pass the key explicitly, or add the host to \
         {ENV_KEY_HOSTS_VAR}."
    )
}

/// The host a key was withheld from, as the messages saying so name it (the URL itself when it
/// has none).
pub(crate) fn withheld_host(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| url.to_owned())
}

/// Host patterns of `provider`'s own endpoints.
fn vendor_hosts(provider: &str) -> Vec<String> {
    static CATALOG_HOSTS: LazyLock<BTreeMap<String, Vec<String>>> = LazyLock::new(|| {
        let mut hosts: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for model in super::catalog::all_models() {
            let Some(pattern) = host_pattern(&model.base_url) else {
                continue;
            };
            let entry = hosts.entry(model.provider.clone()).or_default();
            if !entry.contains(&pattern) {
                entry.push(pattern);
            }
        }
        hosts
    });
    let mut out = CATALOG_HOSTS.get(provider).cloned().unwrap_or_default();
    match provider {
        "azure-openai-responses" => {
            out.extend(
                [
                    "*.openai.azure.com",
                    "*.cognitiveservices.azure.com",
                    "*.services.ai.azure.com",
                ]
                .map(str::to_owned),
            );
            // Set by the user, like the key itself.
            if let Some(host) = std::env::var("AZURE_OPENAI_BASE_URL")
                .ok()
                .and_then(|url| host_pattern(url.trim()))
            {
                out.push(host);
            }
        }
        "github-copilot" => {
            out.extend(["api.githubcopilot.com", "api.*.githubcopilot.com"].map(str::to_owned))
        }
        // Bedrock's runtime in every region, FIPS and China included (the catalog names one).
        "amazon-bedrock" => out.extend(
            [
                "bedrock-runtime.*.amazonaws.com",
                "bedrock-runtime-fips.*.amazonaws.com",
                "bedrock-runtime.*.amazonaws.com.cn",
            ]
            .map(str::to_owned),
        ),
        // The global endpoint and the multi-region ones (`aiplatform.us.rep.googleapis.com`)
        // besides the catalog's `{location}-aiplatform.googleapis.com`.
        "google-vertex" => out.extend(
            [
                "aiplatform.googleapis.com",
                "aiplatform.*.rep.googleapis.com",
            ]
            .map(str::to_owned),
        ),
        _ => {}
    }
    out
}

/// The host of a catalog base URL as a pattern: `{placeholder}` parts become `*`.
fn host_pattern(base_url: &str) -> Option<String> {
    let rest = base_url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = host.split(':').next()?.to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    let mut pattern = String::with_capacity(host.len());
    let mut rest = host.as_str();
    while let Some(open) = rest.find('{') {
        pattern.push_str(&rest[..open]);
        pattern.push('*');
        rest = rest[open..].split_once('}').map_or("", |(_, after)| after);
    }
    pattern.push_str(rest);
    Some(pattern)
}

/// `host` against `pattern`, case-insensitively; `*` matches one or more characters of one
/// label (letters, digits, `-`).
fn host_matches(pattern: &str, host: &str) -> bool {
    fn matches(pattern: &[u8], host: &[u8]) -> bool {
        match pattern.split_first() {
            None => host.is_empty(),
            Some((b'*', rest)) => (1..=host.len())
                .take_while(|&n| host[n - 1].is_ascii_alphanumeric() || host[n - 1] == b'-')
                .any(|n| matches(rest, &host[n..])),
            Some((c, rest)) => host
                .split_first()
                .is_some_and(|(h, host)| h.eq_ignore_ascii_case(c) && matches(rest, host)),
        }
    }
    !pattern.is_empty() && matches(pattern.as_bytes(), host.as_bytes())
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The key variables for `provider` that are set, by name (pi's `findEnvKeys`; ambient
/// credentials are not listed).
pub fn find_env_keys(provider: &str) -> Vec<&'static str> {
    env_key_names(provider)
        .iter()
        .copied()
        .filter(|name| std::env::var(name).is_ok_and(|value| !value.is_empty()))
        .collect()
}

/// A sentence telling the user how to supply a key for `provider`.
pub(crate) fn missing_key_message(provider: &str) -> String {
    match env_key_names(provider) {
        [] => format!("No API key for provider: {provider}. Pass an API key in the options."),
        [name] => format!("No API key for provider: {provider}. Set {name} or pass an API key."),
        names => format!(
            "No API key for provider: {provider}. Set one of {} or pass an API key.",
            names.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_hosts_come_from_the_catalog() {
        assert!(env_key_allowed("openai", "https://api.openai.com/v1"));
        assert!(env_key_allowed("anthropic", "https://api.anthropic.com"));
        assert!(env_key_allowed(
            "google",
            "https://generativelanguage.googleapis.com/v1beta/models/x:streamGenerateContent?alt=sse"
        ));
        assert!(env_key_allowed("groq", "https://API.GROQ.COM/openai/v1"));
        assert!(env_key_allowed("mistral", "https://api.mistral.ai"));
        assert!(env_key_allowed(
            "cloudflare-ai-gateway",
            "https://gateway.ai.cloudflare.com/v1/a/b/openai"
        ));
        assert!(env_key_allowed(
            "azure-openai-responses",
            "https://my-res.openai.azure.com/openai/v1"
        ));
        assert!(env_key_allowed(
            "github-copilot",
            "https://api.enterprise.githubcopilot.com"
        ));
        assert!(env_key_allowed(
            "amazon-bedrock",
            "https://bedrock-runtime.eu-central-2.amazonaws.com/model/x/converse-stream"
        ));
        assert!(env_key_allowed(
            "amazon-bedrock",
            "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com/model/x/converse-stream"
        ));
        assert!(!env_key_allowed(
            "amazon-bedrock",
            "https://bedrock-runtime.eu-west-1.amazonaws.com.evil.example/model/x"
        ));
        // Another vendor's host, a look-alike, plain http, or no host.
        assert!(!env_key_allowed("openai", "https://api.groq.com/openai/v1"));
        assert!(!env_key_allowed(
            "openai",
            "https://api.openai.com.evil.example/v1"
        ));
        assert!(!env_key_allowed(
            "openai",
            "https://evil.example/api.openai.com"
        ));
        assert!(!env_key_allowed("openai", "http://api.openai.com/v1"));
        assert!(!env_key_allowed("openai", "not a url"));
        assert!(!env_key_allowed(
            "azure-openai-responses",
            "https://x.y.openai.azure.com.evil/v1"
        ));
        // Loopback servers may have any provider's key.
        for url in [
            "http://localhost:4000/v1",
            "http://127.0.0.2/v1",
            "http://[::1]:8080",
        ] {
            assert!(env_key_allowed("openai", url), "{url}");
        }
    }

    #[test]
    fn host_patterns() {
        assert_eq!(
            host_pattern("https://{location}-aiplatform.googleapis.com").as_deref(),
            Some("*-aiplatform.googleapis.com")
        );
        assert!(host_matches(
            "*-aiplatform.googleapis.com",
            "us-east1-aiplatform.googleapis.com"
        ));
        assert!(!host_matches("*.corp.example", "corp.example"));
        assert!(!host_matches("*.corp.example", "a.b.corp.example"));
        assert!(host_matches("*.corp.example", "a.corp.example"));
        assert!(!host_matches("", "a"));
    }

    #[test]
    fn missing_key_names_the_variable() {
        assert!(missing_key_message("groq").contains("GROQ_API_KEY"));
        assert!(missing_key_message("anthropic").contains("ANTHROPIC_API_KEY"));
    }
}
