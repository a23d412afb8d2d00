//! Tool-argument validation against the tool's JSON Schema, as pi's `validateToolArguments` does
//! it (TypeBox's validator plus pi's AJV-compatible coercion for plain JSON schemas).
//!
//! A schema is compiled once ([`CompiledToolSchema::new`]) and reused for every call. Arguments
//! are coerced toward the schema (`"42"` → 42 for a number, `"true"` → true…) and the coerced
//! copy is returned when it validates. Otherwise the error is pi's report, word for word, which
//! is what the model reads in the error tool result:
//!
//! ```text
//! Validation failed for tool "calc":
//!   - expression: must have required properties expression
//!   - precision: must be number
//!
//! Received arguments:
//! {
//!   "precision": "high"
//! }
//! ```
//!
//! The report lists at most eight problems, in TypeBox's order, with pi's paths (`a.b.0.c`,
//! `root` for the arguments object itself); the arguments are printed exactly as JavaScript's
//! `JSON.stringify(args, null, 2)` prints them. `tests/fixtures/pi/validation.json`, recorded
//! from pi itself, pins all of this down.
//!
//! ```
//! use pi_agent::ai::CompiledToolSchema;
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "number"}}});
//! let compiled = CompiledToolSchema::new("t", &schema);
//! assert_eq!(compiled.validate_and_coerce(&json!({"a": "4"})).unwrap(), json!({"a": 4}));
//! let report = compiled.validate_and_coerce(&json!({})).unwrap_err().to_string();
//! assert_eq!(report, "Validation failed for tool \"t\":\n  - a: must have required properties a\n\nReceived arguments:\n{}");
//! ```
//!
//! Nothing here panics or recurses without bound: a schema that cannot be compiled (a regex
//! JavaScript rejects, a `$ref` to something that is not a schema) or that loops (`{"$ref": "#"}`)
//! gives [`ValidationError::InvalidSchema`], which the agent turns into an error tool result.

mod coerce;
mod evaluate;
mod format;
mod idna;
mod js;
mod js_regex;
mod schema;

use serde_json::Value;

use self::coerce::{CoerceError, Plan, strictly_equal};
use self::evaluate::{Evaluation, Fault, MAX_EVAL_DEPTH};
use self::schema::Compiled;
use crate::ai::types::{Tool, ToolCall};

/// Why arguments were rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// No tool has the call's name (pi's `validateToolCall`).
    #[error("Tool \"{name}\" not found")]
    ToolNotFound {
        /// The name the model used.
        name: String,
    },
    /// The tool's own schema cannot be used: it does not compile, or it loops.
    #[error("Invalid JSON Schema for tool \"{tool}\": {message}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// What is wrong with the schema.
        message: String,
    },
    /// The arguments nest deeper than validation follows.
    #[error("Arguments for tool \"{tool}\" nest more than {MAX_EVAL_DEPTH} levels deep")]
    TooDeep {
        /// The tool's name.
        tool: String,
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
    /// `true` for an answer's output schema: the report then speaks of the output.
    output: bool,
    compiled: Result<Compiled, String>,
    plan: Result<Plan, String>,
}

impl std::fmt::Debug for CompiledToolSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledToolSchema")
            .field("tool", &self.tool)
            .field("valid_schema", &self.compiled.is_ok())
            .finish()
    }
}

impl CompiledToolSchema {
    /// Compiles `schema` for the tool named `tool`. A broken schema is remembered and reported
    /// on every validation instead of failing here, so one bad tool cannot break an agent.
    pub fn new(tool: impl Into<String>, schema: &Value) -> Self {
        Self {
            tool: tool.into(),
            output: false,
            compiled: Compiled::new(schema),
            plan: Plan::new(schema),
        }
    }

    /// Compiles the output schema named `name` (its reports say "output", not "tool").
    pub(crate) fn for_output(name: impl Into<String>, schema: &Value) -> Self {
        Self {
            output: true,
            ..Self::new(name, schema)
        }
    }

    /// Why the schema cannot be used, if it cannot.
    pub(crate) fn schema_error(&self) -> Option<String> {
        self.compiled
            .as_ref()
            .err()
            .or(self.plan.as_ref().err())
            .cloned()
    }

    fn invalid_schema(&self, message: impl Into<String>) -> ValidationError {
        ValidationError::InvalidSchema {
            tool: self.tool.clone(),
            message: message.into(),
        }
    }

    fn fault(&self, fault: Fault) -> ValidationError {
        match fault {
            Fault::Loop(reference) => self.invalid_schema(format!(
                "$ref \"{reference}\" leads back to itself without consuming any input"
            )),
            Fault::TooDeep => ValidationError::TooDeep {
                tool: self.tool.clone(),
            },
        }
    }

    fn compiled(&self) -> Result<&Compiled, ValidationError> {
        self.compiled
            .as_ref()
            .map_err(|message| self.invalid_schema(message.clone()))
    }

    /// pi's `validateToolArguments`: coerces a copy of `arguments` toward the schema (see the
    /// module docs) and returns it when it validates; otherwise pi's report, which shows the
    /// arguments as received.
    pub fn validate_and_coerce(&self, arguments: &Value) -> Result<Value, ValidationError> {
        let compiled = self.compiled()?;
        let plan = self
            .plan
            .as_ref()
            .map_err(|message| self.invalid_schema(message.clone()))?;
        let mut coerced = arguments.clone();
        plan.apply(&mut coerced).map_err(|error| match error {
            CoerceError::NullSchema => self.invalid_schema("null where a schema belongs"),
            CoerceError::Fault(fault) => self.fault(fault),
        })?;
        let check = |value: &Value| Evaluation::new(compiled).check(value);
        // pi's quirk for arguments that are not an object: when coercion changed them, it
        // returns the coerced value if valid and the original otherwise, without an error.
        if !matches!(arguments, Value::Object(_) | Value::Array(_))
            && !strictly_equal(arguments, &coerced)
        {
            let valid = check(&coerced).map_err(|fault| self.fault(fault))?;
            return Ok(if valid { coerced } else { arguments.clone() });
        }
        self.report(compiled, &coerced, arguments)?;
        Ok(coerced)
    }

    /// Checks `arguments` as they are, without coercion.
    pub fn validate(&self, arguments: &Value) -> Result<(), ValidationError> {
        self.report(self.compiled()?, arguments, arguments)
    }

    /// `Ok` when `value` validates, else pi's report of its errors, showing `received`.
    fn report(
        &self,
        compiled: &Compiled,
        value: &Value,
        received: &Value,
    ) -> Result<(), ValidationError> {
        if Evaluation::new(compiled)
            .check(value)
            .map_err(|fault| self.fault(fault))?
        {
            return Ok(());
        }
        let problems = Evaluation::new(compiled)
            .errors(value)
            .map_err(|fault| self.fault(fault))?;
        let lines = if problems.is_empty() {
            "Unknown validation error".to_owned()
        } else {
            problems
                .iter()
                .map(|problem| format!("  - {}: {}", problem.path, problem.message))
                .collect::<Vec<_>>()
                .join("\n")
        };
        Err(ValidationError::InvalidArguments {
            tool: self.tool.clone(),
            report: if self.output {
                format!(
                    "Validation failed for output \"{}\":\n{lines}\n\nReceived output:\n{}",
                    self.tool,
                    js::stringify_pretty(received)
                )
            } else {
                format!(
                    "Validation failed for tool \"{}\":\n{lines}\n\nReceived arguments:\n{}",
                    self.tool,
                    js::stringify_pretty(received)
                )
            },
        })
    }
}

/// pi's `validateToolArguments(tool, toolCall)`: validates (and coerces) the call's arguments
/// against the tool's schema. Compiles the schema each time; keep a [`CompiledToolSchema`] to
/// validate many calls.
pub fn validate_tool_arguments(tool: &Tool, call: &ToolCall) -> Result<Value, ValidationError> {
    CompiledToolSchema::new(call.name.clone(), &tool.parameters)
        .validate_and_coerce(&call.arguments)
}

/// pi's `validateToolCall(tools, toolCall)`: finds the tool by exact name, then
/// [`validate_tool_arguments`].
pub fn validate_tool_call(tools: &[Tool], call: &ToolCall) -> Result<Value, ValidationError> {
    let tool = tools
        .iter()
        .find(|tool| tool.name == call.name)
        .ok_or_else(|| ValidationError::ToolNotFound {
            name: call.name.clone(),
        })?;
    validate_tool_arguments(tool, call)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn broken_schemas_are_reported_not_fatal() {
        for schema in [
            json!(true),
            json!(12),
            json!({"properties": {"a": {"pattern": "("}}}),
            json!({"properties": {"a": {"$ref": "#/$defs/N"}}, "$defs": {"N": 5}}),
        ] {
            let compiled = CompiledToolSchema::new("bad", &schema);
            let error = compiled.validate_and_coerce(&json!({"a": 1})).unwrap_err();
            assert!(
                matches!(error, ValidationError::InvalidSchema { .. }),
                "{schema}: {error}"
            );
        }
    }

    #[test]
    fn ref_loops_end_in_an_error() {
        for schema in [
            json!({"$ref": "#"}),
            json!({"properties": {"a": {"$ref": "#/$defs/X"}},
                   "$defs": {"X": {"$ref": "#/$defs/Y"}, "Y": {"allOf": [{"$ref": "#/$defs/X"}]}}}),
            json!({"type": "object", "properties": {"n": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}}),
        ] {
            let compiled = CompiledToolSchema::new("loop", &schema);
            let error = compiled
                .validate_and_coerce(&json!({"a": 1, "n": {}}))
                .unwrap_err();
            assert!(
                error.to_string().contains("leads back to itself"),
                "{schema}: {error}"
            );
        }
    }

    #[test]
    fn tool_call_lookup() {
        let tool = Tool {
            name: "add".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {"a": {"type": "number"}}}),
        };
        let call = |name: &str| ToolCall {
            id: "1".into(),
            name: name.into(),
            arguments: json!({"a": "2"}),
            thought_signature: None,
        };
        assert_eq!(
            validate_tool_call(std::slice::from_ref(&tool), &call("add")).unwrap(),
            json!({"a": 2})
        );
        assert_eq!(
            validate_tool_call(&[tool], &call("sub"))
                .unwrap_err()
                .to_string(),
            "Tool \"sub\" not found"
        );
    }
}
