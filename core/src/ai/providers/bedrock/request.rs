//! Builds the ConverseStream command (pi's `commandInput`: `modelId`, `messages`, `system`,
//! `inferenceConfig`, `toolConfig`, `additionalModelRequestFields`, `requestMetadata`) as the
//! JSON the AWS SDK sends. `modelId` travels in the URL; the rest is the body.

use serde_json::{Map, Value, json};

use super::model_family::{
    is_claude, is_govcloud, supports_adaptive_thinking, supports_native_xhigh_effort,
    supports_prompt_caching,
};
use super::options::BedrockRequestOptions;
use crate::ai::model::Model;
use crate::ai::options::{CacheRetention, StreamOptions, ThinkingBudgets};
use crate::ai::providers::anthropic::request::{
    MIN_THINKING_BUDGET, effort_for, normalize_tool_call_id,
};
use crate::ai::providers::content::{Turn, turns};
use crate::ai::simple_options::{add_thinking_budget, base_options, default_thinking_budget};
use crate::ai::thinking::ThinkingLevel;
use crate::ai::tool_choice::ToolChoice;
use crate::ai::transform::transform_messages_borrowed;
use crate::ai::types::{
    AssistantContent, AssistantMessage, Context, ImageContent, Tool, ToolResultMessage,
    UserContent, UserMessageContent,
};

/// The beta Bedrock's budgeted Claude models need for thinking between tool calls.
pub(crate) const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// Everything the command depends on besides the context.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CommandInputs<'a> {
    /// The target model.
    pub model: &'a Model,
    /// The Bedrock options.
    pub options: &'a BedrockRequestOptions,
    /// `inferenceConfig.maxTokens`.
    pub max_tokens: Option<u64>,
    /// `inferenceConfig.temperature`.
    pub temperature: Option<f64>,
    /// Where cache points go, and their TTL.
    pub cache_retention: CacheRetention,
    /// The configured region (GovCloud drops `thinking.display`).
    pub configured_region: Option<&'a str>,
    /// `AWS_BEDROCK_FORCE_CACHE=1`: cache points for models not recognisable by name.
    pub force_cache: bool,
}

/// What `stream_simple` asks for (pi's `streamSimpleBedrock`; the level is not clamped): the
/// shared defaults, the level as `reasoning`, and for budgeted Claude the thinking budget added
/// on top of the output cap, with the budget left sent for the level. Unlike pi, a model
/// without reasoning ignores the level (pi would still raise its output cap).
pub(crate) fn simple_options(model: &Model, options: &StreamOptions) -> StreamOptions {
    let mut simple = base_options(model, options);
    simple.reasoning = options
        .reasoning
        .and_then(ThinkingLevel::enabled)
        .filter(|_| model.reasoning);
    let Some(level) = simple.reasoning else {
        return simple;
    };
    if !is_claude(model) || supports_adaptive_thinking(model) {
        return simple;
    }
    let budget = add_thinking_budget(&mut simple, model, level);
    let budgets = simple
        .thinking_budgets
        .get_or_insert_with(ThinkingBudgets::default);
    match level {
        ThinkingLevel::Off => {}
        ThinkingLevel::Minimal => budgets.minimal = Some(budget),
        ThinkingLevel::Low => budgets.low = Some(budget),
        ThinkingLevel::Medium => budgets.medium = Some(budget),
        ThinkingLevel::High | ThinkingLevel::Xhigh => budgets.high = Some(budget),
    }
    simple
}

/// Why a conversation cannot be written as a ConverseStream command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RequestError {
    /// An image of a type Bedrock does not take (JPEG, PNG, GIF and WebP only).
    #[error("Unknown image type: {0}")]
    UnknownImageType(String),
}

/// The command as JSON, `modelId` first. Fails on an image type Bedrock does not take.
pub(crate) fn build_command(
    inputs: CommandInputs<'_>,
    context: &Context,
) -> Result<Value, RequestError> {
    let model = inputs.model;
    let cache_point = cache_point(inputs);
    let mut command = Map::new();
    command.insert("modelId".into(), json!(model.id));
    command.insert(
        "messages".into(),
        Value::Array(convert_messages(model, context, cache_point.as_ref())?),
    );
    if let Some(prompt) = context.system_prompt.as_deref().filter(|p| !p.is_empty()) {
        let mut system = vec![json!({"text": prompt})];
        system.extend(cache_point.clone());
        command.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    if let Some(max_tokens) = inputs.max_tokens {
        inference.insert("maxTokens".into(), json!(max_tokens));
    }
    if let Some(temperature) = inputs.temperature {
        inference.insert("temperature".into(), json!(temperature));
    }
    command.insert("inferenceConfig".into(), Value::Object(inference));
    if let Some(tool_config) = tool_config(
        context.tools.as_deref(),
        inputs.options.tool_choice.as_ref(),
    ) {
        command.insert("toolConfig".into(), tool_config);
    }
    if let Some(fields) = additional_model_request_fields(inputs) {
        command.insert("additionalModelRequestFields".into(), fields);
    }
    if let Some(metadata) = &inputs.options.request_metadata {
        command.insert("requestMetadata".into(), metadata.clone());
    }
    Ok(Value::Object(command))
}

fn cache_point(inputs: CommandInputs<'_>) -> Option<Value> {
    if inputs.cache_retention == CacheRetention::None
        || !supports_prompt_caching(inputs.model, inputs.force_cache)
    {
        return None;
    }
    Some(match inputs.cache_retention {
        CacheRetention::Long => json!({"cachePoint": {"type": "default", "ttl": "1h"}}),
        _ => json!({"cachePoint": {"type": "default"}}),
    })
}

/// `toolConfig`: absent without tools or with the choice `"none"`.
pub(crate) fn tool_config(tools: Option<&[Tool]>, choice: Option<&ToolChoice>) -> Option<Value> {
    let tools = tools.filter(|tools| !tools.is_empty())?;
    if choice == Some(&ToolChoice::None) {
        return None;
    }
    let specs: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({"toolSpec": {
                "name": tool.name,
                "description": tool.description,
                "inputSchema": {"json": tool.parameters},
            }})
        })
        .collect();
    let mut config = json!({"tools": specs});
    let choice = match choice {
        Some(ToolChoice::Auto) => Some(json!({"auto": {}})),
        Some(ToolChoice::Required) => Some(json!({"any": {}})),
        Some(ToolChoice::Tool(name)) => Some(json!({"tool": {"name": name}})),
        Some(ToolChoice::None) | None => None,
    };
    if let Some(choice) = choice {
        config["toolChoice"] = choice;
    }
    Some(config)
}

/// Claude's reasoning parameters; none for other models or without a reasoning level.
fn additional_model_request_fields(inputs: CommandInputs<'_>) -> Option<Value> {
    let CommandInputs { model, options, .. } = inputs;
    let level = options.reasoning?.enabled()?;
    if !model.reasoning || !is_claude(model) {
        return None;
    }
    let display = (!is_govcloud(model, inputs.configured_region)).then(|| {
        options
            .thinking_display
            .clone()
            .unwrap_or_else(|| "summarized".to_owned())
    });
    let mut thinking = Map::new();
    let mut fields = Map::new();
    if supports_adaptive_thinking(model) {
        thinking.insert("type".into(), json!("adaptive"));
        if let Some(display) = display {
            thinking.insert("display".into(), json!(display));
        }
        let effort = if level == ThinkingLevel::Xhigh && supports_native_xhigh_effort(model) {
            "xhigh".to_owned()
        } else {
            effort_for(model, level)
        };
        fields.insert("thinking".into(), Value::Object(thinking));
        fields.insert("output_config".into(), json!({"effort": effort}));
    } else {
        // A budget squeezed to nothing would be rejected: Bedrock's minimum is sent instead.
        let budget = match options
            .thinking_budgets
            .and_then(|budgets| budgets.get(level))
            .unwrap_or_else(|| default_thinking_budget(level))
        {
            0 => MIN_THINKING_BUDGET,
            budget => budget,
        };
        thinking.insert("type".into(), json!("enabled"));
        thinking.insert("budget_tokens".into(), json!(budget));
        if let Some(display) = display {
            thinking.insert("display".into(), json!(display));
        }
        fields.insert("thinking".into(), Value::Object(thinking));
        if options.interleaved_thinking.unwrap_or(true) {
            fields.insert("anthropic_beta".into(), json!([INTERLEAVED_THINKING_BETA]));
        }
    }
    Some(Value::Object(fields))
}

/// An image block; Bedrock takes JPEG, PNG, GIF and WebP only. The bytes travel base64-encoded
/// in the JSON, exactly as the caller's data.
fn image_block(image: &ImageContent) -> Result<Value, RequestError> {
    let format = match image.mime_type.as_str() {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => return Err(RequestError::UnknownImageType(other.to_owned())),
    };
    Ok(json!({"image": {"format": format, "source": {"bytes": image.data}}}))
}

fn convert_messages(
    model: &Model,
    context: &Context,
    cache_point: Option<&Value>,
) -> Result<Vec<Value>, RequestError> {
    let messages =
        transform_messages_borrowed(&context.messages, model, Some(&normalize_tool_call_id));
    let signatures = is_claude(model);
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    for turn in turns(&messages) {
        match turn {
            Turn::User(user) => {
                let content = match &user.content {
                    UserMessageContent::Text(text) => vec![json!({"text": text})],
                    UserMessageContent::Blocks(blocks) => {
                        blocks.iter().map(user_block).collect::<Result<_, _>>()?
                    }
                };
                push_joined(&mut out, json!({"role": "user", "content": content}));
            }
            Turn::Assistant(assistant) => {
                if let Some(message) = convert_assistant(assistant, signatures) {
                    push_joined(&mut out, message);
                }
            }
            Turn::ToolResults(results) => {
                // Bedrock wants every result of a turn in one user message.
                let results = results
                    .into_iter()
                    .map(convert_tool_result)
                    .collect::<Result<Vec<_>, _>>()?;
                push_joined(&mut out, json!({"role": "user", "content": results}));
            }
        }
    }
    if let Some(cache_point) = cache_point
        && let Some(last) = out.last_mut()
        && last["role"] == "user"
        && let Some(content) = last["content"].as_array_mut()
    {
        content.push(cache_point.clone());
    }
    Ok(out)
}

/// Appends `message`, joined to the last message when both have its role (their content in
/// order). Converse refuses a conversation whose roles do not alternate ("A conversation must
/// alternate between user and assistant roles"), and a transcript has such runs: a steering
/// message after a turn's tool results, a user message after a failed turn left out, an
/// assistant turn with nothing to send.
fn push_joined(out: &mut Vec<Value>, mut message: Value) {
    if let Some(last) = out.last_mut()
        && last["role"] == message["role"]
        && let (Some(into), Some(from)) = (
            last["content"].as_array_mut(),
            message["content"].as_array_mut(),
        )
    {
        into.append(from);
        return;
    }
    out.push(message);
}

fn user_block(block: &UserContent) -> Result<Value, RequestError> {
    match block {
        UserContent::Text(text) => Ok(json!({"text": text.text})),
        UserContent::Image(image) => image_block(image),
    }
}

/// An assistant turn, or `None` when nothing in it can be sent (Bedrock rejects empty content).
fn convert_assistant(message: &AssistantMessage, signatures: bool) -> Option<Value> {
    let mut blocks = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            AssistantContent::Text(text) => {
                if !text.text.trim().is_empty() {
                    blocks.push(json!({"text": text.text}));
                }
            }
            AssistantContent::ToolCall(call) => blocks.push(json!({"toolUse": {
                "toolUseId": call.id,
                "name": call.name,
                "input": call.arguments,
            }})),
            AssistantContent::Thinking(thinking) => {
                let signature = thinking
                    .thinking_signature
                    .as_deref()
                    .filter(|signature| !signature.trim().is_empty());
                // Empty thinking goes only when Claude signed it (see the Anthropic mapping).
                if thinking.thinking.trim().is_empty() && !(signatures && signature.is_some()) {
                    continue;
                }
                blocks.push(match (signatures, signature) {
                    // Only Claude takes signatures; others reject the field.
                    (false, _) => json!({"reasoningContent": {"reasoningText": {
                        "text": thinking.thinking,
                    }}}),
                    (true, Some(signature)) => json!({"reasoningContent": {"reasoningText": {
                        "text": thinking.thinking,
                        "signature": signature,
                    }}}),
                    // Claude rejects unsigned reasoning (a partial or foreign block): plain text.
                    (true, None) => json!({"text": thinking.thinking}),
                });
            }
        }
    }
    (!blocks.is_empty()).then(|| json!({"role": "assistant", "content": blocks}))
}

fn convert_tool_result(result: &ToolResultMessage) -> Result<Value, RequestError> {
    let content = result
        .content
        .iter()
        .map(user_block)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({"toolResult": {
        "toolUseId": result.tool_call_id,
        "content": content,
        "status": if result.is_error { "error" } else { "success" },
    }}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::{
        Message, StopReason, TextContent, ThinkingContent, ToolCall, UserMessage,
    };

    fn claude(id: &str) -> Model {
        let mut model = Model::new("bedrock-converse-stream", "amazon-bedrock", id, "");
        model.reasoning = true;
        model.max_tokens = 64_000;
        model
    }

    fn inputs<'a>(model: &'a Model, options: &'a BedrockRequestOptions) -> CommandInputs<'a> {
        CommandInputs {
            model,
            options,
            max_tokens: Some(1000),
            temperature: None,
            cache_retention: CacheRetention::Short,
            configured_region: None,
            force_cache: false,
        }
    }

    fn fields(inputs: CommandInputs<'_>) -> Value {
        additional_model_request_fields(inputs).unwrap_or(Value::Null)
    }

    #[test]
    fn adaptive_claude_gets_an_effort() {
        let model = claude("us.anthropic.claude-opus-4-6-v1");
        let options = BedrockRequestOptions {
            reasoning: Some(ThinkingLevel::Minimal),
            ..BedrockRequestOptions::default()
        };
        assert_eq!(
            fields(inputs(&model, &options)),
            json!({"thinking": {"type": "adaptive", "display": "summarized"},
                   "output_config": {"effort": "low"}})
        );
        let mut model = claude("anthropic.claude-opus-4-7");
        let options = BedrockRequestOptions {
            reasoning: Some(ThinkingLevel::Xhigh),
            thinking_display: Some("omitted".into()),
            ..BedrockRequestOptions::default()
        };
        assert_eq!(
            fields(inputs(&model, &options)),
            json!({"thinking": {"type": "adaptive", "display": "omitted"},
                   "output_config": {"effort": "xhigh"}})
        );
        // Opus 4.6 maps xhigh through its thinkingLevelMap.
        model.id = "anthropic.claude-opus-4-6-v1".into();
        model.name = "Claude Opus 4.6".into();
        model.thinking_level_map = Some([("xhigh".to_owned(), Some("max".to_owned()))].into());
        assert_eq!(
            fields(inputs(&model, &options))["output_config"]["effort"],
            "max"
        );
    }

    #[test]
    fn budgeted_claude_gets_a_budget_and_the_beta() {
        let model = claude("anthropic.claude-sonnet-4-5-20250929-v1:0");
        let mut options = BedrockRequestOptions {
            reasoning: Some(ThinkingLevel::Medium),
            ..BedrockRequestOptions::default()
        };
        assert_eq!(
            fields(inputs(&model, &options)),
            json!({"thinking": {"type": "enabled", "budget_tokens": 8192, "display": "summarized"},
                   "anthropic_beta": [INTERLEAVED_THINKING_BETA]})
        );
        options.interleaved_thinking = Some(false);
        options.thinking_budgets = Some(ThinkingBudgets {
            medium: Some(3000),
            ..ThinkingBudgets::default()
        });
        let mut gov = inputs(&model, &options);
        gov.configured_region = Some("us-gov-east-1");
        assert_eq!(
            fields(gov),
            json!({"thinking": {"type": "enabled", "budget_tokens": 3000}})
        );
    }

    #[test]
    fn non_claude_models_get_no_reasoning_fields() {
        let mut model = claude("deepseek.r1-v1:0");
        model.name = "DeepSeek-R1".into();
        let options = BedrockRequestOptions {
            reasoning: Some(ThinkingLevel::High),
            ..BedrockRequestOptions::default()
        };
        assert_eq!(
            additional_model_request_fields(inputs(&model, &options)),
            None
        );
        // Nor does Claude without a level, or a non-reasoning Claude.
        let claude_model = claude("anthropic.claude-sonnet-4-5-20250929-v1:0");
        let none = BedrockRequestOptions::default();
        assert_eq!(
            additional_model_request_fields(inputs(&claude_model, &none)),
            None
        );
    }

    #[test]
    fn simple_mapping_adjusts_budgeted_claude_only() {
        let model = claude("anthropic.claude-sonnet-4-5-20250929-v1:0");
        let asked = |reasoning, max_tokens| StreamOptions {
            reasoning: Some(reasoning),
            max_tokens,
            ..StreamOptions::default()
        };
        // No cap: min(64000, 32000) + 16384 for xhigh (= high).
        let simple = simple_options(&model, &asked(ThinkingLevel::Xhigh, None));
        assert_eq!(simple.max_tokens, Some(48_384));
        assert_eq!(simple.reasoning, Some(ThinkingLevel::Xhigh));
        assert_eq!(simple.thinking_budgets.unwrap().high, Some(16_384));
        // Capped by a small model limit: the budget shrinks to leave 1024 tokens of output.
        let mut small = model.clone();
        small.max_tokens = 8192;
        let simple = simple_options(&small, &asked(ThinkingLevel::High, Some(4096)));
        assert_eq!(simple.max_tokens, Some(8192));
        assert_eq!(simple.thinking_budgets.unwrap().high, Some(7168));
        // Adaptive Claude and other models keep the cap; no level means no reasoning.
        let adaptive = claude("anthropic.claude-sonnet-4-6");
        let simple = simple_options(&adaptive, &asked(ThinkingLevel::High, Some(1000)));
        assert_eq!(
            (simple.max_tokens, simple.thinking_budgets),
            (Some(1000), None)
        );
        let plain = simple_options(&model, &StreamOptions::default());
        assert_eq!((plain.max_tokens, plain.reasoning), (Some(32_000), None));
        let mut no_reasoning = model.clone();
        no_reasoning.reasoning = false;
        let simple = simple_options(&no_reasoning, &asked(ThinkingLevel::High, Some(1000)));
        assert_eq!((simple.max_tokens, simple.reasoning), (Some(1000), None));
    }

    #[test]
    fn tool_config_and_choices() {
        let tools = [Tool {
            name: "calc".into(),
            description: "Adds".into(),
            parameters: json!({"type": "object"}),
        }];
        let spec = json!([{"toolSpec": {"name": "calc", "description": "Adds",
                                        "inputSchema": {"json": {"type": "object"}}}}]);
        assert_eq!(
            tool_config(Some(&tools), None),
            Some(json!({"tools": spec}))
        );
        assert_eq!(
            tool_config(Some(&tools), Some(&ToolChoice::Required)),
            Some(json!({"tools": spec, "toolChoice": {"any": {}}}))
        );
        assert_eq!(
            tool_config(Some(&tools), Some(&ToolChoice::Tool("calc".into()))),
            Some(json!({"tools": spec, "toolChoice": {"tool": {"name": "calc"}}}))
        );
        assert_eq!(tool_config(Some(&tools), Some(&ToolChoice::None)), None);
        assert_eq!(tool_config(Some(&[]), None), None);
    }

    #[test]
    fn signed_thinking_without_text_goes_to_claude_only() {
        let message = AssistantMessage {
            content: vec![
                AssistantContent::Thinking(ThinkingContent {
                    thinking: "".into(),
                    thinking_signature: Some("sig".into()),
                    redacted: None,
                }),
                AssistantContent::Text(TextContent::new("ok")),
            ],
            ..AssistantMessage::default()
        };
        let claude = convert_assistant(&message, true).unwrap();
        assert_eq!(
            claude["content"][0],
            json!({"reasoningContent": {"reasoningText": {"text": "", "signature": "sig"}}})
        );
        let other = convert_assistant(&message, false).unwrap();
        assert_eq!(other["content"], json!([{"text": "ok"}]));
    }

    #[test]
    fn messages_merge_results_and_cache_the_last_user_turn() {
        let model = claude("anthropic.claude-sonnet-4-5-20250929-v1:0");
        let assistant = AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            stop_reason: StopReason::ToolUse,
            content: vec![
                AssistantContent::Thinking(ThinkingContent {
                    thinking: "signed".into(),
                    thinking_signature: Some("sig".into()),
                    redacted: None,
                }),
                AssistantContent::Thinking(ThinkingContent {
                    thinking: "unsigned".into(),
                    thinking_signature: Some(String::new()),
                    redacted: None,
                }),
                AssistantContent::Text(TextContent::new("  ")),
                AssistantContent::ToolCall(ToolCall {
                    id: "t1".into(),
                    name: "calc".into(),
                    arguments: json!({"a": 1}),
                    thought_signature: None,
                }),
                AssistantContent::ToolCall(ToolCall {
                    id: "t2".into(),
                    name: "calc".into(),
                    arguments: json!({}),
                    thought_signature: None,
                }),
            ],
            ..AssistantMessage::default()
        };
        let result = |id: &str, is_error| ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "calc".into(),
            content: vec![UserContent::text("2")],
            is_error,
            ..ToolResultMessage::default()
        };
        let context = Context {
            system_prompt: None,
            messages: vec![
                UserMessage::text("hi").into(),
                assistant.into(),
                result("t1", false).into(),
                result("t2", true).into(),
            ],
            tools: None,
        };
        let options = BedrockRequestOptions::default();
        let command = build_command(inputs(&model, &options), &context).unwrap();
        assert_eq!(
            command["messages"],
            json!([
                {"role": "user", "content": [{"text": "hi"}]},
                {"role": "assistant", "content": [
                    {"reasoningContent": {"reasoningText": {"text": "signed", "signature": "sig"}}},
                    {"text": "unsigned"},
                    {"toolUse": {"toolUseId": "t1", "name": "calc", "input": {"a": 1}}},
                    {"toolUse": {"toolUseId": "t2", "name": "calc", "input": {}}},
                ]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "t1", "content": [{"text": "2"}], "status": "success"}},
                    {"toolResult": {"toolUseId": "t2", "content": [{"text": "2"}], "status": "error"}},
                    {"cachePoint": {"type": "default"}},
                ]},
            ])
        );
        assert_eq!(command["inferenceConfig"], json!({"maxTokens": 1000}));
        assert!(command.get("system").is_none() && command.get("toolConfig").is_none());
    }

    #[test]
    fn unsupported_images_fail_the_request() {
        let model = claude("anthropic.claude-sonnet-4-5-20250929-v1:0");
        let mut model = model;
        model.input.push(crate::ai::model::InputModality::Image);
        let context = Context {
            messages: vec![Message::User(UserMessage {
                content: UserMessageContent::Blocks(vec![UserContent::Image(ImageContent {
                    data: "AAAA".into(),
                    mime_type: "image/bmp".into(),
                })]),
                timestamp: 0,
            })],
            ..Context::default()
        };
        let options = BedrockRequestOptions::default();
        assert_eq!(
            build_command(inputs(&model, &options), &context)
                .unwrap_err()
                .to_string(),
            "Unknown image type: image/bmp"
        );
    }
}
