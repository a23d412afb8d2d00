//! One call that ends in a value: [`complete_structured_value`] (any schema, a JSON value) and,
//! with the `schemars` feature, [`complete_structured`] (a Rust type, an instance of it).

use serde_json::Value;

use super::OutputSchema;
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::types::{AssistantMessage, Context};

/// A validated answer and the message it came in.
#[derive(Clone, Debug, PartialEq)]
pub struct StructuredAnswer<T> {
    /// The answer.
    pub value: T,
    /// The assistant message (its text is the answer's JSON).
    pub message: AssistantMessage,
}

/// Why a call for a typed answer gave none.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredError {
    /// The request failed, or its answer did not validate (`errorKind` `invalid_output`, the
    /// report in `errorMessage`). The message is the failed assistant message.
    #[error("{}", .message.error_message.as_deref().unwrap_or("the request failed"))]
    Failed {
        /// The failed message.
        message: Box<AssistantMessage>,
    },
    /// The model called tools instead of answering (one call has no tool loop: give the
    /// context no tools, or use an agent with an output schema, which runs them).
    #[error(
        "the model called tools ({}) instead of answering: a single call does not run them; use an agent with an output schema",
        tool_names(message)
    )]
    ToolCalls {
        /// The message with the calls.
        message: Box<AssistantMessage>,
    },
    /// The answer validated against the schema but the Rust type refused it (the type and its
    /// schema disagree).
    #[error("the answer matches the schema but not the type: {error}")]
    Deserialize {
        /// serde's message.
        error: String,
        /// The message.
        message: Box<AssistantMessage>,
    },
}

/// Parses an answer's text: JSON, optionally inside one Markdown code fence (some models add
/// one even when asked for JSON).
pub fn parse_output(text: &str) -> Result<Value, serde_json::Error> {
    let trimmed = text.trim();
    let Some(inner) = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
    else {
        return serde_json::from_str(trimmed);
    };
    // A language tag (```json) is a word followed by white space; without one, the fence
    // holds the answer itself, which may start with letters or digits (```42```, ```true```).
    let tag = inner
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(inner.len());
    let after_tag = &inner[tag..];
    if tag > 0
        && after_tag.starts_with(char::is_whitespace)
        && let Ok(value) = serde_json::from_str(after_tag)
    {
        return Ok(value);
    }
    serde_json::from_str(inner)
}

/// Asks `model` for an answer following `schema` ([`stream_simple`](crate::ai::stream_simple)
/// with `options.output_schema` set to it) and returns the validated value.
pub async fn complete_structured_value(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    schema: OutputSchema,
) -> Result<StructuredAnswer<Value>, StructuredError> {
    let mut options = options.clone();
    options.output_schema = Some(schema);
    let message = crate::ai::complete_simple(model, context, &options).await;
    if message.stop_reason.is_failure() {
        return Err(StructuredError::Failed {
            message: Box::new(message),
        });
    }
    // The stream validates only a turn without tool calls: one with calls is no answer, whatever
    // text comes with them.
    if message.tool_calls().next().is_some() {
        return Err(StructuredError::ToolCalls {
            message: Box::new(message),
        });
    }
    match parse_output(&message.text()) {
        Ok(value) => Ok(StructuredAnswer { value, message }),
        // The stream validated the text already: only a stream that skipped its check (none
        // of ours) gets here.
        Err(error) => Err(StructuredError::Deserialize {
            error: error.to_string(),
            message: Box::new(message),
        }),
    }
}

/// The names of a message's tool calls, for [`StructuredError::ToolCalls`]'s text.
fn tool_names(message: &AssistantMessage) -> String {
    message
        .tool_calls()
        .map(|call| call.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The output schema of `T`, named after its schema's title (`"output"` when it has none).
#[cfg(feature = "schemars")]
pub fn output_schema_for<T: schemars::JsonSchema>() -> OutputSchema {
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    let name: String = T::schema_name()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(64)
        .collect();
    let name = if name.is_empty() {
        super::DEFAULT_OUTPUT_NAME.to_owned()
    } else {
        name
    };
    OutputSchema::new(name, schema)
}

/// Asks `model` for an answer of type `T` (its schema derived by `schemars`) and returns it.
///
/// ```no_run
/// # async fn run(model: pi_agent::ai::Model) {
/// use pi_agent::ai::{self, Context, StreamOptions, UserMessage};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Weather { city: String, celsius: f64 }
///
/// let context = Context {
///     messages: vec![UserMessage::text("Weather in Paris?").into()],
///     ..Context::default()
/// };
/// let answer = ai::complete_structured::<Weather>(&model, &context, &StreamOptions::default())
///     .await
///     .unwrap();
/// println!("{} {}", answer.value.city, answer.value.celsius);
/// # }
/// ```
#[cfg(feature = "schemars")]
pub async fn complete_structured<T: serde::de::DeserializeOwned + schemars::JsonSchema>(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<StructuredAnswer<T>, StructuredError> {
    let answer =
        complete_structured_value(model, context, options, output_schema_for::<T>()).await?;
    match serde_json::from_value(answer.value) {
        Ok(value) => Ok(StructuredAnswer {
            value,
            message: answer.message,
        }),
        Err(error) => Err(StructuredError::Deserialize {
            error: error.to_string(),
            message: Box::new(answer.message),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse_output;

    #[test]
    fn fenced_answers_with_and_without_a_language_tag() {
        assert_eq!(parse_output("{\"a\": 1}").unwrap(), json!({"a": 1}));
        assert_eq!(
            parse_output("```json\n{\"a\": 1}\n```").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(parse_output("```\n[1, 2]\n```").unwrap(), json!([1, 2]));
        assert_eq!(parse_output("```42```").unwrap(), json!(42));
        assert_eq!(parse_output("```true```").unwrap(), json!(true));
        assert_eq!(parse_output("```42\n```").unwrap(), json!(42));
        assert_eq!(
            parse_output(" ```JSON {\"b\": null} ``` ").unwrap(),
            json!({"b": null})
        );
        assert!(parse_output("```json\nnot json\n```").is_err());
    }
}
