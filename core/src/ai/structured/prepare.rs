//! Checks a request's tool choice and output schema before anything is sent, and rewrites the
//! request for an api that takes the schema as a forced tool.

use std::borrow::Cow;

use serde_json::Value;

use super::{Delivery, OutputSchema, OutputTracker, delivery, root_references};
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::tool_choice::{ToolChoice, ToolChoiceError};
use crate::ai::types::{Context, Tool};
use crate::ai::validation::CompiledToolSchema;

/// A request ready for its provider: the context and options to send (rewritten only for the
/// forced-tool fallback) and the tracker that turns the stream into a typed answer.
pub(crate) struct Prepared<'a> {
    /// The context to send.
    pub context: Cow<'a, Context>,
    /// The options to send.
    pub options: Cow<'a, StreamOptions>,
    /// Set when the request has an output schema.
    pub tracker: Option<OutputTracker>,
}

/// Why a request's `toolChoice` or `outputSchema` cannot be sent (nothing reaches the
/// provider; the message is the stream's `error`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RequestShapeError {
    /// The tool choice does not fit the request's tools.
    #[error(transparent)]
    ToolChoice(#[from] ToolChoiceError),
    /// The schema's name is not usable on every api.
    #[error("outputSchema name \"{0}\" must be 1 to 64 letters, digits, '_' or '-'")]
    BadName(String),
    /// The schema is not a JSON object (as JSON).
    #[error("outputSchema schema must be a JSON Schema object, not {0}")]
    NotAnObject(String),
    /// The schema does not compile; why.
    #[error("outputSchema schema is invalid: {0}")]
    Invalid(String),
    /// A tool has the schema's name.
    #[error("outputSchema name \"{0}\" is also the name of a tool; give the schema another name")]
    NameTaken(String),
}

/// Checks `options.tool_choice` and `options.output_schema` against the request; an error is a
/// message naming what is wrong (sent as the stream's `error`, nothing reaches the provider).
pub(crate) fn prepare<'a>(
    model: &Model,
    context: &'a Context,
    options: &'a StreamOptions,
) -> Result<Prepared<'a>, RequestShapeError> {
    let tools = context.tools.as_deref().unwrap_or_default();
    let Some(schema) = &options.output_schema else {
        if let Some(choice) = &options.tool_choice {
            choice.check(tools)?;
        }
        return Ok(Prepared {
            context: Cow::Borrowed(context),
            options: Cow::Borrowed(options),
            tracker: None,
        });
    };
    check_schema(schema)?;
    if tools.iter().any(|tool| tool.name == schema.name) {
        return Err(RequestShapeError::NameTaken(schema.name.clone()));
    }
    let how = delivery(&model.api, &model.id, !tools.is_empty(), &schema.schema);
    // An answer that is not an object travels wrapped (the tracker unwraps it).
    let wrapped = (!schema.describes_object()).then(|| schema.wrapped());
    let tracker = OutputTracker::new(schema, how == Delivery::Tool, wrapped.is_some());
    let sent = wrapped.as_ref().unwrap_or(schema);
    if how == Delivery::Native {
        if let Some(choice) = &options.tool_choice {
            choice.check(tools)?;
        }
        let options = match wrapped {
            Some(wrapped) => {
                let mut options = options.clone();
                options.output_schema = Some(wrapped);
                Cow::Owned(options)
            }
            None => Cow::Borrowed(options),
        };
        return Ok(Prepared {
            context: Cow::Borrowed(context),
            options,
            tracker: Some(tracker),
        });
    }
    // The forced tool: the model answers by calling it. With other tools it must call one of
    // them or the output tool; `none` and `auto` become "call the output tool" only when it is
    // the sole tool, so that a run's own tools stay usable.
    let choice = match &options.tool_choice {
        // Claude refuses a forced tool while it thinks: the tool's description asks instead.
        Some(ToolChoice::None) if claude_thinking(model, options) => ToolChoice::None,
        _ if claude_thinking(model, options) => ToolChoice::Auto,
        Some(ToolChoice::Tool(name)) => ToolChoice::Tool(name.clone()),
        Some(ToolChoice::None) => ToolChoice::Tool(schema.name.clone()),
        _ if tools.is_empty() => ToolChoice::Tool(schema.name.clone()),
        _ => ToolChoice::Required,
    };
    // A forcing choice the caller asked for is sent as asked; one made here fits the model.
    let asked = matches!(
        options.tool_choice,
        Some(ToolChoice::Required | ToolChoice::Tool(_))
    );
    let choice = if asked {
        choice
    } else {
        within_bedrock_forcing(model, choice)
    };
    let mut rewritten = context.clone();
    rewritten.tools.get_or_insert_with(Vec::new).push(Tool {
        name: schema.name.clone(),
        description: schema.description.clone().unwrap_or_else(|| {
            "Give the final answer by calling this tool; its arguments are the answer.".to_owned()
        }),
        parameters: tool_parameters(&sent.schema),
    });
    choice.check(rewritten.tools.as_deref().unwrap_or_default())?;

    let mut options = options.clone();
    options.tool_choice = Some(choice);
    // The provider must not map the schema a second time.
    options.output_schema = None;
    Ok(Prepared {
        context: Cow::Owned(rewritten),
        options: Cow::Owned(options),
        tracker: Some(tracker),
    })
}

/// The forced tool's parameters: `schema`, with a root `$ref` (the schema of a recursive
/// pydantic model or dataclass, `{"$ref": "#/$defs/Node", "$defs": …}`) replaced by what it
/// points at, the root's other keys (`$defs`) kept so that every reference still resolves. Tool
/// definitions are read as an object's properties (Anthropic keeps only the root's
/// `properties`, `required` and `$defs`): a root that only points elsewhere reached the model
/// as an object with no properties, and no answer could match the schema it is checked
/// against. The answer is still checked against `schema` itself, which accepts the same values.
fn tool_parameters(schema: &Value) -> Value {
    let chain = root_references(schema);
    let Some((Value::Object(target), levels)) = chain.split_last() else {
        return schema.clone();
    };
    if levels.is_empty() {
        return schema.clone();
    }
    // The target's keys first, then those of each level above it that it does not have.
    let mut inlined = target.clone();
    for level in levels.iter().rev() {
        if let Value::Object(level) = level {
            for (key, value) in level {
                if key != "$ref" && !inlined.contains_key(key) {
                    inlined.insert(key.clone(), value.clone());
                }
            }
        }
    }
    Value::Object(inlined)
}

/// Whether the Bedrock model's id, or a word of its name, names `family` (lowercase): an
/// application inference profile's ARN names no model, so its name is what tells (as for the
/// provider's own family checks). Words, so that "Innovation Llama" is no Nova.
fn bedrock_family(model: &Model, family: &str) -> bool {
    model.id.to_ascii_lowercase().contains(family)
        || model
            .name
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| word.eq_ignore_ascii_case(family))
}

/// `choice` as far as the Bedrock model can be forced: Bedrock takes `tool` only from Claude
/// and Nova, and `any` also from Mistral Large; other models (Llama, Cohere, ...) refuse both
/// (a `ValidationException`), so they are asked by the tool's description instead (`auto`),
/// and may answer in text, which is then the answer. Other APIs take every choice.
fn within_bedrock_forcing(model: &Model, choice: ToolChoice) -> ToolChoice {
    if model.api != "bedrock-converse-stream" {
        return choice;
    }
    let has = |family: &str| bedrock_family(model, family);
    match choice {
        choice if has("claude") || has("anthropic") || has("nova") => choice,
        // `any` forces a call: of the output tool when it is the sole tool.
        ToolChoice::Tool(_) | ToolChoice::Required if has("mistral") => ToolChoice::Required,
        ToolChoice::Tool(_) | ToolChoice::Required => ToolChoice::Auto,
        other => other,
    }
}

/// Whether the request goes to Claude (anthropic-messages or Bedrock) with thinking on, where
/// the API refuses a tool choice that forces tool use.
fn claude_thinking(model: &Model, options: &StreamOptions) -> bool {
    let claude = match model.api.as_str() {
        "anthropic-messages" => true,
        "bedrock-converse-stream" => {
            bedrock_family(model, "claude") || bedrock_family(model, "anthropic")
        }
        _ => false,
    };
    let thinking =
        model.reasoning && (options.thinking_enabled == Some(true) || options.reasoning.is_some());
    claude && thinking
}

/// A usable name (OpenAI's rule, which every api accepts) and a schema that compiles.
fn check_schema(schema: &OutputSchema) -> Result<(), RequestShapeError> {
    let name_ok = !schema.name.is_empty()
        && schema.name.len() <= 64
        && schema
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Err(RequestShapeError::BadName(schema.name.clone()));
    }
    if !schema.schema.is_object() {
        return Err(RequestShapeError::NotAnObject(schema.schema.to_string()));
    }
    CompiledToolSchema::new(schema.name.clone(), &schema.schema)
        .schema_error()
        .map_or(Ok(()), |message| Err(RequestShapeError::Invalid(message)))
}
