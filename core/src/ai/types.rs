//! Messages, content blocks, usage and tools: the data every provider reads and writes.
//!
//! The serde shapes are pi's (`camelCase` fields, `role` and `type` tags), so a context or a
//! transcript saved by pi loads here and one saved here loads in pi.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::error_kind::{ErrorKind, RunLimit};
pub use super::shared_string::SharedString;
use super::tagged::{self, Tagged};

/// Milliseconds since the Unix epoch, as pi stores `timestamp`.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A text block. `textSignature` carries provider metadata (e.g. an OpenAI Responses message id).
/// Serialises with its tag (`"type": "text"`) wherever it appears.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "text", rename_all = "camelCase")]
pub struct TextContent {
    /// The text (shared: cloning a message does not copy it).
    pub text: SharedString,
    /// Opaque provider metadata attached to this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

impl TextContent {
    /// A text block without a signature.
    pub fn new(text: impl Into<SharedString>) -> Self {
        Self {
            text: text.into(),
            text_signature: None,
        }
    }
}

/// A reasoning block (`"type": "thinking"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "thinking", rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text (may be a summary, or empty when only a signature came back).
    pub thinking: SharedString,
    /// Opaque provider data needed to replay this block (for openai-completions: the name of the
    /// delta field the reasoning arrived in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// `true` when the reasoning is encrypted and its payload is in `thinking_signature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
}

/// An image, base64-encoded (`"type": "image"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "image", rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64 data, without a `data:` prefix (shared: cloning a message does not copy it).
    pub data: SharedString,
    /// The MIME type, e.g. `image/png`.
    pub mime_type: String,
}

/// A tool call requested by the model (`"type": "toolCall"`, also when it stands alone, as in
/// `toolcall_end` events and hook contexts).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "toolCall", rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's id for this call; the tool result refers to it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as parsed from the model's JSON (not yet validated). Always an object for
    /// calls produced by this crate's providers.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Google thought signature, or OpenRouter encrypted reasoning for this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

pub(crate) fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A block of user or tool-result content: text or an image. Each block type carries its own
/// `type` tag, so serialising delegates to it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum UserContent {
    /// Text.
    Text(TextContent),
    /// An image.
    Image(ImageContent),
}

/// Whether any block is an image.
pub(crate) fn has_images(blocks: &[UserContent]) -> bool {
    blocks
        .iter()
        .any(|block| matches!(block, UserContent::Image(_)))
}

impl UserContent {
    /// A text block.
    pub fn text(text: impl Into<SharedString>) -> Self {
        Self::Text(TextContent::new(text))
    }
}

/// A block of assistant content (serialised by the block, which carries its `type` tag).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AssistantContent {
    /// Visible text.
    Text(TextContent),
    /// Reasoning.
    Thinking(ThinkingContent),
    /// A tool call.
    ToolCall(ToolCall),
}

/// The content of a user message: a plain string or a list of blocks (both occur in pi).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UserMessageContent {
    /// Plain text (shared: cloning a message does not copy it).
    Text(SharedString),
    /// Text and image blocks.
    Blocks(Vec<UserContent>),
}

/// A message from the user (`"role": "user"`, also when it stands alone).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename = "user", rename_all = "camelCase")]
pub struct UserMessage {
    /// What the user said.
    pub content: UserMessageContent,
    /// Unix milliseconds.
    #[serde(default)]
    pub timestamp: i64,
}

impl UserMessage {
    /// A user message with one text block, stamped now (the shape pi's `Agent.prompt(text)` makes).
    pub fn text(text: impl Into<SharedString>) -> Self {
        Self {
            content: UserMessageContent::Blocks(vec![UserContent::text(text)]),
            timestamp: now_ms(),
        }
    }
}

/// Why the model stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum StopReason {
    /// The model finished its answer.
    #[default]
    Stop,
    /// The output-token limit was reached.
    Length,
    /// The model wants tool results.
    ToolUse,
    /// The request or the stream failed; `errorMessage` says why.
    Error,
    /// The caller cancelled the request.
    Aborted,
}

impl StopReason {
    /// `true` for `error` and `aborted`.
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Error | Self::Aborted)
    }

    /// The wire name (`"toolUse"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolUse => "toolUse",
            Self::Error => "error",
            Self::Aborted => "aborted",
        }
    }
}

/// Cost in USD, split like [`Usage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UsageCost {
    /// Input tokens' cost.
    pub input: f64,
    /// Output tokens' cost.
    pub output: f64,
    /// Cache reads' cost.
    pub cache_read: f64,
    /// Cache writes' cost.
    pub cache_write: f64,
    /// The sum.
    pub total: f64,
}

/// Token counts of one response, normalised across providers (see pi's `Usage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens, reasoning included.
    pub output: u64,
    /// Input tokens read from the provider's cache.
    pub cache_read: u64,
    /// Input tokens written to the provider's cache by this request.
    pub cache_write: u64,
    /// `input + output + cache_read + cache_write`.
    pub total_tokens: u64,
    /// What these tokens cost.
    pub cost: UsageCost,
}

impl Usage {
    /// `input + output + cache_read + cache_write`, saturating: the counts are the server's,
    /// and a hostile one may send `u64::MAX`.
    pub(crate) fn sum_of_counts(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }
}

#[cfg(test)]
impl Usage {
    /// `[input, output, cache_read, cache_write]`, for tests that check them together.
    pub(crate) fn token_counts(&self) -> [u64; 4] {
        [self.input, self.output, self.cache_read, self.cache_write]
    }
}

/// A message produced by a model. Serialises with `"role": "assistant"` wherever it appears
/// (`done.message`, `error.error`, `complete()`'s result), so it can be appended to a context as
/// is.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename = "assistant", rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks in the order the model produced them.
    pub content: Vec<AssistantContent>,
    /// The wire API that produced it (`openai-completions`, ...).
    pub api: String,
    /// The provider (`openai`, `groq`, ...).
    pub provider: String,
    /// The requested model id.
    pub model: String,
    // The field order is pi's JSON key order: its providers build the message with these keys
    // first and add the response id / model and the error when they learn them.
    /// Token usage and cost.
    #[serde(default)]
    pub usage: Usage,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// Unix milliseconds when the request started.
    #[serde(default)]
    pub timestamp: i64,
    /// The upstream response id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The model the upstream actually used, when it differs from `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// Transport diagnostics (pi's Codex fallback records; our retries), kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Value>>,
    /// Set when `stop_reason` is `error` or `aborted`: what happened, in pi's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// What kind of failure it was, when it is one a program can act on (ours; pi ignores
    /// the field). An unknown kind in JSON reads as `None`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::error_kind::lenient_kind"
    )]
    pub error_kind: Option<ErrorKind>,
    /// The HTTP status of the failed response, when the failure was one (ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// How long the server asked to wait before retrying, in milliseconds, when it said
    /// (`Retry-After`; ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// Which run limit ended the run, when `error_kind` is `run_limit` (ours).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::error_kind::lenient_run_limit"
    )]
    pub run_limit: Option<RunLimit>,
    /// How long the response took (ours; pi ignores the field, so transcripts still load there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<ResponseTiming>,
}

/// Written out for [`clone_from`](Clone::clone_from): a stream's reader copies the `start` and
/// final messages over the one it holds, and reusing its strings (the same api, provider and
/// model) saves their allocations on every request. The destructuring makes a new field a
/// compile error here rather than a field left out of the copy.
impl Clone for AssistantMessage {
    fn clone(&self) -> Self {
        let mut copy = Self::default();
        copy.clone_from(self);
        copy
    }

    fn clone_from(&mut self, source: &Self) {
        let Self {
            content,
            api,
            provider,
            model,
            usage,
            stop_reason,
            timestamp,
            response_id,
            response_model,
            diagnostics,
            error_message,
            error_kind,
            http_status,
            retry_after_ms,
            run_limit,
            timing,
        } = source;
        self.content.clone_from(content);
        self.api.clone_from(api);
        self.provider.clone_from(provider);
        self.model.clone_from(model);
        self.usage = *usage;
        self.stop_reason = *stop_reason;
        self.timestamp = *timestamp;
        self.response_id.clone_from(response_id);
        self.response_model.clone_from(response_model);
        self.diagnostics.clone_from(diagnostics);
        self.error_message.clone_from(error_message);
        self.error_kind = *error_kind;
        self.http_status = *http_status;
        self.retry_after_ms = *retry_after_ms;
        self.run_limit = *run_limit;
        self.timing = *timing;
    }
}

/// How long a model response took, measured by the library on every streamed response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResponseTiming {
    /// From the start of the request to its end, retries included.
    pub duration_ms: u64,
    /// From the start of the request to the first streamed content (time to first token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<u64>,
    /// Output tokens per second, from the first streamed content to the end (when the provider
    /// reported output tokens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_second: Option<f64>,
    /// Time spent waiting between retries (their `diagnostics` say why).
    #[serde(skip_serializing_if = "is_zero")]
    pub retry_wait_ms: u64,
}

/// How long a tool call took, from the start of its execution to its result (after
/// `after_tool_call`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolTiming {
    /// The duration.
    pub duration_ms: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl AssistantMessage {
    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// All text blocks joined, without thinking.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let AssistantContent::Text(text) = block {
                out.push_str(&text.text);
            }
        }
        out
    }
}

/// The result of a tool call, sent back to the model (`"role": "toolResult"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename = "toolResult", rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// What the model sees.
    pub content: Vec<UserContent>,
    /// Structured data for the application; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// `true` when the tool failed (or was not found, blocked, or given invalid arguments).
    #[serde(default)]
    pub is_error: bool,
    /// Unix milliseconds.
    #[serde(default)]
    pub timestamp: i64,
    /// How long the call took (ours; pi ignores the field). `None` for a call that never ran
    /// (unknown tool, invalid arguments, blocked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<ToolTiming>,
}

/// A message an LLM understands (serialised by the message, which carries its `role` tag).
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// From a tool.
    ToolResult(ToolResultMessage),
}

impl Message {
    /// The `role` tag.
    pub fn role(&self) -> &'static str {
        match self {
            Self::User(_) => "user",
            Self::Assistant(_) => "assistant",
            Self::ToolResult(_) => "toolResult",
        }
    }
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::User(message) => message.serialize(serializer),
            Self::Assistant(message) => message.serialize(serializer),
            Self::ToolResult(message) => message.serialize(serializer),
        }
    }
}

impl Serialize for UserContent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(block) => block.serialize(serializer),
            Self::Image(block) => block.serialize(serializer),
        }
    }
}

impl Serialize for AssistantContent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(block) => block.serialize(serializer),
            Self::Thinking(block) => block.serialize(serializer),
            Self::ToolCall(block) => block.serialize(serializer),
        }
    }
}

// Reading: the tag is looked for first and the variant read in place (see `tagged`).

impl Tagged for Message {
    const TAG: &'static str = "role";
    const VARIANTS: &'static [&'static str] = &["user", "assistant", "toolResult"];
    const EXPECTING: &'static str = "a message object";

    fn read_variant<'de, D: Deserializer<'de>>(index: usize, rest: D) -> Result<Self, D::Error> {
        Ok(match index {
            0 => Self::User(UserMessage::deserialize(rest)?),
            1 => Self::Assistant(AssistantMessage::deserialize(rest)?),
            _ => Self::ToolResult(ToolResultMessage::deserialize(rest)?),
        })
    }
}

impl Tagged for UserContent {
    const TAG: &'static str = "type";
    const VARIANTS: &'static [&'static str] = &["text", "image"];
    const EXPECTING: &'static str = "a content block object";

    fn read_variant<'de, D: Deserializer<'de>>(index: usize, rest: D) -> Result<Self, D::Error> {
        Ok(match index {
            0 => Self::Text(TextContent::deserialize(rest)?),
            _ => Self::Image(ImageContent::deserialize(rest)?),
        })
    }
}

impl Tagged for AssistantContent {
    const TAG: &'static str = "type";
    const VARIANTS: &'static [&'static str] = &["text", "thinking", "toolCall"];
    const EXPECTING: &'static str = "a content block object";

    fn read_variant<'de, D: Deserializer<'de>>(index: usize, rest: D) -> Result<Self, D::Error> {
        Ok(match index {
            0 => Self::Text(TextContent::deserialize(rest)?),
            1 => Self::Thinking(ThinkingContent::deserialize(rest)?),
            _ => Self::ToolCall(ToolCall::deserialize(rest)?),
        })
    }
}

tagged::deserialize_tagged!(Message, UserContent, AssistantContent);

/// A string or an array of blocks, read as it comes (serde's `untagged` would buffer it and
/// try each form in turn).
impl<'de> Deserialize<'de> for UserMessageContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = UserMessageContent;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(UserMessageContent::Text(text.into()))
            }
            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(UserMessageContent::Text(text.into()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(UserMessageContent::Blocks)
            }
        }
        deserializer.deserialize_any(Either)
    }
}

impl From<UserMessage> for Message {
    fn from(message: UserMessage) -> Self {
        Self::User(message)
    }
}

impl From<AssistantMessage> for Message {
    fn from(message: AssistantMessage) -> Self {
        Self::Assistant(message)
    }
}

impl From<ToolResultMessage> for Message {
    fn from(message: ToolResultMessage) -> Self {
        Self::ToolResult(message)
    }
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The name the model uses.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// Everything one request sends: system prompt, messages and tools.
///
/// Its JSON form is an object with pi's keys; anything else (an array, an unknown key) is
/// refused with a message naming what is wrong, as the options are.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// The system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
}

/// [`Context`]'s fields as read: only from an object, unknown keys refused.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ContextFields {
    #[serde(default)]
    system_prompt: Option<String>,
    #[serde(default)]
    messages: Vec<Message>,
    #[serde(default)]
    tools: Option<Vec<Tool>>,
}

impl<'de> Deserialize<'de> for Context {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> serde::de::Visitor<'de> for Object {
            type Value = Context;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a context object {systemPrompt?, messages, tools?}")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Context, A::Error> {
                let fields =
                    ContextFields::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Context {
                    system_prompt: fields.system_prompt,
                    messages: fields.messages,
                    tools: fields.tools,
                })
            }
        }
        deserializer.deserialize_map(Object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pi_transcript_round_trips() {
        let pi = json!([
            {"role": "user", "content": "hi", "timestamp": 1},
            {"role": "user", "content": [{"type": "text", "text": "look"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"}], "timestamp": 2},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "reasoning_content"},
                {"type": "text", "text": "ok"},
                {"type": "toolCall", "id": "c1", "name": "calc", "arguments": {"x": 1}}],
             "api": "openai-completions", "provider": "openai", "model": "gpt",
             "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                       "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
             "stopReason": "toolUse", "timestamp": 3},
            {"role": "toolResult", "toolCallId": "c1", "toolName": "calc",
             "content": [{"type": "text", "text": "2"}], "isError": false, "timestamp": 4}
        ]);
        let messages: Vec<Message> = serde_json::from_value(pi.clone()).unwrap();
        assert_eq!(messages.len(), 4);
        assert_eq!(serde_json::to_value(&messages).unwrap(), pi);
    }

    #[test]
    fn contexts_are_objects_with_pis_keys_only() {
        let context: Context = serde_json::from_value(json!({
            "systemPrompt": "s", "messages": [{"role": "user", "content": "hi", "timestamp": 1}]
        }))
        .unwrap();
        assert_eq!(context.messages.len(), 1);
        let empty: Context = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, Context::default());
        let error = serde_json::from_str::<Context>("[]").unwrap_err();
        assert!(error.to_string().contains("a context object"), "{error}");
        let error = serde_json::from_value::<Context>(json!({"message": []})).unwrap_err();
        assert!(
            error.to_string().contains("unknown field `message`"),
            "{error}"
        );
    }

    #[test]
    fn standalone_messages_and_blocks_carry_their_tags() {
        let assistant = AssistantMessage {
            content: vec![AssistantContent::ToolCall(ToolCall {
                id: "c1".into(),
                name: "calc".into(),
                arguments: json!({"text": "a", "delay_ms": 1}),
                thought_signature: None,
            })],
            ..AssistantMessage::default()
        };
        let json = serde_json::to_string(&assistant).unwrap();
        assert!(
            json.starts_with(r#"{"role":"assistant","content":[{"type":"toolCall","#),
            "{json}"
        );
        // Key order of the model's arguments is kept.
        assert!(
            json.contains(r#""arguments":{"text":"a","delay_ms":1}"#),
            "{json}"
        );
        // Exactly one tag when wrapped in `Message`.
        let wrapped = serde_json::to_string(&Message::Assistant(assistant.clone())).unwrap();
        assert_eq!(wrapped, json);
        let call = assistant.tool_calls().next().unwrap();
        assert_eq!(serde_json::to_value(call).unwrap()["type"], "toolCall");
        let result = ToolResultMessage::default();
        assert_eq!(serde_json::to_value(&result).unwrap()["role"], "toolResult");
        assert_eq!(
            serde_json::to_value(UserMessage::text("hi")).unwrap()["role"],
            "user"
        );
        assert_eq!(
            serde_json::to_value(TextContent::new("t")).unwrap()["type"],
            "text"
        );
        // A standalone assistant message appended to a context parses as a message.
        let back: Message = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Message::Assistant(assistant));
    }
    #[test]
    fn clone_from_copies_every_field_and_reuses_the_strings() {
        let full: AssistantMessage = serde_json::from_value(serde_json::json!({
            "role": "assistant",
            "content": [{"type": "text", "text": "answer"}],
            "api": "openai-completions", "provider": "openai", "model": "gpt",
            "usage": {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 10,
                      "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0.0, "cacheWrite": 0.0,
                               "total": 0.75}},
            "stopReason": "error", "timestamp": 7, "responseId": "r", "responseModel": "m",
            "diagnostics": [{"a": 1}], "errorMessage": "boom", "errorKind": "rate_limit",
            "httpStatus": 429, "retryAfterMs": 5, "runLimit": "maxTurns",
            "timing": {"durationMs": 9, "ttftMs": 3}
        }))
        .unwrap();
        assert!(full.error_kind.is_some() && full.run_limit.is_some() && full.timing.is_some());
        assert_eq!(full.clone(), full);
        let mut held = AssistantMessage {
            api: "openai-completions".into(),
            provider: "openai".into(),
            model: "gpt".into(),
            ..AssistantMessage::default()
        };
        let buffer = held.api.as_ptr();
        held.clone_from(&full);
        assert_eq!(held, full);
        assert_eq!(held.api.as_ptr(), buffer, "the held string was reused");
        // And back to a message with fewer fields set.
        let bare = AssistantMessage::default();
        held.clone_from(&bare);
        assert_eq!(held, bare);
    }
}
