//! `AgentMessage`: what an agent's transcript holds — LLM messages plus application-defined
//! messages that the LLM never sees unless `convert_to_llm` turns them into LLM messages.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::ai::tagged::{self, Tagged};
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

/// Read with the `role` looked at first (see `ai::tagged`): an LLM message is read straight
/// into its type, any other role into a [`CustomMessage`].
impl Tagged for AgentMessage {
    const TAG: &'static str = Message::TAG;
    const VARIANTS: &'static [&'static str] = Message::VARIANTS;
    const EXPECTING: &'static str = Message::EXPECTING;

    fn read_variant<'de, D: Deserializer<'de>>(index: usize, rest: D) -> Result<Self, D::Error> {
        Message::read_variant(index, rest).map(Self::Llm)
    }

    fn read_other<'de, D: Deserializer<'de>>(role: String, rest: D) -> Result<Self, D::Error> {
        let fields = Map::deserialize(rest)?;
        Ok(Self::Custom(CustomMessage { role, fields }))
    }

    fn missing_tag<E: serde::de::Error>() -> E {
        E::custom("a message needs a string `role`")
    }
}

tagged::deserialize_tagged!(AgentMessage);

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
        let no_role = serde_json::from_value::<AgentMessage>(json!({"text": "no role"}));
        assert_eq!(
            no_role.unwrap_err().to_string(),
            "a message needs a string `role`"
        );
        let numbered = serde_json::from_str::<AgentMessage>(r#"{"role": 5}"#);
        assert!(numbered.is_err());
    }

    /// From text as the bindings and the session journal read it: the role first or later,
    /// custom fields kept in their order.
    #[test]
    fn messages_read_from_text_whatever_the_roles_place() {
        let first: AgentMessage =
            serde_json::from_str(r#"{"role":"notification","text":"done","level":2}"#).unwrap();
        let later: AgentMessage =
            serde_json::from_str(r#"{"text":"done","level":2,"role":"notification"}"#).unwrap();
        assert_eq!(first, later);
        assert_eq!(
            serde_json::to_string(&first).unwrap(),
            r#"{"role":"notification","text":"done","level":2}"#
        );
        // A tag between other keys: the keys after it keep their order.
        let middle: AgentMessage =
            serde_json::from_str(r#"{"a":1,"role":"note","b":2,"c":3,"d":4}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&middle).unwrap(),
            r#"{"role":"note","a":1,"b":2,"c":3,"d":4}"#
        );
        let user: AgentMessage =
            serde_json::from_str(r#"{"content":"hi","role":"user","timestamp":1}"#).unwrap();
        assert_eq!(
            user,
            AgentMessage::Llm(Message::User(UserMessage {
                content: crate::ai::types::UserMessageContent::Text("hi".into()),
                timestamp: 1,
            }))
        );
        let malformed = serde_json::from_str::<AgentMessage>(r#"{"role":"assistant"}"#);
        assert!(malformed.unwrap_err().to_string().contains("missing field"));
    }
}
