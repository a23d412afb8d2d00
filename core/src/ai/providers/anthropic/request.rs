//! Builds the Messages API request body from a [`Context`] (pi's `buildParams`,
//! `convertMessages` and `convertTools`).

use serde_json::{Map, Value, json};

use super::auth::{CLAUDE_CODE_IDENTITY, to_claude_code_name};
use super::compat::Compat;
use crate::ai::model::Model;
use crate::ai::options::{CacheRetention, StreamOptions};
use crate::ai::providers::content::{Turn, has_images, joined_text, turns};
use crate::ai::simple_options::{add_thinking_budget, base_options};
use crate::ai::thinking::ThinkingLevel;
use crate::ai::transform::transform_messages_borrowed;
use crate::ai::types::{
    AssistantContent, AssistantMessage, Context, Tool, ToolResultMessage, UserContent,
    UserMessageContent,
};

/// Text sent in place of a tool result that holds only images.
pub(crate) const TOOL_IMAGE_PLACEHOLDER: &str = "(see attached image)";
/// The thinking text of a `redacted_thinking` block (its payload is in the signature).
pub(crate) const REDACTED_THINKING_TEXT: &str = "[Reasoning redacted]";
/// The smallest thinking budget Anthropic accepts, and the output left to a budget that would
/// use up all of `max_tokens`.
pub(crate) const MIN_THINKING_BUDGET: u64 = 1024;
/// `max_tokens` for a model whose own limit is unknown (`model.max_tokens == 0`), where pi would
/// send 0 and have the request rejected.
pub(crate) const FALLBACK_MAX_TOKENS: u64 = 4096;

/// Everything about the request that is decided before the body is built.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyInputs<'a> {
    /// The target model.
    pub model: &'a Model,
    /// What to send.
    pub context: &'a Context,
    /// The request's options.
    pub options: &'a StreamOptions,
    /// The model's compat flags.
    pub compat: Compat,
    /// The request authenticates with a Claude subscription token (Claude Code identity and
    /// tool names).
    pub oauth: bool,
}

/// Whether pi treats `model_id` as an adaptive-thinking model (Opus 4.6+, Sonnet 4.6): it gets
/// `thinking: {type: "adaptive"}` with an effort instead of a token budget.
pub(crate) fn supports_adaptive_thinking(model_id: &str) -> bool {
    [
        "opus-4-6",
        "opus-4.6",
        "opus-4-7",
        "opus-4.7",
        "sonnet-4-6",
        "sonnet-4.6",
    ]
    .iter()
    .any(|needle| model_id.contains(needle))
}

/// The adaptive-thinking effort for `level`: the model's `thinkingLevelMap` entry when it is a
/// string, else low/medium/high.
pub(crate) fn effort_for(model: &Model, level: ThinkingLevel) -> String {
    if let Some(Some(mapped)) = model
        .thinking_level_map
        .as_ref()
        .and_then(|map| map.get(level.as_str()))
    {
        return mapped.clone();
    }
    match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High | ThinkingLevel::Xhigh => "high",
    }
    .to_owned()
}

/// What `stream_simple` asks for (pi's `streamSimpleAnthropic`; the level is not clamped):
/// no level turns thinking off; adaptive models get an effort; the others get a token budget
/// added on top of the output cap.
pub(crate) fn simple_options(model: &Model, options: &StreamOptions) -> StreamOptions {
    let mut simple = base_options(model, options);
    simple.effort = None;
    simple.thinking_budget_tokens = None;
    // Unlike pi, a model without reasoning ignores the level (pi would add a thinking budget to
    // its output cap and drop its temperature).
    let level = options.reasoning.and_then(ThinkingLevel::enabled);
    match level.filter(|_| model.reasoning) {
        None => simple.thinking_enabled = Some(false),
        Some(level) if supports_adaptive_thinking(&model.id) => {
            simple.thinking_enabled = Some(true);
            simple.effort = Some(effort_for(model, level));
        }
        Some(level) => {
            let budget = add_thinking_budget(&mut simple, model, level);
            simple.thinking_enabled = Some(true);
            simple.thinking_budget_tokens = Some(budget);
        }
    }
    simple
}

/// The `cache_control` marker for `retention`, if any.
pub(crate) fn cache_control(retention: CacheRetention, compat: Compat) -> Option<Value> {
    match retention {
        CacheRetention::None => None,
        CacheRetention::Long if compat.supports_long_cache_retention => {
            Some(json!({"type": "ephemeral", "ttl": "1h"}))
        }
        CacheRetention::Short | CacheRetention::Long => Some(json!({"type": "ephemeral"})),
    }
}

/// Whether the request asks for thinking (pi's `thinkingEnabled`; temperature is not sent then).
pub(crate) fn thinking_enabled(options: &StreamOptions) -> bool {
    options.thinking_enabled == Some(true)
}

/// The JSON body for `POST /v1/messages`.
pub(crate) fn build_body(inputs: BodyInputs<'_>) -> Value {
    let BodyInputs {
        model,
        context,
        options,
        compat,
        oauth,
    } = inputs;
    let cache = cache_control(CacheRetention::resolve(options.cache_retention), compat);
    let default_max_tokens = match model.max_tokens {
        0 => FALLBACK_MAX_TOKENS,
        limit => (limit / 3).max(1),
    };
    let max_tokens = options
        .max_tokens
        .filter(|&tokens| tokens > 0)
        .unwrap_or(default_max_tokens);
    // Thinking is what the options say: `stream` sends nothing unless `thinkingEnabled` is set;
    // `stream_simple` sets it from the reasoning level (see `simple_options`).
    let mut thinking = None;
    let mut output_config = None;
    if model.reasoning {
        let display = options.thinking_display.as_deref().unwrap_or("summarized");
        match options.thinking_enabled {
            Some(true) if supports_adaptive_thinking(&model.id) => {
                thinking = Some(json!({"type": "adaptive", "display": display}));
                if let Some(effort) = &options.effort {
                    output_config = Some(json!({"effort": effort}));
                }
            }
            Some(true) => {
                let budget = options
                    .thinking_budget_tokens
                    .filter(|&budget| budget > 0)
                    .unwrap_or(MIN_THINKING_BUDGET);
                thinking =
                    Some(json!({"type": "enabled", "budget_tokens": budget, "display": display}));
            }
            Some(false) => thinking = Some(json!({"type": "disabled"})),
            None => {}
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, context, oauth, cache.as_ref())),
    );
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    let system_prompt = context.system_prompt.as_deref().filter(|s| !s.is_empty());
    let mut system: Vec<Value> = Vec::new();
    if oauth {
        system.push(text_block(CLAUDE_CODE_IDENTITY, cache.as_ref()));
    }
    if let Some(prompt) = system_prompt {
        system.push(text_block(prompt, cache.as_ref()));
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    if let Some(temperature) = options.temperature
        && !thinking_enabled(options)
    {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(tools) = context.tools.as_deref().filter(|tools| !tools.is_empty()) {
        body.insert(
            "tools".into(),
            Value::Array(convert_tools(tools, oauth, compat, cache.as_ref())),
        );
    }
    if let Some(thinking) = thinking {
        body.insert("thinking".into(), thinking);
    }
    if let Some(schema) = &options.output_schema {
        // Native structured outputs (the forced-tool fallback, for older models, never gets
        // here: `ai/structured` clears the schema after adding the tool).
        let config = output_config.get_or_insert_with(|| json!({}));
        let schema = super::output_schema::output_format_schema(&schema.schema);
        config["format"] = json!({"type": "json_schema", "schema": schema});
    }
    if let Some(output_config) = output_config {
        body.insert("output_config".into(), output_config);
    }
    if let Some(user_id) = options
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.get("user_id"))
        .filter(|user_id| user_id.is_string())
    {
        body.insert("metadata".into(), json!({"user_id": user_id}));
    }
    if let Some(choice) = options.tool_choice.as_ref().filter(|_| {
        context
            .tools
            .as_ref()
            .is_some_and(|tools| !tools.is_empty())
    }) {
        body.insert("tool_choice".into(), choice.anthropic());
    }
    Value::Object(body)
}

fn text_block(text: &str, cache: Option<&Value>) -> Value {
    let mut block = json!({"type": "text", "text": text});
    if let Some(cache) = cache {
        block["cache_control"] = cache.clone();
    }
    block
}

/// The `tools` array. Only `properties` and `required` of each schema are kept, as in pi, plus
/// `$defs`/`definitions` so that `$ref`s inside the properties still resolve.
pub(crate) fn convert_tools(
    tools: &[Tool],
    oauth: bool,
    compat: Compat,
    cache: Option<&Value>,
) -> Vec<Value> {
    let last = tools.len().saturating_sub(1);
    tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let schema = &tool.parameters;
            let mut input_schema = json!({
                "type": "object",
                "properties": schema.get("properties").cloned().unwrap_or_else(|| json!({})),
                "required": schema.get("required").cloned().unwrap_or_else(|| json!([])),
            });
            for key in ["$defs", "definitions"] {
                if let Some(defs) = schema.get(key) {
                    input_schema[key] = defs.clone();
                }
            }
            let name = if oauth {
                to_claude_code_name(&tool.name)
            } else {
                tool.name.clone()
            };
            let mut out = json!({"name": name, "description": tool.description});
            if compat.supports_eager_tool_input_streaming {
                out["eager_input_streaming"] = json!(true);
            }
            out["input_schema"] = input_schema;
            if let Some(cache) = cache
                && index == last
            {
                out["cache_control"] = cache.clone();
            }
            out
        })
        .collect()
}

/// Rewrites a foreign tool-call id into Anthropic's alphabet (`[a-zA-Z0-9_-]`, at most 64
/// characters). Like pi (a JavaScript regex over UTF-16), a character outside the BMP becomes
/// two underscores.
pub(crate) fn normalize_tool_call_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len().min(64));
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
        if out.len() >= 64 {
            out.truncate(64);
            break;
        }
    }
    out
}

/// The `messages` array, with the cache marker on the last user message.
pub(crate) fn convert_messages(
    model: &Model,
    context: &Context,
    oauth: bool,
    cache: Option<&Value>,
) -> Vec<Value> {
    let messages =
        transform_messages_borrowed(&context.messages, model, Some(&normalize_tool_call_id));
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    for turn in turns(&messages) {
        match turn {
            Turn::User(user) => out.extend(convert_user(&user.content)),
            Turn::Assistant(assistant) => out.extend(convert_assistant(assistant, oauth)),
            Turn::ToolResults(results) => {
                // Consecutive results go into one user message (z.ai's endpoint needs it).
                let results: Vec<Value> = results.into_iter().map(convert_tool_result).collect();
                out.push(json!({"role": "user", "content": results}));
            }
        }
    }
    if let Some(cache) = cache
        && let Some(last) = out.last_mut()
        && last["role"] == "user"
    {
        mark_last_block(last, cache);
    }
    out
}

fn mark_last_block(message: &mut Value, cache: &Value) {
    match &mut message["content"] {
        Value::String(text) => {
            let text = std::mem::take(text);
            message["content"] = json!([{"type": "text", "text": text, "cache_control": cache}]);
        }
        Value::Array(blocks) => {
            if let Some(block) = blocks.last_mut()
                && matches!(
                    block["type"].as_str(),
                    Some("text" | "image" | "tool_result")
                )
            {
                block["cache_control"] = cache.clone();
            }
        }
        _ => {}
    }
}

fn image_block(data: &str, mime_type: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
}

fn convert_user(content: &UserMessageContent) -> Option<Value> {
    match content {
        UserMessageContent::Text(text) => {
            (!text.trim().is_empty()).then(|| json!({"role": "user", "content": text}))
        }
        UserMessageContent::Blocks(blocks) => {
            let blocks: Vec<Value> = blocks
                .iter()
                .filter_map(|block| match block {
                    UserContent::Text(text) => (!text.text.trim().is_empty())
                        .then(|| json!({"type": "text", "text": text.text})),
                    UserContent::Image(image) => Some(image_block(&image.data, &image.mime_type)),
                })
                .collect();
            (!blocks.is_empty()).then(|| json!({"role": "user", "content": blocks}))
        }
    }
}

fn convert_assistant(message: &AssistantMessage, oauth: bool) -> Option<Value> {
    let mut blocks = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            AssistantContent::Text(text) => {
                if !text.text.trim().is_empty() {
                    blocks.push(json!({"type": "text", "text": text.text}));
                }
            }
            AssistantContent::Thinking(thinking) => {
                if thinking.redacted == Some(true) {
                    blocks.push(json!({
                        "type": "redacted_thinking",
                        "data": thinking.thinking_signature.as_deref().unwrap_or(""),
                    }));
                    continue;
                }
                let signature = thinking
                    .thinking_signature
                    .as_deref()
                    .filter(|signature| !signature.trim().is_empty());
                // Empty thinking goes only when it is signed: with `thinking_display: "omitted"`
                // Claude signs blocks without text, and a tool-use turn replayed without them
                // is refused (pi drops them).
                if thinking.thinking.trim().is_empty() && signature.is_none() {
                    continue;
                }
                match signature {
                    // Replayed exactly as received: the signature covers the text.
                    Some(signature) => blocks.push(json!({
                        "type": "thinking",
                        "thinking": thinking.thinking,
                        "signature": signature,
                    })),
                    // No signature (an aborted stream, or a server that signs nothing): the
                    // API would reject a thinking block, so it goes back as plain text.
                    None => blocks.push(json!({"type": "text", "text": thinking.thinking})),
                }
            }
            AssistantContent::ToolCall(call) => {
                let name = if oauth {
                    to_claude_code_name(&call.name)
                } else {
                    call.name.clone()
                };
                let input = if call.arguments.is_object() {
                    call.arguments.clone()
                } else {
                    json!({})
                };
                blocks
                    .push(json!({"type": "tool_use", "id": call.id, "name": name, "input": input}));
            }
        }
    }
    (!blocks.is_empty()).then(|| json!({"role": "assistant", "content": blocks}))
}

/// What an error tool result without text says (see [`convert_tool_result`]).
pub(crate) const EMPTY_ERROR_RESULT: &str = "(the tool failed without a message)";

fn convert_tool_result(result: &ToolResultMessage) -> Value {
    let content = if has_images(&result.content) {
        // Blank text blocks are left out: the API refuses them (pi sends them).
        let mut blocks: Vec<Value> = result
            .content
            .iter()
            .filter_map(|block| match block {
                UserContent::Text(text) if text.text.trim().is_empty() => None,
                UserContent::Text(text) => Some(json!({"type": "text", "text": text.text})),
                UserContent::Image(image) => Some(image_block(&image.data, &image.mime_type)),
            })
            .collect();
        if !blocks.iter().any(|block| block["type"] == "text") {
            blocks.insert(0, json!({"type": "text", "text": TOOL_IMAGE_PLACEHOLDER}));
        }
        Value::Array(blocks)
    } else {
        let text = joined_text(&result.content);
        // The API refuses an error result without content ("content cannot be empty if
        // is_error is true"), and the result stays in the transcript: every later request
        // would fail. A tool that failed silently (a command with no output) says so instead.
        if result.is_error && text.trim().is_empty() {
            json!(EMPTY_ERROR_RESULT)
        } else {
            json!(text)
        }
    };
    json!({
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": content,
        "is_error": result.is_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_result_without_text_says_so() {
        let result = |text: &str, is_error: bool| ToolResultMessage {
            tool_call_id: "t1".into(),
            tool_name: "bash".into(),
            content: vec![UserContent::text(text)],
            details: None,
            is_error,
            timestamp: 0,
            timing: None,
        };
        assert_eq!(
            convert_tool_result(&result(" ", true))["content"],
            EMPTY_ERROR_RESULT
        );
        assert_eq!(convert_tool_result(&result("", false))["content"], "");
        assert_eq!(
            convert_tool_result(&result("boom", true))["content"],
            "boom"
        );
    }

    #[test]
    fn ids_are_normalised_like_pi() {
        assert_eq!(normalize_tool_call_id("call_1|fc.2"), "call_1_fc_2");
        assert_eq!(normalize_tool_call_id("a😀b"), "a__b");
        assert_eq!(normalize_tool_call_id(&"x".repeat(100)).len(), 64);
        assert_eq!(normalize_tool_call_id(&"é".repeat(100)), "_".repeat(64));
    }

    #[test]
    fn adaptive_models_and_effort() {
        assert!(supports_adaptive_thinking("claude-opus-4-6"));
        assert!(supports_adaptive_thinking("claude-sonnet-4.6-20260101"));
        assert!(!supports_adaptive_thinking("claude-sonnet-4-5"));
        let mut model = Model::new("anthropic-messages", "anthropic", "claude-opus-4-7", "");
        assert_eq!(effort_for(&model, ThinkingLevel::Minimal), "low");
        assert_eq!(effort_for(&model, ThinkingLevel::Xhigh), "high");
        model.thinking_level_map = Some([("xhigh".to_owned(), Some("xhigh".to_owned()))].into());
        assert_eq!(effort_for(&model, ThinkingLevel::Xhigh), "xhigh");
    }

    #[test]
    fn signed_thinking_without_text_is_replayed_unsigned_empty_is_not() {
        let thinking = |text: &str, signature: Option<&str>| {
            AssistantContent::Thinking(crate::ai::types::ThinkingContent {
                thinking: text.into(),
                thinking_signature: signature.map(str::to_owned),
                redacted: None,
            })
        };
        let message = AssistantMessage {
            content: vec![
                thinking("", Some("sig")),
                thinking(" ", None),
                AssistantContent::ToolCall(crate::ai::types::ToolCall {
                    id: "t1".into(),
                    name: "calc".into(),
                    arguments: serde_json::json!({}),
                    thought_signature: None,
                }),
            ],
            ..AssistantMessage::default()
        };
        let value = convert_assistant(&message, false).unwrap();
        let blocks = value["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 2, "{value}");
        assert_eq!(
            blocks[0],
            serde_json::json!({"type": "thinking", "thinking": "", "signature": "sig"})
        );
        assert_eq!(blocks[1]["type"], "tool_use");
    }

    #[test]
    fn tool_result_images_keep_a_text_block() {
        let result = ToolResultMessage {
            tool_call_id: "t".into(),
            tool_name: "shot".into(),
            content: vec![UserContent::Image(crate::ai::types::ImageContent {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
            })],
            ..ToolResultMessage::default()
        };
        let value = convert_tool_result(&result);
        assert_eq!(value["content"][0]["text"], TOOL_IMAGE_PLACEHOLDER);
        assert_eq!(value["content"][1]["source"]["media_type"], "image/png");
        // A blank text block is not a text block.
        let mut blank = result.clone();
        blank.content.insert(0, UserContent::text(" "));
        assert_eq!(convert_tool_result(&blank), value);
    }
}
