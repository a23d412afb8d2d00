//! api `mistral-conversations`: Mistral's chat completions (`POST {baseUrl}/v1/chat/completions`),
//! which look like OpenAI's on the wire but carry reasoning as `thinking` content chunks, want
//! 9-character alphanumeric tool-call ids, and take `prompt_mode` / `reasoning_effort`.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::api_key::required_key;
use super::content::{TOOL_RESULTS_BRIDGE, has_images, joined_text};
use super::http;
use crate::ai::error::{ProviderError, record_stop};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::partial_json::parse_json_lenient;
use crate::ai::short_hash::short_hash;
use crate::ai::tool_choice::ToolChoice;
use crate::ai::transform::transform_messages_borrowed;
use crate::ai::types::{
    AssistantContent, Context, Message, StopReason, UserContent, UserMessageContent,
};

/// The api id.
pub(crate) const API: &str = "mistral-conversations";

/// Mistral accepts tool-call ids of exactly this many alphanumeric characters.
const TOOL_CALL_ID_LENGTH: usize = 9;

/// The `mistral-conversations` provider.
#[derive(Debug, Default, Clone, Copy)]
pub struct MistralProvider;

http::api_provider! { MistralProvider, API, prepare, simple_options }

fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<http::PreparedRequest<MistralWire>, ProviderError> {
    let api_key = required_key(options, &model.provider, &model.base_url)?;
    let body = options.payload(build_body(model, context, options), model)?;
    let mut headers = http::Headers::json(Some("text/event-stream"));
    if let Some(key) = &api_key {
        headers.set("authorization", format!("Bearer {}", key.expose()));
    }
    headers.extend(model.headers.iter().flatten());
    headers.extend(&options.headers);
    if let Some(session) = &options.session_id
        && !headers.has("x-affinity")
    {
        // Mistral routes requests with the same affinity to a warm KV cache.
        headers.set("x-affinity", session.clone());
    }
    Ok(http::PreparedRequest::new(
        format!(
            "{}/v1/chat/completions",
            model.base_url.trim_end_matches('/')
        ),
        &body,
        headers,
        options,
        MistralWire,
    ))
}

/// Mistral's stream: SSE chunks to `[DONE]`.
pub(crate) struct MistralWire;

impl http::Wire for MistralWire {
    fn read(
        self,
        reply: http::Reply<'_>,
    ) -> impl std::future::Future<Output = Result<(), ProviderError>> + Send {
        reply.read_sse(read_stream)
    }
}

/// Maps ids to Mistral's 9-character form, without collisions within one request.
#[derive(Default)]
struct ToolCallIds {
    forward: HashMap<String, String>,
    taken: HashMap<String, String>,
}

impl ToolCallIds {
    fn normalize(&mut self, id: &str) -> String {
        if let Some(existing) = self.forward.get(id) {
            return existing.clone();
        }
        let mut attempt = 0;
        loop {
            let candidate = derive_tool_call_id(id, attempt);
            match self.taken.get(&candidate) {
                Some(owner) if owner != id => attempt += 1,
                _ => {
                    self.forward.insert(id.to_owned(), candidate.clone());
                    self.taken.insert(candidate.clone(), id.to_owned());
                    return candidate;
                }
            }
        }
    }
}

/// pi's `deriveMistralToolCallId`: an id already 9 alphanumerics is kept, otherwise a hash.
fn derive_tool_call_id(id: &str, attempt: u32) -> String {
    let clean: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && clean.len() == TOOL_CALL_ID_LENGTH {
        return clean;
    }
    let base = if clean.is_empty() { id } else { &clean };
    let seed = if attempt == 0 {
        base.to_owned()
    } else {
        format!("{base}:{attempt}")
    };
    short_hash(&seed)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(TOOL_CALL_ID_LENGTH)
        .collect()
}

/// Models that take `reasoning_effort` instead of `prompt_mode`.
fn uses_reasoning_effort(model: &Model) -> bool {
    matches!(
        model.id.as_str(),
        "mistral-small-2603" | "mistral-small-latest" | "mistral-medium-3.5"
    )
}

/// What `stream_simple` asks for (pi's `streamSimpleMistral`): for a reasoning model and a
/// level (clamped to what the model supports), `reasoning_effort` (the model's map entry, else
/// `high`) on the models that take it, `prompt_mode: "reasoning"` on the others.
fn simple_options(model: &Model, options: &StreamOptions) -> StreamOptions {
    let mut simple = crate::ai::simple_options::base_options(model, options);
    let level = crate::ai::simple_options::clamped_level(model, options.reasoning)
        .filter(|_| model.reasoning);
    simple.prompt_mode = None;
    simple.reasoning_effort = None;
    if let Some(level) = level {
        if uses_reasoning_effort(model) {
            simple.reasoning_effort = Some(
                model
                    .thinking_level_map
                    .as_ref()
                    .and_then(|map| map.get(level.as_str()).cloned().flatten())
                    .unwrap_or_else(|| "high".to_owned()),
            );
        } else {
            simple.prompt_mode = Some("reasoning".to_owned());
        }
    }
    simple
}

/// The request body.
pub(crate) fn build_body(model: &Model, context: &Context, options: &StreamOptions) -> Value {
    let ids = std::cell::RefCell::new(ToolCallIds::default());
    let normalizer = |id: &str| ids.borrow_mut().normalize(id);
    let messages = transform_messages_borrowed(&context.messages, model, Some(&normalizer));
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        out.push(json!({"role": "system", "content": system}));
    }
    let images = model.supports_images();
    for message in &messages {
        if let Some(value) = convert_message(message, images) {
            // Mistral refuses a user message right after tool results ("Unexpected role 'user'
            // after role 'tool'"), which a steering message or a failed turn left out makes:
            // an assistant message goes between them, as for other servers with that rule.
            if value["role"] == "user"
                && out
                    .last()
                    .is_some_and(|last: &Value| last["role"] == "tool")
            {
                out.push(json!({
                    "role": "assistant",
                    "content": TOOL_RESULTS_BRIDGE,
                    "prefix": false,
                }));
            }
            out.push(value);
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("stream".into(), json!(true));
    body.insert("messages".into(), Value::Array(out));
    if let Some(tools) = context.tools.as_ref().filter(|tools| !tools.is_empty()) {
        let tools: Vec<Value> = tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description,
                    "parameters": tool.parameters, "strict": false}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = options.max_tokens {
        body.insert("max_tokens".into(), json!(max_tokens));
    }
    let has_tools = context
        .tools
        .as_ref()
        .is_some_and(|tools| !tools.is_empty());
    if let Some(choice) = options.tool_choice.as_ref().filter(|_| has_tools) {
        let choice = match choice {
            ToolChoice::Required => json!("any"),
            other => other.chat_completions(),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(schema) = &options.output_schema {
        body.insert("response_format".into(), schema.response_format());
    }
    // `stream` sends what the options say; `stream_simple` fills them from the reasoning level.
    if let Some(mode) = &options.prompt_mode {
        body.insert("prompt_mode".into(), json!(mode));
    }
    if let Some(effort) = options
        .reasoning_effort
        .as_deref()
        .filter(|e| !e.is_empty())
    {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    Value::Object(body)
}

fn image_chunk(data: &str, mime_type: &str) -> Value {
    json!({"type": "image_url", "image_url": format!("data:{mime_type};base64,{data}")})
}

fn convert_message(message: &Message, images: bool) -> Option<Value> {
    match message {
        Message::User(user) => match &user.content {
            UserMessageContent::Text(text) => Some(json!({"role": "user", "content": text})),
            UserMessageContent::Blocks(blocks) => {
                let had_images = has_images(blocks);
                let parts: Vec<Value> = blocks
                    .iter()
                    .filter_map(|block| match block {
                        UserContent::Text(text) => Some(json!({"type": "text", "text": text.text})),
                        UserContent::Image(image) if images => {
                            Some(image_chunk(&image.data, &image.mime_type))
                        }
                        UserContent::Image(_) => None,
                    })
                    .collect();
                if !parts.is_empty() {
                    Some(json!({"role": "user", "content": parts}))
                } else if had_images {
                    Some(
                        json!({"role": "user", "content": crate::ai::transform::USER_IMAGE_OMITTED}),
                    )
                } else {
                    None
                }
            }
        },
        Message::Assistant(assistant) => {
            let mut parts = Vec::new();
            let mut calls = Vec::new();
            for block in &assistant.content {
                match block {
                    AssistantContent::Text(text) if !text.text.trim().is_empty() => {
                        parts.push(json!({"type": "text", "text": text.text}));
                    }
                    AssistantContent::Thinking(thinking) if !thinking.thinking.trim().is_empty() => {
                        parts.push(json!({"type": "thinking", "thinking": [{"type": "text", "text": thinking.thinking}]}));
                    }
                    // `index` and the message's `prefix: false` are what pi's Mistral SDK
                    // writes.
                    AssistantContent::ToolCall(call) => calls.push(json!({
                        "id": call.id, "type": "function",
                        "function": {"name": call.name, "arguments": serde_json::to_string(&call.arguments).unwrap_or_else(|_| "{}".into())},
                        "index": calls.len(),
                    })),
                    _ => {}
                }
            }
            if parts.is_empty() && calls.is_empty() {
                return None;
            }
            let mut out = json!({"role": "assistant"});
            if !parts.is_empty() {
                out["content"] = Value::Array(parts);
            }
            if !calls.is_empty() {
                out["tool_calls"] = Value::Array(calls);
            }
            out["prefix"] = json!(false);
            Some(out)
        }
        Message::ToolResult(result) => {
            let text = joined_text(&result.content);
            let has_images = has_images(&result.content);
            let prefix = if result.is_error { "[tool error] " } else { "" };
            let trimmed = text.trim();
            let body = if !trimmed.is_empty() {
                let suffix = if has_images && !images {
                    "\n[tool image omitted: model does not support images]"
                } else {
                    ""
                };
                format!("{prefix}{trimmed}{suffix}")
            } else if has_images && images {
                format!("{prefix}(see attached image)")
            } else if has_images {
                format!("{prefix}{}", crate::ai::transform::USER_IMAGE_OMITTED)
            } else {
                format!("{prefix}(no tool output)")
            };
            let mut content = vec![json!({"type": "text", "text": body})];
            if images {
                content.extend(result.content.iter().filter_map(|b| match b {
                    UserContent::Image(image) => Some(image_chunk(&image.data, &image.mime_type)),
                    UserContent::Text(_) => None,
                }));
            }
            Some(
                json!({"role": "tool", "tool_call_id": result.tool_call_id, "name": result.tool_name, "content": content}),
            )
        }
    }
}

/// Maps Mistral's finish reason. pi maps unknown reasons to `stop`; we keep them visible as an
/// error that names the reason, like every other provider here.
pub(crate) fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" => (StopReason::Stop, None),
        "length" | "model_length" => (StopReason::Length, None),
        "tool_calls" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Open {
    Text(usize),
    Thinking(usize),
}

#[derive(Default)]
struct State {
    current: Option<Open>,
    tools: Vec<(String, usize)>,
    /// A finish reason arrived: the answer is complete.
    finished: bool,
    /// `data: [DONE]` arrived: the stream is over.
    done: bool,
}

/// The error sent inside the stream (`{"object":"error",
/// "message":..}` or `{"error":..}`), if `chunk` is one.
fn stream_error(chunk: &Value) -> Option<ProviderError> {
    let error = chunk.get("error").filter(|error| !error.is_null());
    if error.is_none() && chunk.get("object").and_then(Value::as_str) != Some("error") {
        return None;
    }
    let message = error
        .and_then(|error| error.get("message").or(Some(error)))
        .and_then(Value::as_str)
        .or_else(|| chunk.get("message").and_then(Value::as_str))
        .map_or_else(|| chunk.to_string(), str::to_owned);
    // Classified by its `type` or `code` (a name, or an HTTP-style number).
    let field = |name: &str| error.and_then(|e| e.get(name)).or_else(|| chunk.get(name));
    let code = field("type")
        .and_then(Value::as_str)
        .or_else(|| field("code").and_then(Value::as_str));
    let status = field("code")
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code));
    Some(ProviderError::upstream(message, code, status))
}

impl State {
    async fn close_current(&mut self, writer: &mut StreamWriter) {
        match self.current.take() {
            Some(Open::Text(index)) => writer.text_end(index).await,
            Some(Open::Thinking(index)) => writer.thinking_end(index).await,
            None => {}
        }
    }

    /// Appends text; like pi, an empty string still opens a text block (Mistral sends `""` in
    /// its first and last chunks).
    async fn text(&mut self, writer: &mut StreamWriter, text: &str) {
        let index = match self.current {
            Some(Open::Text(index)) => index,
            _ => {
                self.close_current(writer).await;
                let index = writer.text_start().await;
                self.current = Some(Open::Text(index));
                index
            }
        };
        writer.text_delta(index, text).await;
    }

    async fn thinking(&mut self, writer: &mut StreamWriter, text: &str) {
        if text.is_empty() {
            return;
        }
        let index = match self.current {
            Some(Open::Thinking(index)) => index,
            _ => {
                self.close_current(writer).await;
                let index = writer.thinking_start().await;
                self.current = Some(Open::Thinking(index));
                index
            }
        };
        writer.thinking_delta(index, text).await;
    }

    async fn handle(
        &mut self,
        data: &str,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<(), ProviderError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        // A lone surrogate escape reads as U+FFFD (issue 17), as on every API.
        let chunk: Value = parse_json_lenient(data).map_err(|error| {
            ProviderError::Decode(format!("Malformed chunk from provider ({error})"))
        })?;
        if let Some(error) = stream_error(&chunk) {
            return Err(error);
        }
        if writer.message().response_id.is_none()
            && let Some(id) = chunk.get("id").and_then(Value::as_str)
        {
            writer.message_mut().response_id = Some(id.to_owned());
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let number = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            let message = writer.message_mut();
            message.usage.input = number("prompt_tokens");
            message.usage.output = number("completion_tokens");
            message.usage.total_tokens = message.usage.sum_of_counts();
            model.calculate_cost(&mut message.usage);
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finished = true;
            record_stop(writer.message_mut(), map_finish_reason(reason), reason);
        }
        let delta = &choice["delta"];
        match &delta["content"] {
            Value::String(text) => self.text(writer, text).await,
            Value::Array(items) => {
                for item in items {
                    match item["type"].as_str() {
                        Some("text") => {
                            self.text(writer, item["text"].as_str().unwrap_or("")).await
                        }
                        Some("thinking") => {
                            let text: String = item["thinking"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|part| part["text"].as_str())
                                .collect();
                            self.thinking(writer, &text).await;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            self.close_current(writer).await;
            let stream_index = call["index"].as_u64().unwrap_or(0);
            let id = match call["id"].as_str() {
                Some(id) if id != "null" && !id.is_empty() => id.to_owned(),
                _ => derive_tool_call_id(&format!("toolcall:{stream_index}"), 0),
            };
            let key = format!("{id}:{stream_index}");
            let index = match self.tools.iter().find(|(k, _)| *k == key) {
                Some((_, index)) => *index,
                None => {
                    let name = call
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let index = writer.tool_call_start(&id, name).await;
                    self.tools.push((key, index));
                    index
                }
            };
            let arguments = match call.pointer("/function/arguments") {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            writer.tool_call_delta(index, arguments).await;
        }
        Ok(())
    }
}

/// Reads a response body to its end (fuzzing feeds bytes here, without a network).
pub(crate) async fn read_stream(
    writer: &mut StreamWriter,
    model: &Model,
    events: &mut http::SseEvents,
) -> Result<(), ProviderError> {
    let mut state = State::default();
    let read = loop {
        let event = match events.next().await {
            Ok(Some(event)) => event,
            Ok(None) => break Ok(()),
            // A finish reason makes the answer complete: a stall or a cut before `[DONE]`
            // takes nothing from it.
            Err(_) if state.finished => break Ok(()),
            Err(error) => break Err(error),
        };
        let finished_before = state.finished;
        state.handle(&event.data, writer, model).await?;
        if state.done || writer.is_closed() {
            break Ok(());
        }
        if state.finished && !finished_before {
            events.expect_end();
        }
    };
    // As pi, the blocks are ended when the stream ends, however it ends: the current block,
    // then every tool call. Unlike pi, a body cut short is then an error.
    state.close_current(writer).await;
    for (_, index) in std::mem::take(&mut state.tools) {
        writer.tool_call_end(index).await;
    }
    read?;
    if !state.finished && !state.done && !writer.is_closed() {
        return Err(events.incomplete(
            "Connection error: the provider closed the stream before the response was complete",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_ids_are_nine_alphanumerics_without_collisions() {
        let mut ids = ToolCallIds::default();
        assert_eq!(ids.normalize("abcDEF123"), "abcDEF123");
        let long = ids.normalize("call_1|fc_xyz");
        assert_eq!(long.len(), 9);
        assert!(long.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(
            ids.normalize("call_1|fc_xyz"),
            long,
            "stable within a request"
        );
        // The same ids pi derives (printed by pi 0.73.1 on Node).
        assert_eq!(derive_tool_call_id("toolcall:0", 0), "toolcall0");
        assert_eq!(long, "1ha221vvv");
    }

    #[test]
    fn unknown_finish_reasons_are_named() {
        assert_eq!(map_finish_reason("model_length").0, StopReason::Length);
        assert_eq!(
            map_finish_reason("weird").1.as_deref(),
            Some("Provider finish_reason: weird")
        );
    }
}
