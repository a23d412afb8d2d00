//! `AgentMessage`: what an agent's transcript holds — LLM messages plus application-defined
//! messages that the LLM never sees unless `convert_to_llm` turns them into LLM messages.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ai::types::{AssistantMessage, Message, ToolResultMessage, UserMessage};

/// An application-defined transcript entry: any JSON object with a `role` that is not one of
/// the LLM roles (e.g. `{"role": "notification", "text": "..."}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CustomMessage {
    /// The application's role name.
    pub role: String,
    /// Every other field, kept verbatim.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// One transcript entry. JSON with role `user`, `assistant` or `toolResult` must be a valid LLM
/// message (a malformed one is an error, not silently a custom message); any other role is a
/// custom message.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AgentMessage {
    /// A user, assistant or tool-result message.
    Llm(Message),
    /// An application-defined message.
    Custom(CustomMessage),
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = Value::deserialize(deserializer)?;
        match value.get("role").and_then(Value::as_str) {
            Some("user" | "assistant" | "toolResult") => serde_json::from_value(value)
                .map(Self::Llm)
                .map_err(D::Error::custom),
            Some(_) => serde_json::from_value(value)
                .map(Self::Custom)
                .map_err(D::Error::custom),
            None => Err(D::Error::custom("a message needs a string `role`")),
        }
    }
}

impl AgentMessage {
    /// The `role` field.
    pub fn role(&self) -> &str {
        match self {
            Self::Llm(message) => message.role(),
            Self::Custom(custom) => &custom.role,
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Self::Llm(Message::Assistant(message)) => Some(message),
            _ => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            Self::Llm(Message::ToolResult(message)) => Some(message),
            _ => None,
        }
    }

    /// The LLM message, if this is one.
    pub fn as_llm(&self) -> Option<&Message> {
        match self {
            Self::Llm(message) => Some(message),
            Self::Custom(_) => None,
        }
    }
}

impl From<Message> for AgentMessage {
    fn from(message: Message) -> Self {
        Self::Llm(message)
    }
}

impl From<UserMessage> for AgentMessage {
    fn from(message: UserMessage) -> Self {
        Self::Llm(Message::User(message))
    }
}

impl From<AssistantMessage> for AgentMessage {
    fn from(message: AssistantMessage) -> Self {
        Self::Llm(Message::Assistant(message))
    }
}

impl From<ToolResultMessage> for AgentMessage {
    fn from(message: ToolResultMessage) -> Self {
        Self::Llm(Message::ToolResult(message))
    }
}

impl From<CustomMessage> for AgentMessage {
    fn from(message: CustomMessage) -> Self {
        Self::Custom(message)
    }
}

/// pi's `defaultConvertToLlm`: keeps user, assistant and tool-result messages, drops the rest.
pub fn default_convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    messages
        .iter()
        .filter_map(|message| message.as_llm().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn custom_messages_round_trip_and_are_filtered() {
        let transcript: Vec<AgentMessage> = serde_json::from_value(json!([
            {"role": "user", "content": "hi", "timestamp": 1},
            {"role": "notification", "text": "build finished", "level": 2}
        ]))
        .unwrap();
        assert_eq!(transcript[1].role(), "notification");
        assert_eq!(default_convert_to_llm(&transcript).len(), 1);
        assert_eq!(
            serde_json::to_value(&transcript[1]).unwrap(),
            json!({"role": "notification", "text": "build finished", "level": 2})
        );
        let malformed = serde_json::from_value::<AgentMessage>(json!({"role": "user"}));
        assert!(malformed.unwrap_err().to_string().contains("content"));
        assert!(serde_json::from_value::<AgentMessage>(json!({"text": "no role"})).is_err());
    }
}
