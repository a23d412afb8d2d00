//! Option objects as C passes them: core's serde types parsed from JSON (core owns every
//! shape and its error messages, e.g. for unknown keys), and pi's names for enum values.

use pi_agent::ai::StreamOptions;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{parse_object, pi_error};

/// Parses nullable `options_json` (core's `StreamOptions`, pi's flat camelCase shape with every
/// provider's keys); NULL gives the defaults.
pub(crate) fn stream_options(json: Option<&str>) -> Result<StreamOptions, pi_error> {
    parse_or_default(json, "options_json")
}

/// Parses a nullable JSON argument named `name` into core's `T`; NULL gives `T::default()`.
pub(crate) fn parse_or_default<T: DeserializeOwned + Default>(
    json: Option<&str>,
    name: &str,
) -> Result<T, pi_error> {
    json.map_or_else(|| Ok(T::default()), |json| parse_object(json, name))
}

/// Parses one of pi's names for an enum (`"all"`, `"sequential"`, ...), failing with
/// `PI_ERROR_KIND_INVALID_ARGUMENT`.
pub(crate) fn parse_name<T: DeserializeOwned>(name: &str, what: &str) -> Result<T, pi_error> {
    serde_json::from_value(Value::String(name.to_owned()))
        .map_err(|error| pi_error::invalid_argument(format!("`{what}` is not valid: {error}")))
}

#[cfg(test)]
mod tests {
    use pi_agent::agent::{AgentSettings, QueueMode};
    use pi_agent::ai::providers::faux::FauxOptions;

    use super::*;

    #[test]
    fn core_shapes_with_core_messages() {
        let options = stream_options(Some(
            r#"{"reasoningEffort":"high","thinkingEnabled":true,"promptMode":"reasoning",
                "serviceTier":"flex","azureDeploymentName":"d","region":"eu-west-1",
                "thinking":{"enabled":true,"budgetTokens":1024},"apiKey":"k"}"#,
        ))
        .unwrap();
        assert_eq!(options.reasoning_effort.as_deref(), Some("high"));
        assert_eq!(options.region.as_deref(), Some("eu-west-1"));
        let error = stream_options(Some(r#"{"apiKye":"k"}"#)).unwrap_err();
        let message = crate::error::message_of(&error);
        assert!(message.starts_with("`options_json` is not valid: unknown field `apiKye`"));
        assert!(message.contains("expected one of"), "{message}");

        let settings: AgentSettings = parse_or_default(
            Some(r#"{"thinkingLevel":"low","streamOptions":{"sessionId":"s"},"toolTimeoutMs":5}"#),
            "settings_json",
        )
        .unwrap();
        assert_eq!(settings.tool_timeout_ms, Some(5));
        assert_eq!(settings.stream_options.session_id.as_deref(), Some("s"));
        assert!(parse_or_default::<AgentSettings>(Some(r#"{"apiKey":"k"}"#), "s").is_err());

        let faux: FauxOptions = parse_or_default(
            Some(r#"{"models":["a","b"],"tokenSize":{"min":1,"max":2}}"#),
            "options_json",
        )
        .unwrap();
        assert_eq!(faux.model_ids, ["a", "b"]);
        assert_eq!(faux.token_size, (1, 2));
        assert!(parse_or_default::<FauxOptions>(Some(r#"{"tokenSize":{"min":1}}"#), "o").is_err());

        assert_eq!(
            parse_name::<QueueMode>("one-at-a-time", "mode").unwrap(),
            QueueMode::OneAtATime
        );
        assert!(parse_name::<QueueMode>("some", "mode").is_err());
    }
}
