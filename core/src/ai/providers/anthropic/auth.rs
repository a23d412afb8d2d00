//! Who we are to the server: the four ways pi authenticates an Anthropic request (API key,
//! Claude Pro/Max OAuth token, GitHub Copilot, Cloudflare AI Gateway) and the headers each sends.

use crate::ai::model::Model;
use crate::ai::options::{ApiKey, StreamOptions};
use crate::ai::providers::http::Headers;
use crate::ai::types::Message;

/// The `anthropic-version` header every request carries.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Beta asked for when tools cannot use `eager_input_streaming`.
pub(crate) const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
/// Beta for thinking between tool calls (built into adaptive-thinking models).
pub(crate) const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
/// The Claude Code version an OAuth request presents itself as.
pub(crate) const CLAUDE_CODE_VERSION: &str = "2.1.75";
/// The first system block of every OAuth request: subscription tokens are only accepted for
/// Claude Code.
pub(crate) const CLAUDE_CODE_IDENTITY: &str =
    "You are Claude Code, Anthropic's official CLI for Claude.";

/// Claude Code's tool names in their canonical casing; under OAuth, tools whose names match one
/// of these case-insensitively are sent with this spelling.
pub(crate) const CLAUDE_CODE_TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

/// How the request authenticates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AuthMode {
    /// `x-api-key` (or nothing, for a local server without a key).
    ApiKey,
    /// A Claude subscription token (`sk-ant-oat…`): Bearer auth plus Claude Code's identity.
    OAuth,
    /// GitHub Copilot: Bearer auth plus Copilot's per-request headers.
    Copilot,
    /// Cloudflare AI Gateway: the key goes in `cf-aig-authorization`.
    CloudflareGateway,
}

impl AuthMode {
    /// The mode pi picks for `provider` and `key`.
    pub(crate) fn detect(provider: &str, key: Option<&ApiKey>) -> Self {
        match provider {
            "cloudflare-ai-gateway" => Self::CloudflareGateway,
            "github-copilot" => Self::Copilot,
            _ if key.is_some_and(|key| is_oauth_token(key.expose())) => Self::OAuth,
            _ => Self::ApiKey,
        }
    }
}

/// Whether a key is a Claude subscription (OAuth) token.
pub(crate) fn is_oauth_token(key: &str) -> bool {
    key.contains("sk-ant-oat")
}

/// `name` in Claude Code's casing when it is one of Claude Code's tools.
pub(crate) fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|tool| tool.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_owned(), |tool| (*tool).to_owned())
}

/// The caller's spelling of a tool name the model used (the inverse of
/// [`to_claude_code_name`]): the context tool whose name matches case-insensitively.
pub(crate) fn from_claude_code_name(name: &str, tools: &[String]) -> String {
    tools
        .iter()
        .find(|tool| tool.eq_ignore_ascii_case(name))
        .cloned()
        .unwrap_or_else(|| name.to_owned())
}

/// Everything that decides the request headers.
#[derive(Debug)]
pub(crate) struct HeaderInputs<'a> {
    /// The model (its provider and `headers`).
    pub model: &'a Model,
    /// The request's options (their `headers` come last).
    pub options: &'a StreamOptions,
    /// The conversation (Copilot's headers depend on it).
    pub messages: &'a [Message],
    /// The key, if any.
    pub key: Option<&'a ApiKey>,
    /// How the request authenticates.
    pub mode: AuthMode,
    /// Beta features to ask for.
    pub betas: Vec<&'static str>,
}

/// The request headers: the protocol's own, then authentication, then `model.headers`, then
/// (Copilot only) the per-request headers, then `options.headers`.
pub(crate) fn build_headers(inputs: &HeaderInputs<'_>) -> Headers {
    let mut headers = Headers::default();
    headers.set("content-type", "application/json");
    headers.set("anthropic-version", ANTHROPIC_VERSION);
    headers.set("accept", "application/json");
    headers.set("anthropic-dangerous-direct-browser-access", "true");
    let key = inputs.key.map(ApiKey::expose);
    let mut betas: Vec<&str> = Vec::new();
    match inputs.mode {
        AuthMode::ApiKey => {
            if let Some(key) = key {
                headers.set("x-api-key", key);
            }
        }
        AuthMode::OAuth | AuthMode::Copilot => {
            if let Some(key) = key {
                headers.set("authorization", format!("Bearer {key}"));
            }
        }
        AuthMode::CloudflareGateway => {
            if let Some(key) = key {
                headers.set("cf-aig-authorization", format!("Bearer {key}"));
            }
        }
    }
    if inputs.mode == AuthMode::OAuth {
        betas.extend(["claude-code-20250219", "oauth-2025-04-20"]);
        headers.set("user-agent", format!("claude-cli/{CLAUDE_CODE_VERSION}"));
        headers.set("x-app", "cli");
    }
    betas.extend(inputs.betas.iter().copied());
    if !betas.is_empty() {
        headers.set("anthropic-beta", betas.join(","));
    }
    headers.extend(inputs.model.headers.iter().flatten());
    if inputs.mode == AuthMode::Copilot {
        for (name, value) in super::super::copilot::dynamic_headers(inputs.messages) {
            headers.set(name, value);
        }
    }
    headers.extend(inputs.options.headers.iter());
    headers
}

/// Replaces `{VAR}` placeholders in a Cloudflare gateway base URL from the environment (pi's
/// `resolveCloudflareBaseUrl`).
pub(crate) use super::super::cloudflare::resolve_base_url;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::UserMessage;

    fn inputs<'a>(
        model: &'a Model,
        options: &'a StreamOptions,
        messages: &'a [Message],
        key: &'a ApiKey,
    ) -> HeaderInputs<'a> {
        HeaderInputs {
            model,
            options,
            messages,
            key: Some(key),
            mode: AuthMode::detect(&model.provider, Some(key)),
            betas: vec![INTERLEAVED_THINKING_BETA],
        }
    }

    #[test]
    fn api_key_headers_and_override_order() {
        let mut model = Model::new("anthropic-messages", "anthropic", "m", "");
        model.headers = Some([("Anthropic-Beta".to_owned(), "from-model".to_owned())].into());
        let options = StreamOptions {
            headers: [("x-app".to_owned(), "mine".to_owned())].into(),
            ..StreamOptions::default()
        };
        let key = ApiKey::new("sk-ant-api-1");
        let headers = build_headers(&inputs(&model, &options, &[], &key));
        assert_eq!(headers.get("x-api-key"), Some("sk-ant-api-1"));
        assert_eq!(headers.get("authorization"), None);
        assert_eq!(headers.get("anthropic-beta"), Some("from-model"));
        assert_eq!(headers.get("anthropic-version"), Some(ANTHROPIC_VERSION));
        assert_eq!(headers.get("x-app"), Some("mine"));
        assert_eq!(
            headers
                .iter()
                .filter(|(n, _)| *n == "Anthropic-Beta")
                .count(),
            1
        );
    }

    #[test]
    fn oauth_and_copilot_use_bearer() {
        let model = Model::new("anthropic-messages", "anthropic", "m", "");
        let options = StreamOptions::default();
        let key = ApiKey::new("sk-ant-oat01-abc");
        let headers = build_headers(&inputs(&model, &options, &[], &key));
        assert_eq!(
            headers.get("authorization"),
            Some("Bearer sk-ant-oat01-abc")
        );
        assert_eq!(headers.get("x-api-key"), None);
        assert_eq!(
            headers.get("anthropic-beta"),
            Some("claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14")
        );
        assert_eq!(headers.get("user-agent"), Some("claude-cli/2.1.75"));

        let model = Model::new("anthropic-messages", "github-copilot", "m", "");
        let key = ApiKey::new("ghu_token");
        let messages = [Message::User(UserMessage::text("hi"))];
        let headers = build_headers(&inputs(&model, &options, &messages, &key));
        assert_eq!(headers.get("authorization"), Some("Bearer ghu_token"));
        assert_eq!(headers.get("x-initiator"), Some("user"));
        assert_eq!(headers.get("openai-intent"), Some("conversation-edits"));
        assert_eq!(headers.get("copilot-vision-request"), None);
    }

    #[test]
    fn claude_code_names_round_trip() {
        assert_eq!(to_claude_code_name("read"), "Read");
        assert_eq!(to_claude_code_name("todowrite"), "TodoWrite");
        assert_eq!(to_claude_code_name("calculator"), "calculator");
        let tools = vec!["read".to_owned(), "calculator".to_owned()];
        assert_eq!(from_claude_code_name("Read", &tools), "read");
        assert_eq!(from_claude_code_name("Other", &tools), "Other");
    }

    #[test]
    fn cloudflare_placeholders() {
        let mut model = Model::new(
            "anthropic-messages",
            "cloudflare-ai-gateway",
            "m",
            "https://gateway.ai.cloudflare.com/v1/{PI_TEST_UNSET_ACCOUNT_VAR}/g/anthropic",
        );
        assert_eq!(
            resolve_base_url(&model).unwrap_err().to_string(),
            "PI_TEST_UNSET_ACCOUNT_VAR is required for provider cloudflare-ai-gateway but is not set."
        );
        model.base_url = "https://gateway.example/{lowercase}/x".into();
        assert_eq!(resolve_base_url(&model).unwrap(), model.base_url);
    }
}
