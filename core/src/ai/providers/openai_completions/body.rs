//! The shapes of a Chat Completions request body, borrowed from the request's inputs.
//!
//! The body is serialized straight from these to the bytes sent: no `serde_json::Value` tree
//! is built, and no string, image or tool schema is copied on the way. (pi's `onPayload` hook
//! sees the body as a value: [`StreamOptions::payload_of`](crate::ai::options::StreamOptions)
//! makes one from these only when a hook is set.) The field order of each struct is the key
//! order on the wire.

use std::borrow::Cow;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

/// The JSON body of `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub(crate) struct ChatBody<'a> {
    pub model: &'a str,
    pub messages: Vec<ChatMessage<'a>>,
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<IncludeUsage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ChatTool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
    /// Reasoning, in one of the forms of [`ThinkingFormat`](super::compat::ThinkingFormat).
    #[serde(flatten)]
    pub reasoning: Reasoning,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_retention: Option<&'static str>,
    /// OpenRouter's provider routing, as the model's compat gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<&'a Value>,
    /// Vercel AI Gateway's routing.
    #[serde(rename = "providerOptions", skip_serializing_if = "Option::is_none")]
    pub provider_options: Option<Value>,
}

/// `stream_options`: usage in the last chunk.
#[derive(Debug, Serialize)]
pub(crate) struct IncludeUsage {
    pub include_usage: bool,
}

/// The reasoning fields of a body; at most one form is set.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Reasoning {
    /// Z.ai and Qwen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_thinking: Option<bool>,
    /// Qwen through a chat template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<TemplateKwargs>,
    /// DeepSeek's switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Switch>,
    /// OpenAI's and DeepSeek's effort.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// OpenRouter's object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Effort>,
}

/// `chat_template_kwargs` of Qwen's chat template.
#[derive(Debug, Serialize)]
pub(crate) struct TemplateKwargs {
    pub enable_thinking: bool,
    pub preserve_thinking: bool,
}

/// `{"type": "enabled" | "disabled"}`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum Switch {
    Enabled,
    Disabled,
}

/// `{"effort": ...}`.
#[derive(Debug, Serialize)]
pub(crate) struct Effort {
    pub effort: String,
}

/// One entry of `tools`.
#[derive(Debug, Serialize)]
pub(crate) struct ChatTool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionTool<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// A tool's `function`.
#[derive(Debug, Serialize)]
pub(crate) struct FunctionTool<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// An Anthropic-style cache marker (OpenRouter `anthropic/*`).
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct CacheControl {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<&'static str>,
}

/// One entry of `messages`, tagged by its `role`.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum ChatMessage<'a> {
    System { content: Content<'a> },
    Developer { content: Content<'a> },
    User { content: Content<'a> },
    Assistant(AssistantTurn<'a>),
    Tool(ToolTurn<'a>),
}

impl<'a> ChatMessage<'a> {
    /// The message's content.
    pub(crate) fn content(&self) -> &Content<'a> {
        match self {
            Self::System { content } | Self::Developer { content } | Self::User { content } => {
                content
            }
            Self::Assistant(turn) => &turn.content,
            Self::Tool(turn) => &turn.content,
        }
    }

    /// The message's content, for the cache markers.
    pub(crate) fn content_mut(&mut self) -> &mut Content<'a> {
        match self {
            Self::System { content } | Self::Developer { content } | Self::User { content } => {
                content
            }
            Self::Assistant(turn) => &mut turn.content,
            Self::Tool(turn) => &mut turn.content,
        }
    }
}

/// A message's `content`: a string, parts, or `null`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
    Null,
}

impl<'a> Content<'a> {
    /// Whether this is `""` or `null`: nothing to send.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Self::Text(text) => text.is_empty(),
            Self::Parts(_) => false,
            Self::Null => true,
        }
    }

    /// Whether the content has text (a non-empty string, or a text part) for a cache marker.
    pub(crate) fn has_text(&self) -> bool {
        match self {
            Self::Text(text) => !text.is_empty(),
            Self::Parts(parts) => parts.iter().any(|part| matches!(part, Part::Text { .. })),
            Self::Null => false,
        }
    }

    /// A string becomes one text part (a marker needs a part to sit on).
    pub(crate) fn as_parts(&mut self) -> Option<&mut Vec<Part<'a>>> {
        if let Self::Text(text) = self {
            let text = std::mem::take(text);
            *self = Self::Parts(vec![Part::text(text)]);
        }
        match self {
            Self::Parts(parts) => Some(parts),
            _ => None,
        }
    }
}

/// A content part.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Part<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ImageUrl {
        image_url: ImageUrl<'a>,
    },
}

impl<'a> Part<'a> {
    /// A text part.
    pub(crate) fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::Text {
            text: text.into(),
            cache_control: None,
        }
    }

    /// An image part: the image inline as a `data:` URL.
    pub(crate) fn image(data: &'a str, mime_type: &'a str) -> Self {
        Self::ImageUrl {
            image_url: ImageUrl { mime_type, data },
        }
    }
}

/// `{"url": "data:<mime>;base64,<data>"}`, written out as it is serialized (the image is not
/// copied into a URL string first).
#[derive(Debug)]
pub(crate) struct ImageUrl<'a> {
    mime_type: &'a str,
    data: &'a str,
}

impl Serialize for ImageUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct DataUrl<'b>(&'b ImageUrl<'b>);
        impl Serialize for DataUrl<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(&format_args!(
                    "data:{};base64,{}",
                    self.0.mime_type, self.0.data
                ))
            }
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("url", &DataUrl(self))?;
        map.end()
    }
}

/// An assistant message (its `role` comes from [`ChatMessage`]).
#[derive(Debug)]
pub(crate) struct AssistantTurn<'a> {
    /// The reasoning replayed in the field it came in (`reasoning_content`, `reasoning` or
    /// `reasoning_text`), before `content` as pi writes it.
    pub reasoning: Option<(&'static str, String)>,
    pub content: Content<'a>,
    /// An empty `reasoning_content` after `content` (servers that require the field).
    pub empty_reasoning_content: bool,
    pub tool_calls: Vec<ToolCallOut<'a>>,
    /// OpenRouter's encrypted reasoning, one entry per signed tool call.
    pub reasoning_details: Vec<Value>,
}

impl<'a> AssistantTurn<'a> {
    /// An assistant message of `content` only.
    pub(crate) fn text(content: Content<'a>) -> Self {
        Self {
            reasoning: None,
            content,
            empty_reasoning_content: false,
            tool_calls: Vec::new(),
            reasoning_details: Vec::new(),
        }
    }
}

impl Serialize for AssistantTurn<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some((field, text)) = &self.reasoning {
            map.serialize_entry(field, text)?;
        }
        map.serialize_entry("content", &self.content)?;
        if self.empty_reasoning_content {
            map.serialize_entry("reasoning_content", "")?;
        }
        if !self.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &self.tool_calls)?;
        }
        if !self.reasoning_details.is_empty() {
            map.serialize_entry("reasoning_details", &self.reasoning_details)?;
        }
        map.end()
    }
}

/// One of an assistant message's `tool_calls`.
#[derive(Debug, Serialize)]
pub(crate) struct ToolCallOut<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: CalledFunction<'a>,
}

/// A tool call's `function`: the arguments as a JSON string.
#[derive(Debug, Serialize)]
pub(crate) struct CalledFunction<'a> {
    pub name: &'a str,
    pub arguments: String,
}

/// A tool result message (its `role` comes from [`ChatMessage`]).
#[derive(Debug, Serialize)]
pub(crate) struct ToolTurn<'a> {
    pub content: Content<'a>,
    pub tool_call_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
}
