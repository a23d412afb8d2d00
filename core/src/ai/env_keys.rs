//! API keys from the environment, with pi's variable names per provider (pi's `env-api-keys.ts`).

use super::options::ApiKey;

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

/// The first non-empty key variable that is set for `provider` (pi's `getEnvApiKey`).
pub fn get_env_api_key(provider: &str) -> Option<ApiKey> {
    env_key_names(provider)
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.is_empty())
        .map(ApiKey::new)
}

/// The key variables for `provider` that are set, by name (pi's `findEnvKeys`).
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
    fn missing_key_names_the_variable() {
        assert!(missing_key_message("groq").contains("GROQ_API_KEY"));
        assert!(missing_key_message("anthropic").contains("ANTHROPIC_API_KEY"));
    }
}
