//! Builds the Chat Completions request body from a [`Context`] (pi's `buildParams` and
//! `convertMessages`), as the borrowed shapes of [`super::body`].

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::body::{
    AssistantTurn, CacheControl, CalledFunction, ChatBody, ChatMessage, ChatTool, Content, Effort,
    FunctionTool, IncludeUsage, Part, Reasoning, Switch, TemplateKwargs, ToolCallOut, ToolTurn,
};
use super::compat::{CacheControlFormat, Compat, MaxTokensField, ThinkingFormat};
use crate::ai::model::Model;
use crate::ai::options::CacheRetention;
use crate::ai::options::StreamOptions;
use crate::ai::providers::content::{TOOL_RESULTS_BRIDGE, Turn, turns};
use crate::ai::simple_options::mapped_effort;
use crate::ai::transform::transform_messages_borrowed;
use crate::ai::types::{
    AssistantContent, AssistantMessage, Context, Message, ToolResultMessage, UserContent,
    UserMessageContent,
};

/// Text of the user message that carries images returned by tools.
pub(crate) const TOOL_IMAGES_INTRO: &str = "Attached image(s) from tool result:";

/// Delta fields that carry reasoning, in the order pi checks them.
pub(crate) const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// The context's messages as they are sent to `model` (tool-call ids normalised, foreign
/// reasoning as text, orphan tool calls answered): what [`build_body`] borrows from.
pub(crate) fn transformed_messages<'c>(
    model: &Model,
    context: &'c Context,
) -> Vec<Cow<'c, Message>> {
    let provider = model.provider.as_str();
    let normalize = |id: &str| normalize_tool_call_id(id, provider);
    transform_messages_borrowed(&context.messages, model, Some(&normalize))
}

/// The body for `POST /chat/completions`; `messages` are the context's
/// [`transformed_messages`].
pub(crate) fn build_body<'a>(
    model: &'a Model,
    context: &'a Context,
    messages: &'a [Cow<'a, Message>],
    options: &'a StreamOptions,
    compat: &'a Compat,
) -> ChatBody<'a> {
    let (max_completion_tokens, max_tokens) = match compat.max_tokens_field {
        MaxTokensField::MaxCompletionTokens => (options.max_tokens, None),
        MaxTokensField::MaxTokens => (None, options.max_tokens),
    };
    let has_tools = context
        .tools
        .as_ref()
        .is_some_and(|tools| !tools.is_empty());
    let tools = match &context.tools {
        Some(tools) if has_tools => Some(
            tools
                .iter()
                .map(|tool| ChatTool {
                    kind: "function",
                    function: FunctionTool {
                        name: &tool.name,
                        description: &tool.description,
                        parameters: &tool.parameters,
                        strict: compat.supports_strict_mode.then_some(false),
                    },
                    cache_control: None,
                })
                .collect(),
        ),
        // Anthropic behind LiteLLM rejects tool history without a tools field.
        _ if has_tool_history(&context.messages) => Some(Vec::new()),
        _ => None,
    };
    let retention = CacheRetention::resolve(options.cache_retention);
    let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
    let prompt_cache_key = options.session_id.as_deref().filter(|_| {
        (model.base_url.contains("api.openai.com") && retention != CacheRetention::None) || long
    });
    let mut body = ChatBody {
        model: &model.id,
        messages: convert_messages(model, context, messages, compat),
        stream: true,
        stream_options: compat.supports_usage_in_streaming.then_some(IncludeUsage {
            include_usage: true,
        }),
        store: compat.supports_store.then_some(false),
        max_completion_tokens,
        max_tokens,
        temperature: options.temperature,
        tools,
        // The API refuses a tool choice without tools.
        tool_choice: options
            .tool_choice
            .as_ref()
            .filter(|_| has_tools)
            .map(|choice| choice.chat_completions()),
        response_format: options
            .output_schema
            .as_ref()
            .map(|schema| schema.response_format()),
        reasoning: if model.reasoning {
            reasoning(model, options, compat)
        } else {
            Reasoning::default()
        },
        tool_stream: (compat.zai_tool_stream && has_tools).then_some(true),
        prompt_cache_key,
        prompt_cache_retention: long.then_some("24h"),
        provider: None,
        provider_options: None,
    };
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
        body.provider = Some(&compat.open_router_routing);
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
            let mut options = Map::new();
            options.insert("gateway".into(), Value::Object(gateway));
            body.provider_options = Some(Value::Object(options));
        }
    }
    body
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
fn add_cache_control(body: &mut ChatBody<'_>, long: bool) {
    let marker = CacheControl {
        kind: "ephemeral",
        ttl: long.then_some("1h"),
    };
    if let Some(system) = body.messages.iter_mut().find(|m| {
        matches!(
            m,
            ChatMessage::System { .. } | ChatMessage::Developer { .. }
        )
    }) && let Some(Part::Text { cache_control, .. }) = system
        .content_mut()
        .as_parts()
        .and_then(|parts| parts.last_mut())
    {
        *cache_control = Some(marker);
    }
    if let Some(last) = body.messages.iter_mut().rev().find(|m| {
        matches!(m, ChatMessage::User { .. } | ChatMessage::Assistant(_)) && m.content().has_text()
    }) && let Some(Part::Text { cache_control, .. }) =
        last.content_mut().as_parts().and_then(|parts| {
            parts
                .iter_mut()
                .rev()
                .find(|part| matches!(part, Part::Text { .. }))
        })
    {
        *cache_control = Some(marker);
    }
    if let Some(tool) = body.tools.as_mut().and_then(|tools| tools.last_mut()) {
        tool.cache_control = Some(marker);
    }
}

fn has_tool_history(messages: &[Message]) -> bool {
    messages.iter().any(|message| match message {
        Message::ToolResult(_) => true,
        Message::Assistant(assistant) => assistant.tool_calls().next().is_some(),
        Message::User(_) => false,
    })
}

/// The reasoning fields of a reasoning model's body.
fn reasoning(model: &Model, options: &StreamOptions, compat: &Compat) -> Reasoning {
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
    let mut out = Reasoning::default();
    match compat.thinking_format {
        ThinkingFormat::Zai | ThinkingFormat::Qwen => {
            out.enable_thinking = Some(effort.is_some());
        }
        ThinkingFormat::QwenChatTemplate => {
            out.chat_template_kwargs = Some(TemplateKwargs {
                enable_thinking: effort.is_some(),
                preserve_thinking: true,
            });
        }
        ThinkingFormat::Deepseek => match effort {
            Some(effort) => {
                out.thinking = Some(Switch::Enabled);
                out.reasoning_effort = Some(mapped_effort(model, effort));
            }
            None => out.thinking = Some(Switch::Disabled),
        },
        ThinkingFormat::Openrouter => {
            out.reasoning = match (effort, off_value) {
                (Some(effort), _) => Some(mapped_effort(model, effort)),
                // The model cannot switch reasoning off: send nothing.
                (None, Some(None)) => None,
                (None, Some(Some(value))) => Some(value.clone()),
                (None, None) => Some("none".to_owned()),
            }
            .map(|effort| Effort { effort });
        }
        ThinkingFormat::Openai => {
            if compat.supports_reasoning_effort {
                out.reasoning_effort = match effort {
                    Some(effort) => Some(mapped_effort(model, effort)),
                    None => off_value.cloned().flatten(),
                };
            }
        }
    }
    out
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

/// The `messages` array: the system prompt, then `messages` (the context's, transformed).
fn convert_messages<'a>(
    model: &Model,
    context: &'a Context,
    messages: &'a [Cow<'a, Message>],
    compat: &Compat,
) -> Vec<ChatMessage<'a>> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        let content = Content::Text(Cow::Borrowed(system));
        out.push(if model.reasoning && compat.supports_developer_role {
            ChatMessage::Developer { content }
        } else {
            ChatMessage::System { content }
        });
    }
    let mut turns = turns(messages).peekable();
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
                    out.push(ChatMessage::Assistant(AssistantTurn::text(Content::Text(
                        Cow::Borrowed(TOOL_RESULTS_BRIDGE),
                    ))));
                }
                if !images.is_empty() && model.supports_images() {
                    let mut parts = Vec::with_capacity(images.len() + 1);
                    parts.push(Part::text(TOOL_IMAGES_INTRO));
                    parts.append(&mut images);
                    out.push(ChatMessage::User {
                        content: Content::Parts(parts),
                    });
                }
            }
        }
    }
    out
}

fn convert_user(content: &UserMessageContent) -> Option<ChatMessage<'_>> {
    let content = match content {
        UserMessageContent::Text(text) => Content::Text(Cow::Borrowed(text)),
        UserMessageContent::Blocks(blocks) if blocks.is_empty() => return None,
        UserMessageContent::Blocks(blocks) => Content::Parts(
            blocks
                .iter()
                .map(|block| match block {
                    UserContent::Text(text) => Part::text(&*text.text),
                    UserContent::Image(image) => Part::image(&image.data, &image.mime_type),
                })
                .collect(),
        ),
    };
    Some(ChatMessage::User { content })
}

fn convert_assistant<'a>(
    message: &'a AssistantMessage,
    model: &Model,
    compat: &Compat,
) -> Option<ChatMessage<'a>> {
    let texts: Vec<&str> = message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Text(text) if !text.text.trim().is_empty() => Some(&*text.text),
            _ => None,
        })
        .collect();
    let thinking: Vec<(&str, Option<&str>)> = message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Thinking(t) if !t.thinking.trim().is_empty() => {
                Some((&*t.thinking, t.thinking_signature.as_deref()))
            }
            _ => None,
        })
        .collect();
    let tool_calls: Vec<ToolCallOut<'a>> = message
        .tool_calls()
        .map(|call| ToolCallOut {
            id: &call.id,
            kind: "function",
            function: CalledFunction {
                name: &call.name,
                arguments: serde_json::to_string(&call.arguments).unwrap_or_else(|_| "{}".into()),
            },
        })
        .collect();
    let mut content = match texts.as_slice() {
        [] if compat.requires_assistant_after_tool_result => Content::Text(Cow::Borrowed("")),
        [] => Content::Null,
        [text] => Content::Text(Cow::Borrowed(text)),
        texts => Content::Text(Cow::Owned(texts.concat())),
    };
    let mut reasoning = None;
    if !thinking.is_empty() {
        let reasoning_texts: Vec<&str> = thinking.iter().map(|(text, _)| *text).collect();
        if compat.requires_thinking_as_text {
            let mut parts = Vec::with_capacity(texts.len() + 1);
            parts.push(Part::text(reasoning_texts.join("\n\n")));
            parts.extend(texts.iter().map(|text| Part::text(*text)));
            content = Content::Parts(parts);
        } else if let Some(field) = thinking[0]
            .1
            .and_then(|signature| REASONING_FIELDS.iter().find(|field| **field == signature))
        {
            reasoning = Some((*field, reasoning_texts.join("\n")));
        }
    }
    // As pi: a turn with neither content nor tool calls is left out, reasoning or not (some
    // servers refuse an assistant message without either; a turn cut off while thinking is
    // one).
    if content.is_empty() && tool_calls.is_empty() {
        return None;
    }
    let empty_reasoning_content = model.reasoning
        && compat.requires_reasoning_content_on_assistant_messages
        && !matches!(reasoning, Some(("reasoning_content", _)));
    let reasoning_details = if tool_calls.is_empty() {
        Vec::new()
    } else {
        message
            .tool_calls()
            .filter_map(|call| call.thought_signature.as_deref())
            .filter_map(|signature| serde_json::from_str(signature).ok())
            .collect()
    };
    Some(ChatMessage::Assistant(AssistantTurn {
        reasoning,
        content,
        empty_reasoning_content,
        tool_calls,
        reasoning_details,
    }))
}

fn convert_tool_result<'a>(
    result: &'a ToolResultMessage,
    compat: &Compat,
    images: &mut Vec<Part<'a>>,
) -> ChatMessage<'a> {
    let mut texts = Vec::new();
    // `images` gathers the whole run of results': only this result's own say it has one.
    let images_before = images.len();
    for block in &result.content {
        match block {
            UserContent::Text(text) => texts.push(&*text.text),
            UserContent::Image(image) => images.push(Part::image(&image.data, &image.mime_type)),
        }
    }
    let content = match texts.as_slice() {
        [] if images.len() > images_before => Cow::Borrowed("(see attached image)"),
        [text] => Cow::Borrowed(*text),
        texts => Cow::Owned(texts.join("\n")),
    };
    ChatMessage::Tool(ToolTurn {
        content: Content::Text(content),
        tool_call_id: &result.tool_call_id,
        name: compat
            .requires_tool_result_name
            .then_some(result.tool_name.as_str()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::{StopReason, Tool, ToolCall, UserMessage};
    use serde_json::json;

    /// The body of `context` as it is sent, as a JSON value.
    fn body_json(
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        compat: &Compat,
    ) -> Value {
        let messages = transformed_messages(model, context);
        serde_json::to_value(build_body(model, context, &messages, options, compat)).unwrap()
    }

    #[test]
    fn only_a_result_with_an_image_says_see_attached_image() {
        let mut model = Model::new(
            "openai-completions",
            "openai",
            "gpt-x",
            "https://api.openai.com/v1",
        );
        model.input = vec![
            crate::ai::model::InputModality::Text,
            crate::ai::model::InputModality::Image,
        ];
        let compat = Compat::for_model(&model);
        let call = |id: &str| {
            AssistantContent::ToolCall(ToolCall {
                id: id.into(),
                name: "shot".into(),
                arguments: json!({}),
                thought_signature: None,
            })
        };
        let result = |id: &str, content: Vec<UserContent>| {
            Message::ToolResult(ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "shot".into(),
                content,
                details: None,
                is_error: false,
                timestamp: 0,
                timing: None,
            })
        };
        let context = Context {
            system_prompt: None,
            messages: vec![
                Message::User(UserMessage::text("go")),
                Message::Assistant(AssistantMessage {
                    content: vec![call("c1"), call("c2")],
                    api: "openai-completions".into(),
                    provider: "openai".into(),
                    model: "gpt-x".into(),
                    stop_reason: StopReason::ToolUse,
                    ..AssistantMessage::default()
                }),
                result(
                    "c1",
                    vec![UserContent::Image(crate::ai::types::ImageContent {
                        data: "aGk=".into(),
                        mime_type: "image/png".into(),
                    })],
                ),
                result("c2", Vec::new()),
            ],
            tools: None,
        };
        let body = body_json(&model, &context, &StreamOptions::default(), &compat);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[2]["content"], "(see attached image)", "{body}");
        assert_eq!(messages[3]["content"], "", "{body}");
    }

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
        let body = body_json(&model, &context, &options, &compat);
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

    #[test]
    fn a_turn_with_only_reasoning_is_left_out_as_pi_does() {
        let model = Model::new(
            "openai-completions",
            "openai",
            "gpt-x",
            "https://api.openai.com/v1",
        );
        let compat = Compat::for_model(&model);
        let user = |text: &str| {
            Message::User(UserMessage {
                content: UserMessageContent::Text(text.into()),
                timestamp: 0,
            })
        };
        let context = Context {
            system_prompt: None,
            messages: vec![
                user("hi"),
                // Cut off by the length limit while thinking.
                Message::Assistant(AssistantMessage {
                    content: vec![AssistantContent::Thinking(
                        crate::ai::types::ThinkingContent {
                            thinking: "hmm".into(),
                            thinking_signature: Some("reasoning_content".into()),
                            ..Default::default()
                        },
                    )],
                    api: "openai-completions".into(),
                    provider: "openai".into(),
                    model: "gpt-x".into(),
                    stop_reason: StopReason::Length,
                    ..AssistantMessage::default()
                }),
                user("continue"),
            ],
            tools: None,
        };
        let body = body_json(&model, &context, &StreamOptions::default(), &compat);
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| message["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "user"], "{body}");
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
        body_json(
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

    /// The bytes sent, key order included (a `Value` comparison would not see the order):
    /// replayed reasoning in the field it came in, images as `data:` URLs, tool images after
    /// the bridge message, and the cache markers.
    #[test]
    fn body_bytes_keep_pis_key_order() {
        let mut model = Model::new(
            "openai-completions",
            "openrouter",
            "anthropic/claude",
            "https://openrouter.ai/api/v1",
        );
        model.reasoning = true;
        model.input = vec![
            crate::ai::model::InputModality::Text,
            crate::ai::model::InputModality::Image,
        ];
        let mut compat = Compat::for_model(&model);
        compat.requires_assistant_after_tool_result = true;
        compat.requires_tool_result_name = true;
        compat.requires_reasoning_content_on_assistant_messages = true;
        let image = || {
            UserContent::Image(
                serde_json::from_value(
                    json!({"type": "image", "data": "QUJD", "mimeType": "image/png"}),
                )
                .unwrap(),
            )
        };
        let mut thinking: crate::ai::types::ThinkingContent =
            serde_json::from_value(json!({"type": "thinking", "thinking": "hmm"})).unwrap();
        thinking.thinking_signature = Some("reasoning".into());
        let mut result: ToolResultMessage = serde_json::from_value(json!({
            "role": "toolResult", "toolCallId": "c1", "toolName": "calc",
            "content": [{"type": "text", "text": "2"}], "isError": false, "timestamp": 0}))
        .unwrap();
        result.content.push(image());
        let context = Context {
            system_prompt: Some("sys".into()),
            messages: vec![
                Message::User(UserMessage {
                    content: UserMessageContent::Blocks(vec![UserContent::text("look"), image()]),
                    timestamp: 0,
                }),
                Message::Assistant(AssistantMessage {
                    content: vec![
                        AssistantContent::Thinking(thinking),
                        AssistantContent::Text(crate::ai::types::TextContent::new("ok")),
                        AssistantContent::ToolCall(ToolCall {
                            id: "c1".into(),
                            name: "calc".into(),
                            arguments: json!({"x": 1}),
                            thought_signature: Some(r#"{"type":"reasoning.encrypted"}"#.into()),
                        }),
                    ],
                    api: "openai-completions".into(),
                    provider: "openrouter".into(),
                    model: "anthropic/claude".into(),
                    stop_reason: StopReason::ToolUse,
                    ..AssistantMessage::default()
                }),
                Message::ToolResult(result),
                Message::User(UserMessage {
                    content: UserMessageContent::Text("next".into()),
                    timestamp: 0,
                }),
            ],
            tools: Some(vec![Tool {
                name: "calc".into(),
                description: "math".into(),
                parameters: json!({"type": "object"}),
            }]),
        };
        let options = StreamOptions {
            reasoning_effort: Some("high".into()),
            temperature: Some(0.5),
            ..StreamOptions::default()
        };
        let messages = transformed_messages(&model, &context);
        let body = build_body(&model, &context, &messages, &options, &compat);
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            concat!(
                r#"{"model":"anthropic/claude","messages":["#,
                r#"{"role":"developer","content":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}]},"#,
                r#"{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD"}}]},"#,
                r#"{"role":"assistant","reasoning":"hmm","content":"ok","reasoning_content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"calc","arguments":"{\"x\":1}"}}],"reasoning_details":[{"type":"reasoning.encrypted"}]},"#,
                r#"{"role":"tool","content":"2","tool_call_id":"c1","name":"calc"},"#,
                r#"{"role":"assistant","content":"I have processed the tool results."},"#,
                r#"{"role":"user","content":[{"type":"text","text":"Attached image(s) from tool result:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD"}}]},"#,
                r#"{"role":"user","content":[{"type":"text","text":"next","cache_control":{"type":"ephemeral"}}]}],"#,
                r#""stream":true,"stream_options":{"include_usage":true},"store":false,"temperature":0.5,"#,
                r#""tools":[{"type":"function","function":{"name":"calc","description":"math","parameters":{"type":"object"},"strict":false},"cache_control":{"type":"ephemeral"}}],"#,
                r#""reasoning":{"effort":"high"}}"#
            )
        );
    }
}
