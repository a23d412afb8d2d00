//! The JSON option objects of `pi_stream_open`, `pi_agent_new` and `pi_faux_new_with_options`,
//! mapped onto core's option structs. Unknown keys are rejected so that typos fail loudly.

use std::collections::BTreeMap;

use pi_agent::agent::{AgentMessage, QueueMode, ToolExecutionMode};
use pi_agent::ai::options::CacheRetention;
use pi_agent::ai::providers::faux::FauxOptions;
use pi_agent::ai::{ApiKey, StreamOptions, ThinkingLevel};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{parse_json, pi_error, pi_error_kind};

/// `options_json` of `pi_stream_open`, and the request options inside `pi_agent_new`'s:
/// core's `StreamOptions` fields that are data, in camelCase.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StreamOptionsJson {
    api_key: Option<String>,
    temperature: Option<f64>,
    max_tokens: Option<u64>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    session_id: Option<String>,
    reasoning: Option<ThinkingLevel>,
    tool_choice: Option<Value>,
    cache_retention: Option<CacheRetention>,
    max_retries: Option<u32>,
    max_retry_delay_ms: Option<u64>,
    request_timeout_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
}

impl StreamOptionsJson {
    fn into_options(self) -> StreamOptions {
        StreamOptions {
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            api_key: self.api_key.map(ApiKey::new),
            headers: self.headers,
            session_id: self.session_id,
            reasoning: self.reasoning,
            tool_choice: self.tool_choice,
            cache_retention: self.cache_retention,
            max_retries: self.max_retries,
            max_retry_delay_ms: self.max_retry_delay_ms,
            request_timeout_ms: self.request_timeout_ms,
            idle_timeout_ms: self.idle_timeout_ms,
            ..StreamOptions::default()
        }
    }
}

/// Parses the nullable `options_json` of `pi_stream_open`.
pub(crate) fn stream_options(json: Option<&str>) -> Result<StreamOptions, pi_error> {
    let parsed: StreamOptionsJson = match json {
        Some(json) => parse_json(json, "options_json")?,
        None => StreamOptionsJson::default(),
    };
    Ok(parsed.into_options())
}

/// The agent's own keys in `pi_agent_new`'s `options_json` (pi's `AgentOptions` that are data).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentOptionsJson {
    tool_execution: Option<ToolExecutionMode>,
    thinking_level: Option<ThinkingLevelJson>,
    steering_mode: Option<QueueMode>,
    follow_up_mode: Option<QueueMode>,
    #[serde(default)]
    messages: Vec<AgentMessage>,
}

const AGENT_KEYS: [&str; 5] = [
    "toolExecution",
    "thinkingLevel",
    "steeringMode",
    "followUpMode",
    "messages",
];

/// pi's agent `thinkingLevel`: `"off"` or a [`ThinkingLevel`].
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ThinkingLevelJson {
    Level(ThinkingLevel),
    Off(OffLiteral),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OffLiteral {
    Off,
}

/// What `pi_agent_new` needs from its `options_json`.
pub(crate) struct AgentSettings {
    pub(crate) tool_execution: ToolExecutionMode,
    pub(crate) thinking_level: Option<ThinkingLevel>,
    pub(crate) steering_mode: QueueMode,
    pub(crate) follow_up_mode: QueueMode,
    pub(crate) messages: Vec<AgentMessage>,
    pub(crate) stream_options: StreamOptions,
}

/// Parses the nullable `options_json` of `pi_agent_new`: the agent's keys, plus every
/// `pi_stream_open` option except `reasoning` (the agent sets it from `thinkingLevel`).
pub(crate) fn agent_settings(json: Option<&str>) -> Result<AgentSettings, pi_error> {
    let mut request: Map<String, Value> = match json {
        Some(json) => parse_json(json, "options_json")?,
        None => Map::new(),
    };
    let invalid = |error: serde_json::Error| pi_error::invalid_json("options_json", &error);
    if request.contains_key("reasoning") {
        return Err(pi_error::new(
            pi_error_kind::InvalidJson,
            "`options_json` is not valid: use `thinkingLevel`, not `reasoning`, for an agent",
        ));
    }
    let own: Map<String, Value> = AGENT_KEYS
        .iter()
        .filter_map(|key| request.remove(*key).map(|value| ((*key).to_owned(), value)))
        .collect();
    let agent: AgentOptionsJson = serde_json::from_value(Value::Object(own)).map_err(invalid)?;
    let stream: StreamOptionsJson =
        serde_json::from_value(Value::Object(request)).map_err(invalid)?;
    Ok(AgentSettings {
        tool_execution: agent.tool_execution.unwrap_or_default(),
        thinking_level: match agent.thinking_level {
            Some(ThinkingLevelJson::Level(level)) => Some(level),
            Some(ThinkingLevelJson::Off(OffLiteral::Off)) | None => None,
        },
        steering_mode: agent.steering_mode.unwrap_or_default(),
        follow_up_mode: agent.follow_up_mode.unwrap_or_default(),
        messages: agent.messages,
        stream_options: stream.into_options(),
    })
}

/// `options_json` of `pi_faux_new_with_options` (pi's `registerFauxProvider` options).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FauxOptionsJson {
    api: Option<String>,
    provider: Option<String>,
    models: Option<Vec<String>>,
    tokens_per_second: Option<f64>,
    token_size: Option<TokenSizeJson>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenSizeJson {
    min: usize,
    max: usize,
}

/// Parses the nullable `options_json` of `pi_faux_new_with_options`.
pub(crate) fn faux_options(json: Option<&str>) -> Result<FauxOptions, pi_error> {
    let parsed: FauxOptionsJson = match json {
        Some(json) => parse_json(json, "options_json")?,
        None => FauxOptionsJson::default(),
    };
    let defaults = FauxOptions::default();
    Ok(FauxOptions {
        api: parsed.api,
        provider: parsed.provider.unwrap_or(defaults.provider),
        model_ids: parsed
            .models
            .filter(|models| !models.is_empty())
            .unwrap_or(defaults.model_ids),
        tokens_per_second: parsed.tokens_per_second,
        token_size: parsed
            .token_size
            .map_or(defaults.token_size, |size| (size.min, size.max)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_options_split_into_agent_and_request_options() {
        let settings = agent_settings(Some(
            r#"{"toolExecution":"sequential","thinkingLevel":"off","followUpMode":"all",
                "apiKey":"k","maxTokens":10,"headers":{"x-a":"1"},"maxRetries":0}"#,
        ))
        .unwrap();
        assert_eq!(settings.tool_execution, ToolExecutionMode::Sequential);
        assert_eq!(settings.thinking_level, None);
        assert_eq!(settings.follow_up_mode, QueueMode::All);
        assert_eq!(settings.steering_mode, QueueMode::OneAtATime);
        let options = settings.stream_options;
        assert_eq!(options.api_key.as_ref().map(ApiKey::expose), Some("k"));
        assert_eq!(options.max_tokens, Some(10));
        assert_eq!(options.max_retries, Some(0));
        assert_eq!(options.headers["x-a"], "1");

        let level = agent_settings(Some(r#"{"thinkingLevel":"high"}"#)).unwrap();
        assert_eq!(level.thinking_level, Some(ThinkingLevel::High));
    }

    #[test]
    fn unknown_and_misplaced_options_are_rejected() {
        for json in [
            r#"{"apiKye":"k"}"#,
            r#"{"reasoning":"high"}"#,
            r#"{"thinkingLevel":"max"}"#,
            r#"[]"#,
        ] {
            assert!(agent_settings(Some(json)).is_err(), "{json}");
        }
        assert!(stream_options(Some(r#"{"toolExecution":"parallel"}"#)).is_err());
        assert!(faux_options(Some(r#"{"tokenSize":{"min":1}}"#)).is_err());
        let faux = faux_options(Some(
            r#"{"models":["a","b"],"tokenSize":{"min":1,"max":2}}"#,
        ))
        .unwrap();
        assert_eq!(faux.model_ids, ["a", "b"]);
        assert_eq!(faux.token_size, (1, 2));
    }
}
