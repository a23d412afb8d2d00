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
            validator: jsonschema::validator_for(schema).map_err(|error| error.to_string()),
        }
    }

    /// Checks `arguments`; returns them unchanged when they are valid.
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
    fn broken_schema_is_reported_not_fatal() {
        let compiled = CompiledToolSchema::new("bad", &json!({"type": 12}));
        let error = compiled.validate(&json!({})).unwrap_err();
        assert!(matches!(error, ValidationError::InvalidSchema { .. }));
    }
}
