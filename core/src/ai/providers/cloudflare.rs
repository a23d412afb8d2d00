//! Cloudflare's two providers (pi's `providers/cloudflare.ts`): Workers AI
//! (`api.cloudflare.com/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai/v1`, OpenAI-compatible,
//! plain Bearer auth) and the AI Gateway (`gateway.ai.cloudflare.com/v1/{CLOUDFLARE_ACCOUNT_ID}/
//! {CLOUDFLARE_GATEWAY_ID}/…` with the `/compat` (openai-completions), `/openai`
//! (openai-responses) and `/anthropic` (anthropic-messages) routes), where the key goes in
//! `cf-aig-authorization` and `Authorization` is left to the caller (a bring-your-own-key
//! upstream key).
//!
//! The catalog's base URLs carry `{VAR}` placeholders filled from the environment when a request
//! is made; a variable that is not set fails the request with pi's message
//! `X is required for provider P but is not set.`

use super::http::expand_env_placeholders;
use crate::ai::error::ProviderError;
use crate::ai::model::Model;

/// Workers AI.
pub(crate) const WORKERS_AI: &str = "cloudflare-workers-ai";

/// The AI Gateway.
pub(crate) const AI_GATEWAY: &str = "cloudflare-ai-gateway";

/// The header the AI Gateway authenticates with.
pub(crate) const GATEWAY_AUTH_HEADER: &str = "cf-aig-authorization";

/// Whether `provider` is one of Cloudflare's (pi's `isCloudflareProvider`).
pub(crate) fn is_cloudflare(provider: &str) -> bool {
    provider == WORKERS_AI || provider == AI_GATEWAY
}

/// Whether requests of `provider` authenticate with [`GATEWAY_AUTH_HEADER`].
pub(crate) fn is_gateway(provider: &str) -> bool {
    provider == AI_GATEWAY
}

/// The base URL of a request (pi's `resolveCloudflareBaseUrl`): `{VAR}` placeholders filled
/// from the environment for Cloudflare's providers; any other model's base URL as it is.
pub(crate) fn resolve_base_url(model: &Model) -> Result<String, ProviderError> {
    if !is_cloudflare(&model.provider) {
        return Ok(model.base_url.clone());
    }
    expand_env_placeholders(&model.base_url, &model.provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_only_for_cloudflare_and_named_when_missing() {
        for (provider, api) in [
            (AI_GATEWAY, "openai-responses"),
            (AI_GATEWAY, "anthropic-messages"),
            (WORKERS_AI, "openai-completions"),
        ] {
            let model = Model::new(
                api,
                provider,
                "m",
                "https://gateway.ai.cloudflare.com/v1/{PI_TEST_CF_UNSET_ACCOUNT}/g/openai",
            );
            assert_eq!(
                resolve_base_url(&model).unwrap_err().to_string(),
                format!(
                    "PI_TEST_CF_UNSET_ACCOUNT is required for provider {provider} but is not set."
                )
            );
        }
        let other = Model::new(
            "openai-completions",
            "openai",
            "m",
            "https://x/{NOT_EXPANDED}",
        );
        assert_eq!(
            resolve_base_url(&other).unwrap(),
            "https://x/{NOT_EXPANDED}"
        );
        assert!(is_gateway(AI_GATEWAY) && !is_gateway(WORKERS_AI));
    }
}
