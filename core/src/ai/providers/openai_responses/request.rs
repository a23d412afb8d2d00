//! Builds the Responses request body from a [`Context`] (pi's `buildParams`,
//! `convertResponsesMessages` and `convertResponsesTools`).
//!
//! Replay rules: an assistant text block becomes an output `message` item whose id comes from
//! the block's `textSignature`; a thinking block becomes the reasoning item stored in its
//! `thinkingSignature`; a tool call `call_id|item_id` becomes a `function_call` item, and a tool
//! result a `function_call_output` item.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::providers::content::{has_images, joined_text};
use crate::ai::simple_options::mapped_effort;
use crate::ai::transform::transform_messages_borrowed;
use crate::ai::types::{
    AssistantContent, AssistantMessage, Context, Message, TextContent, ThinkingContent, Tool,
    ToolResultMessage, UserContent, UserMessageContent,
};

/// What `include` asks for when reasoning is on: the encrypted reasoning, so that it can be
/// replayed with `store: false`.
pub(crate) const INCLUDE_ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// The `output` of a tool result that has only images.
pub(crate) const SEE_ATTACHED_IMAGE: &str = "(see attached image)";

/// The longest item id OpenAI accepts.
const MAX_ID_LEN: usize = 64;

/// Everything about the body that differs between the providers speaking this protocol.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodySettings<'a> {
    /// The `model` field: the model id, or an Azure deployment name.
    pub model_name: &'a str,
    /// Providers whose pipe-style tool-call ids (`call_id|item_id`) are replayed as two ids; for
    /// any other target provider a foreign id is only sanitised as a whole.
    pub tool_call_providers: &'a [&'a str],
    /// Send `store: false` (pi's OpenAI provider does; its Azure provider does not).
    pub store_false: bool,
    /// `prompt_cache_key`.
    pub prompt_cache_key: Option<&'a str>,
    /// Send `prompt_cache_retention: "24h"`.
    pub long_cache_retention: bool,
    /// `service_tier` (pi's `serviceTier`; Azure sends none).
    pub service_tier: Option<&'a str>,
    /// `reasoning.summary` (pi's `reasoningSummary`; `"auto"` when unset).
    pub reasoning_summary: Option<&'a str>,
    /// When no reasoning level is asked, send `reasoning: {effort: <the map's "off">}` to switch
    /// reasoning off explicitly (pi does this except for GitHub Copilot).
    pub explicit_reasoning_off: bool,
}

/// The JSON body for `POST /responses`.
pub(crate) fn build_body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    settings: &BodySettings<'_>,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model_name));
    body.insert(
        "input".into(),
        Value::Array(convert_input(model, context, settings.tool_call_providers)),
    );
    body.insert("stream".into(), json!(true));
    if let Some(key) = settings.prompt_cache_key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if settings.long_cache_retention {
        body.insert("prompt_cache_retention".into(), json!("24h"));
    }
    if settings.store_false {
        body.insert("store".into(), json!(false));
    }
    if let Some(max_tokens) = options.max_tokens.filter(|&n| n > 0) {
        body.insert("max_output_tokens".into(), json!(max_tokens));
    }
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(tier) = settings.service_tier {
        body.insert("service_tier".into(), json!(tier));
    }
    if let Some(tools) = context.tools.as_deref().filter(|tools| !tools.is_empty()) {
        body.insert("tools".into(), Value::Array(convert_tools(tools)));
        if let Some(choice) = &options.tool_choice {
            body.insert("tool_choice".into(), choice.responses());
        }
    }
    if let Some(schema) = &options.output_schema {
        body.insert("text".into(), json!({"format": schema.text_format()}));
    }
    if model.reasoning {
        // pi's `thinkingLevelMap[effort] ?? effort`; `stream_simple` fills the effort from the
        // clamped level.
        let effort = options
            .reasoning_effort
            .as_deref()
            .filter(|effort| !effort.is_empty())
            .map(|effort| mapped_effort(model, effort));
        if effort.is_some() || settings.reasoning_summary.is_some() {
            body.insert(
                "reasoning".into(),
                json!({
                    "effort": effort.unwrap_or_else(|| "medium".to_owned()),
                    "summary": settings.reasoning_summary.unwrap_or("auto"),
                }),
            );
            body.insert("include".into(), json!([INCLUDE_ENCRYPTED_REASONING]));
        } else if settings.explicit_reasoning_off {
            match model
                .thinking_level_map
                .as_ref()
                .and_then(|map| map.get("off"))
            {
                // The model cannot switch reasoning off: send nothing.
                Some(None) => {}
                Some(Some(off)) => {
                    body.insert("reasoning".into(), json!({"effort": off}));
                }
                None => {
                    body.insert("reasoning".into(), json!({"effort": "none"}));
                }
            }
        }
    }
    Value::Object(body)
}

/// `tools`: every tool as a non-strict function.
pub(crate) fn convert_tools(tools: &[Tool]) -> Vec<Value> {
    convert_tools_with_strict(tools, &json!(false))
}

/// `tools` with `strict` set to `strict` (`false` for OpenAI, `null` for Codex).
pub(crate) fn convert_tools_with_strict(tools: &[Tool], strict: &Value) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": strict,
            })
        })
        .collect()
}

pub(crate) use crate::ai::short_hash::short_hash;

fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// One part of a tool-call id, made acceptable: characters outside `[A-Za-z0-9_-]` become `_`,
/// at most 64 characters, trailing `_` removed.
pub(crate) fn normalize_id_part(part: &str) -> String {
    let clean: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_ID_LEN)
        .collect();
    clean.trim_end_matches('_').to_owned()
}

/// The item id replayed for a tool call made by another provider or api: `fc_<short hash>`.
pub(crate) fn foreign_item_id(item_id: &str) -> String {
    truncate_chars(&format!("fc_{}", short_hash(item_id)), MAX_ID_LEN).to_owned()
}

/// The id normaliser `transform_messages` applies to tool calls of other models (pi's rule): for
/// an OpenAI-like target, both parts of `call_id|item_id` are normalised and the item id is made
/// to start with `fc_`; any other id is normalised as one part.
pub(crate) fn normalize_tool_call_id(id: &str, openai_like: bool) -> String {
    if !openai_like || !id.contains('|') {
        return normalize_id_part(id);
    }
    let mut parts = id.split('|');
    let call_id = normalize_id_part(parts.next().unwrap_or(""));
    let mut item_id = normalize_id_part(parts.next().unwrap_or(""));
    if !item_id.starts_with("fc_") {
        item_id = normalize_id_part(&format!("fc_{item_id}"));
    }
    format!("{call_id}|{item_id}")
}

/// The id a tool call of another provider or api gets (pi hashes the foreign item id).
fn foreign_tool_call_id(id: &str) -> String {
    let mut parts = id.split('|');
    let call_id = normalize_id_part(parts.next().unwrap_or(""));
    let item_id = foreign_item_id(parts.next().unwrap_or(""));
    format!("{call_id}|{item_id}")
}

/// Gives the pipe-style tool calls of other providers or apis their hashed item ids, and their
/// results the same ids.
///
/// pi decides this inside its id normaliser, which sees the source message; ours does not, so it
/// happens in this pass before [`transform_messages`]. The normaliser applied afterwards leaves
/// these ids unchanged.
fn rename_foreign_tool_calls<'a>(
    messages: &'a [Message],
    model: &Model,
    openai_like: bool,
) -> Cow<'a, [Message]> {
    let is_foreign =
        |message: &AssistantMessage| message.provider != model.provider || message.api != model.api;
    let needs_rename = openai_like
        && messages.iter().any(|message| {
            matches!(message, Message::Assistant(a) if is_foreign(a)
                && a.tool_calls().any(|call| call.id.contains('|')))
        });
    if !needs_rename {
        return Cow::Borrowed(messages);
    }
    let mut renamed: HashMap<String, String> = HashMap::new();
    let mut out = messages.to_vec();
    for message in &mut out {
        match message {
            Message::Assistant(assistant) if is_foreign(assistant) => {
                for block in &mut assistant.content {
                    if let AssistantContent::ToolCall(call) = block
                        && call.id.contains('|')
                    {
                        let new_id = foreign_tool_call_id(&call.id);
                        renamed.insert(call.id.clone(), new_id.clone());
                        call.id = new_id;
                    }
                }
            }
            Message::ToolResult(result) => {
                if let Some(new_id) = renamed.get(&result.tool_call_id) {
                    result.tool_call_id.clone_from(new_id);
                }
            }
            _ => {}
        }
    }
    Cow::Owned(out)
}

/// The message id and phase carried by a text block's `textSignature`: JSON
/// `{"v":1,"id":..,"phase":..}`, or a legacy bare id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TextSignature {
    /// The output message id.
    pub id: String,
    /// `commentary` or `final_answer`.
    pub phase: Option<String>,
}

impl TextSignature {
    /// Reads a signature; anything that is not the JSON form is a legacy bare id.
    pub(crate) fn parse(signature: &str) -> Option<Self> {
        if signature.is_empty() {
            return None;
        }
        if signature.starts_with('{')
            && let Ok(Value::Object(object)) = serde_json::from_str::<Value>(signature)
            && object.get("v") == Some(&json!(1))
            && let Some(id) = object.get("id").and_then(Value::as_str)
        {
            let phase = object
                .get("phase")
                .and_then(Value::as_str)
                .filter(|phase| matches!(*phase, "commentary" | "final_answer"))
                .map(str::to_owned);
            return Some(Self {
                id: id.to_owned(),
                phase,
            });
        }
        Some(Self {
            id: signature.to_owned(),
            phase: None,
        })
    }

    /// The JSON form, with pi's key order: `{"v":1,"id":"msg_..","phase":".."}`.
    pub(crate) fn encode(id: &str, phase: Option<&str>) -> String {
        let quote = |text: &str| Value::String(text.to_owned()).to_string();
        match phase {
            Some(phase) => format!(r#"{{"v":1,"id":{},"phase":{}}}"#, quote(id), quote(phase)),
            None => format!(r#"{{"v":1,"id":{}}}"#, quote(id)),
        }
    }
}

/// The reasoning item stored in a thinking signature, if it is one. A signature that is not the
/// JSON of a reasoning item (another provider's signature, a corrupt transcript) gives `None`
/// instead of failing the request (pi's unguarded `JSON.parse` fails it: quirk #13).
pub(crate) fn reasoning_item(signature: &str) -> Option<Value> {
    if !signature.trim_start().starts_with('{') {
        return None;
    }
    match serde_json::from_str::<Value>(signature) {
        Ok(item @ Value::Object(_))
            if item.get("type").and_then(Value::as_str) == Some("reasoning") =>
        {
            Some(item)
        }
        _ => None,
    }
}

/// Whether a reasoning item holds nothing: no encrypted content and no summary text.
fn is_empty_reasoning(item: &Value) -> bool {
    let encrypted = item
        .get("encrypted_content")
        .and_then(Value::as_str)
        .is_some_and(|content| !content.is_empty());
    let summary = item
        .get("summary")
        .and_then(Value::as_array)
        .is_some_and(|parts| {
            parts.iter().any(|part| {
                part.get("text")
                    .and_then(Value::as_str)
                    .is_some_and(|text| !text.is_empty())
            })
        });
    let content = item
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|parts| !parts.is_empty());
    !encrypted && !summary && !content
}

/// The `input` array: instructions, then the transcript as Responses items.
pub(crate) fn convert_input(
    model: &Model,
    context: &Context,
    tool_call_providers: &[&str],
) -> Vec<Value> {
    convert_input_with(model, context, tool_call_providers, true)
}

/// [`convert_input`], with the system prompt as the first item only if `include_system_prompt`
/// (Codex sends it as `instructions` instead).
pub(crate) fn convert_input_with(
    model: &Model,
    context: &Context,
    tool_call_providers: &[&str],
    include_system_prompt: bool,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(context.messages.len() + 1);
    if let Some(system) = context
        .system_prompt
        .as_deref()
        .filter(|s| include_system_prompt && !s.is_empty())
    {
        let role = if model.reasoning {
            "developer"
        } else {
            "system"
        };
        out.push(json!({"role": role, "content": system}));
    }
    let openai_like = tool_call_providers.contains(&model.provider.as_str());
    let messages = rename_foreign_tool_calls(&context.messages, model, openai_like);
    let normalize = move |id: &str| normalize_tool_call_id(id, openai_like);
    let messages = transform_messages_borrowed(&messages, model, Some(&normalize));
    let mut message_index = 0;
    for message in &messages {
        let converted = match &**message {
            Message::User(user) => convert_user(&user.content, &mut out),
            Message::Assistant(assistant) => {
                convert_assistant(assistant, model, message_index, &mut out)
            }
            Message::ToolResult(result) => {
                out.push(convert_tool_result(result, model));
                true
            }
        };
        // pi numbers only the messages it sent (fallback message ids are `msg_<index>`).
        if converted {
            message_index += 1;
        }
    }
    out
}

fn image_part(data: &str, mime_type: &str) -> Value {
    json!({
        "type": "input_image",
        "detail": "auto",
        "image_url": format!("data:{mime_type};base64,{data}"),
    })
}

fn convert_user(content: &UserMessageContent, out: &mut Vec<Value>) -> bool {
    let parts: Vec<Value> = match content {
        UserMessageContent::Text(text) => vec![json!({"type": "input_text", "text": text})],
        UserMessageContent::Blocks(blocks) => blocks
            .iter()
            .map(|block| match block {
                UserContent::Text(text) => json!({"type": "input_text", "text": text.text}),
                UserContent::Image(image) => image_part(&image.data, &image.mime_type),
            })
            .collect(),
    };
    if parts.is_empty() {
        return false;
    }
    out.push(json!({"role": "user", "content": parts}));
    true
}

fn output_message(text: &str, id: String, phase: Option<String>) -> Value {
    let mut item = json!({
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
        "status": "completed",
        "id": id,
    });
    if let Some(phase) = phase {
        item["phase"] = json!(phase);
    }
    item
}

fn convert_assistant(
    message: &AssistantMessage,
    model: &Model,
    message_index: usize,
    out: &mut Vec<Value>,
) -> bool {
    // Same provider and api but another model: OpenAI pairs `fc_` item ids with the reasoning
    // items they followed, so those ids are left out (pi does the same).
    let other_model_same_api =
        message.model != model.id && message.provider == model.provider && message.api == model.api;
    let mut items = Vec::new();
    let mut fallback_ids = 0;
    let mut fallback_id = || {
        // pi gives every unsigned text block of a message the same `msg_<index>`; the second and
        // later ones get a suffix here so that ids stay unique within the request.
        let id = if fallback_ids == 0 {
            format!("msg_{message_index}")
        } else {
            format!("msg_{message_index}_{fallback_ids}")
        };
        fallback_ids += 1;
        id
    };
    for block in &message.content {
        match block {
            AssistantContent::Thinking(ThinkingContent {
                thinking,
                thinking_signature: Some(signature),
                ..
            }) => match reasoning_item(signature) {
                // An empty reasoning item (no summary text, no encrypted content) carries
                // nothing to replay, and gateways refuse it (pi #1878/#2098).
                Some(item) if is_empty_reasoning(&item) => {}
                Some(item) => items.push(item),
                // Not a reasoning item we can replay: keep the reasoning as plain text, as
                // `transform_messages` does for reasoning from another model.
                None if !thinking.trim().is_empty() => {
                    items.push(output_message(thinking, fallback_id(), None));
                }
                None => {}
            },
            AssistantContent::Thinking(_) => {}
            AssistantContent::Text(TextContent {
                text,
                text_signature,
            }) => {
                let signature = text_signature.as_deref().and_then(TextSignature::parse);
                let (id, phase) = match signature {
                    Some(TextSignature { id, phase }) if id.chars().count() > MAX_ID_LEN => {
                        (format!("msg_{}", short_hash(&id)), phase)
                    }
                    Some(TextSignature { id, phase }) => (id, phase),
                    None => (fallback_id(), None),
                };
                items.push(output_message(text, id, phase));
            }
            AssistantContent::ToolCall(call) => {
                let mut parts = call.id.split('|');
                let call_id = parts.next().unwrap_or("");
                let item_id = parts
                    .next()
                    .filter(|id| !(other_model_same_api && id.starts_with("fc_")));
                let mut item = json!({
                    "type": "function_call",
                    "call_id": call_id,
                    "name": call.name,
                    "arguments": serde_json::to_string(&call.arguments)
                        .unwrap_or_else(|_| "{}".to_owned()),
                });
                if let Some(item_id) = item_id {
                    item["id"] = json!(item_id);
                }
                items.push(item);
            }
        }
    }
    // A reasoning item must be followed by the item it led to ("Item 'rs_…' of type
    // 'reasoning' was provided without its required following item"): one a response ended on
    // (cut by the token limit while reasoning) is left out, and a turn of nothing else with it.
    while items.last().is_some_and(|item| item["type"] == "reasoning") {
        items.pop();
    }
    if items.is_empty() {
        return false;
    }
    out.append(&mut items);
    true
}

fn convert_tool_result(result: &ToolResultMessage, model: &Model) -> Value {
    let text = joined_text(&result.content);
    let has_images = has_images(&result.content);
    let output = if has_images && model.supports_images() {
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(json!({"type": "input_text", "text": text}));
        }
        parts.extend(result.content.iter().filter_map(|block| match block {
            UserContent::Image(image) => Some(image_part(&image.data, &image.mime_type)),
            UserContent::Text(_) => None,
        }));
        Value::Array(parts)
    } else if text.is_empty() {
        json!(SEE_ATTACHED_IMAGE)
    } else {
        json!(text)
    };
    let call_id = result.tool_call_id.split('|').next().unwrap_or("");
    json!({"type": "function_call_output", "call_id": call_id, "output": output})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_hash_is_stable_and_short() {
        assert_eq!(short_hash(""), "k4n83c7h0j2b");
        assert_eq!(short_hash("fc_abc"), short_hash("fc_abc"));
        assert_ne!(short_hash("fc_abc"), short_hash("fc_abd"));
        assert!(short_hash("anything at all").len() <= 13);
    }

    #[test]
    fn id_normalisation_like_pi() {
        assert_eq!(normalize_id_part("a.b/c__"), "a_b_c");
        assert_eq!(normalize_id_part(&"x".repeat(80)).len(), 64);
        assert_eq!(normalize_tool_call_id("call_1|fc_2", true), "call_1|fc_2");
        assert_eq!(
            normalize_tool_call_id("call_1|item", true),
            "call_1|fc_item"
        );
        assert_eq!(normalize_tool_call_id("call.1|item", false), "call_1_item");
        assert_eq!(normalize_tool_call_id("toolu_01", true), "toolu_01");
        let foreign = foreign_tool_call_id("call 1|rs_very/long");
        assert!(foreign.starts_with("call_1|fc_"), "{foreign}");
        assert_eq!(normalize_tool_call_id(&foreign, true), foreign);
    }

    #[test]
    fn text_signatures() {
        let encoded = TextSignature::encode("msg_1", Some("final_answer"));
        assert_eq!(encoded, r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#);
        assert_eq!(
            TextSignature::parse(&encoded),
            Some(TextSignature {
                id: "msg_1".into(),
                phase: Some("final_answer".into())
            })
        );
        assert_eq!(
            TextSignature::parse("msg_legacy").map(|s| s.id),
            Some("msg_legacy".into())
        );
        assert_eq!(
            TextSignature::parse("{broken").map(|s| s.id),
            Some("{broken".into())
        );
        assert_eq!(TextSignature::parse(""), None);
    }

    #[test]
    fn reasoning_a_response_ended_on_is_left_out() {
        let model = Model::new(
            "openai-responses",
            "openai",
            "gpt-x",
            "https://api.openai.com/v1",
        );
        let reasoning = |id: &str| {
            AssistantContent::Thinking(crate::ai::types::ThinkingContent {
                thinking: "hmm".into(),
                thinking_signature: Some(format!(
                    r#"{{"type":"reasoning","id":"{id}","summary":[{{"type":"summary_text","text":"hmm"}}]}}"#
                )),
                ..Default::default()
            })
        };
        let message = |content: Vec<AssistantContent>| AssistantMessage {
            content,
            api: "openai-responses".into(),
            provider: "openai".into(),
            model: "gpt-x".into(),
            stop_reason: crate::ai::types::StopReason::Length,
            ..AssistantMessage::default()
        };
        // Only reasoning: nothing of the turn is sent.
        let mut out = Vec::new();
        assert!(!convert_assistant(
            &message(vec![reasoning("rs_1")]),
            &model,
            1,
            &mut out
        ));
        assert!(out.is_empty());
        // Reasoning, its answer, then reasoning cut short: the last is left out.
        let text = AssistantContent::Text(TextContent::new("partial"));
        assert!(convert_assistant(
            &message(vec![reasoning("rs_1"), text, reasoning("rs_2")]),
            &model,
            1,
            &mut out
        ));
        let types: Vec<&str> = out
            .iter()
            .map(|item| item["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["reasoning", "message"]);
        assert_eq!(out[0]["id"], "rs_1");
    }

    #[test]
    fn empty_reasoning_items_are_empty() {
        let empty = |s: &str| is_empty_reasoning(&reasoning_item(s).unwrap());
        assert!(empty(r#"{"type":"reasoning","id":"rs_1","summary":[]}"#));
        assert!(empty(
            r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":""}],"encrypted_content":null}"#
        ));
        assert!(!empty(
            r#"{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}"#
        ));
        assert!(!empty(
            r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Think"}]}"#
        ));
    }

    #[test]
    fn only_reasoning_items_replay() {
        assert!(reasoning_item(r#"{"type":"reasoning","id":"rs_1","summary":[]}"#).is_some());
        assert!(reasoning_item("EqQBCkgIARABGAIiQ").is_none());
        assert!(reasoning_item("reasoning_content").is_none());
        assert!(reasoning_item(r#"{"type":"message"}"#).is_none());
        assert!(reasoning_item(r#"{"type":"reasoning","#).is_none());
    }
}
