//! Tool-argument validation against the tool's JSON Schema (pi's `validateToolArguments`).
//!
//! A schema is compiled once ([`CompiledToolSchema::new`]) and reused for every call. Failures
//! produce pi's report, which is what the model reads in the error tool result:
//!
//! ```text
//! Validation failed for tool "calc":
//!   - expression: must be string
//!
//! Received arguments:
//! { ... }
//! ```

use serde_json::Value;

/// Why arguments were rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The tool's own schema is not a valid JSON Schema.
    #[error("Invalid JSON Schema for tool \"{tool}\": {message}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// What is wrong with the schema.
        message: String,
    },
    /// The arguments do not match the schema; the text is pi's report.
    #[error("{report}")]
    InvalidArguments {
        /// The tool's name.
        tool: String,
        /// The full human- and model-readable report.
        report: String,
    },
}

/// A tool schema compiled for repeated validation.
pub struct CompiledToolSchema {
    tool: String,
    schema: Value,
    validator: Result<jsonschema::Validator, String>,
}

impl std::fmt::Debug for CompiledToolSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledToolSchema")
            .field("tool", &self.tool)
            .field("valid_schema", &self.validator.is_ok())
            .finish()
    }
}

impl CompiledToolSchema {
    /// Compiles `schema` for the tool named `tool`. A broken schema is remembered and reported
    /// on every validation instead of failing here, so one bad tool cannot break an agent.
    pub fn new(tool: impl Into<String>, schema: &Value) -> Self {
        Self {
            tool: tool.into(),
            schema: schema.clone(),
            validator: jsonschema::validator_for(schema).map_err(|error| error.to_string()),
        }
    }

    /// Coerces `arguments` the way AJV's `coerceTypes` does for plain JSON schemas (see
    /// [`coerce`]), then validates the coerced copy, which is returned. Errors report the
    /// arguments as received.
    pub fn validate_and_coerce(&self, arguments: &Value) -> Result<Value, ValidationError> {
        let coerced = coerce(Some(&self.schema), arguments.clone());
        match self.validate(&coerced) {
            Ok(()) => Ok(coerced),
            Err(ValidationError::InvalidArguments { .. }) => {
                self.validate(arguments).map(|()| arguments.clone())
            }
            Err(other) => Err(other),
        }
    }

    /// Checks `arguments` as they are.
    pub fn validate(&self, arguments: &Value) -> Result<(), ValidationError> {
        let validator =
            self.validator
                .as_ref()
                .map_err(|message| ValidationError::InvalidSchema {
                    tool: self.tool.clone(),
                    message: message.clone(),
                })?;
        let problems: Vec<String> = validator
            .iter_errors(arguments)
            .map(|error| {
                let mut path: Vec<String> = error
                    .instance_path()
                    .as_str()
                    .split('/')
                    .skip(1)
                    .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
                    .collect();
                if let jsonschema::error::ValidationErrorKind::Required { property } = error.kind()
                    && let Some(name) = property.as_str()
                {
                    path.push(name.to_owned());
                }
                let path = if path.is_empty() {
                    "root".to_owned()
                } else {
                    path.join(".")
                };
                format!("  - {path}: {error}")
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        let received = serde_json::to_string_pretty(arguments).unwrap_or_default();
        Err(ValidationError::InvalidArguments {
            tool: self.tool.clone(),
            report: format!(
                "Validation failed for tool \"{}\":\n{}\n\nReceived arguments:\n{received}",
                self.tool,
                problems.join("\n")
            ),
        })
    }
}

fn type_matches(kind: &str, value: &Value) -> bool {
    match kind {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0) && value.is_number(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => true,
    }
}

fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// One primitive coercion (AJV's table); `None` when this value cannot become `kind`.
fn coerce_primitive(kind: &str, value: &Value) -> Option<Value> {
    match (kind, value) {
        ("number" | "integer", Value::Null) => Some(Value::from(0)),
        ("number" | "integer", Value::Bool(b)) => Some(Value::from(i64::from(*b))),
        ("number" | "integer", Value::String(text)) => {
            let n: f64 = text
                .trim()
                .parse()
                .ok()
                .filter(|n: &f64| n.is_finite() && !text.trim().is_empty())?;
            (kind == "number" || n.fract() == 0.0).then(|| number_value(n))
        }
        ("boolean", Value::String(text)) => match text.as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ("boolean", Value::Number(n)) => match n.as_f64() {
            Some(1.0) => Some(Value::Bool(true)),
            Some(0.0) => Some(Value::Bool(false)),
            _ => None,
        },
        ("boolean", Value::Null) => Some(Value::Bool(false)),
        ("string", Value::Null) => Some(Value::String(String::new())),
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("null", Value::String(text)) if text.is_empty() => Some(Value::Null),
        ("null", Value::Bool(false)) => Some(Value::Null),
        ("null", Value::Number(n)) if n.as_f64() == Some(0.0) => Some(Value::Null),
        _ => None,
    }
}

/// AJV-compatible type coercion for a plain JSON schema (pi's rules, spec 1.12): primitives
/// are converted toward the schema's `type` (`"42"` → 42, `"true"` → true, `null` → `""`...),
/// recursively through `properties`, `additionalProperties`, `items`, `allOf`, and the first
/// `anyOf`/`oneOf` branch that then validates. JSON strings are never parsed into objects or
/// arrays (pi's position; a tool's `prepare_arguments` can do that).
pub fn coerce(schema: Option<&Value>, value: Value) -> Value {
    let Some(schema) = schema.and_then(Value::as_object) else {
        return value;
    };
    let mut value = value;
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for branch in all {
            value = coerce(Some(branch), value);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            if branches
                .iter()
                .any(|branch| jsonschema::is_valid(branch, &value))
            {
                break;
            }
            if let Some(candidate) = branches
                .iter()
                .map(|branch| (branch, coerce(Some(branch), value.clone())))
                .find(|(branch, candidate)| jsonschema::is_valid(branch, candidate))
                .map(|(_, candidate)| candidate)
            {
                value = candidate;
                break;
            }
        }
    }
    match schema.get("type") {
        Some(Value::String(kind)) => {
            if !type_matches(kind, &value)
                && let Some(coerced) = coerce_primitive(kind, &value)
            {
                value = coerced;
            }
        }
        Some(Value::Array(kinds)) => {
            let kinds: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
            if !kinds.iter().any(|kind| type_matches(kind, &value))
                && let Some(coerced) = kinds.iter().find_map(|kind| coerce_primitive(kind, &value))
            {
                value = coerced;
            }
        }
        _ => {}
    }
    match &mut value {
        Value::Object(object) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|v| v.is_object());
            for (key, field) in object.iter_mut() {
                let field_schema = properties.and_then(|p| p.get(key)).or(additional);
                if field_schema.is_some() {
                    *field = coerce(field_schema, field.take());
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|v| v.is_object()) {
                for item in items.iter_mut() {
                    *item = coerce(Some(item_schema), item.take());
                }
            }
        }
        _ => {}
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_like_pi() {
        let schema = json!({
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"]
        });
        let compiled = CompiledToolSchema::new("calc", &schema);
        assert!(compiled.validate(&json!({"expression": "1+1"})).is_ok());
        let error = compiled.validate(&json!({})).unwrap_err().to_string();
        assert!(
            error.starts_with("Validation failed for tool \"calc\":\n  - expression:"),
            "{error}"
        );
        assert!(error.ends_with("Received arguments:\n{}"), "{error}");
        let error = compiled
            .validate(&json!({"expression": 3}))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("  - expression: 3 is not of type"),
            "{error}"
        );
    }

    #[test]
    fn coerces_like_ajv() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"},
            "s": {"type": "string"}, "z": {"type": "null"}, "u": {"type": ["integer", "null"]},
            "list": {"type": "array", "items": {"type": "integer"}},
            "any": {"anyOf": [{"type": "boolean"}, {"type": "integer"}]}
        }});
        let compiled = CompiledToolSchema::new("t", &schema);
        let coerced = compiled
            .validate_and_coerce(
                &json!({"n": "42.5", "i": "42", "b": "true", "s": 7, "z": "",
                "u": null, "list": ["1", 2], "any": "3"}),
            )
            .unwrap();
        assert_eq!(
            coerced,
            json!({"n": 42.5, "i": 42, "b": true, "s": "7", "z": null, "u": null,
            "list": [1, 2], "any": 3})
        );
        assert_eq!(
            coerce(Some(&json!({"type": "number"})), json!(null)),
            json!(0)
        );
        assert_eq!(
            coerce(Some(&json!({"type": "boolean"})), json!(0)),
            json!(false)
        );
        assert_eq!(
            coerce(Some(&json!({"type": "string"})), json!(null)),
            json!("")
        );
        // Invalid coercions are rejected, as AJV does.
        for (kind, value) in [
            ("boolean", json!("1")),
            ("boolean", json!("0")),
            ("null", json!("null")),
            ("integer", json!("42.1")),
        ] {
            let compiled = CompiledToolSchema::new(
                "t",
                &json!({"type": "object", "properties": {"v": {"type": kind}}}),
            );
            assert!(
                compiled.validate_and_coerce(&json!({"v": value})).is_err(),
                "{kind} {value}"
            );
        }
        // JSON strings are not parsed into arrays (pi #5697).
        let compiled = CompiledToolSchema::new(
            "t",
            &json!({"type": "object", "properties": {"v": {"type": "array"}}}),
        );
        assert!(compiled.validate_and_coerce(&json!({"v": "[1]"})).is_err());
    }

    #[test]
    fn broken_schema_is_reported_not_fatal() {
        let compiled = CompiledToolSchema::new("bad", &json!({"type": 12}));
        let error = compiled.validate(&json!({})).unwrap_err();
        assert!(matches!(error, ValidationError::InvalidSchema { .. }));
    }
}
