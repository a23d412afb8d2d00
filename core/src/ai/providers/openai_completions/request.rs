//! Builds the Chat Completions request body from a [`Context`] (pi's `buildParams` and
//! `convertMessages`).

use serde_json::{Map, Value, json};

use super::compat::{CacheControlFormat, Compat, MaxTokensField, ThinkingFormat};
use crate::ai::model::Model;
use crate::ai::options::CacheRetention;
use crate::ai::options::StreamOptions;
use crate::ai::providers::content::{Turn, turns};
use crate::ai::simple_options::mapped_effort;
use crate::ai::transform::transform_messages;
use crate::ai::types::{
    AssistantContent, AssistantMessage, Context, Message, ToolResultMessage, UserContent,
    UserMessageContent,
};

/// Text of the assistant message some servers need between tool results and a user message.
pub(crate) const TOOL_RESULTS_BRIDGE: &str = "I have processed the tool results.";
/// Text of the user message that carries images returned by tools.
pub(crate) const TOOL_IMAGES_INTRO: &str = "Attached image(s) from tool result:";

/// Delta fields that carry reasoning, in the order pi checks them.
pub(crate) const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// The JSON body for `POST /chat/completions`.
pub(crate) fn build_body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    compat: &Compat,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, context, compat)),
    );
    body.insert("stream".into(), json!(true));
    if compat.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        body.insert("store".into(), json!(false));
    }
    if let Some(max_tokens) = options.max_tokens {
        let field = match compat.max_tokens_field {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        };
        body.insert(field.into(), json!(max_tokens));
    }
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    match &context.tools {
        Some(tools) if !tools.is_empty() => {
            let tools: Vec<Value> = tools
                .iter()
                .map(|tool| {
                    let mut function = json!({
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    });
                    if compat.supports_strict_mode {
                        function["strict"] = json!(false);
                    }
                    json!({"type": "function", "function": function})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        _ if has_tool_history(&context.messages) => {
            // Anthropic behind LiteLLM rejects tool history without a tools field.
            body.insert("tools".into(), json!([]));
        }
        _ => {}
    }
    let has_tools = context
        .tools
        .as_ref()
        .is_some_and(|tools| !tools.is_empty());
    // The API refuses a tool choice without tools.
    if let Some(choice) = options.tool_choice.as_ref().filter(|_| has_tools) {
        body.insert("tool_choice".into(), choice.chat_completions());
    }
    if let Some(schema) = &options.output_schema {
        body.insert("response_format".into(), schema.response_format());
    }
    if model.reasoning {
        add_reasoning(&mut body, model, options, compat);
    }
    if compat.zai_tool_stream && has_tools {
        body.insert("tool_stream".into(), json!(true));
    }
    let retention = CacheRetention::resolve(options.cache_retention);
    let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
    if let Some(session) = &options.session_id
        && ((model.base_url.contains("api.openai.com") && retention != CacheRetention::None)
            || long)
    {
        body.insert("prompt_cache_key".into(), json!(session));
    }
    if long {
        body.insert("prompt_cache_retention".into(), json!("24h"));
    }
    if compat.cache_control_format == Some(CacheControlFormat::Anthropic)
        && retention != CacheRetention::None
    {
        add_cache_control(&mut body, retention == CacheRetention::Long);
    }
    if model.base_url.contains("openrouter.ai")
        && compat
            .open_router_routing
            .as_object()
            .is_some_and(|o| !o.is_empty())
    {
        body.insert("provider".into(), compat.open_router_routing.clone());
    }
    if model.base_url.contains("ai-gateway.vercel.sh")
        && let Some(routing) = compat.vercel_gateway_routing.as_object()
    {
        let mut gateway = Map::new();
        for key in ["only", "order"] {
            if let Some(value) = routing.get(key) {
                gateway.insert(key.into(), value.clone());
            }
        }
        if !gateway.is_empty() {
            body.insert("providerOptions".into(), json!({"gateway": gateway}));
        }
    }
    Value::Object(body)
}

/// Session-affinity headers some servers use to route a session to a warm cache.
pub(crate) fn session_headers(options: &StreamOptions, compat: &Compat) -> Vec<(String, String)> {
    match &options.session_id {
        Some(session)
            if compat.send_session_affinity_headers
                && CacheRetention::resolve(options.cache_retention) != CacheRetention::None =>
        {
            ["session_id", "x-client-request-id", "x-session-affinity"]
                .iter()
                .map(|name| ((*name).to_owned(), session.clone()))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// Anthropic-style cache markers (OpenRouter `anthropic/*`): the system message, the last tool
/// and the last text part of the last user or assistant message with text.
fn add_cache_control(body: &mut Map<String, Value>, long: bool) {
    let marker = if long {
        json!({"type": "ephemeral", "ttl": "1h"})
    } else {
        json!({"type": "ephemeral"})
    };
    let as_parts = |content: &mut Value| {
        if let Some(text) = content.as_str() {
            *content = json!([{"type": "text", "text": text}]);
        }
    };
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        if let Some(system) = messages
            .iter_mut()
            .find(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
        {
            as_parts(&mut system["content"]);
            if let Some(last) = system["content"].as_array_mut().and_then(|p| p.last_mut()) {
                last["cache_control"] = marker.clone();
            }
        }
        let has_text = |m: &Value| match &m["content"] {
            Value::String(text) => !text.is_empty(),
            Value::Array(parts) => parts.iter().any(|p| p["type"] == "text"),
            _ => false,
        };
        if let Some(last) = messages
            .iter_mut()
            .rev()
            .find(|m| matches!(m["role"].as_str(), Some("user" | "assistant")) && has_text(m))
        {
            as_parts(&mut last["content"]);
            if let Some(part) = last["content"]
                .as_array_mut()
                .and_then(|parts| parts.iter_mut().rev().find(|p| p["type"] == "text"))
            {
                part["cache_control"] = marker.clone();
            }
        }
    }
    if let Some(tool) = body
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .and_then(|tools| tools.last_mut())
    {
        tool["cache_control"] = marker;
    }
}

fn has_tool_history(messages: &[Message]) -> bool {
    messages.iter().any(|message| match message {
        Message::ToolResult(_) => true,
        Message::Assistant(assistant) => assistant.tool_calls().next().is_some(),
        Message::User(_) => false,
    })
}

fn add_reasoning(
    body: &mut Map<String, Value>,
    model: &Model,
    options: &StreamOptions,
    compat: &Compat,
) {
    // `stream` sends what `reasoningEffort` says; `stream_simple` fills it from the clamped
    // reasoning level (pi's split between the two).
    let effort = options
        .reasoning_effort
        .as_deref()
        .filter(|effort| !effort.is_empty());
    let off_value = model
        .thinking_level_map
        .as_ref()
        .and_then(|map| map.get("off"));
    match compat.thinking_format {
        ThinkingFormat::Zai | ThinkingFormat::Qwen => {
            body.insert("enable_thinking".into(), json!(effort.is_some()));
        }
        ThinkingFormat::QwenChatTemplate => {
            body.insert(
                "chat_template_kwargs".into(),
                json!({"enable_thinking": effort.is_some(), "preserve_thinking": true}),
            );
        }
        ThinkingFormat::Deepseek => match effort {
            Some(effort) => {
                body.insert("thinking".into(), json!({"type": "enabled"}));
                body.insert(
                    "reasoning_effort".into(),
                    json!(mapped_effort(model, effort)),
                );
            }
            None => {
                body.insert("thinking".into(), json!({"type": "disabled"}));
            }
        },
        ThinkingFormat::Openrouter => match (effort, off_value) {
            (Some(effort), _) => {
                body.insert(
                    "reasoning".into(),
                    json!({"effort": mapped_effort(model, effort)}),
                );
            }
            // The model cannot switch reasoning off: send nothing.
            (None, Some(None)) => {}
            (None, Some(Some(value))) => {
                body.insert("reasoning".into(), json!({"effort": value}));
            }
            (None, None) => {
                body.insert("reasoning".into(), json!({"effort": "none"}));
            }
        },
        ThinkingFormat::Openai => {
            if !compat.supports_reasoning_effort {
                return;
            }
            let value = match effort {
                Some(effort) => Some(mapped_effort(model, effort)),
                None => off_value.cloned().flatten(),
            };
            if let Some(value) = value {
                body.insert("reasoning_effort".into(), json!(value));
            }
        }
    }
}

/// Normalises a foreign tool-call id for OpenAI-compatible servers (pi's rule: the part before
/// a `|`, sanitised, at most 40 characters; OpenAI itself allows at most 40).
pub(crate) fn normalize_tool_call_id(id: &str, provider: &str) -> String {
    if let Some((head, _)) = id.split_once('|') {
        let clean: String = head
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        return clean;
    }
    if provider == "openai" {
        return id.chars().take(40).collect();
    }
    id.to_owned()
}

/// The `messages` array.
pub(crate) fn convert_messages(model: &Model, context: &Context, compat: &Compat) -> Vec<Value> {
    let mut out = Vec::with_capacity(context.messages.len() + 1);
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        out.push(json!({"role": role, "content": system}));
    }
    let provider = model.provider.clone();
    let normalize = move |id: &str| normalize_tool_call_id(id, &provider);
    let messages = transform_messages(&context.messages, model, Some(&normalize));
    let mut turns = turns(&messages).peekable();
    while let Some(turn) = turns.next() {
        match turn {
            Turn::User(user) => out.extend(convert_user(&user.content)),
            Turn::Assistant(assistant) => out.extend(convert_assistant(assistant, model, compat)),
            Turn::ToolResults(results) => {
                let mut images = Vec::new();
                for result in results {
                    out.push(convert_tool_result(result, compat, &mut images));
                }
                let next_is_user = matches!(turns.peek(), Some(Turn::User(_)));
                if compat.requires_assistant_after_tool_result
                    && (next_is_user || !images.is_empty())
                {
                    out.push(json!({"role": "assistant", "content": TOOL_RESULTS_BRIDGE}));
                }
                if !images.is_empty() && model.supports_images() {
                    let mut parts = vec![json!({"type": "text", "text": TOOL_IMAGES_INTRO})];
                    parts.append(&mut images);
                    out.push(json!({"role": "user", "content": parts}));
                }
            }
        }
    }
    out
}

fn image_part(data: &str, mime_type: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

fn convert_user(content: &UserMessageContent) -> Option<Value> {
    match content {
        UserMessageContent::Text(text) => Some(json!({"role": "user", "content": text})),
        UserMessageContent::Blocks(blocks) => {
            let parts: Vec<Value> = blocks
                .iter()
                .map(|block| match block {
                    UserContent::Text(text) => json!({"type": "text", "text": text.text}),
                    UserContent::Image(image) => image_part(&image.data, &image.mime_type),
                })
                .collect();
            (!parts.is_empty()).then(|| json!({"role": "user", "content": parts}))
        }
    }
}

fn convert_assistant(message: &AssistantMessage, model: &Model, compat: &Compat) -> Option<Value> {
    let texts: Vec<&str> = message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Text(text) if !text.text.trim().is_empty() => {
                Some(text.text.as_str())
            }
            _ => None,
        })
        .collect();
    let thinking: Vec<(&str, Option<&str>)> = message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Thinking(t) if !t.thinking.trim().is_empty() => {
                Some((t.thinking.as_str(), t.thinking_signature.as_deref()))
            }
            _ => None,
        })
        .collect();
    let tool_calls: Vec<Value> = message
        .tool_calls()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": serde_json::to_string(&call.arguments).unwrap_or_else(|_| "{}".into()),
                }
            })
        })
        .collect();
    let mut out = Map::new();
    out.insert("role".into(), json!("assistant"));
    let joined_text = texts.concat();
    let mut content = if joined_text.is_empty() {
        if compat.requires_assistant_after_tool_result {
            json!("")
        } else {
            Value::Null
        }
    } else {
        json!(joined_text)
    };
    if !thinking.is_empty() {
        let reasoning: Vec<&str> = thinking.iter().map(|(text, _)| *text).collect();
        if compat.requires_thinking_as_text {
            let mut parts = vec![json!({"type": "text", "text": reasoning.join("\n\n")})];
            parts.extend(
                texts
                    .iter()
                    .map(|text| json!({"type": "text", "text": text})),
            );
            content = Value::Array(parts);
        } else if let Some(field) = thinking[0]
            .1
            .filter(|signature| REASONING_FIELDS.contains(signature))
        {
            out.insert(field.into(), json!(reasoning.join("\n")));
        }
    }
    let has_content = !matches!(&content, Value::Null) && content != json!("");
    if !has_content && tool_calls.is_empty() && thinking.is_empty() {
        return None;
    }
    out.insert("content".into(), content);
    if model.reasoning
        && compat.requires_reasoning_content_on_assistant_messages
        && !out.contains_key("reasoning_content")
    {
        out.insert("reasoning_content".into(), json!(""));
    }
    if !tool_calls.is_empty() {
        let signatures: Vec<Value> = message
            .tool_calls()
            .filter_map(|call| call.thought_signature.as_deref())
            .filter_map(|signature| serde_json::from_str(signature).ok())
            .collect();
        out.insert("tool_calls".into(), Value::Array(tool_calls));
        if !signatures.is_empty() {
            out.insert("reasoning_details".into(), Value::Array(signatures));
        }
    }
    Some(Value::Object(out))
}

fn convert_tool_result(
    result: &ToolResultMessage,
    compat: &Compat,
    images: &mut Vec<Value>,
) -> Value {
    let mut texts = Vec::new();
    for block in &result.content {
        match block {
            UserContent::Text(text) => texts.push(text.text.as_str()),
            UserContent::Image(image) => images.push(image_part(&image.data, &image.mime_type)),
        }
    }
    let content = if texts.is_empty() && !images.is_empty() {
        "(see attached image)".to_owned()
    } else {
        texts.join("\n")
    };
    let mut out = json!({
        "role": "tool",
        "content": content,
        "tool_call_id": result.tool_call_id,
    });
    if compat.requires_tool_result_name {
        out["name"] = json!(result.tool_name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::{StopReason, Tool, ToolCall, UserMessage};

    #[test]
    fn body_has_pi_shape() {
        let model = Model::new(
            "openai-completions",
            "openai",
            "gpt-x",
            "https://api.openai.com/v1",
        );
        let compat = Compat::for_model(&model);
        let context = Context {
            system_prompt: Some("be brief".into()),
            messages: vec![
                Message::User(UserMessage {
                    content: UserMessageContent::Text("hi".into()),
                    timestamp: 0,
                }),
                Message::Assistant(AssistantMessage {
                    content: vec![AssistantContent::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "calc".into(),
                        arguments: json!({"x": 1}),
                        thought_signature: None,
                    })],
                    api: "openai-completions".into(),
                    provider: "openai".into(),
                    model: "gpt-x".into(),
                    stop_reason: StopReason::ToolUse,
                    ..AssistantMessage::default()
                }),
            ],
            tools: Some(vec![Tool {
                name: "calc".into(),
                description: "math".into(),
                parameters: json!({"type": "object"}),
            }]),
        };
        let options = StreamOptions {
            max_tokens: Some(100),
            ..StreamOptions::default()
        };
        let body = build_body(&model, &context, &options, &compat);
        assert_eq!(
            body,
            json!({
                "model": "gpt-x",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": "{\"x\":1}"}}]},
                    {"role": "tool", "content": "No result provided", "tool_call_id": "c1"}
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "store": false,
                "max_completion_tokens": 100,
                "tools": [{"type": "function", "function": {"name": "calc", "description": "math",
                    "parameters": {"type": "object"}, "strict": false}}]
            })
        );
    }

    fn simple_context(with_tool: bool) -> Context {
        Context {
            system_prompt: Some("sys".into()),
            messages: vec![Message::User(UserMessage {
                content: UserMessageContent::Text("hi".into()),
                timestamp: 0,
            })],
            tools: with_tool.then(|| {
                vec![Tool {
                    name: "t".into(),
                    description: "d".into(),
                    parameters: json!({"type": "object"}),
                }]
            }),
        }
    }

    fn body_for(model: &Model, options: &StreamOptions, with_tool: bool) -> Value {
        build_body(
            model,
            &simple_context(with_tool),
            options,
            &Compat::for_model(model),
        )
    }

    #[test]
    fn prompt_cache_keys_follow_pi() {
        let openai = Model::new(
            "openai-completions",
            "openai",
            "gpt",
            "https://api.openai.com/v1",
        );
        let with_session = StreamOptions {
            session_id: Some("s1".into()),
            ..StreamOptions::default()
        };
        let body = body_for(&openai, &with_session, false);
        assert_eq!(body["prompt_cache_key"], "s1");
        assert!(body.get("prompt_cache_retention").is_none());
        let long = StreamOptions {
            cache_retention: Some(CacheRetention::Long),
            ..with_session.clone()
        };
        assert_eq!(
            body_for(&openai, &long, false)["prompt_cache_retention"],
            "24h"
        );
        let none = StreamOptions {
            cache_retention: Some(CacheRetention::None),
            ..with_session.clone()
        };
        assert!(
            body_for(&openai, &none, false)
                .get("prompt_cache_key")
                .is_none()
        );
        let other = Model::new(
            "openai-completions",
            "groq",
            "m",
            "https://api.groq.com/openai/v1",
        );
        assert!(
            body_for(&other, &with_session, false)
                .get("prompt_cache_key")
                .is_none()
        );
        assert_eq!(body_for(&other, &long, false)["prompt_cache_key"], "s1");
    }

    #[test]
    fn openrouter_anthropic_gets_cache_control_and_reasoning_object() {
        let mut model = Model::new(
            "openai-completions",
            "openrouter",
            "anthropic/claude",
            "https://openrouter.ai/api/v1",
        );
        model.reasoning = true;
        let options = StreamOptions {
            reasoning_effort: Some("high".into()),
            ..StreamOptions::default()
        };
        let body = body_for(&model, &options, true);
        assert_eq!(
            body["messages"][0]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            body["messages"][1]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            body["tools"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(body["reasoning"], json!({"effort": "high"}));
        assert!(body.get("reasoning_effort").is_none());
        let off = body_for(&model, &StreamOptions::default(), false);
        assert_eq!(off["reasoning"], json!({"effort": "none"}));
    }

    #[test]
    fn zai_deepseek_and_affinity_flags() {
        let mut zai = Model::new(
            "openai-completions",
            "zai",
            "glm",
            "https://api.z.ai/api/paas/v4",
        );
        zai.compat = Some(json!({"zaiToolStream": true}));
        zai.reasoning = true;
        let body = body_for(&zai, &StreamOptions::default(), true);
        assert_eq!(body["tool_stream"], true);
        assert_eq!(body["enable_thinking"], false);
        assert!(body.get("store").is_none());
        let mut deepseek = Model::new(
            "openai-completions",
            "deepseek",
            "deepseek-reasoner",
            "https://api.deepseek.com",
        );
        deepseek.reasoning = true;
        let options = StreamOptions {
            reasoning_effort: Some("medium".into()),
            ..StreamOptions::default()
        };
        let body = body_for(&deepseek, &options, false);
        assert_eq!(body["thinking"], json!({"type": "enabled"}));
        assert_eq!(body["reasoning_effort"], "medium");
        let mut local = Model::new(
            "openai-completions",
            "vllm",
            "m",
            "http://127.0.0.1:8000/v1",
        );
        local.compat = Some(json!({"sendSessionAffinityHeaders": true}));
        let options = StreamOptions {
            session_id: Some("abc".into()),
            ..StreamOptions::default()
        };
        let headers = session_headers(&options, &Compat::for_model(&local));
        assert_eq!(headers.len(), 3);
        assert!(headers.iter().all(|(_, v)| v == "abc"));
    }
}
