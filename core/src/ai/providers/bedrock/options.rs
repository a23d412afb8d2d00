//! The Bedrock-specific request options (pi's `BedrockOptions`), read from [`StreamOptions`] in
//! one place.

use serde_json::Value;

use crate::ai::options::{ApiKey, StreamOptions, ThinkingBudgets};
use crate::ai::thinking::ThinkingLevel;
use crate::ai::tool_choice::ToolChoice;

/// The value `getEnvApiKey("amazon-bedrock")` returns when ambient AWS credentials exist; it is
/// a marker, never a key.
pub(crate) use crate::ai::env_keys::AUTHENTICATED as AUTHENTICATED_MARKER;

/// What a Bedrock request may set beyond the shared options.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct BedrockRequestOptions {
    /// `region`: the AWS region (else `AWS_REGION`, `AWS_DEFAULT_REGION`, ...).
    pub region: Option<String>,
    /// `profile`: the shared-file profile for credentials (else `AWS_PROFILE`).
    pub profile: Option<String>,
    /// `bearerToken`: a Bedrock API key (else `AWS_BEARER_TOKEN_BEDROCK`).
    pub bearer_token: Option<ApiKey>,
    /// `requestMetadata`: cost-allocation tags, sent as is.
    pub request_metadata: Option<Value>,
    /// `interleavedThinking`: the interleaved-thinking beta for budgeted Claude (default on).
    pub interleaved_thinking: Option<bool>,
    /// `thinkingDisplay`: Claude's `thinking.display` (default `summarized`).
    pub thinking_display: Option<String>,
    /// `toolChoice` (`none` sends no tools: Bedrock has no such choice).
    pub tool_choice: Option<ToolChoice>,
    /// `reasoning`: the thinking level.
    pub reasoning: Option<ThinkingLevel>,
    /// `thinkingBudgets`: token budgets per level for budgeted Claude.
    pub thinking_budgets: Option<ThinkingBudgets>,
}

impl BedrockRequestOptions {
    /// Reads the Bedrock keys of a request. The bearer token is `bearerToken`, else the request's
    /// API key (a Bedrock API key *is* a bearer token; pi ignores `apiKey` here), except pi's
    /// `<authenticated>` marker.
    pub(crate) fn from_stream_options(options: &StreamOptions) -> Self {
        let non_empty = |text: &Option<String>| text.clone().filter(|text| !text.is_empty());
        Self {
            region: non_empty(&options.region),
            profile: non_empty(&options.profile),
            bearer_token: options
                .bearer_token
                .clone()
                .filter(|token| !token.is_empty())
                .or_else(|| options.api_key.clone())
                .filter(|key| !key.is_empty() && key.expose() != AUTHENTICATED_MARKER),
            request_metadata: options.request_metadata.clone().map(Value::Object),
            interleaved_thinking: options.interleaved_thinking,
            thinking_display: non_empty(&options.thinking_display),
            tool_choice: options.tool_choice.clone(),
            reasoning: options.reasoning,
            thinking_budgets: options.thinking_budgets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_is_the_bearer_token_unless_it_is_the_marker() {
        let mut options = StreamOptions {
            api_key: Some(ApiKey::new("ABSK-key")),
            reasoning: Some(ThinkingLevel::High),
            ..StreamOptions::default()
        };
        let read = BedrockRequestOptions::from_stream_options(&options);
        assert_eq!(read.bearer_token, Some(ApiKey::new("ABSK-key")));
        assert_eq!(read.reasoning, Some(ThinkingLevel::High));
        options.api_key = Some(ApiKey::new(AUTHENTICATED_MARKER));
        assert_eq!(
            BedrockRequestOptions::from_stream_options(&options).bearer_token,
            None
        );
        // `bearerToken` wins over the API key.
        options.bearer_token = Some(ApiKey::new("ABSK-bearer"));
        options.region = Some("eu-west-1".into());
        options.request_metadata = Some([("team".to_owned(), "ai".into())].into_iter().collect());
        let read = BedrockRequestOptions::from_stream_options(&options);
        assert_eq!(read.bearer_token, Some(ApiKey::new("ABSK-bearer")));
        assert_eq!(read.region.as_deref(), Some("eu-west-1"));
        assert_eq!(
            read.request_metadata,
            Some(serde_json::json!({"team": "ai"}))
        );
    }
}
