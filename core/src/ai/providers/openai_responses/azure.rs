//! api `azure-openai-responses`: the Responses protocol on Azure OpenAI. Same body and stream as
//! [`openai-responses`](super), with Azure's endpoint, `api-key` authentication, deployment
//! names and `api-version` (pi's `azure-openai-responses.ts`).
//!
//! Endpoint: `POST {base}/responses?api-version={version}` where `base` is, in order, the
//! provider's [`base_url`](AzureOpenAIResponsesProvider::base_url), `AZURE_OPENAI_BASE_URL`,
//! `https://{resource}.openai.azure.com/openai/v1` from
//! [`resource_name`](AzureOpenAIResponsesProvider::resource_name) or
//! `AZURE_OPENAI_RESOURCE_NAME`, then `model.base_url`. An Azure host whose path is empty or
//! `/openai` gets `/openai/v1`.

use std::collections::HashMap;

use reqwest::Url;

use super::request::{self, BodySettings};
use super::response::Pricing;
use super::{OPENAI_ACCEPT, Prepared, ResponsesWire, resolve_api_key};
use crate::ai::env_keys::{env_key_names, missing_key_message_for_url};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::providers::http::{self, host_label, is_loopback};
use crate::ai::simple_options::with_reasoning_effort;
use crate::ai::types::Context;

/// The api id.
pub(crate) const API: &str = "azure-openai-responses";

/// The `api-version` used when none is configured.
pub(crate) const DEFAULT_API_VERSION: &str = "v1";

/// The key variable read for any provider id on this api.
pub(crate) const API_KEY_ENV: &str = "AZURE_OPENAI_API_KEY";

/// Target providers whose `call_id|item_id` tool-call ids are kept as two ids (pi's
/// `AZURE_TOOL_CALL_PROVIDERS`).
pub(crate) const TOOL_CALL_PROVIDERS: &[&str] = &[
    "openai",
    "openai-codex",
    "opencode",
    "azure-openai-responses",
];

/// Why no Azure OpenAI endpoint could be resolved. Its `Display` is the failed message's
/// `errorMessage`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AzureConfigError {
    /// Neither the options, the environment nor the model name a base URL or resource.
    #[error(
        "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or \
         AZURE_OPENAI_RESOURCE_NAME, pass azureBaseUrl or azureResourceName, or set model.baseUrl."
    )]
    MissingBaseUrl,
    /// The base URL (as given) is not a URL.
    #[error("Invalid Azure OpenAI base URL: {0}")]
    InvalidBaseUrl(String),
    /// The resource name cannot be a host label; the reason.
    #[error("{0}")]
    InvalidResourceName(String),
}

impl From<AzureConfigError> for ProviderError {
    fn from(error: AzureConfigError) -> Self {
        ProviderError::from(error.to_string())
    }
}

/// The `azure-openai-responses` provider. pi's Azure options (`azureBaseUrl`,
/// `azureResourceName`, `azureApiVersion`, `azureDeploymentName`, `reasoningSummary`) are
/// [`StreamOptions`] keys; the environment variables fill in what they leave unset.
#[derive(Clone, Copy, Debug, Default)]
pub struct AzureOpenAIResponsesProvider;

http::api_provider! { AzureOpenAIResponsesProvider, API, self.prepare, with_reasoning_effort }

fn env_value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

fn non_empty(value: Option<&String>) -> Option<String> {
    value
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

impl AzureOpenAIResponsesProvider {
    /// The base URL for `model` (see the module docs), normalised.
    pub fn resolve_base_url(
        model: &Model,
        options: &StreamOptions,
    ) -> Result<String, AzureConfigError> {
        let from_resource = || {
            non_empty(options.azure_resource_name.as_ref())
                .or_else(|| env_value("AZURE_OPENAI_RESOURCE_NAME"))
                .map(|resource| {
                    // The name becomes part of the host (issue 17): `evil.example/x` must not.
                    host_label("Azure OpenAI resource name", &resource)
                        .map(|resource| format!("https://{resource}.openai.azure.com/openai/v1"))
                        .map_err(|error| AzureConfigError::InvalidResourceName(error.to_string()))
                })
                .transpose()
        };
        let base = match non_empty(options.azure_base_url.as_ref())
            .or_else(|| env_value("AZURE_OPENAI_BASE_URL"))
        {
            Some(base) => Some(base),
            None => from_resource()?,
        };
        let base = base
            .or_else(|| non_empty(Some(&model.base_url)))
            .ok_or(AzureConfigError::MissingBaseUrl)?;
        normalize_base_url(&base)
    }

    /// The `api-version` to send.
    pub fn resolve_api_version(options: &StreamOptions) -> String {
        non_empty(options.azure_api_version.as_ref())
            .or_else(|| env_value("AZURE_OPENAI_API_VERSION"))
            .unwrap_or_else(|| DEFAULT_API_VERSION.to_owned())
    }

    /// The deployment name sent as `model`.
    pub fn resolve_deployment(model: &Model, options: &StreamOptions) -> String {
        if let Some(name) = non_empty(options.azure_deployment_name.as_ref()) {
            return name;
        }
        std::env::var("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
            .ok()
            .and_then(|map| parse_deployment_map(&map).remove(&model.id))
            .unwrap_or_else(|| model.id.clone())
    }

    fn prepare(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<Prepared, ProviderError> {
        let base_url = Self::resolve_base_url(model, options)?;
        let api_key = resolve_api_key(model, options, Some(API_KEY_ENV), &base_url);
        if api_key.is_none() && !is_loopback(&base_url) {
            let message = if env_key_names(&model.provider).is_empty() {
                // The fallback variable is Azure's, whatever the provider is called.
                let message = missing_key_message_for_url(API, &base_url);
                message.replacen(API, &model.provider, 1)
            } else {
                missing_key_message_for_url(&model.provider, &base_url)
            };
            return Err(ProviderError::other(message, Some(ErrorKind::Auth)));
        }
        let deployment = Self::resolve_deployment(model, options);
        let settings = BodySettings {
            model_name: &deployment,
            tool_call_providers: TOOL_CALL_PROVIDERS,
            // pi's Azure provider sends no `store` and always sends the session as cache key.
            store_false: false,
            prompt_cache_key: options.session_id.as_deref(),
            long_cache_retention: false,
            service_tier: None,
            reasoning_summary: options.reasoning_summary.as_deref(),
            explicit_reasoning_off: true,
        };
        let body = options.payload(
            request::build_body(model, context, options, &settings),
            model,
        )?;
        let mut headers = http::Headers::json(OPENAI_ACCEPT);
        if let Some(key) = &api_key {
            headers.set("api-key", key.expose());
        }
        headers.extend(model.headers.iter().flatten());
        headers.extend(&options.headers);
        Ok(Prepared::new(
            responses_url(&base_url, &Self::resolve_api_version(options))?,
            &body,
            headers,
            options,
            ResponsesWire {
                pricing: Pricing::default(),
            },
        ))
    }
}

/// pi's `normalizeAzureBaseUrl`: trailing slashes go; on `*.openai.azure.com` and
/// `*.cognitiveservices.azure.com`, an empty, `/` or `/openai` path becomes `/openai/v1` and the
/// query is dropped; other URLs are kept.
pub(crate) fn normalize_base_url(base_url: &str) -> Result<String, AzureConfigError> {
    let trimmed = base_url.trim().trim_end_matches('/');
    let mut url =
        Url::parse(trimmed).map_err(|_| AzureConfigError::InvalidBaseUrl(base_url.to_owned()))?;
    let host = url.host_str().unwrap_or("");
    let azure_host =
        host.ends_with(".openai.azure.com") || host.ends_with(".cognitiveservices.azure.com");
    let path = url.path().trim_end_matches('/');
    if azure_host && (path.is_empty() || path == "/openai") {
        url.set_path("/openai/v1");
        url.set_query(None);
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// `{base}/responses?api-version={version}`, keeping any other query parameter of the base.
pub(crate) fn responses_url(base_url: &str, api_version: &str) -> Result<String, AzureConfigError> {
    let mut url =
        Url::parse(base_url).map_err(|_| AzureConfigError::InvalidBaseUrl(base_url.to_owned()))?;
    let path = format!("{}/responses", url.path().trim_end_matches('/'));
    url.set_path(&path);
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(name, _)| name != "api-version")
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect();
    url.query_pairs_mut()
        .clear()
        .extend_pairs(kept)
        .append_pair("api-version", api_version);
    Ok(url.into())
}

/// Parses `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`model=deployment,model2=deployment2`); malformed
/// entries are skipped.
pub(crate) fn parse_deployment_map(value: &str) -> HashMap<String, String> {
    value
        .split(',')
        .filter_map(|entry| {
            let mut parts = entry.trim().split('=');
            let model = parts.next()?.trim();
            let deployment = parts.next()?.trim();
            (!model.is_empty() && !deployment.is_empty())
                .then(|| (model.to_owned(), deployment.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_hosts_get_the_v1_path() {
        for (input, expected) in [
            (
                "https://res.openai.azure.com",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://res.openai.azure.com/",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://res.openai.azure.com/openai?api-version=old",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://res.cognitiveservices.azure.com/openai/",
                "https://res.cognitiveservices.azure.com/openai/v1",
            ),
            (
                "https://res.openai.azure.com/openai/v1/",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://proxy.example.com/azure/",
                "https://proxy.example.com/azure",
            ),
            ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"),
        ] {
            assert_eq!(normalize_base_url(input).unwrap(), expected, "{input}");
        }
        assert_eq!(
            normalize_base_url("not a url"),
            Err(AzureConfigError::InvalidBaseUrl("not a url".into()))
        );
    }

    #[test]
    fn endpoint_has_the_api_version() {
        assert_eq!(
            responses_url("https://res.openai.azure.com/openai/v1", "v1").unwrap(),
            "https://res.openai.azure.com/openai/v1/responses?api-version=v1"
        );
        assert_eq!(
            responses_url(
                "https://proxy.example.com/x?tenant=7&api-version=old",
                "2025-04-01-preview"
            )
            .unwrap(),
            "https://proxy.example.com/x/responses?tenant=7&api-version=2025-04-01-preview"
        );
    }

    #[test]
    fn deployment_map() {
        let map = parse_deployment_map(" gpt-5 = prod-gpt5 ,bad, =x, gpt-4o=eu-4o");
        assert_eq!(map.len(), 2);
        assert_eq!(map["gpt-5"], "prod-gpt5");
        assert_eq!(map["gpt-4o"], "eu-4o");
        let options = StreamOptions {
            azure_deployment_name: Some("configured".into()),
            ..StreamOptions::default()
        };
        let model = Model::new(API, API, "gpt-5", "");
        assert_eq!(
            AzureOpenAIResponsesProvider::resolve_deployment(&model, &options),
            "configured"
        );
    }
}
