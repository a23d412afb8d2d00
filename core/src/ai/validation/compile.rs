//! Builds the `jsonschema` validator of a schema (`cache` keeps them, one per schema).
//!
//! The options are pi's (TypeBox's) reading of a schema where the crate lets us choose: formats
//! are assertions (the `format` vocabulary is only an annotation by default in 2020-12), `url`
//! is a known format as in TypeBox, patterns are ECMA-262 regexes (the crate's fancy-regex
//! engine), and nothing is fetched: a `$ref` to another document does not resolve.

use std::collections::HashMap;

use jsonschema::{Draft, Validator};
use serde_json::Value;

/// Why a schema cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SchemaError {
    /// The schema is not an object or a boolean.
    #[error("a tool schema must be a JSON object, not {0}")]
    NotASchema(&'static str),
    /// A `$ref` leads back to itself without consuming any input: the schema can never finish
    /// (pi overflows its call stack there).
    #[error("$ref \"{0}\" leads back to itself without consuming any input")]
    Loop(String),
    /// The schema nests deeper than the compiler follows on a worker thread's stack.
    #[error("the schema nests more than {MAX_SCHEMA_DEPTH} levels deep")]
    TooDeep,
    /// `jsonschema` refused it: a keyword of the wrong shape, a regex ECMA-262 rejects, a `$ref`
    /// that does not resolve. The text is the crate's.
    #[error("{0}")]
    Rejected(String),
}

/// How deeply a schema's JSON may nest (objects and arrays; a `properties` level costs two).
/// The crate compiles recursively, and this stays well inside a 2 MiB stack in a debug build.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 256;

/// Compiles `schema`: a tool schema for the cache, or a union branch for its coercion plan.
pub(crate) fn build(schema: &Value) -> Result<Validator, SchemaError> {
    match schema {
        Value::Object(_) | Value::Bool(_) => {}
        Value::Null => return Err(SchemaError::NotASchema("null")),
        Value::Number(_) => return Err(SchemaError::NotASchema("a number")),
        Value::String(_) => return Err(SchemaError::NotASchema("a string")),
        Value::Array(_) => return Err(SchemaError::NotASchema("an array")),
    }
    if depth_exceeds(schema, MAX_SCHEMA_DEPTH) {
        return Err(SchemaError::TooDeep);
    }
    if let Some(reference) = find_loop(schema) {
        return Err(SchemaError::Loop(reference));
    }
    let mut options = jsonschema::options()
        .should_validate_formats(true)
        .with_format("url", |text: &str| url::Url::parse(text).is_ok());
    if schema.get("$schema").is_none() && uses_draft7_keywords(schema) {
        options = options.with_draft(Draft::Draft7);
    }
    options
        .build(schema)
        .map_err(|error| SchemaError::Rejected(error.to_string()))
}

/// Whether `schema` uses keywords 2020-12 dropped (`items` as a list, `additionalItems`,
/// `dependencies`), which TypeBox still reads: such a schema is read as draft 7. Iterative.
fn uses_draft7_keywords(schema: &Value) -> bool {
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if map.get("items").is_some_and(Value::is_array)
                    || map.contains_key("additionalItems")
                    || map.contains_key("dependencies")
                {
                    return true;
                }
                stack.extend(
                    map.iter()
                        .filter(|(key, _)| *key != "const" && *key != "enum")
                        .map(|(_, value)| value),
                );
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// Keywords whose subschemas apply to the same value (following them consumes no input).
const IN_PLACE: [&str; 7] = ["allOf", "anyOf", "oneOf", "not", "if", "then", "else"];

/// A `$ref` (its text) from which `$ref`s and in-place keywords lead back to the same schema,
/// anywhere in `schema`; the crate would accept such a schema and never say why it validates.
/// Iterative depth-first search over the schema objects (by address).
fn find_loop(root: &Value) -> Option<String> {
    /// The in-place successors of a schema object, with the `$ref` text that led there.
    fn successors<'v>(root: &'v Value, schema: &'v Value) -> Vec<(&'v Value, Option<&'v str>)> {
        let Value::Object(map) = schema else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some(reference) = map.get("$ref").and_then(Value::as_str)
            && let Some(target) = super::render::resolve(root, reference)
        {
            out.push((target, Some(reference)));
        }
        for keyword in IN_PLACE {
            match map.get(keyword) {
                Some(Value::Array(list)) => out.extend(list.iter().map(|s| (s, None))),
                Some(sub @ Value::Object(_)) => out.push((sub, None)),
                _ => {}
            }
        }
        out
    }
    // Every schema object of the document is a start (a loop under an absent property is
    // refused too: the schema is broken whatever the arguments).
    let mut starts = Vec::new();
    let mut stack = vec![root];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                starts.push(value);
                stack.extend(
                    map.iter()
                        .filter(|(key, _)| *key != "const" && *key != "enum")
                        .map(|(_, value)| value),
                );
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    // 1: on the current path, 2: done.
    let mut state: HashMap<*const Value, u8> = HashMap::new();
    for start in starts {
        if state.contains_key(&(start as *const Value)) {
            continue;
        }
        // Each schema on the current path, the `$ref` that led to it, and what is left to visit.
        type Step<'v> = (
            &'v Value,
            Option<&'v str>,
            Vec<(&'v Value, Option<&'v str>)>,
        );
        let mut path: Vec<Step<'_>> = vec![(start, None, successors(root, start))];
        state.insert(start, 1);
        while let Some((_, _, next)) = path.last_mut() {
            match next.pop() {
                Some((target, via)) => match state.get(&(target as *const Value)) {
                    Some(1) => {
                        let last_ref = via.or_else(|| path.iter().rev().find_map(|step| step.1));
                        return Some(last_ref.unwrap_or("#").to_owned());
                    }
                    Some(_) => {}
                    None => {
                        state.insert(target, 1);
                        path.push((target, via, successors(root, target)));
                    }
                },
                None => {
                    if let Some((done, _, _)) = path.pop() {
                        state.insert(done, 2);
                    }
                }
            }
        }
    }
    None
}

/// Whether `value` nests more than `limit` objects and arrays. Iterative, and it allocates only
/// its stack (it runs on every tool call's arguments).
pub(crate) fn depth_exceeds(value: &Value, limit: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::Array(_) | Value::Object(_) if depth > limit => return true,
            Value::Array(items) => stack.extend(items.iter().map(|child| (child, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|child| (child, depth + 1))),
            _ => {}
        }
    }
    false
}
