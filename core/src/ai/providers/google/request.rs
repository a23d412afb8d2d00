//! Builds the `streamGenerateContent` request body from a [`Context`] (pi's `buildParams` in
//! `google.ts` and `convertMessages` / `convertTools` in `google-shared.ts`).
//!
//! The body is the REST shape the `@google/genai` SDK sends for pi's params: `contents`,
//! `systemInstruction`, `tools` and `toolConfig` at the top level, sampling and thinking
//! settings under `generationConfig`.

use serde_json::{Map, Value, json};

use crate::ai::catalog::clamp_thinking_level;
use crate::ai::model::Model;
use crate::ai::options::{GoogleThinking, StreamOptions};
use crate::ai::providers::content::joined_text;
use crate::ai::thinking::ThinkingLevel;
use crate::ai::tool_choice::ToolChoice;
use crate::ai::transform::transform_messages_borrowed;
use crate::ai::types::{
    AssistantContent, AssistantMessage, Context, Message, Tool, ToolResultMessage, UserContent,
    UserMessageContent,
};

/// The text of the user turn that carries tool-result images for models that cannot take them
/// inside `functionResponse.parts` (Gemini before 3).
pub(crate) const TOOL_IMAGE_TURN_INTRO: &str = "Tool result image:";

/// The `functionResponse` value of a tool result that has images but no text.
pub(crate) const SEE_ATTACHED_IMAGE: &str = "(see attached image)";

/// JSON-Schema keys the OpenAPI-style `parameters` field rejects (pi's
/// `JSON_SCHEMA_META_DECLARATIONS`).
pub(crate) const SCHEMA_META_KEYS: [&str; 8] = [
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "definitions",
];

/// Which of pi's two Gemini providers a request follows. They send the same body, except for
/// how thinking is switched off and how a reasoning level becomes a budget or level (pi's
/// Vertex provider has no Gemma 4 case and no Gemini 2.5 Flash-Lite budget row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// `google-generative-ai` (pi's `google.ts`).
    Gemini,
    /// `google-vertex` (pi's `google-vertex.ts`).
    Vertex,
}

impl Variant {
    /// Gemma 4 gets thinking levels (Gemini API only).
    fn gemma4_levels(self, id: &str) -> bool {
        self == Variant::Gemini && is_gemma4(id)
    }
}

/// The JSON body for `POST …/models/{id}:streamGenerateContent?alt=sse`.
pub(crate) fn build_body(model: &Model, context: &Context, options: &StreamOptions) -> Value {
    build_body_for(Variant::Gemini, model, context, options)
}

/// [`build_body`] for either provider.
pub(crate) fn build_body_for(
    variant: Variant,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Value {
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_messages(model, context)),
    );
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        // The SDK turns pi's string `systemInstruction` into a user-role content.
        body.insert(
            "systemInstruction".into(),
            json!({"role": "user", "parts": [{"text": system}]}),
        );
    }
    let tools = context.tools.as_deref().unwrap_or_default();
    if let Some(declarations) = convert_tools(tools, false) {
        body.insert("tools".into(), declarations);
        if let Some(choice) = &options.tool_choice {
            body.insert("toolConfig".into(), tool_config(choice));
        }
    }
    let mut generation = Map::new();
    if let Some(temperature) = options.temperature {
        generation.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = options.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max_tokens));
    }
    if let Some(thinking) = thinking_config(variant, model, options.thinking.as_ref()) {
        generation.insert("thinkingConfig".into(), thinking);
    }
    if let Some(schema) = &options.output_schema {
        generation.insert("responseMimeType".into(), json!("application/json"));
        generation.insert("responseJsonSchema".into(), schema.schema.clone());
    }
    // pi's SDK call always carries a config, even an empty one.
    body.insert("generationConfig".into(), Value::Object(generation));
    Value::Object(body)
}

/// Gemini's `toolConfig` for a tool choice: `functionCallingConfig.mode` `AUTO`, `NONE` or
/// `ANY` (as pi maps `"auto"`, `"none"`, `"any"`), and a named tool as `ANY` restricted to it
/// with `allowedFunctionNames`.
pub(crate) fn tool_config(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"functionCallingConfig": {"mode": "AUTO"}}),
        ToolChoice::None => json!({"functionCallingConfig": {"mode": "NONE"}}),
        ToolChoice::Required => json!({"functionCallingConfig": {"mode": "ANY"}}),
        ToolChoice::Tool(name) => {
            json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}})
        }
    }
}

/// `tools: [{functionDeclarations: [...]}]`, or `None` for no tools (pi's `convertTools`).
///
/// By default the schema goes verbatim into `parametersJsonSchema`, which takes full JSON
/// Schema. With `use_parameters`, it goes into the older OpenAPI-style `parameters` field with
/// the JSON-Schema meta keys ([`SCHEMA_META_KEYS`]) removed at every depth (`$ref` is kept).
pub(crate) fn convert_tools(tools: &[Tool], use_parameters: bool) -> Option<Value> {
    if tools.is_empty() {
        return None;
    }
    let declarations: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let mut declaration = json!({"name": tool.name, "description": tool.description});
            if use_parameters {
                declaration["parameters"] = strip_schema_meta(&tool.parameters);
            } else {
                declaration["parametersJsonSchema"] = tool.parameters.clone();
            }
            declaration
        })
        .collect();
    Some(json!([{"functionDeclarations": declarations}]))
}

/// A copy of `schema` without [`SCHEMA_META_KEYS`] in any object (arrays are kept as they are,
/// as pi does).
pub(crate) fn strip_schema_meta(schema: &Value) -> Value {
    match schema {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(key, _)| !SCHEMA_META_KEYS.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), strip_schema_meta(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether `id` names Gemini 3 Pro (any 3.x).
pub(crate) fn is_gemini3_pro(id: &str) -> bool {
    gemini3_variant(id, "pro")
}

/// Whether `id` names Gemini 3 Flash or Flash-Lite (any 3.x).
pub(crate) fn is_gemini3_flash(id: &str) -> bool {
    gemini3_variant(id, "flash")
}

/// Whether `id` names a Gemma 4 model.
pub(crate) fn is_gemma4(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    id.contains("gemma4") || id.contains("gemma-4")
}

/// pi's `/gemini-3(?:\.\d+)?-<variant>/` on the lowercased id.
fn gemini3_variant(id: &str, variant: &str) -> bool {
    let id = id.to_ascii_lowercase();
    id.match_indices("gemini-3").any(|(at, needle)| {
        let mut rest = &id[at + needle.len()..];
        if let Some(after_dot) = rest.strip_prefix('.') {
            let digits = after_dot.len()
                - after_dot
                    .trim_start_matches(|c: char| c.is_ascii_digit())
                    .len();
            if digits == 0 {
                return false;
            }
            rest = &after_dot[digits..];
        }
        rest.strip_prefix('-')
            .is_some_and(|tail| tail.starts_with(variant))
    })
}

/// The Gemini major version of a `gemini-N…` or `gemini-live-N…` id.
pub(crate) fn gemini_major_version(id: &str) -> Option<u32> {
    let id = id.to_ascii_lowercase();
    let rest = id.strip_prefix("gemini-")?;
    let rest = rest.strip_prefix("live-").unwrap_or(rest);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Whether images in a tool result can be nested in `functionResponse.parts`: Gemini 3 and
/// later, and every model that is not Gemini.
pub(crate) fn supports_multimodal_function_response(id: &str) -> bool {
    gemini_major_version(id).is_none_or(|major| major >= 3)
}

/// Models served through Google APIs that need explicit ids on function calls and responses.
pub(crate) fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-") || id.starts_with("gpt-oss-")
}

/// pi's tool-call id rule for Google targets: ids are rewritten (non-`[A-Za-z0-9_-]` to `_`,
/// at most 64 characters) only for models that need ids at all.
pub(crate) fn normalize_tool_call_id(id: &str, model_id: &str) -> String {
    if !requires_tool_call_id(model_id) {
        return id.to_owned();
    }
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// Thought signatures are bytes on the wire, so only base64 is sent back (pi's
/// `isValidThoughtSignature`).
pub(crate) fn is_valid_thought_signature(signature: &str) -> bool {
    !signature.is_empty() && signature.len().is_multiple_of(4) && {
        let body = signature.trim_end_matches('=');
        signature.len() - body.len() <= 2
            && !body.is_empty()
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
    }
}

/// The `thinkingConfig` for a request (pi's `buildParams`), from the options' `thinking`:
///
/// - `enabled: true` on a reasoning model: `includeThoughts` with the given `level` or
///   `budgetTokens`;
/// - `enabled: false` on a reasoning model turns thinking off: `thinkingBudget: 0` on Gemini
///   2.x; the Gemini 3 and Gemma 4 models cannot turn it off and get their lowest
///   `thinkingLevel` (`LOW` for 3 Pro, `MINIMAL` for 3 Flash and Gemma 4) without
///   `includeThoughts`;
/// - no `thinking` (plain `stream`), or a model that does not reason: nothing, so the
///   provider's default applies (Gemini 2.5 thinks by default).
pub(crate) fn thinking_config(
    variant: Variant,
    model: &Model,
    thinking: Option<&GoogleThinking>,
) -> Option<Value> {
    let thinking = thinking.filter(|_| model.reasoning)?;
    if !thinking.enabled {
        return Some(disabled_thinking_config(variant, &model.id));
    }
    let mut config = Map::new();
    config.insert("includeThoughts".into(), json!(true));
    if let Some(level) = &thinking.level {
        config.insert("thinkingLevel".into(), json!(level));
    } else if let Some(budget) = thinking.budget_tokens {
        config.insert("thinkingBudget".into(), json!(budget));
    }
    Some(Value::Object(config))
}

/// pi's `streamSimpleGoogle`: the reasoning level becomes `thinking` (see [`simple_thinking`]).
pub(crate) fn simple_options(model: &Model, options: &StreamOptions) -> StreamOptions {
    simple_options_for(Variant::Gemini, model, options)
}

/// [`simple_options`] for either provider (pi's `streamSimpleGoogle` /
/// `streamSimpleGoogleVertex`).
pub(crate) fn simple_options_for(
    variant: Variant,
    model: &Model,
    options: &StreamOptions,
) -> StreamOptions {
    let mut simple = crate::ai::simple_options::base_options(model, options);
    simple.thinking = Some(simple_thinking(
        variant,
        model,
        options.reasoning,
        options.thinking_budgets.as_ref(),
    ));
    simple
}

/// What `stream_simple` asks for (pi's `streamSimpleGoogle`): no level turns thinking off; a
/// level is clamped to what the model supports (`off` counts as `high`), then sent as a
/// `thinkingLevel` (Gemini 3, Gemma 4) or as a token budget (custom budgets win over the
/// per-model table).
pub(crate) fn simple_thinking(
    variant: Variant,
    model: &Model,
    reasoning: Option<ThinkingLevel>,
    budgets: Option<&crate::ai::options::ThinkingBudgets>,
) -> GoogleThinking {
    let Some(level) = reasoning.and_then(ThinkingLevel::enabled) else {
        return GoogleThinking {
            enabled: false,
            ..GoogleThinking::default()
        };
    };
    let effort = match clamp_thinking_level(model, level) {
        ThinkingLevel::Off => ThinkingLevel::High,
        other => other,
    };
    let id = model.id.as_str();
    if is_gemini3_pro(id) || is_gemini3_flash(id) || variant.gemma4_levels(id) {
        GoogleThinking {
            enabled: true,
            level: Some(thinking_level(variant, effort, id).to_owned()),
            budget_tokens: None,
        }
    } else {
        let budget = budgets
            .and_then(|budgets| budgets.get(effort))
            .and_then(|b| i64::try_from(b).ok())
            .unwrap_or_else(|| thinking_budget(variant, effort, id));
        GoogleThinking {
            enabled: true,
            level: None,
            budget_tokens: Some(budget),
        }
    }
}

fn disabled_thinking_config(variant: Variant, id: &str) -> Value {
    if is_gemini3_pro(id) {
        json!({"thinkingLevel": "LOW"})
    } else if is_gemini3_flash(id) || variant.gemma4_levels(id) {
        json!({"thinkingLevel": "MINIMAL"})
    } else {
        json!({"thinkingBudget": 0})
    }
}

/// pi's `getThinkingLevel` (`xhigh` counts as `high`, and so does `off`, as in
/// [`simple_thinking`]).
fn thinking_level(variant: Variant, effort: ThinkingLevel, id: &str) -> &'static str {
    use ThinkingLevel::{High, Low, Medium, Minimal, Off, Xhigh};
    if is_gemini3_pro(id) {
        return match effort {
            Minimal | Low => "LOW",
            Medium | High | Xhigh | Off => "HIGH",
        };
    }
    if variant.gemma4_levels(id) {
        return match effort {
            Minimal | Low => "MINIMAL",
            Medium | High | Xhigh | Off => "HIGH",
        };
    }
    match effort {
        Minimal => "MINIMAL",
        Low => "LOW",
        Medium => "MEDIUM",
        High | Xhigh | Off => "HIGH",
    }
}

/// pi's `getGoogleBudget` table (`xhigh` counts as `high`; `-1` lets the model decide).
/// Vertex has no 2.5 Flash-Lite row: those models take the 2.5 Flash budgets.
pub(crate) fn thinking_budget(variant: Variant, effort: ThinkingLevel, id: &str) -> i64 {
    let table: [i64; 4] = if id.contains("2.5-pro") {
        [128, 2048, 8192, 32768]
    } else if variant == Variant::Gemini && id.contains("2.5-flash-lite") {
        [512, 2048, 8192, 24576]
    } else if id.contains("2.5-flash") {
        [128, 2048, 8192, 24576]
    } else {
        return -1;
    };
    match effort {
        ThinkingLevel::Minimal => table[0],
        ThinkingLevel::Low => table[1],
        ThinkingLevel::Medium => table[2],
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Off => table[3],
    }
}

/// The `contents` array (pi's `convertMessages`).
pub(crate) fn convert_messages(model: &Model, context: &Context) -> Vec<Value> {
    let model_id = model.id.clone();
    let normalize = move |id: &str| normalize_tool_call_id(id, &model_id);
    let messages = transform_messages_borrowed(&context.messages, model, Some(&normalize));
    let mut contents: Vec<Value> = Vec::with_capacity(messages.len());
    for message in &messages {
        match &**message {
            Message::User(user) => {
                let parts: Vec<Value> = match &user.content {
                    UserMessageContent::Text(text) => vec![json!({"text": text})],
                    UserMessageContent::Blocks(blocks) => blocks.iter().map(user_part).collect(),
                };
                if !parts.is_empty() {
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
            Message::Assistant(assistant) => {
                let parts = assistant_parts(assistant, model);
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            Message::ToolResult(result) => push_tool_result(&mut contents, result, model),
        }
    }
    contents
}

fn user_part(block: &UserContent) -> Value {
    match block {
        UserContent::Text(text) => json!({"text": text.text}),
        UserContent::Image(image) => {
            json!({"inlineData": {"mimeType": image.mime_type, "data": image.data}})
        }
    }
}

/// The parts of a `model` turn. Signatures are replayed only to the provider and model that
/// made them, and only when they are base64; thinking from the same model goes back as
/// `thought: true` parts (another model's thinking arrives here already turned into text).
fn assistant_parts(message: &AssistantMessage, model: &Model) -> Vec<Value> {
    let same_model = message.provider == model.provider && message.model == model.id;
    let signature = |signature: Option<&String>| -> Option<String> {
        signature
            .filter(|s| same_model && is_valid_thought_signature(s))
            .cloned()
    };
    let mut parts = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            AssistantContent::Text(text) => {
                if text.text.trim().is_empty() {
                    continue;
                }
                let mut part = json!({"text": text.text});
                if let Some(signature) = signature(text.text_signature.as_ref()) {
                    part["thoughtSignature"] = json!(signature);
                }
                parts.push(part);
            }
            AssistantContent::Thinking(thinking) => {
                if thinking.thinking.trim().is_empty() {
                    continue;
                }
                if same_model {
                    let mut part = json!({"thought": true, "text": thinking.thinking});
                    if let Some(signature) = signature(thinking.thinking_signature.as_ref()) {
                        part["thoughtSignature"] = json!(signature);
                    }
                    parts.push(part);
                } else {
                    parts.push(json!({"text": thinking.thinking}));
                }
            }
            AssistantContent::ToolCall(call) => {
                let arguments = if call.arguments.is_null() {
                    json!({})
                } else {
                    call.arguments.clone()
                };
                let mut function_call = json!({"name": call.name, "args": arguments});
                if requires_tool_call_id(&model.id) {
                    function_call["id"] = json!(call.id);
                }
                let mut part = json!({"functionCall": function_call});
                // No signature is invented for an unsigned call: pi 0.73.1 pins that no
                // `skip_thought_signature_validator` sentinel is sent.
                if let Some(signature) = signature(call.thought_signature.as_ref()) {
                    part["thoughtSignature"] = json!(signature);
                }
                parts.push(part);
            }
        }
    }
    parts
}

/// Appends a tool result: a `functionResponse` part, merged into the previous user turn when
/// that turn already holds function responses; images go into `functionResponse.parts` for
/// models that accept them there, else into a separate user turn after it.
fn push_tool_result(contents: &mut Vec<Value>, result: &ToolResultMessage, model: &Model) {
    let text = joined_text(&result.content);
    let images: Vec<Value> = if model.supports_images() {
        result
            .content
            .iter()
            .filter(|block| matches!(block, UserContent::Image(_)))
            .map(user_part)
            .collect()
    } else {
        Vec::new()
    };
    let value = if !text.is_empty() {
        text
    } else if !images.is_empty() {
        SEE_ATTACHED_IMAGE.to_owned()
    } else {
        String::new()
    };
    let nested = supports_multimodal_function_response(&model.id);
    let mut response = json!({
        "name": result.tool_name,
        "response": if result.is_error { json!({"error": value}) } else { json!({"output": value}) },
    });
    if !images.is_empty() && nested {
        response["parts"] = Value::Array(images.clone());
    }
    if requires_tool_call_id(&model.id) {
        response["id"] = json!(result.tool_call_id);
    }
    let part = json!({"functionResponse": response});
    // The results of one turn's calls go in one user turn (Gemini refuses a call turn whose
    // responses are split), so an image turn that an earlier result of the batch added stays
    // after it, and takes this result's images too (pi splits them).
    let count = contents.len();
    let (responses, image_turn) = match contents.as_slice() {
        [.., last] if holds_function_responses(last) => (Some(count - 1), None),
        [.., before, last] if holds_function_responses(before) && is_tool_image_turn(last) => {
            (Some(count - 2), Some(count - 1))
        }
        _ => (None, None),
    };
    match responses.and_then(|at| contents[at]["parts"].as_array_mut()) {
        Some(parts) => parts.push(part),
        None => contents.push(json!({"role": "user", "parts": [part]})),
    }
    if !images.is_empty() && !nested {
        match image_turn.and_then(|at| contents[at]["parts"].as_array_mut()) {
            Some(parts) => parts.extend(images),
            None => {
                let mut parts = vec![json!({"text": TOOL_IMAGE_TURN_INTRO})];
                parts.extend(images);
                contents.push(json!({"role": "user", "parts": parts}));
            }
        }
    }
}

/// A user turn with function responses in it.
fn holds_function_responses(turn: &Value) -> bool {
    turn.get("role").and_then(Value::as_str) == Some("user")
        && turn["parts"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()))
}

/// The user turn that carries tool results' images for models that cannot nest them.
fn is_tool_image_turn(turn: &Value) -> bool {
    turn.get("role").and_then(Value::as_str) == Some("user")
        && turn["parts"][0]["text"].as_str() == Some(TOOL_IMAGE_TURN_INTRO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::model::InputModality;
    use crate::ai::types::{ImageContent, StopReason, ThinkingContent, ToolCall, UserMessage};

    fn gemini(id: &str) -> Model {
        let mut model = Model::new(super::super::API, "google", id, "");
        model.input = vec![InputModality::Text, InputModality::Image];
        model.reasoning = true;
        model
    }

    fn assistant_from(model: &Model, content: Vec<AssistantContent>) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        })
    }

    fn call(id: &str, signature: Option<&str>) -> AssistantContent {
        AssistantContent::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({"path": "a.txt"}),
            thought_signature: signature.map(str::to_owned),
        })
    }

    fn image_result(id: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![UserContent::Image(ImageContent {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            })],
            ..ToolResultMessage::default()
        })
    }

    fn context(messages: Vec<Message>) -> Context {
        Context {
            messages,
            ..Context::default()
        }
    }

    #[test]
    fn model_families() {
        assert!(is_gemini3_pro("gemini-3-pro-preview"));
        assert!(is_gemini3_pro("gemini-3.1-pro-preview-customtools"));
        assert!(is_gemini3_flash("gemini-3-flash-preview"));
        assert!(is_gemini3_flash("gemini-3.1-flash-lite-preview"));
        assert!(!is_gemini3_pro("gemini-2.5-pro"));
        assert!(!is_gemini3_flash("gemini-30-flash"));
        assert!(is_gemma4("gemma-4-31b-it"));
        assert!(!is_gemma4("gemma-3-27b-it"));
        assert_eq!(gemini_major_version("gemini-live-2.5-flash"), Some(2));
        assert_eq!(gemini_major_version("gemini-3.1-pro-preview"), Some(3));
        assert_eq!(gemini_major_version("claude-sonnet-4"), None);
    }

    #[test]
    fn signatures_must_be_base64() {
        assert!(is_valid_thought_signature("c2lnbmF0dXJl"));
        assert!(is_valid_thought_signature("c2lnbmF0dXJlLTE="));
        assert!(!is_valid_thought_signature(""));
        assert!(!is_valid_thought_signature("abc"));
        assert!(!is_valid_thought_signature("{\"v\":1,\"id\":\"msg\"}"));
        assert!(!is_valid_thought_signature("ab=c"));
        assert!(!is_valid_thought_signature("a==="));
    }

    #[test]
    fn convert_tools_strips_meta_keys_only_for_parameters() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$id": "x", "$comment": "c",
            "type": "object",
            "$defs": {"Inner": {"type": "string"}},
            "properties": {
                "a": {"$ref": "#/$defs/Inner", "$comment": "nested"},
                "b": {"type": "object", "definitions": {}, "properties": {}}
            }
        });
        let tools = vec![Tool {
            name: "t".into(),
            description: "d".into(),
            parameters: schema.clone(),
        }];
        let stripped = convert_tools(&tools, true).unwrap();
        assert_eq!(
            stripped[0]["functionDeclarations"][0]["parameters"],
            json!({"type": "object", "properties": {
                "a": {"$ref": "#/$defs/Inner"},
                "b": {"type": "object", "properties": {}}}})
        );
        let verbatim = convert_tools(&tools, false).unwrap();
        assert_eq!(
            verbatim[0]["functionDeclarations"][0]["parametersJsonSchema"],
            schema
        );
        assert_eq!(tools[0].parameters, schema, "the input is not mutated");
        assert!(convert_tools(&[], false).is_none());
    }

    #[test]
    fn unsigned_gemini3_call_gets_no_sentinel_and_signed_call_keeps_its_signature() {
        let model = gemini("gemini-3-pro-preview");
        let messages = vec![
            Message::User(UserMessage::text("go")),
            assistant_from(
                &model,
                vec![call("c1", None), call("c2", Some("c2lnbmF0dXJl"))],
            ),
        ];
        let contents = convert_messages(&model, &context(messages));
        let parts = &contents[1]["parts"];
        assert!(parts[0].get("thoughtSignature").is_none());
        assert_eq!(parts[1]["thoughtSignature"], "c2lnbmF0dXJl");
        assert!(
            !contents
                .iter()
                .any(|c| c.to_string().contains("skip_thought"))
        );
    }

    #[test]
    fn signatures_from_another_model_or_not_base64_are_dropped() {
        let target = gemini("gemini-2.5-flash");
        let other = gemini("gemini-2.5-pro");
        let messages = vec![
            Message::User(UserMessage::text("go")),
            assistant_from(&other, vec![call("c1", Some("c2lnbmF0dXJl"))]),
            Message::User(UserMessage::text("again")),
            assistant_from(&target, vec![call("c2", Some("not base64!"))]),
        ];
        let contents = convert_messages(&target, &context(messages));
        assert!(contents[1]["parts"][0].get("thoughtSignature").is_none());
        assert!(contents[4]["parts"][0].get("thoughtSignature").is_none());
    }

    #[test]
    fn thinking_is_replayed_as_thought_only_for_the_same_model() {
        let model = gemini("gemini-2.5-flash");
        let thinking = |text: &str| {
            AssistantContent::Thinking(ThinkingContent {
                thinking: text.into(),
                thinking_signature: Some("c2lnbmF0dXJl".into()),
                redacted: None,
            })
        };
        let messages = vec![
            Message::User(UserMessage::text("q")),
            assistant_from(&model, vec![thinking("mine"), thinking("  ")]),
            Message::User(UserMessage::text("q2")),
            assistant_from(&gemini("gemini-2.5-pro"), vec![thinking("theirs")]),
        ];
        let contents = convert_messages(&model, &context(messages));
        assert_eq!(
            contents[1]["parts"],
            json!([{"thought": true, "text": "mine", "thoughtSignature": "c2lnbmF0dXJl"}])
        );
        assert_eq!(contents[3]["parts"], json!([{"text": "theirs"}]));
    }

    #[test]
    fn tool_result_images_are_routed_by_model_generation() {
        for (id, nested) in [
            ("gemini-2.5-flash", false),
            ("gemini-3-flash-preview", true),
        ] {
            let model = gemini(id);
            let messages = vec![
                Message::User(UserMessage::text("look")),
                assistant_from(&model, vec![call("c1", None), call("c2", None)]),
                image_result("c1"),
                image_result("c2"),
            ];
            let contents = convert_messages(&model, &context(messages));
            let roles: Vec<&str> = contents
                .iter()
                .map(|c| c["role"].as_str().unwrap())
                .collect();
            let response = &contents[2]["parts"][0]["functionResponse"];
            assert_eq!(response["response"], json!({"output": SEE_ATTACHED_IMAGE}));
            if nested {
                assert_eq!(roles, ["user", "model", "user"], "{id}");
                assert_eq!(contents[2]["parts"].as_array().unwrap().len(), 2);
                assert_eq!(response["parts"][0]["inlineData"]["mimeType"], "image/png");
            } else {
                // Both responses in one turn, both images in the one after it.
                assert_eq!(roles, ["user", "model", "user", "user"], "{id}");
                assert!(response.get("parts").is_none());
                let responses = contents[2]["parts"].as_array().unwrap();
                assert_eq!(responses.len(), 2);
                assert!(
                    responses
                        .iter()
                        .all(|p| p.get("functionResponse").is_some())
                );
                assert_eq!(contents[3]["parts"][0]["text"], TOOL_IMAGE_TURN_INTRO);
                assert_eq!(contents[3]["parts"].as_array().unwrap().len(), 3);
                assert_eq!(
                    contents[3]["parts"][1]["inlineData"]["data"],
                    "iVBORw0KGgo="
                );
            }
        }
    }

    #[test]
    fn tool_ids_only_for_models_that_need_them() {
        let model = gemini("claude-sonnet-4");
        let foreign = Message::Assistant(AssistantMessage {
            content: vec![call("call|with|pipes", None)],
            api: "openai-responses".into(),
            provider: "openai".into(),
            model: "gpt-5".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        });
        let messages = vec![Message::User(UserMessage::text("q")), foreign];
        let contents = convert_messages(&model, &context(messages));
        assert_eq!(
            contents[1]["parts"][0]["functionCall"]["id"],
            "call_with_pipes"
        );
        assert_eq!(
            contents[2]["parts"][0]["functionResponse"]["id"],
            "call_with_pipes"
        );
        let plain = convert_messages(
            &gemini("gemini-2.5-flash"),
            &context(vec![assistant_from(&gemini("x"), vec![call("a|b", None)])]),
        );
        assert!(plain[0]["parts"][0]["functionCall"].get("id").is_none());
    }

    #[test]
    fn vertex_thinking_has_no_gemma4_case_and_no_flash_lite_row() {
        let config = |id: &str, level: Option<ThinkingLevel>| {
            let model = gemini(id);
            let thinking = simple_thinking(Variant::Vertex, &model, level, None);
            thinking_config(Variant::Vertex, &model, Some(&thinking))
        };
        assert_eq!(
            config("gemma-4-31b-it", None),
            Some(json!({"thinkingBudget": 0}))
        );
        assert_eq!(
            config("gemma-4-31b-it", Some(ThinkingLevel::Low)),
            Some(json!({"includeThoughts": true, "thinkingBudget": -1}))
        );
        assert_eq!(
            config("gemini-2.5-flash-lite", Some(ThinkingLevel::Minimal)),
            Some(json!({"includeThoughts": true, "thinkingBudget": 128}))
        );
        assert_eq!(
            config("gemini-3-pro-preview", None),
            Some(json!({"thinkingLevel": "LOW"}))
        );
        assert_eq!(
            config("gemini-3-flash-preview", Some(ThinkingLevel::Medium)),
            Some(json!({"includeThoughts": true, "thinkingLevel": "MEDIUM"}))
        );
    }

    #[test]
    fn thinking_configs_like_pi() {
        let cases = [
            ("gemini-2.5-pro", None, json!({"thinkingBudget": 0})),
            (
                "gemini-3-pro-preview",
                None,
                json!({"thinkingLevel": "LOW"}),
            ),
            (
                "gemini-3-flash-preview",
                None,
                json!({"thinkingLevel": "MINIMAL"}),
            ),
            ("gemma-4-31b-it", None, json!({"thinkingLevel": "MINIMAL"})),
            (
                "gemini-2.5-pro",
                Some(ThinkingLevel::High),
                json!({"includeThoughts": true, "thinkingBudget": 32768}),
            ),
            (
                "gemini-2.5-flash-lite",
                Some(ThinkingLevel::Minimal),
                json!({"includeThoughts": true, "thinkingBudget": 512}),
            ),
            (
                "gemini-2.5-flash",
                Some(ThinkingLevel::Low),
                json!({"includeThoughts": true, "thinkingBudget": 2048}),
            ),
            (
                "gemini-flash-latest",
                Some(ThinkingLevel::Medium),
                json!({"includeThoughts": true, "thinkingBudget": -1}),
            ),
            (
                "gemini-3-pro-preview",
                Some(ThinkingLevel::Medium),
                json!({"includeThoughts": true, "thinkingLevel": "HIGH"}),
            ),
            (
                "gemini-3-flash-preview",
                Some(ThinkingLevel::Medium),
                json!({"includeThoughts": true, "thinkingLevel": "MEDIUM"}),
            ),
            (
                "gemma-4-31b-it",
                Some(ThinkingLevel::Low),
                json!({"includeThoughts": true, "thinkingLevel": "MINIMAL"}),
            ),
        ];
        for (id, level, expected) in cases {
            let model = gemini(id);
            let thinking = simple_thinking(Variant::Gemini, &model, level, None);
            assert_eq!(
                thinking_config(Variant::Gemini, &model, Some(&thinking)),
                Some(expected),
                "{id} {level:?}"
            );
        }
        let mut plain = gemini("gemini-2.0-flash");
        plain.reasoning = false;
        let thinking = simple_thinking(Variant::Gemini, &plain, Some(ThinkingLevel::High), None);
        assert_eq!(
            thinking_config(Variant::Gemini, &plain, Some(&thinking)),
            None
        );
        // Plain `stream` without `thinking` leaves the provider's default alone.
        assert_eq!(
            thinking_config(Variant::Gemini, &gemini("gemini-2.5-pro"), None),
            None
        );
        let custom = crate::ai::options::ThinkingBudgets {
            low: Some(777),
            ..Default::default()
        };
        let model = gemini("gemini-2.5-flash");
        let thinking = simple_thinking(
            Variant::Gemini,
            &model,
            Some(ThinkingLevel::Low),
            Some(&custom),
        );
        assert_eq!(
            thinking_config(Variant::Gemini, &model, Some(&thinking)),
            Some(json!({"includeThoughts": true, "thinkingBudget": 777}))
        );
    }
}
