//! Typed answers: an [`OutputSchema`] the answer must follow, sent by each api's native
//! mechanism or, where it has none, as a forced single tool whose call is turned back into the
//! message's text; the stream's partial objects; the final validation.
//!
//! | api | how the schema is sent |
//! |---|---|
//! | openai-completions, mistral-conversations | `response_format: {type: "json_schema", json_schema: {name, schema, strict}}` |
//! | openai-responses, azure-openai-responses, openai-codex-responses | `text.format: {type: "json_schema", name, schema, strict}` |
//! | anthropic-messages (Claude 4.5 and later, Opus 4.1) | `output_config.format: {type: "json_schema", schema}` |
//! | google-generative-ai, google-vertex (no tools in the request) | `generationConfig.responseMimeType` + `responseJsonSchema` |
//! | bedrock-converse-stream, older Claude, Gemini with tools | a tool named after the schema, forced with the tool choice |
//!
//! The forced tool is invisible to the caller: its call streams as a text block, the final
//! message holds the JSON as text (no tool call, stop reason `stop`), so the transcript replays
//! to any provider.
//!
//! A schema whose root is not an object's (a list, a string, a union) is sent wrapped, as an
//! object whose one property [`WRAPPED_ANSWER_KEY`] holds the answer: tool parameters and
//! OpenAI's and Anthropic's structured outputs take only object schemas. The caller sees the
//! answer itself: its text deltas, partial objects and final text are the value's.

mod prepare;
mod tracker;
mod typed;
mod unwrap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use prepare::prepare;
pub(crate) use tracker::{OutputTracker, check_final_answer};
pub use typed::{StructuredAnswer, StructuredError, complete_structured_value, parse_output};
#[cfg(feature = "schemars")]
pub use typed::{complete_structured, output_schema_for};

/// The name an [`OutputSchema`] gets when none is given.
pub const DEFAULT_OUTPUT_NAME: &str = "output";

/// The property that carries an answer whose schema is not an object's (see the module's doc):
/// the model is asked for `{"response": VALUE}`.
pub const WRAPPED_ANSWER_KEY: &str = "response";

/// The schema's root and what its root `$ref` points at, in order: a reference to a reference
/// is followed a few times (never round a cycle for ever), up to a target that is not an
/// object schema or does not resolve.
pub(crate) fn root_references(schema: &Value) -> Vec<&Value> {
    let mut chain = vec![schema];
    while chain.len() <= 8 {
        let Some(Value::String(reference)) = chain[chain.len() - 1].get("$ref") else {
            break;
        };
        match crate::ai::validation::resolve_reference(schema, reference) {
            Some(target @ Value::Object(_)) => chain.push(target),
            _ => break,
        }
    }
    chain
}

/// Root keywords that belong to the whole document, not to the answer's value: they stay at the
/// wrapper's root, so references such as `#/$defs/Item` still resolve.
const DOCUMENT_KEYWORDS: [&str; 4] = ["$schema", "$id", "$defs", "definitions"];

/// Keywords whose values are data, not schemas: a `$ref` inside them is not a reference.
const DATA_KEYWORDS: [&str; 4] = ["enum", "const", "default", "examples"];

/// Deeper than this, references are left as they are (never unbounded recursion; a schema that
/// deep does not compile for validation either).
const MAX_REFERENCE_DEPTH: usize = 128;

/// Points the document's local references at the value's new place, under the wrapper's
/// `properties.response`: `#` and `#/items/...` move, `#/$defs/...` (moved to the root with the
/// definitions) stay.
fn rebase_references(schema: &mut Value, depth: usize) {
    if depth > MAX_REFERENCE_DEPTH {
        return;
    }
    match schema {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get_mut("$ref") {
                let kept = ["#/$defs/", "#/definitions/"]
                    .iter()
                    .any(|root| reference.starts_with(root));
                if let Some(path) = reference.strip_prefix('#')
                    && !kept
                    && (path.is_empty() || path.starts_with('/'))
                {
                    *reference = format!("#/properties/{WRAPPED_ANSWER_KEY}{path}");
                }
            }
            for (key, value) in object.iter_mut() {
                if !DATA_KEYWORDS.contains(&key.as_str()) {
                    rebase_references(value, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rebase_references(item, depth + 1);
            }
        }
        _ => {}
    }
}

/// The JSON Schema an answer must follow (`outputSchema` in the options).
///
/// JSON form: `{"name": "weather", "schema": {...}, "strict": true, "description": "..."}`;
/// only `schema` is required (`name` defaults to `"output"`, `strict` to `false`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutputSchema {
    /// A name for the shape (`[A-Za-z0-9_-]`, at most 64 characters): OpenAI's
    /// `json_schema.name`, and the forced tool's name where one is used.
    #[serde(default = "default_name")]
    pub name: String,
    /// The JSON Schema of the answer.
    pub schema: Value,
    /// Ask for strict schema adherence where the api has such a switch (OpenAI, Mistral).
    /// OpenAI's strict mode accepts only schemas whose objects list every property as required
    /// and set `additionalProperties: false`.
    #[serde(default)]
    pub strict: bool,
    /// What the answer is, for the model (the forced tool's description; OpenAI's
    /// `json_schema.description`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn default_name() -> String {
    DEFAULT_OUTPUT_NAME.to_owned()
}

impl OutputSchema {
    /// A schema named `name`, not strict, without description.
    pub fn new(name: impl Into<String>, schema: Value) -> Self {
        Self {
            name: name.into(),
            schema,
            strict: false,
            description: None,
        }
    }

    /// Reads what a binding was given: an [`OutputSchema`] object (`{"name", "schema",
    /// "strict", "description"}`, with `schema`), or else a bare JSON Schema, named `"output"`.
    pub fn from_json_value(value: Value) -> Result<Self, serde_json::Error> {
        const KEYS: [&str; 4] = ["name", "schema", "strict", "description"];
        let wrapped = value.as_object().is_some_and(|object| {
            object.contains_key("schema") && object.keys().all(|key| KEYS.contains(&key.as_str()))
        });
        if wrapped {
            serde_json::from_value(value)
        } else {
            Ok(Self::new(DEFAULT_OUTPUT_NAME, value))
        }
    }

    /// The same schema with `strict` set.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Whether the schema's root describes an object (`"type": "object"`, or `properties`
    /// without a `type`), following a root `$ref`; otherwise the answer travels wrapped.
    pub(crate) fn describes_object(&self) -> bool {
        let chain = root_references(&self.schema);
        let root = chain.last().copied().unwrap_or(&self.schema);
        match root.get("type") {
            Some(Value::String(kind)) => kind == "object",
            None => root.get("properties").is_some(),
            Some(_) => false,
        }
    }

    /// The schema as sent for an answer that is not an object: an object whose one required
    /// property, [`WRAPPED_ANSWER_KEY`], has this schema (its document keywords, such as
    /// `$defs`, moved to the root). Same name, strictness and description.
    pub(crate) fn wrapped(&self) -> Self {
        let mut value = self.schema.clone();
        rebase_references(&mut value, 0);
        let mut root = serde_json::Map::new();
        root.insert("type".into(), "object".into());
        let mut document = serde_json::Map::new();
        if let Value::Object(object) = &mut value {
            for keyword in DOCUMENT_KEYWORDS {
                if let Some(moved) = object.remove(keyword) {
                    document.insert(keyword.into(), moved);
                }
            }
        }
        root.insert(
            "properties".into(),
            serde_json::json!({ WRAPPED_ANSWER_KEY: value }),
        );
        root.insert("required".into(), serde_json::json!([WRAPPED_ANSWER_KEY]));
        root.insert("additionalProperties".into(), Value::Bool(false));
        root.extend(document);
        Self {
            schema: Value::Object(root),
            ..self.clone()
        }
    }

    /// The OpenAI chat-completions / Mistral `response_format`.
    pub(crate) fn response_format(&self) -> Value {
        let mut format =
            serde_json::json!({"name": self.name, "schema": self.schema, "strict": self.strict});
        if let Some(description) = &self.description {
            format["description"] = Value::String(description.clone());
        }
        serde_json::json!({"type": "json_schema", "json_schema": format})
    }

    /// The Responses `text.format`.
    #[cfg(feature = "openai")]
    pub(crate) fn text_format(&self) -> Value {
        let mut format = serde_json::json!({"type": "json_schema", "name": self.name,
                                            "schema": self.schema, "strict": self.strict});
        if let Some(description) = &self.description {
            format["description"] = Value::String(description.clone());
        }
        format
    }
}

/// How a request carries its output schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The api's own structured-output parameter (the provider's request mapping reads it).
    Native,
    /// A tool named after the schema, forced with the tool choice.
    Tool,
}

/// Whether anthropic-messages `model` takes `output_config.format` (Claude Opus 4.1 and the
/// 4.5 generation onward); older models get the forced tool.
pub(crate) fn anthropic_native(model_id: &str) -> bool {
    let id = model_id.to_ascii_lowercase();
    for family in ["opus-", "sonnet-", "haiku-"] {
        let Some(at) = id.find(family) else { continue };
        let mut numbers = id[at + family.len()..]
            .split(['-', '.', '@', ':'])
            .map_while(|part| part.parse::<u32>().ok().filter(|n| *n < 100));
        let major = numbers.next().unwrap_or(0);
        let minor = numbers.next().unwrap_or(0);
        return major > 4 || (major == 4 && (minor >= 5 || (family == "opus-" && minor >= 1)));
    }
    false
}

/// How `api` carries an output `schema` for this request.
pub(crate) fn delivery(api: &str, model_id: &str, has_tools: bool, schema: &Value) -> Delivery {
    match api {
        "bedrock-converse-stream" => Delivery::Tool,
        // Gemini 2.x refuses function calling together with a JSON response type.
        "google-generative-ai" | "google-vertex" if has_tools => Delivery::Tool,
        "anthropic-messages" if !anthropic_native(model_id) => Delivery::Tool,
        // Claude's structured outputs close every object: a map (`dict[str, int]`) could only
        // be `{}`. The tool, which is not held to a grammar, can carry its entries.
        "anthropic-messages" if has_open_object(schema, 0) => Delivery::Tool,
        _ => Delivery::Native,
    }
}

/// Whether `schema` has an object open to keys it does not name: `additionalProperties` true
/// or a schema, `patternProperties`, or an object type with neither properties nor a rule.
fn has_open_object(schema: &Value, depth: usize) -> bool {
    if depth > MAX_REFERENCE_DEPTH {
        return false;
    }
    match schema {
        Value::Object(object) => {
            let open_rule = match object.get("additionalProperties") {
                Some(Value::Bool(open)) => *open,
                Some(Value::Object(_)) => true,
                _ => false,
            };
            let bare_object = object.get("type").and_then(Value::as_str) == Some("object")
                && !object.contains_key("properties")
                && !object.contains_key("additionalProperties");
            open_rule
                || bare_object
                || object.contains_key("patternProperties")
                || object
                    .iter()
                    .filter(|(key, _)| !DATA_KEYWORDS.contains(&key.as_str()))
                    .any(|(_, value)| has_open_object(value, depth + 1))
        }
        Value::Array(items) => items.iter().any(|item| has_open_object(item, depth + 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_models_with_native_structured_outputs() {
        for id in [
            "claude-sonnet-4-5",
            "claude-sonnet-4-5-20250929",
            "claude-opus-4-1",
            "claude-haiku-4-5",
            "claude-opus-4-6",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ] {
            assert!(anthropic_native(id), "{id}");
        }
        for id in [
            "claude-sonnet-4-0",
            "claude-sonnet-4-20250514",
            "claude-3-7-sonnet-latest",
            "claude-opus-4-20250514",
            "claude-haiku-4",
        ] {
            assert!(!anthropic_native(id), "{id}");
        }
    }

    #[test]
    fn claude_takes_a_schema_with_maps_as_the_tool() {
        let native = |schema: Value| {
            delivery("anthropic-messages", "claude-sonnet-4-5", false, &schema) == Delivery::Native
        };
        assert!(native(serde_json::json!({"type": "object",
            "properties": {"a": {"type": "string"}}, "additionalProperties": false})));
        assert!(native(
            serde_json::json!({"type": "object", "properties": {"a": {}}})
        ));
        assert!(native(
            serde_json::json!({"type": "object", "properties": {"a": {}},
            "default": {"additionalProperties": true}})
        ));
        for open in [
            serde_json::json!({"type": "object", "properties": {"counts": {"type": "object",
                "additionalProperties": {"type": "integer"}}}}),
            serde_json::json!({"type": "object", "properties": {"any": {"type": "object"}}}),
            serde_json::json!({"type": "object", "properties": {},
                "$defs": {"M": {"patternProperties": {"^x": {}}}}}),
        ] {
            assert!(!native(open.clone()), "{open}");
        }
    }

    #[test]
    fn bindings_pass_a_schema_or_an_output_schema() {
        let bare = OutputSchema::from_json_value(serde_json::json!({"type": "object"})).unwrap();
        assert_eq!(
            (bare.name.as_str(), bare.schema["type"].as_str()),
            ("output", Some("object"))
        );
        let wrapped = OutputSchema::from_json_value(
            serde_json::json!({"name": "w", "schema": {"type": "object"}, "strict": true}),
        )
        .unwrap();
        assert_eq!((wrapped.name.as_str(), wrapped.strict), ("w", true));
        // A schema with a property called `schema` is still a schema.
        let schema =
            serde_json::json!({"type": "object", "properties": {"schema": {}}, "schema": 1});
        assert_eq!(
            OutputSchema::from_json_value(schema.clone())
                .unwrap()
                .schema,
            schema
        );
    }

    #[test]
    fn a_wrapped_schema_keeps_its_references_resolving() {
        let schema = OutputSchema::new(
            "tree",
            serde_json::json!({"$id": "urn:tree", "type": "array",
                "items": {"anyOf": [{"type": "string"}, {"$ref": "#"},
                                    {"$ref": "#/$defs/Leaf"}, {"const": {"$ref": "#"}}]},
                "$defs": {"Leaf": {"anyOf": [{"type": "null"},
                                             {"type": "object", "additionalProperties": {"$ref": "#/items"}}]}}}),
        );
        let wrapped = schema.wrapped();
        assert_eq!(
            wrapped.schema,
            serde_json::json!({"type": "object",
                "properties": {"response": {"type": "array",
                    "items": {"anyOf": [{"type": "string"}, {"$ref": "#/properties/response"},
                                        {"$ref": "#/$defs/Leaf"}, {"const": {"$ref": "#"}}]}}},
                "required": ["response"], "additionalProperties": false,
                "$id": "urn:tree",
                "$defs": {"Leaf": {"anyOf": [{"type": "null"},
                    {"type": "object",
                     "additionalProperties": {"$ref": "#/properties/response/items"}}]}}})
        );
        // What the wrapper accepts around a value is what the schema accepts as the value.
        let inner = crate::ai::validation::CompiledToolSchema::for_output("t", &schema.schema);
        let outer = crate::ai::validation::CompiledToolSchema::for_output("t", &wrapped.schema);
        let valid = serde_json::json!(["a", ["b", [null]], {"k": "v", "j": ["c"]}]);
        let invalid = serde_json::json!(["a", {"k": 1}]);
        let first = inner.validate(&valid);
        assert!(first.is_ok(), "{first:?}");
        assert!(inner.validate(&invalid).is_err());
        for value in [valid, invalid] {
            assert_eq!(
                inner.validate(&value).is_ok(),
                outer
                    .validate(&serde_json::json!({"response": value}))
                    .is_ok(),
                "{value}"
            );
        }
    }

    #[test]
    fn json_form_defaults() {
        let schema: OutputSchema =
            serde_json::from_str(r#"{"schema": {"type": "object"}}"#).unwrap();
        assert_eq!(schema.name, "output");
        assert!(!schema.strict);
        assert!(serde_json::from_str::<OutputSchema>(r#"{"schema": {}, "strcit": true}"#).is_err());
    }
}
