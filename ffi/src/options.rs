//! The JSON option objects of `pi_stream_open`, `pi_agent_new`, `pi_agent_restore` and
//! `pi_faux_new_with_options`, mapped onto core's option structs, and the names the
//! `pi_agent_set_*` functions take. Unknown keys are rejected so that typos fail loudly.

use std::collections::BTreeMap;
use std::time::Duration;

use pi_agent::agent::{AgentMessage, QueueMode, ToolExecutionMode};
use pi_agent::ai::options::{CacheRetention, ThinkingBudgets};
use pi_agent::ai::providers::faux::FauxOptions;
use pi_agent::ai::{ApiKey, ModelThinkingLevel, StreamOptions, ThinkingLevel};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{parse_json, pi_error, pi_error_kind};

/// `options_json` of `pi_stream_open`, and the request options inside `pi_agent_new`'s:
/// every field of core's `StreamOptions` that is data, in pi's camelCase.
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
    thinking_budgets: Option<ThinkingBudgetsJson>,
    tool_choice: Option<Value>,
    cache_retention: Option<CacheRetention>,
    max_retries: Option<u32>,
    max_retry_delay_ms: Option<u64>,
    request_timeout_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
}

/// pi's `thinkingBudgets`: tokens per level (core's type accepts unknown keys; this one does
/// not, so that `"hgih"` fails).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThinkingBudgetsJson {
    minimal: Option<u64>,
    low: Option<u64>,
    medium: Option<u64>,
    high: Option<u64>,
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
            thinking_budgets: self.thinking_budgets.map(|budgets| ThinkingBudgets {
                minimal: budgets.minimal,
                low: budgets.low,
                medium: budgets.medium,
                high: budgets.high,
            }),
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

/// The agent's own data keys in `pi_agent_new`'s `options_json` (pi's `AgentOptions` that are
/// state; a snapshot carries them too).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentStateJson {
    tool_execution: Option<ToolExecutionMode>,
    thinking_level: Option<ModelThinkingLevel>,
    steering_mode: Option<QueueMode>,
    follow_up_mode: Option<QueueMode>,
    #[serde(default)]
    messages: Vec<AgentMessage>,
}

const AGENT_STATE_KEYS: [&str; 5] = [
    "toolExecution",
    "thinkingLevel",
    "steeringMode",
    "followUpMode",
    "messages",
];

/// The agent's watchdogs (core's `AgentOptions::stream_idle_timeout` / `tool_timeout`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentRunJson {
    stream_idle_timeout_ms: Option<u64>,
    tool_timeout_ms: Option<u64>,
}

const AGENT_RUN_KEYS: [&str; 2] = ["streamIdleTimeoutMs", "toolTimeoutMs"];

/// What `pi_agent_new` and `pi_agent_restore` need from their `options_json` besides the
/// agent's state.
pub(crate) struct RunSettings {
    pub(crate) stream_options: StreamOptions,
    pub(crate) stream_idle_timeout: Option<Duration>,
    pub(crate) tool_timeout: Option<Duration>,
}

/// What `pi_agent_new` needs from its `options_json`.
pub(crate) struct AgentSettings {
    pub(crate) tool_execution: ToolExecutionMode,
    pub(crate) thinking_level: Option<ThinkingLevel>,
    pub(crate) steering_mode: QueueMode,
    pub(crate) follow_up_mode: QueueMode,
    pub(crate) messages: Vec<AgentMessage>,
    pub(crate) run: RunSettings,
}

/// A duration in whole milliseconds (saturating).
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn invalid_options(error: &serde_json::Error) -> pi_error {
    pi_error::invalid_json("options_json", error)
}

/// Moves `keys` out of `object` into a new object and parses that.
fn take_keys<T: DeserializeOwned>(
    object: &mut Map<String, Value>,
    keys: &[&str],
) -> Result<T, pi_error> {
    let taken: Map<String, Value> = keys
        .iter()
        .filter_map(|key| object.remove(*key).map(|value| ((*key).to_owned(), value)))
        .collect();
    serde_json::from_value(Value::Object(taken)).map_err(|error| invalid_options(&error))
}

/// Parses the nullable `options_json` of an agent into its object, rejecting `reasoning`
/// (the agent sets it from `thinkingLevel` on every call).
fn agent_object(json: Option<&str>) -> Result<Map<String, Value>, pi_error> {
    let object: Map<String, Value> = match json {
        Some(json) => parse_json(json, "options_json")?,
        None => Map::new(),
    };
    if object.contains_key("reasoning") {
        return Err(pi_error::new(
            pi_error_kind::InvalidJson,
            "`options_json` is not valid: use `thinkingLevel`, not `reasoning`, for an agent",
        ));
    }
    Ok(object)
}

/// Parses the watchdogs and request options left in `object` (after the state keys).
fn run_settings(mut object: Map<String, Value>) -> Result<RunSettings, pi_error> {
    let run: AgentRunJson = take_keys(&mut object, &AGENT_RUN_KEYS)?;
    let stream: StreamOptionsJson =
        serde_json::from_value(Value::Object(object)).map_err(|error| invalid_options(&error))?;
    Ok(RunSettings {
        stream_options: stream.into_options(),
        stream_idle_timeout: run.stream_idle_timeout_ms.map(Duration::from_millis),
        tool_timeout: run.tool_timeout_ms.map(Duration::from_millis),
    })
}

/// Parses the nullable `options_json` of `pi_agent_new`: the agent's state keys, its
/// watchdogs, and every `pi_stream_open` option except `reasoning` (the agent sets it from
/// `thinkingLevel`).
pub(crate) fn agent_settings(json: Option<&str>) -> Result<AgentSettings, pi_error> {
    let mut object = agent_object(json)?;
    let state: AgentStateJson = take_keys(&mut object, &AGENT_STATE_KEYS)?;
    Ok(AgentSettings {
        tool_execution: state.tool_execution.unwrap_or_default(),
        thinking_level: state
            .thinking_level
            .and_then(ModelThinkingLevel::thinking_level),
        steering_mode: state.steering_mode.unwrap_or_default(),
        follow_up_mode: state.follow_up_mode.unwrap_or_default(),
        messages: state.messages,
        run: run_settings(object)?,
    })
}

/// Parses the nullable `options_json` of `pi_agent_restore`: like `pi_agent_new`'s, without
/// the state keys, which come from the snapshot.
pub(crate) fn restore_settings(json: Option<&str>) -> Result<RunSettings, pi_error> {
    let object = agent_object(json)?;
    if let Some(key) = AGENT_STATE_KEYS
        .iter()
        .find(|key| object.contains_key(**key))
    {
        return Err(pi_error::new(
            pi_error_kind::InvalidJson,
            format!(
                "`options_json` is not valid: `{key}` comes from the snapshot (change it after \
                 restoring)"
            ),
        ));
    }
    run_settings(object)
}

/// Parses one of pi's names for an enum (`"all"`, `"sequential"`, ...), failing with
/// `PI_ERROR_KIND_INVALID_ARGUMENT`.
pub(crate) fn parse_name<T: DeserializeOwned>(name: &str, what: &str) -> Result<T, pi_error> {
    serde_json::from_value(Value::String(name.to_owned()))
        .map_err(|error| pi_error::invalid_argument(format!("`{what}` is not valid: {error}")))
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
                "apiKey":"k","maxTokens":10,"headers":{"x-a":"1"},"maxRetries":0,
                "toolTimeoutMs":1500,"thinkingBudgets":{"low":1024}}"#,
        ))
        .unwrap();
        assert_eq!(settings.tool_execution, ToolExecutionMode::Sequential);
        assert_eq!(settings.thinking_level, None);
        assert_eq!(settings.follow_up_mode, QueueMode::All);
        assert_eq!(settings.steering_mode, QueueMode::OneAtATime);
        assert_eq!(settings.run.tool_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(settings.run.stream_idle_timeout, None);
        let options = settings.run.stream_options;
        assert_eq!(options.thinking_budgets.and_then(|b| b.low), Some(1024));
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
            r#"{"thinkingBudgets":{"hgih":1}}"#,
            r#"{"toolTimeoutMs":-1}"#,
            r#"[]"#,
        ] {
            assert!(agent_settings(Some(json)).is_err(), "{json}");
        }
        assert!(restore_settings(Some(r#"{"messages":[]}"#)).is_err());
        assert!(restore_settings(Some(r#"{"apiKey":"k","streamIdleTimeoutMs":5}"#)).is_ok());
        assert_eq!(
            parse_name::<QueueMode>("one-at-a-time", "mode").unwrap(),
            QueueMode::OneAtATime
        );
        assert!(parse_name::<QueueMode>("some", "mode").is_err());
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
