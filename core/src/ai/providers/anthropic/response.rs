//! Turns the Messages API event stream (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`, `ping`, `error`) into [`StreamWriter`] calls.
//!
//! Blocks follow the upstream `index`: each `content_block_start` opens a block, each
//! `content_block_stop` closes the block it names, so blocks of different kinds may interleave if
//! the server interleaves them.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::auth::from_claude_code_name;
use super::request::REDACTED_THINKING_TEXT;
use crate::ai::error::{ProviderError, record_stop};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::partial_json::parse_json_lenient;
use crate::ai::providers::lenient::{Object, Str, U64};
use crate::ai::types::{StopReason, Usage};

/// The message of a stream that ended before `message_stop` without a transport error.
pub(crate) const ENDED_BEFORE_MESSAGE_STOP: &str = "Anthropic stream ended before message_stop";

/// Maps an upstream `stop_reason`. The mapping is total: anything that is not a normal end is an
/// error whose message names the upstream reason (pi throws on unknown reasons and reports
/// `refusal` as "An unknown error occurred").
pub(crate) fn map_stop_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => (StopReason::Stop, None),
        // The reply was cut by the context window rather than by `max_tokens`: still a
        // truncated, well-formed reply.
        "max_tokens" | "model_context_window_exceeded" => (StopReason::Length, None),
        "tool_use" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider stop_reason: {other}")),
        ),
    }
}

/// What an open upstream block is.
#[derive(Debug)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall {
        /// An `input_json_delta` has arrived.
        streamed: bool,
        /// The `input` of `content_block_start`, used when no delta ever comes.
        initial_input: Option<Value>,
    },
}

#[derive(Debug)]
struct OpenBlock {
    content_index: usize,
    kind: BlockKind,
}

/// The state of one response stream.
#[derive(Debug, Default)]
pub(super) struct EventState {
    /// Open blocks by upstream index.
    open: BTreeMap<u64, OpenBlock>,
    /// The caller's tool names, to map Claude Code's casing back (OAuth only).
    oauth_tool_names: Option<Vec<String>>,
    /// `message_stop` arrived.
    pub(super) stopped: bool,
    /// A `message_delta` with the stop reason arrived: the answer is complete, only
    /// `message_stop` may follow.
    pub(super) complete: bool,
}

/// Parses one event's JSON. Like pi's `parseJsonWithRepair`, raw control characters inside
/// strings are tolerated, and a lone surrogate escape is U+FFFD (the shared
/// [`parse_json_lenient`]); anything else that is not JSON is an error.
fn parse_event(name: &str, data: &str) -> Result<Value, ProviderError> {
    parse_json_lenient(data).map_err(|error| {
        ProviderError::Decode(format!(
            "Could not parse Anthropic SSE event {name}: {error}; data={}",
            crate::text::prefix(data, 500)
        ))
    })
}

/// The error of an `error` event (`{"type":"error","error":{"type":..,"message":..}}`): its
/// message (else the raw data), classified by its type (`overloaded_error`,
/// `rate_limit_error`, ...).
fn error_event(data: &str) -> ProviderError {
    let value = serde_json::from_str::<Value>(data).ok();
    let field = |pointer: &str| {
        value
            .as_ref()
            .and_then(|value| value.pointer(pointer))
            .and_then(Value::as_str)
    };
    let message = field("/error/message")
        .or_else(|| field("/message"))
        .map_or_else(|| data.to_owned(), str::to_owned);
    ProviderError::upstream(message, field("/error/type"), None)
}

/// A `content_block_delta` event borrowed from the SSE data: the hot event, read without
/// building a `Value` (see [`lenient`](crate::ai::providers::lenient): a field of another type
/// reads as absent, as `Value::as_str` / `as_u64` do).
#[derive(Debug, Deserialize)]
struct BlockDeltaEvent<'a> {
    #[serde(default)]
    index: U64,
    #[serde(default, borrow)]
    delta: Object<BlockDelta<'a>>,
}

#[derive(Debug, Deserialize)]
struct BlockDelta<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(default, borrow)]
    text: Str<'a>,
    #[serde(default, borrow)]
    thinking: Str<'a>,
    #[serde(default, borrow)]
    signature: Str<'a>,
    #[serde(default, borrow)]
    partial_json: Str<'a>,
}

/// The string fields of a `content_block_delta`'s `delta`, whichever way it was parsed.
#[derive(Debug, Default)]
struct DeltaFields<'a> {
    kind: Option<&'a str>,
    text: Option<&'a str>,
    thinking: Option<&'a str>,
    signature: Option<&'a str>,
    partial_json: Option<&'a str>,
}

impl<'a> DeltaFields<'a> {
    fn from_typed(delta: &'a BlockDelta<'_>) -> Self {
        Self {
            kind: delta.kind.get(),
            text: delta.text.get(),
            thinking: delta.thinking.get(),
            signature: delta.signature.get(),
            partial_json: delta.partial_json.get(),
        }
    }

    fn from_value(delta: &'a Value) -> Self {
        let field = |key: &str| delta.get(key).and_then(Value::as_str);
        Self {
            kind: field("type"),
            text: field("text"),
            thinking: field("thinking"),
            signature: field("signature"),
            partial_json: field("partial_json"),
        }
    }
}

fn number(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

fn refresh_totals(usage: &mut Usage, model: &Model) {
    usage.total_tokens = usage.sum_of_counts();
    model.calculate_cost(usage);
}

impl EventState {
    /// A state that maps tool names from Claude Code's casing back to `tool_names`.
    pub(super) fn with_oauth_tool_names(tool_names: Vec<String>) -> Self {
        Self {
            oauth_tool_names: Some(tool_names),
            ..Self::default()
        }
    }

    /// Applies one SSE event. `name` is the `event:` field (the data's `type` when absent).
    pub(super) async fn handle(
        &mut self,
        name: Option<&str>,
        data: &str,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<(), ProviderError> {
        if name == Some("error") {
            return Err(error_event(data));
        }
        let known = [
            "message_start",
            "message_delta",
            "message_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
        ];
        if let Some(name) = name
            && !known.contains(&name)
        {
            // `ping` and event types added after this was written.
            return Ok(());
        }
        // The typed read borrows from `data`; input it refuses (a duplicated key, raw control
        // characters) goes through the forgiving `Value` parse below and is read the same way.
        if name == Some("content_block_delta")
            && let Ok(event) = serde_json::from_str::<Object<BlockDeltaEvent<'_>>>(data)
        {
            if let Some(event) = event.0 {
                let delta = event.delta.0.as_ref().map(DeltaFields::from_typed);
                self.block_delta(event.index.0, delta, writer).await;
            }
            return Ok(());
        }
        let event = parse_event(name.unwrap_or("(unnamed)"), data)?;
        let kind = match name {
            Some(name) => name,
            None => match event.get("type").and_then(Value::as_str) {
                Some("error") => return Err(error_event(data)),
                Some(kind) if known.contains(&kind) => kind,
                _ => return Ok(()),
            },
        };
        match kind {
            "message_start" => self.message_start(&event, writer, model),
            "content_block_start" => self.block_start(&event, writer).await,
            "content_block_delta" => {
                let delta = event.get("delta").map(DeltaFields::from_value);
                self.block_delta(number(&event, "index"), delta, writer)
                    .await;
            }
            "content_block_stop" => {
                if let Some(index) = number(&event, "index")
                    && let Some(block) = self.open.remove(&index)
                {
                    close(block, writer).await;
                }
            }
            "message_delta" => {
                self.complete |= event
                    .pointer("/delta/stop_reason")
                    .is_some_and(Value::is_string);
                message_delta(&event, writer, model);
            }
            "message_stop" => {
                self.stopped = true;
                self.close_open(writer).await;
            }
            _ => {}
        }
        Ok(())
    }

    /// Closes the blocks the server never closed: they are complete once the message is.
    pub(super) async fn close_open(&mut self, writer: &mut StreamWriter) {
        for (_, block) in std::mem::take(&mut self.open) {
            close(block, writer).await;
        }
    }

    fn message_start(&mut self, event: &Value, writer: &mut StreamWriter, model: &Model) {
        let Some(message) = event.get("message") else {
            return;
        };
        if let Some(id) = message.get("id").and_then(Value::as_str) {
            writer.message_mut().response_id = Some(id.to_owned());
        }
        // Input and cache counts are known now, so an aborted stream still reports them.
        let empty = Value::Null;
        let usage = message.get("usage").unwrap_or(&empty);
        let out = &mut writer.message_mut().usage;
        out.input = number(usage, "input_tokens").unwrap_or(0);
        out.output = number(usage, "output_tokens").unwrap_or(0);
        out.cache_read = number(usage, "cache_read_input_tokens").unwrap_or(0);
        out.cache_write = number(usage, "cache_creation_input_tokens").unwrap_or(0);
        refresh_totals(out, model);
    }

    async fn block_start(&mut self, event: &Value, writer: &mut StreamWriter) {
        let Some(index) = number(event, "index") else {
            return;
        };
        let Some(block) = event.get("content_block") else {
            return;
        };
        let text_of = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        let opened = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let content_index = writer.text_start().await;
                if let Some(text) = text_of("text") {
                    writer.text_delta(content_index, text).await;
                }
                OpenBlock {
                    content_index,
                    kind: BlockKind::Text,
                }
            }
            Some("thinking") => {
                let content_index = writer.thinking_start().await;
                if let Some(text) = text_of("thinking") {
                    writer.thinking_delta(content_index, text).await;
                }
                if let Some(signature) = text_of("signature")
                    && let Some(thinking) = writer.thinking_block_mut(content_index)
                {
                    thinking.thinking_signature = Some(signature.to_owned());
                }
                OpenBlock {
                    content_index,
                    kind: BlockKind::Thinking,
                }
            }
            Some("redacted_thinking") => {
                let content_index = writer.thinking_start().await;
                if let Some(thinking) = writer.thinking_block_mut(content_index) {
                    thinking.thinking = REDACTED_THINKING_TEXT.into();
                    thinking.thinking_signature = Some(
                        block
                            .get("data")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    );
                    thinking.redacted = Some(true);
                }
                OpenBlock {
                    content_index,
                    kind: BlockKind::Thinking,
                }
            }
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                let name = match &self.oauth_tool_names {
                    Some(tools) => from_claude_code_name(name, tools),
                    None => name.to_owned(),
                };
                let content_index = writer.tool_call_start(id, name).await;
                let initial_input = block
                    .get("input")
                    .filter(|input| input.as_object().is_some_and(|map| !map.is_empty()))
                    .cloned();
                OpenBlock {
                    content_index,
                    kind: BlockKind::ToolCall {
                        streamed: false,
                        initial_input,
                    },
                }
            }
            // Server-side tools (`server_tool_use`, `web_search_tool_result`, ...) run on
            // Anthropic's side; there is nothing for the caller to execute or replay.
            _ => return,
        };
        if let Some(previous) = self.open.insert(index, opened) {
            // A server reusing an index without closing it: the older block is complete.
            close(previous, writer).await;
        }
    }

    /// Applies a `content_block_delta`: its `index` and its `delta` (absent when the event has
    /// none).
    async fn block_delta(
        &mut self,
        index: Option<u64>,
        delta: Option<DeltaFields<'_>>,
        writer: &mut StreamWriter,
    ) {
        let Some(index) = index else {
            return;
        };
        let Some(block) = self.open.get_mut(&index) else {
            return;
        };
        let Some(delta) = delta else {
            return;
        };
        let content_index = block.content_index;
        match (delta.kind, &mut block.kind) {
            (Some("text_delta"), BlockKind::Text) => {
                if let Some(text) = delta.text {
                    writer.text_delta(content_index, text).await;
                }
            }
            (Some("thinking_delta"), BlockKind::Thinking) => {
                if let Some(text) = delta.thinking {
                    writer.thinking_delta(content_index, text).await;
                }
            }
            (Some("signature_delta"), BlockKind::Thinking) => {
                if let Some(signature) = delta.signature
                    && let Some(thinking) = writer.thinking_block_mut(content_index)
                {
                    thinking
                        .thinking_signature
                        .get_or_insert_with(String::new)
                        .push_str(signature);
                }
            }
            (Some("input_json_delta"), BlockKind::ToolCall { streamed, .. }) => {
                if let Some(json) = delta.partial_json {
                    *streamed = true;
                    writer.tool_call_delta(content_index, json).await;
                }
            }
            // `citations_delta` and delta types added later.
            _ => {}
        }
    }
}

async fn close(block: OpenBlock, writer: &mut StreamWriter) {
    match block.kind {
        BlockKind::Text => writer.text_end(block.content_index).await,
        BlockKind::Thinking => writer.thinking_end(block.content_index).await,
        BlockKind::ToolCall {
            streamed,
            initial_input,
        } => {
            // Servers that send the whole input up front and no deltas.
            if !streamed && let Some(input) = initial_input {
                writer
                    .tool_call_delta(block.content_index, input.to_string())
                    .await;
            }
            writer.tool_call_end(block.content_index).await;
        }
    }
}

fn message_delta(event: &Value, writer: &mut StreamWriter, model: &Model) {
    if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
        record_stop(writer.message_mut(), map_stop_reason(reason), reason);
    }
    // Counts here are cumulative: a field that is present replaces the `message_start` value,
    // one that is absent (proxies often omit input counts) keeps it.
    let Some(usage) = event.get("usage") else {
        return;
    };
    let out = &mut writer.message_mut().usage;
    if let Some(n) = number(usage, "input_tokens") {
        out.input = n;
    }
    if let Some(n) = number(usage, "output_tokens") {
        out.output = n;
    }
    if let Some(n) = number(usage, "cache_read_input_tokens") {
        out.cache_read = n;
    }
    if let Some(n) = number(usage, "cache_creation_input_tokens") {
        out.cache_write = n;
    }
    refresh_totals(out, model);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_are_total() {
        assert_eq!(map_stop_reason("end_turn").0, StopReason::Stop);
        assert_eq!(map_stop_reason("pause_turn").0, StopReason::Stop);
        assert_eq!(map_stop_reason("stop_sequence").0, StopReason::Stop);
        assert_eq!(map_stop_reason("max_tokens").0, StopReason::Length);
        assert_eq!(map_stop_reason("tool_use").0, StopReason::ToolUse);
        for reason in ["refusal", "sensitive", "brand_new"] {
            let (mapped, message) = map_stop_reason(reason);
            assert_eq!(mapped, StopReason::Error);
            assert_eq!(message, Some(format!("Provider stop_reason: {reason}")));
        }
    }

    #[test]
    fn error_events_yield_their_message_and_kind() {
        let overloaded = error_event(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(overloaded.to_string(), "Overloaded");
        assert_eq!(overloaded.kind(), Some(crate::ai::ErrorKind::Server));
        let garbled = error_event("not json");
        assert_eq!(garbled.to_string(), "not json");
        assert_eq!(garbled.kind(), None);
    }

    /// The typed read of a `content_block_delta` sees what the `Value` read sees, or refuses
    /// the event so the `Value` path handles it.
    #[test]
    fn typed_deltas_read_as_values_do() {
        let cases = [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\nb"}}"#,
            r#"{"index":2,"delta":{"type":"thinking_delta","thinking":"t","signature":7}}"#,
            r#"{"index":1,"delta":{"type":"signature_delta","signature":"s"}}"#,
            r#"{"index":3,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}"#,
            r#"{"index":-1,"delta":{"type":1,"text":["x"],"partial_json":{"a":1}}}"#,
            r#"{"index":1.0,"delta":"text"}"#,
            r#"{"index":"0","delta":null}"#,
            r#"{"index":0}"#,
            r#"[1,2]"#,
            r#""s""#,
        ];
        let fields = |delta: &DeltaFields<'_>| {
            [
                delta.kind,
                delta.text,
                delta.thinking,
                delta.signature,
                delta.partial_json,
            ]
            .map(|field| field.map(str::to_owned))
        };
        for data in cases {
            let typed = serde_json::from_str::<Object<BlockDeltaEvent<'_>>>(data).expect(data);
            let value: Value = serde_json::from_str(data).expect(data);
            let typed_index = typed.0.as_ref().and_then(|event| event.index.0);
            let typed_delta = typed
                .0
                .as_ref()
                .and_then(|event| event.delta.0.as_ref())
                .map(|delta| fields(&DeltaFields::from_typed(delta)));
            let value_delta = if value.is_object() {
                value
                    .get("delta")
                    .filter(|delta| delta.is_object())
                    .map(|delta| fields(&DeltaFields::from_value(delta)))
            } else {
                None
            };
            assert_eq!(typed_index, number(&value, "index"), "{data}");
            assert_eq!(typed_delta, value_delta, "{data}");
        }
        // A duplicated key is refused by the typed read (the `Value` keeps the last one).
        let duplicated = r#"{"index":0,"index":1,"delta":{"type":"text_delta","text":"x"}}"#;
        assert!(serde_json::from_str::<Object<BlockDeltaEvent<'_>>>(duplicated).is_err());
    }

    #[test]
    fn raw_control_characters_are_tolerated() {
        let value = parse_event("x", "{\"a\":\"tab\there\"}").unwrap();
        assert_eq!(value["a"], "tab\there");
        assert!(
            parse_event("message_start", "{oops")
                .unwrap_err()
                .to_string()
                .starts_with("Could not parse Anthropic SSE event message_start")
        );
    }
}
