//! The differences between OpenAI-compatible servers, as flags (pi's `OpenAICompletionsCompat`).
//!
//! Each flag is detected from the provider id and the base URL as pi does; a flag set in
//! `model.compat` wins over the detected value.

use serde::Deserialize;
use serde_json::Value;

use super::super::compat_flags::compat_flags;
use crate::ai::model::Model;

/// How a server wants reasoning switched on and replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ThinkingFormat {
    /// `reasoning_effort`.
    Openai,
    /// `reasoning: {effort}`.
    Openrouter,
    /// `thinking: {type}` plus `reasoning_effort`.
    Deepseek,
    /// `enable_thinking`.
    Zai,
    /// `enable_thinking`.
    Qwen,
    /// `chat_template_kwargs: {enable_thinking, preserve_thinking}`.
    QwenChatTemplate,
}

/// Where the output-token cap goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MaxTokensField {
    /// `max_completion_tokens` (OpenAI's current name).
    MaxCompletionTokens,
    /// `max_tokens` (older servers).
    MaxTokens,
}

/// How prompt-cache markers are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CacheControlFormat {
    /// Anthropic-style `cache_control` on message parts and tools (OpenRouter `anthropic/*`).
    Anthropic,
}

compat_flags! {
    /// The resolved flags for one model.
    #[derive(Clone, Debug, PartialEq)]
    pub(crate) struct Compat {
        /// Send `store: false`.
        pub supports_store: bool,
        /// Send the system prompt of reasoning models as role `developer`.
        pub supports_developer_role: bool,
        /// Send `reasoning_effort`.
        pub supports_reasoning_effort: bool,
        /// Send `stream_options: {include_usage: true}`.
        pub supports_usage_in_streaming: bool,
        /// Which field carries the output-token cap.
        pub max_tokens_field: MaxTokensField,
        /// Tool messages carry `name`.
        pub requires_tool_result_name: bool,
        /// A tool result followed by a user message needs an assistant message in between.
        pub requires_assistant_after_tool_result: bool,
        /// Replay reasoning as text parts.
        pub requires_thinking_as_text: bool,
        /// Replayed assistant messages of reasoning models need `reasoning_content`.
        pub requires_reasoning_content_on_assistant_messages: bool,
        /// How reasoning is requested.
        pub thinking_format: ThinkingFormat,
        /// Tools may carry `strict: false`.
        pub supports_strict_mode: bool,
        /// OpenRouter provider routing preferences, sent as `provider`.
        pub open_router_routing: Value,
        /// Vercel AI Gateway routing (`only`, `order`), sent as `providerOptions.gateway`.
        pub vercel_gateway_routing: Value,
        /// Send `tool_stream: true` when there are tools (z.ai).
        pub zai_tool_stream: bool,
        /// Write prompt-cache markers in this format.
        pub cache_control_format: Option<CacheControlFormat>,
        /// Send `session_id`, `x-client-request-id` and `x-session-affinity` headers.
        pub send_session_affinity_headers: bool,
        /// The server honours long cache retention (`prompt_cache_retention: "24h"`).
        pub supports_long_cache_retention: bool,
    }
}

impl Compat {
    /// Detects the flags for `model`, then applies `model.compat`.
    pub(crate) fn for_model(model: &Model) -> Self {
        let mut detected = Self::detect(&model.provider, &model.base_url);
        if model.provider == "openrouter" && model.id.starts_with("anthropic/") {
            detected.cache_control_format = Some(CacheControlFormat::Anthropic);
        }
        detected.with_overrides(model.compat.as_ref())
    }

    /// pi's `detectCompat`: defaults from the provider id and base URL.
    pub(crate) fn detect(provider: &str, base_url: &str) -> Self {
        let is = |name: &str| provider == name;
        // What pi looks for in the base URL, found in one pass.
        let [
            zai_in_url,
            moonshot_in_url,
            cf_gateway_in_url,
            cf_workers_in_url,
            deepseek_in_url,
            cerebras_in_url,
            xai_in_url,
            chutes_in_url,
            opencode_in_url,
            openrouter_in_url,
        ] = {
            const NEEDLES: [&str; 10] = [
                "api.z.ai",
                "moonshot",
                "gateway.ai.cloudflare.com",
                "api.cloudflare.com",
                "deepseek.com",
                "cerebras.ai",
                "api.x.ai",
                "chutes.ai",
                "opencode.ai",
                "openrouter.ai",
            ];
            let found = crate::text::contains_which_ignore_ascii_case(base_url, &NEEDLES);
            std::array::from_fn(|index| found & (1 << index) != 0)
        };
        let is_zai = is("zai") || zai_in_url;
        let is_moonshot = provider.starts_with("moonshotai") || moonshot_in_url;
        let is_cf_gateway = is("cloudflare-ai-gateway") || cf_gateway_in_url;
        let is_cf_workers = is("cloudflare-workers-ai") || cf_workers_in_url;
        let is_deepseek = is("deepseek") || deepseek_in_url;
        let non_standard = is("cerebras")
            || cerebras_in_url
            || is("xai")
            || xai_in_url
            || chutes_in_url
            || is_deepseek
            || is_zai
            || is_moonshot
            || provider.starts_with("opencode")
            || opencode_in_url
            || is_cf_gateway
            || is_cf_workers;
        let thinking_format = if is_deepseek {
            ThinkingFormat::Deepseek
        } else if is_zai {
            ThinkingFormat::Zai
        } else if is("openrouter") || openrouter_in_url {
            ThinkingFormat::Openrouter
        } else {
            ThinkingFormat::Openai
        };
        Self {
            supports_store: !non_standard,
            supports_developer_role: !non_standard,
            supports_reasoning_effort: !(is("xai")
                || xai_in_url
                || is_zai
                || is_moonshot
                || is_cf_gateway),
            supports_usage_in_streaming: true,
            max_tokens_field: if chutes_in_url || is_moonshot || is_cf_gateway {
                MaxTokensField::MaxTokens
            } else {
                MaxTokensField::MaxCompletionTokens
            },
            requires_tool_result_name: false,
            requires_assistant_after_tool_result: false,
            requires_thinking_as_text: false,
            requires_reasoning_content_on_assistant_messages: is_deepseek,
            thinking_format,
            supports_strict_mode: !(is_moonshot || is_cf_gateway),
            open_router_routing: Value::Object(serde_json::Map::new()),
            vercel_gateway_routing: Value::Object(serde_json::Map::new()),
            zai_tool_stream: false,
            cache_control_format: None,
            send_session_affinity_headers: false,
            supports_long_cache_retention: !(is_cf_gateway || is_cf_workers),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_and_overrides() {
        let openai = Compat::detect("openai", "https://api.openai.com/v1");
        assert!(openai.supports_store && openai.supports_developer_role);
        assert_eq!(openai.max_tokens_field, MaxTokensField::MaxCompletionTokens);
        let xai = Compat::detect("xai", "https://api.x.ai/v1");
        assert!(!xai.supports_store && !xai.supports_reasoning_effort);
        assert_eq!(
            Compat::detect("deepseek", "https://api.deepseek.com").thinking_format,
            ThinkingFormat::Deepseek
        );
        let mut model = Model::new(
            "openai-completions",
            "ollama",
            "llama",
            "http://localhost:11434/v1",
        );
        model.compat = Some(
            serde_json::json!({"supportsStore": false, "maxTokensField": "max_tokens",
            "thinkingFormat": "qwen-chat-template"}),
        );
        let compat = Compat::for_model(&model);
        assert!(!compat.supports_store);
        assert_eq!(compat.max_tokens_field, MaxTokensField::MaxTokens);
        assert_eq!(compat.thinking_format, ThinkingFormat::QwenChatTemplate);
    }
}
