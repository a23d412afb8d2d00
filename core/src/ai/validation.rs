//! Tool-argument validation against the tool's JSON Schema, as pi's `validateToolArguments` does
//! it: the `jsonschema` crate validates (drafts, `$ref`, formats, ECMA-262 patterns), and this
//! module adds pi's AJV-compatible coercion and renders the crate's typed errors as pi's report.
//!
//! A schema is compiled once ([`CompiledToolSchema::new`]; what it compiles to is cached by
//! schema, so a new `CompiledToolSchema` for a schema seen before costs a look-up) and reused
//! for every call. Arguments
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
//! from pi itself, pins all of this down; the few cases where the crate judges differently from
//! pi's TypeBox are listed in the README ("Differences from pi").
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
//! ECMA-262 rejects, a malformed keyword, a `$ref` that does not resolve), that loops
//! (`{"$ref": "#"}`) or that nests too deep gives [`ValidationError::InvalidSchema`], which the
//! agent turns into an error tool result; arguments nested too deep give
//! [`ValidationError::TooDeep`].

mod cache;
mod coerce;
mod compile;

/// Frees the process-wide cache of compiled tool schemas (for a clean exit under a leak
/// checker: the C ABI's `pi_shutdown`); later validations compile their schemas again.
pub fn release_validators() {
    cache::clear();
}
mod js;
mod render;

pub(crate) use self::render::resolve as resolve_reference;

use std::sync::Arc;

use jsonschema::Validator;
use serde_json::Value;

use self::cache::Compiled;
use self::coerce::strictly_equal;
use self::compile::{SchemaError, depth_exceeds};
use crate::ai::types::{Tool, ToolCall};

/// How deeply arguments may nest for [`CompiledToolSchema::validate_and_coerce`] and
/// [`CompiledToolSchema::validate`] (the validator recurses once per level).
const MAX_EVAL_DEPTH: usize = 128;

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
    /// The arguments nest deeper than [`MAX_ARGUMENT_DEPTH`] containers ([`check_argument_depth`],
    /// which the agent runs on every tool call before anything reads its arguments). Streamed
    /// JSON is cut at 127 levels, so arguments that were cut always land here, and a tool never
    /// runs with a different value than the model sent.
    #[error(
        "Arguments for tool \"{tool}\" are nested more than {limit} levels deep (the limit of \
         tool-call arguments); the tool was not run"
    )]
    ArgumentsTooDeep {
        /// The tool's name.
        tool: String,
        /// The limit ([`MAX_ARGUMENT_DEPTH`]).
        limit: usize,
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

/// The deepest nesting of objects and arrays accepted in tool-call arguments (`{}` is 1 level).
/// Deeper arguments get [`ValidationError::ArgumentsTooDeep`]. It is below the 127 levels at
/// which streamed JSON is cut (so a cut value is always refused, never passed on) and far
/// above what any real tool schema nests.
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// `Err(ArgumentsTooDeep)` when `arguments` nest more than [`MAX_ARGUMENT_DEPTH`] containers.
/// Iterative: a hostile value cannot exhaust the stack.
pub fn check_argument_depth(tool: &str, arguments: &Value) -> Result<(), ValidationError> {
    if depth_exceeds(arguments, MAX_ARGUMENT_DEPTH) {
        return Err(ValidationError::ArgumentsTooDeep {
            tool: tool.to_owned(),
            limit: MAX_ARGUMENT_DEPTH,
        });
    }
    Ok(())
}

/// The JSON type names a schema's `type` may hold.
const JSON_TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Schema keywords whose value is one subschema.
const SUBSCHEMA_KEYWORDS: [&str; 9] = [
    "items",
    "additionalItems",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
];

/// Schema keywords whose value is a list of subschemas.
const SUBSCHEMA_LIST_KEYWORDS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];

/// Schema keywords whose value is an object of subschemas.
const SUBSCHEMA_MAP_KEYWORDS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// A tool's `parameters` that cannot be a schema of its arguments ([`check_tool_parameters`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ToolParametersError {
    /// Where: `parameters`, `parameters.properties.a.type`, ...
    pub path: String,
    /// What is wrong there.
    pub reason: String,
    /// `true` when `parameters` is not an object at all (a type error for the binding).
    pub not_an_object: bool,
}

/// Checks a tool's `parameters` when the tool is defined (the C ABI and Python do): it must be
/// a JSON object (a schema), and every `type` in it, at any depth, a JSON type name or a list
/// of them. The error names the place (`parameters.properties.a.type: ...`). The validator
/// refuses such a schema too, but only at the first call; this check refuses it when the tool
/// is defined, naming the place.
pub fn check_tool_parameters(parameters: &Value) -> Result<(), ToolParametersError> {
    if !parameters.is_object() {
        return Err(ToolParametersError {
            path: "parameters".to_owned(),
            not_an_object: true,
            reason: format!(
                "a tool's parameters must be a JSON Schema object, not {}",
                match parameters {
                    Value::Null => "null",
                    Value::Bool(_) => "a boolean",
                    Value::Number(_) => "a number",
                    Value::String(_) => "a string",
                    Value::Array(_) => "an array",
                    Value::Object(_) => "an object",
                }
            ),
        });
    }
    let mut stack: Vec<(&Value, String)> = vec![(parameters, "parameters".to_owned())];
    while let Some((schema, path)) = stack.pop() {
        let Value::Object(map) = schema else {
            // `true`/`false` are schemas too; anything else is left to the validator.
            continue;
        };
        if let Some(kind) = map.get("type") {
            let valid = match kind {
                Value::String(name) => JSON_TYPES.contains(&name.as_str()),
                Value::Array(names) => {
                    !names.is_empty()
                        && names
                            .iter()
                            .all(|name| name.as_str().is_some_and(|n| JSON_TYPES.contains(&n)))
                }
                _ => false,
            };
            if !valid {
                return Err(ToolParametersError {
                    path: format!("{path}.type"),
                    reason: format!(
                        "must be a JSON type name ({}) or a list of them, not {kind}",
                        JSON_TYPES.join(", ")
                    ),
                    not_an_object: false,
                });
            }
        }
        for keyword in SUBSCHEMA_KEYWORDS {
            if let Some(sub) = map.get(keyword) {
                stack.push((sub, format!("{path}.{keyword}")));
            }
        }
        for keyword in SUBSCHEMA_LIST_KEYWORDS {
            if let Some(Value::Array(list)) = map.get(keyword) {
                for (index, sub) in list.iter().enumerate() {
                    stack.push((sub, format!("{path}.{keyword}.{index}")));
                }
            }
        }
        for keyword in SUBSCHEMA_MAP_KEYWORDS {
            if let Some(Value::Object(subs)) = map.get(keyword) {
                for (name, sub) in subs {
                    stack.push((sub, format!("{path}.{keyword}.{name}")));
                }
            }
        }
    }
    Ok(())
}

/// A tool schema compiled for repeated validation. What it compiles to (the `jsonschema`
/// validator, pi's coercion plan) is shared by every `CompiledToolSchema` of the same schema (a
/// process-wide cache keyed by the schema), so compiling one per tool per turn costs a look-up,
/// not a compilation.
pub struct CompiledToolSchema {
    tool: String,
    /// `true` for an answer's output schema: the report then speaks of the output.
    output: bool,
    compiled: Arc<Compiled>,
}

impl std::fmt::Debug for CompiledToolSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledToolSchema")
            .field("tool", &self.tool)
            .field("valid_schema", &self.compiled.validator.is_ok())
            .finish()
    }
}

impl CompiledToolSchema {
    /// Compiles `schema` for the tool named `tool` (or finds it compiled). A broken schema is
    /// remembered and reported on every validation instead of failing here, so one bad tool
    /// cannot break an agent.
    pub fn new(tool: impl Into<String>, schema: &Value) -> Self {
        // Before any recursive step (cloning, printing, compiling): a schema too deep for them
        // is refused as it is.
        if depth_exceeds(schema, compile::MAX_SCHEMA_DEPTH) {
            return Self {
                tool: tool.into(),
                output: false,
                compiled: Arc::new(Compiled {
                    schema: Value::Null,
                    validator: Err(SchemaError::TooDeep),
                    plan: Err(coerce::PlanTooDeep),
                }),
            };
        }
        Self {
            tool: tool.into(),
            output: false,
            compiled: cache::compiled(schema),
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
        match (&self.compiled.validator, &self.compiled.plan) {
            (Err(error), _) => Some(error.to_string()),
            (_, Err(error)) => Some(error.to_string()),
            _ => None,
        }
    }

    fn invalid_schema(&self, message: impl Into<String>) -> ValidationError {
        ValidationError::InvalidSchema {
            tool: self.tool.clone(),
            message: message.into(),
        }
    }

    fn validator(&self, arguments: &Value) -> Result<&Validator, ValidationError> {
        let validator = self
            .compiled
            .validator
            .as_ref()
            .map_err(|error| self.invalid_schema(error.to_string()))?;
        if depth_exceeds(arguments, MAX_EVAL_DEPTH) {
            return Err(ValidationError::TooDeep {
                tool: self.tool.clone(),
            });
        }
        Ok(validator)
    }

    /// pi's `validateToolArguments`: coerces a copy of `arguments` toward the schema (see the
    /// module docs) and returns it when it validates; otherwise pi's report, which shows the
    /// arguments as received.
    pub fn validate_and_coerce(&self, arguments: &Value) -> Result<Value, ValidationError> {
        let validator = self.validator(arguments)?;
        let plan = self
            .compiled
            .plan
            .as_ref()
            .map_err(|error| self.invalid_schema(error.to_string()))?;
        let mut coerced = arguments.clone();
        plan.apply(&mut coerced)
            .map_err(|error| self.invalid_schema(error.to_string()))?;
        // pi's quirk for arguments that are not an object: when coercion changed them, it
        // returns the coerced value if valid and the original otherwise, without an error.
        if !matches!(arguments, Value::Object(_) | Value::Array(_))
            && !strictly_equal(arguments, &coerced)
        {
            let valid = validator.is_valid(&coerced);
            return Ok(if valid { coerced } else { arguments.clone() });
        }
        self.report(validator, &coerced, arguments)?;
        Ok(coerced)
    }

    /// Checks `arguments` as they are, without coercion.
    pub fn validate(&self, arguments: &Value) -> Result<(), ValidationError> {
        self.report(self.validator(arguments)?, arguments, arguments)
    }

    /// `Ok` when `value` validates, else pi's report of its errors, showing `received`.
    fn report(
        &self,
        validator: &Validator,
        value: &Value,
        received: &Value,
    ) -> Result<(), ValidationError> {
        if validator.is_valid(value) {
            return Ok(());
        }
        let problems = render::problems(&self.compiled.schema, value, validator.iter_errors(value));
        let lines = if problems.is_empty() {
            "Unknown validation error".to_owned()
        } else {
            problems
                .iter()
                .map(|problem| format!("  - {}: {}", problem.path, problem.message))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let (what, received_what) = if self.output {
            ("output", "output")
        } else {
            ("tool", "arguments")
        };
        Err(ValidationError::InvalidArguments {
            tool: self.tool.clone(),
            report: format!(
                "Validation failed for {what} \"{}\":\n{lines}\n\nReceived {received_what}:\n{}",
                self.tool,
                js::stringify_pretty(received)
            ),
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
    fn tool_parameters_must_be_an_object_with_readable_types() {
        assert!(check_tool_parameters(&json!({"type": "object"})).is_ok());
        assert!(
            check_tool_parameters(&json!({"type": "object", "properties": {
                "a": {"type": ["string", "null"]}, "b": {"anyOf": [{"type": "integer"}, true]}
            }}))
            .is_ok()
        );
        let error = check_tool_parameters(&json!(5)).unwrap_err().to_string();
        assert_eq!(
            error,
            "parameters: a tool's parameters must be a JSON Schema object, not a number"
        );
        let error = check_tool_parameters(&json!({"type": 12}))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("parameters.type: must be a JSON type name"),
            "{error}"
        );
        let nested = json!({"type": "object", "properties": {"a": {"items": {"type": "strin"}}}});
        let error = check_tool_parameters(&nested).unwrap_err();
        assert_eq!(error.path, "parameters.properties.a.items.type");
        let error = error.to_string();
        assert!(
            error.starts_with("parameters.properties.a.items.type:"),
            "{error}"
        );
        assert!(check_tool_parameters(&json!({"type": []})).is_err());
    }

    #[test]
    fn broken_schemas_are_reported_not_fatal() {
        // `true` is a schema (it accepts anything); pi throws there (README "Differences").
        assert!(
            CompiledToolSchema::new("any", &json!(true))
                .validate(&json!({"a": 1}))
                .is_ok()
        );
        for schema in [
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
