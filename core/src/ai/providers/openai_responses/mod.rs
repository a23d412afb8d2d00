//! api `openai-responses`: OpenAI's Responses API over SSE (`POST {baseUrl}/responses`), spoken
//! by OpenAI, OpenCode Zen, GitHub Copilot and Cloudflare's AI Gateway; and, in [`azure`], the
//! same protocol as `azure-openai-responses`.
//!
//! Both providers share the request builder ([`request`]), the stream decoder ([`response`])
//! and the transport below; they differ only in endpoint, authentication and a few body fields.
//!
//! Reasoning is requested with `store: false` plus `include: ["reasoning.encrypted_content"]`,
//! so the whole reasoning item (encrypted content included) comes back in the stream. It is
//! kept as the thinking block's `thinkingSignature` and replayed verbatim in the next request.

pub(crate) mod azure;
pub(crate) mod compat;
pub(crate) mod request;
pub(crate) mod response;

use self::compat::Compat;
use self::request::BodySettings;
use self::response::{Pricing, ResponseState};
use super::api_key::{key_for_url, require_key};
use super::http::{self, Headers};
use super::{cloudflare, copilot};
use crate::ai::env_keys::env_key_allowed;
use crate::ai::error::ProviderError;
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::{ApiKey, CacheRetention, StreamOptions};
use crate::ai::simple_options::with_reasoning_effort;
use crate::ai::types::Context;

/// The api id.
pub(crate) const API: &str = "openai-responses";

/// The message of a body that ended before `response.completed` (or another terminal event).
pub(crate) const INCOMPLETE_RESPONSE: &str =
    "Connection error: the provider closed the stream before the response was complete";

/// Target providers whose `call_id|item_id` tool-call ids are kept as two ids (pi's
/// `OPENAI_TOOL_CALL_PROVIDERS`).
pub(crate) const TOOL_CALL_PROVIDERS: &[&str] = &["openai", "openai-codex", "opencode"];

/// The `openai-responses` provider. Its own options (`serviceTier`, `reasoningSummary`,
/// `reasoningEffort`) are [`StreamOptions`] keys.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenAIResponsesProvider;

http::api_provider! { OpenAIResponsesProvider, API, self.prepare, with_reasoning_effort }

impl OpenAIResponsesProvider {
    fn prepare(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<Prepared, ProviderError> {
        let base_url = resolve_placeholders(model)?;
        let api_key = resolve_api_key(model, options, None, &base_url);
        require_key(api_key.is_some(), &model.provider, &base_url)?;
        let compat = Compat::for_model(model);
        let retention = CacheRetention::resolve(options.cache_retention);
        let session_id = options
            .session_id
            .as_deref()
            .filter(|_| retention != CacheRetention::None);
        let settings = BodySettings {
            model_name: &model.id,
            tool_call_providers: TOOL_CALL_PROVIDERS,
            store_false: true,
            prompt_cache_key: session_id,
            long_cache_retention: retention == CacheRetention::Long
                && compat.supports_long_cache_retention,
            service_tier: options.service_tier.as_deref(),
            reasoning_summary: options.reasoning_summary.as_deref(),
            explicit_reasoning_off: model.provider != "github-copilot",
        };
        let body = options.payload(
            request::build_body(model, context, options, &settings),
            model,
        )?;

        let mut headers = Headers::json(OPENAI_ACCEPT);
        let cloudflare_gateway = cloudflare::is_gateway(&model.provider);
        if let Some(key) = &api_key
            && !cloudflare_gateway
        {
            headers.set("Authorization", format!("Bearer {}", key.expose()));
        }
        headers.extend(model.headers.iter().flatten());
        if model.provider == copilot::PROVIDER {
            for (name, value) in copilot::dynamic_headers(&context.messages) {
                headers.set(name, value);
            }
        }
        if let Some(session_id) = session_id {
            if compat.send_session_id_header {
                headers.set("session_id", session_id);
            }
            headers.set("x-client-request-id", session_id);
        }
        headers.extend(&options.headers);
        if cloudflare_gateway && let Some(key) = &api_key {
            // The gateway authenticates with its own header; `Authorization` stays only if the
            // caller set one (pi's rule).
            headers.set(
                cloudflare::GATEWAY_AUTH_HEADER,
                format!("Bearer {}", key.expose()),
            );
        }
        let pricing = Pricing {
            service_tiers: true,
            requested_tier: options.service_tier.clone(),
            requested_over_default: false,
        };
        Ok(Prepared::new(
            format!("{}/responses", base_url.trim_end_matches('/')),
            &body,
            headers,
            options,
            ResponsesWire { pricing },
        ))
    }
}

/// Cloudflare base URLs carry `{CLOUDFLARE_ACCOUNT_ID}`-style placeholders filled from the
/// environment (pi's `resolveCloudflareBaseUrl`); other base URLs are returned as they are.
fn resolve_placeholders(model: &Model) -> Result<String, ProviderError> {
    cloudflare::resolve_base_url(model)
}

/// The first non-empty key among the request's, the provider's environment variables, and
/// `fallback_env` (an Azure variable read whatever the provider id is). Environment keys are
/// only those that may be sent to `base_url` (see [`crate::ai::env_keys`]).
fn resolve_api_key(
    model: &Model,
    options: &StreamOptions,
    fallback_env: Option<&str>,
    base_url: &str,
) -> Option<ApiKey> {
    key_for_url(options, &model.provider, base_url).or_else(|| {
        fallback_env
            .filter(|_| env_key_allowed(azure::API, base_url))
            .and_then(|name| std::env::var(name).ok())
            .filter(|value| !value.is_empty())
            .map(ApiKey::new)
    })
}

/// What reading a Responses stream needs besides the body: how its cost is priced.
pub(crate) struct ResponsesWire {
    pricing: Pricing,
}

/// The prepared request of both Responses providers.
pub(crate) type Prepared = http::PreparedRequest<ResponsesWire>;

impl http::Wire for ResponsesWire {
    fn read(
        self,
        reply: http::Reply<'_>,
    ) -> impl std::future::Future<Output = Result<(), ProviderError>> + Send {
        reply.read_sse(async move |writer, model, events| {
            read_stream(writer, model, events, self.pricing).await
        })
    }
}

/// The `Content-Type` and `Accept` headers pi's OpenAI SDK sends (`Accept` is JSON, though
/// the answer is a stream).
pub(crate) const OPENAI_ACCEPT: Option<&str> = Some("application/json");

/// Reads a response body to its end (fuzzing feeds bytes here, without a network).
pub(crate) async fn read_stream(
    writer: &mut StreamWriter,
    model: &Model,
    events: &mut http::SseEvents,
    pricing: Pricing,
) -> Result<(), ProviderError> {
    let mut state = ResponseState::new(pricing);
    while let Some(event) = events.next().await? {
        state.handle(event, writer, model).await?;
        if state.finished || writer.is_closed() {
            break;
        }
    }
    if !state.finished && !writer.is_closed() {
        return Err(events.incomplete(INCOMPLETE_RESPONSE));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloudflare_placeholders_need_their_variables() {
        let model = Model::new(
            API,
            "cloudflare-ai-gateway",
            "gpt-5",
            "https://gateway.ai.cloudflare.com/v1/{PI_TEST_NO_SUCH_VAR_1}/g/openai",
        );
        assert_eq!(
            resolve_placeholders(&model),
            Err("PI_TEST_NO_SUCH_VAR_1 is required for provider cloudflare-ai-gateway but is not set.".into())
        );
        let plain = Model::new(API, "openai", "gpt-5", "https://api.openai.com/{x}");
        assert_eq!(
            resolve_placeholders(&plain).unwrap(),
            "https://api.openai.com/{x}"
        );
    }

    #[test]
    fn loopback_hosts() {
        assert!(http::is_loopback("http://127.0.0.1:8080/v1"));
        assert!(http::is_loopback("http://localhost:1234/v1"));
        assert!(!http::is_loopback("https://api.openai.com/v1"));
    }
}
