//! The schema of Anthropic's native structured outputs (`output_config.format`): the subset of
//! JSON Schema its grammar compiler takes. It refuses the rest with a `400` ("For 'integer'
//! type, property 'minimum' is not supported"), so a pydantic model with `Field(ge=0)` could
//! not be asked for at all. What it cannot take moves into the description, where the model
//! reads it; the answer is still validated against the schema the caller gave, so a value that
//! breaks a moved rule is an `invalid_output` (and an agent re-asks).

use serde_json::{Map, Value};

/// The keywords kept as they are (what Anthropic's structured outputs document as supported,
/// apart from those handled one by one below).
const KEPT: [&str; 7] = [
    "$ref", "type", "enum", "const", "default", "required", "title",
];

/// The string formats it takes.
const FORMATS: [&str; 10] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Deeper than this, a schema is sent as it is (never unbounded recursion; no real schema is
/// that deep).
const MAX_DEPTH: usize = 64;

/// `schema` in the subset Anthropic's structured outputs take (see the module's doc).
pub(crate) fn output_format_schema(schema: &Value) -> Value {
    subset(schema, 0)
}

fn subset(schema: &Value, depth: usize) -> Value {
    let Value::Object(object) = schema else {
        return schema.clone();
    };
    if depth > MAX_DEPTH {
        return schema.clone();
    }
    let each = |value: &Value| subset(value, depth + 1);
    let mut out = Map::new();
    // Keywords it cannot take, for the description.
    let mut moved = Map::new();
    let is_object = match object.get("type") {
        Some(kind) => kind == "object",
        None => object.contains_key("properties"),
    };
    for (key, value) in object {
        match key.as_str() {
            key if KEPT.contains(&key) => {
                out.insert(key.into(), value.clone());
            }
            // Metadata of the document, not a constraint.
            "$schema" | "$id" | "$comment" => {}
            "description" => {}
            "$defs" | "definitions" | "properties" => {
                let mapped = match value {
                    Value::Object(schemas) => Value::Object(
                        schemas
                            .iter()
                            .map(|(name, schema)| (name.clone(), each(schema)))
                            .collect(),
                    ),
                    other => other.clone(),
                };
                out.insert(key.into(), mapped);
            }
            "anyOf" | "oneOf" | "allOf" => {
                let mapped = match value {
                    Value::Array(schemas) => Value::Array(schemas.iter().map(each).collect()),
                    other => other.clone(),
                };
                // `oneOf` is read as `anyOf`: the validation of the answer still holds it to one.
                let key = if key == "oneOf" {
                    "anyOf"
                } else {
                    key.as_str()
                };
                out.insert(key.into(), mapped);
            }
            "items" if value.is_object() || value.is_boolean() => {
                out.insert(key.into(), each(value));
            }
            "format"
                if value
                    .as_str()
                    .is_some_and(|format| FORMATS.contains(&format)) =>
            {
                out.insert(key.into(), value.clone());
            }
            "minItems" if value.as_u64().is_some_and(|n| n <= 1) => {
                out.insert(key.into(), value.clone());
            }
            // Objects must close: set below, an open one's rule goes to the description.
            "additionalProperties" if is_object => {
                if value != &Value::Bool(false) {
                    moved.insert(key.clone(), value.clone());
                }
            }
            _ => {
                moved.insert(key.clone(), value.clone());
            }
        }
    }
    if is_object {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    let description = object.get("description").and_then(Value::as_str);
    let rules = (!moved.is_empty()).then(|| Value::Object(moved).to_string());
    let text = match (description, rules) {
        (Some(text), Some(rules)) => Some(format!("{text}\n\nAlso: {rules}")),
        (Some(text), None) => Some(text.to_owned()),
        (None, Some(rules)) => Some(format!("Also: {rules}")),
        (None, None) => None,
    };
    if let Some(text) = text {
        out.insert("description".into(), Value::String(text));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn what_anthropic_refuses_moves_into_the_description() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "title": "Person",
            "properties": {
                "age": {"type": "integer", "minimum": 0, "maximum": 150, "description": "Years"},
                "name": {"type": "string", "minLength": 1, "format": "email"},
                "site": {"type": "string", "format": "hostname-or-ip"},
                "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"},
                         "minItems": 2, "uniqueItems": true},
                "extra": {"type": "object", "additionalProperties": {"type": "integer"}},
                "kind": {"oneOf": [{"const": "a"}, {"const": "b"}], "default": "a"}
            },
            "required": ["age", "name"],
            "$defs": {"Unit": {"type": "string", "enum": ["c", "f"], "maxLength": 1}}
        });
        assert_eq!(
            output_format_schema(&schema),
            json!({
                "type": "object",
                "title": "Person",
                "properties": {
                    "age": {"type": "integer",
                            "description": "Years\n\nAlso: {\"minimum\":0,\"maximum\":150}"},
                    "name": {"type": "string", "format": "email",
                             "description": "Also: {\"minLength\":1}"},
                    "site": {"type": "string",
                             "description": "Also: {\"format\":\"hostname-or-ip\"}"},
                    "tags": {"type": "array",
                             "items": {"type": "string",
                                       "description": "Also: {\"pattern\":\"^[a-z]+$\"}"},
                             "description": "Also: {\"minItems\":2,\"uniqueItems\":true}"},
                    "extra": {"type": "object", "additionalProperties": false,
                              "description": "Also: {\"additionalProperties\":{\"type\":\"integer\"}}"},
                    "kind": {"anyOf": [{"const": "a"}, {"const": "b"}], "default": "a"}
                },
                "required": ["age", "name"],
                "additionalProperties": false,
                "$defs": {"Unit": {"type": "string", "enum": ["c", "f"],
                                   "description": "Also: {\"maxLength\":1}"}}
            })
        );
    }

    #[test]
    fn a_supported_schema_passes_but_objects_close() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "array", "items":
            {"$ref": "#/$defs/A"}, "minItems": 1}}, "$defs": {"A": {"type": "boolean"}}});
        let mut want = schema.clone();
        want["additionalProperties"] = json!(false);
        assert_eq!(output_format_schema(&schema), want);
        // Properties without a type are an object's too.
        assert_eq!(
            output_format_schema(&json!({"properties": {}})),
            json!({"properties": {}, "additionalProperties": false})
        );
    }

    #[test]
    fn a_schema_deeper_than_the_limit_is_sent_as_it_is_below_it() {
        let mut schema = json!({"type": "string", "minLength": 1});
        for _ in 0..MAX_DEPTH + 10 {
            schema = json!({"type": "array", "items": schema});
        }
        let mut mapped = &output_format_schema(&schema);
        let mut depth = 0;
        while mapped.get("items").is_some() {
            mapped = &mapped["items"];
            depth += 1;
        }
        assert_eq!(depth, MAX_DEPTH + 10);
        assert_eq!(mapped, &json!({"type": "string", "minLength": 1}));
    }
}
