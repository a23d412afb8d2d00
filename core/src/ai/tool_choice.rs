//! One tool-choice option for every wire API ([`ToolChoice`]): whether the model may, must or
//! must not call a tool, or which one it must call. Each provider maps it onto its own form
//! (`tool_choice`, `toolConfig.functionCallingConfig`, Bedrock's `toolChoice`).
//!
//! The JSON form reads every spelling pi's providers took: `"auto"`, `"none"`, `"required"` and
//! its alias `"any"` (Anthropic, Gemini, Mistral, Bedrock), and a named tool as
//! `{"type": "tool", "name": ..}` (Anthropic, Bedrock), `{"type": "function", "function":
//! {"name": ..}}` (chat completions, Mistral) or `{"type": "function", "name": ..}` (Responses).
//! It is written back as `"auto"`, `"none"`, `"required"` or `{"type": "tool", "name": ..}`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Value, json};

use super::types::Tool;

/// Whether and which tool the model must call (`toolChoice`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ToolChoice {
    /// The model decides (every API's default).
    Auto,
    /// The model must answer without calling a tool.
    None,
    /// The model must call at least one tool, any of them (`"any"` in some APIs).
    Required,
    /// The model must call the tool with this name.
    Tool(String),
}

/// The spellings [`ToolChoice::from_value`] reads.
const EXPECTED: &str = "expected \"auto\", \"none\", \"required\" (or \"any\"), or \
                        {\"type\": \"tool\", \"name\": ...}";

/// Why a tool choice cannot be read, or cannot be sent with a request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolChoiceError {
    /// A string that names no choice.
    #[error("unknown tool choice \"{choice}\": {EXPECTED}")]
    UnknownChoice {
        /// The string as written.
        choice: String,
    },
    /// A value of no accepted shape.
    #[error("unreadable tool choice {value}: {EXPECTED}")]
    Unreadable {
        /// The value as JSON.
        value: String,
    },
    /// `required` or a named tool, but the request has no tools.
    #[error("toolChoice {choice} needs tools, but the request has none")]
    NoTools {
        /// The choice as written in JSON.
        choice: String,
    },
    /// The named tool is not among the request's tools.
    #[error("toolChoice names tool \"{name}\", which is not among the request's tools ({known})")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The request's tool names, comma-separated.
        known: String,
    },
}

impl ToolChoice {
    /// Reads any of the accepted spellings (see the module docs).
    pub fn from_value(value: &Value) -> Result<Self, ToolChoiceError> {
        match value {
            Value::String(kind) => match kind.as_str() {
                "auto" => Ok(Self::Auto),
                "none" => Ok(Self::None),
                "required" | "any" => Ok(Self::Required),
                other => Err(ToolChoiceError::UnknownChoice {
                    choice: other.to_owned(),
                }),
            },
            Value::Object(object) => {
                let name = object
                    .get("name")
                    .or_else(|| object.get("function").and_then(|f| f.get("name")))
                    .and_then(Value::as_str);
                match (object.get("type").and_then(Value::as_str), name) {
                    (Some("tool" | "function") | None, Some(name)) if !name.is_empty() => {
                        Ok(Self::Tool(name.to_owned()))
                    }
                    // Anthropic's `{"type": "auto"}` and friends.
                    (Some(kind @ ("auto" | "none" | "any" | "required")), None) => {
                        Self::from_value(&Value::String(kind.to_owned()))
                    }
                    _ => Err(ToolChoiceError::Unreadable {
                        value: value.to_string(),
                    }),
                }
            }
            other => Err(ToolChoiceError::Unreadable {
                value: other.to_string(),
            }),
        }
    }

    /// The JSON form written back (`"auto"`, `"none"`, `"required"`, `{"type": "tool", ..}`).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Auto => json!("auto"),
            Self::None => json!("none"),
            Self::Required => json!("required"),
            Self::Tool(name) => json!({"type": "tool", "name": name}),
        }
    }

    /// Checks the choice against the request's tools: `required` and a named tool need tools,
    /// and the named tool must be one of them. `auto` and `none` always pass.
    pub fn check(&self, tools: &[Tool]) -> Result<(), ToolChoiceError> {
        match self {
            Self::Auto | Self::None => Ok(()),
            _ if tools.is_empty() => Err(ToolChoiceError::NoTools {
                choice: self.to_value().to_string(),
            }),
            Self::Tool(name) if !tools.iter().any(|tool| &tool.name == name) => {
                Err(ToolChoiceError::UnknownTool {
                    name: name.clone(),
                    known: tools
                        .iter()
                        .map(|tool| tool.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
            _ => Ok(()),
        }
    }

    /// The OpenAI chat-completions form (also Mistral's, which reads `"required"` too).
    pub(crate) fn chat_completions(&self) -> Value {
        match self {
            Self::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            other => other.to_value(),
        }
    }

    /// The Responses form (openai-responses, azure, codex).
    #[cfg(feature = "openai")]
    pub(crate) fn responses(&self) -> Value {
        match self {
            Self::Tool(name) => json!({"type": "function", "name": name}),
            other => other.to_value(),
        }
    }

    /// The anthropic-messages form.
    #[cfg(feature = "anthropic")]
    pub(crate) fn anthropic(&self) -> Value {
        match self {
            Self::Auto => json!({"type": "auto"}),
            Self::None => json!({"type": "none"}),
            Self::Required => json!({"type": "any"}),
            Self::Tool(name) => json!({"type": "tool", "name": name}),
        }
    }
}

impl From<&str> for ToolChoice {
    /// `"auto"`, `"none"`, `"required"`/`"any"`; any other text names a tool.
    fn from(text: &str) -> Self {
        Self::from_value(&Value::String(text.to_owned()))
            .unwrap_or_else(|_| Self::Tool(text.to_owned()))
    }
}

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(&value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        Tool {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn every_providers_spelling_reads() {
        let read = |value: Value| ToolChoice::from_value(&value).unwrap();
        assert_eq!(read(json!("auto")), ToolChoice::Auto);
        assert_eq!(read(json!({"type": "none"})), ToolChoice::None);
        assert_eq!(read(json!("any")), ToolChoice::Required);
        assert_eq!(read(json!({"type": "any"})), ToolChoice::Required);
        for value in [
            json!({"type": "tool", "name": "calc"}),
            json!({"type": "function", "function": {"name": "calc"}}),
            json!({"type": "function", "name": "calc"}),
        ] {
            assert_eq!(read(value), ToolChoice::Tool("calc".into()));
        }
        let error = ToolChoice::from_value(&json!("requird"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown tool choice \"requird\""), "{error}");
        assert!(ToolChoice::from_value(&json!(3)).is_err());
        assert!(ToolChoice::from_value(&json!({"type": "tool"})).is_err());
    }

    #[test]
    fn checked_against_the_tools() {
        let tools = [tool("calc"), tool("search")];
        assert!(ToolChoice::Tool("calc".into()).check(&tools).is_ok());
        assert_eq!(
            ToolChoice::Tool("clac".into())
                .check(&tools)
                .unwrap_err()
                .to_string(),
            "toolChoice names tool \"clac\", which is not among the request's tools (calc, search)"
        );
        assert_eq!(
            ToolChoice::Required.check(&[]).unwrap_err().to_string(),
            "toolChoice \"required\" needs tools, but the request has none"
        );
        assert!(ToolChoice::None.check(&[]).is_ok());
    }
}
