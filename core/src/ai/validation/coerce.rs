//! pi's AJV-compatible coercion for plain JSON schemas (`coerceWithJsonSchema` in pi-ai's
//! `utils/validation.ts`), compiled into a plan once per schema.
//!
//! The walk follows pi exactly, including what it leaves alone: `allOf` members in sequence,
//! then the first `anyOf` branch whose coerced copy validates, then the same for `oneOf`, then
//! the primitive conversion toward `type` (for a list of types, only when the value matches none
//! of them; the first conversion that changes the value wins), then `properties` and object
//! `additionalProperties` (only when `type` names `object`), then `items` (only when `type`
//! names `array`). `$ref`, `patternProperties`, `prefixItems`, `enum` and `const` are not
//! followed, and JSON text is never parsed into arrays or objects.
//!
//! A union branch is validated *on its own*, as pi compiles it: `$ref`s inside it resolve
//! against the branch, not the tool schema, so a branch `{"$ref": "#/$defs/P"}` never matches
//! here (the final validation, against the whole schema, still resolves it).

use std::collections::HashSet;

use serde_json::{Map, Value};

use jsonschema::Validator;

use super::compile::{self, SchemaError};
use super::js::{self, number_of, number_to_string, string_to_number};

/// How deeply the coercion plan may nest (the schema's own nesting).
const MAX_PLAN_DEPTH: usize = 128;

/// Why coercion stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CoerceError {
    /// pi would dereference `null` here: a `null` where a schema belongs (in `allOf`, `anyOf`,
    /// `oneOf`, or a `properties` entry the arguments use).
    #[error("null where a schema belongs")]
    NullSchema,
    /// A union branch, compiled on its own as pi compiles it, loops (pi overflows its stack).
    #[error("{0}")]
    Branch(SchemaError),
}

/// Why a schema cannot be walked for coercion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the schema nests more than {MAX_PLAN_DEPTH} levels deep")]
pub(crate) struct PlanTooDeep;

/// What coercion does with one schema location.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Nothing (a boolean, string, number or array where a schema object belongs).
    Nothing,
    /// Fail: the schema is `null`.
    NullSchema,
    /// Walk a schema object.
    Walk(Box<Walk>),
}

#[derive(Debug)]
struct Branch {
    plan: Plan,
    /// The branch compiled on its own; `None` when it is not an object or array, or does not
    /// compile (pi then never picks it).
    validator: Option<Result<Validator, SchemaError>>,
}

#[derive(Debug, Default)]
pub(crate) struct Walk {
    all_of: Vec<Plan>,
    any_of: Vec<Branch>,
    one_of: Vec<Branch>,
    types: Vec<String>,
    properties: Vec<(String, Plan)>,
    defined: HashSet<String>,
    additional: Option<Plan>,
    items: Option<ItemsPlan>,
}

#[derive(Debug)]
enum ItemsPlan {
    Every(Plan),
    /// One plan per position; `None` for a position pi skips (a falsy entry).
    Tuple(Vec<Option<Plan>>),
}

impl Plan {
    /// The plan for `schema`; the error says why the schema cannot be walked.
    pub(crate) fn new(schema: &Value) -> Result<Self, PlanTooDeep> {
        Self::build(schema, 0)
    }

    fn build(schema: &Value, depth: usize) -> Result<Self, PlanTooDeep> {
        let map = match schema {
            Value::Null => return Ok(Self::NullSchema),
            Value::Object(map) => map,
            _ => return Ok(Self::Nothing),
        };
        if depth >= MAX_PLAN_DEPTH {
            return Err(PlanTooDeep);
        }
        let depth = depth + 1;
        let mut walk = Walk {
            types: match map.get("type") {
                Some(Value::String(name)) => vec![name.clone()],
                Some(Value::Array(names)) => names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            },
            ..Walk::default()
        };
        if let Some(Value::Array(members)) = map.get("allOf") {
            for member in members {
                walk.all_of.push(Self::build(member, depth)?);
            }
        }
        walk.any_of = Self::branches(map.get("anyOf"), depth)?;
        walk.one_of = Self::branches(map.get("oneOf"), depth)?;
        if walk.types.iter().any(|t| t == "object") {
            if let Some(Value::Object(properties)) = map.get("properties") {
                for (key, schema) in js::entries(properties) {
                    walk.defined.insert(key.clone());
                    walk.properties
                        .push((key.clone(), Self::build(schema, depth)?));
                }
            }
            if let Some(additional @ (Value::Object(_) | Value::Array(_))) =
                map.get("additionalProperties")
            {
                walk.additional = Some(Self::build(additional, depth)?);
            }
        }
        if walk.types.iter().any(|t| t == "array") {
            walk.items = match map.get("items") {
                Some(Value::Array(list)) => Some(ItemsPlan::Tuple(
                    list.iter()
                        .map(|item| {
                            if is_falsy(item) {
                                Ok(None)
                            } else {
                                Self::build(item, depth).map(Some)
                            }
                        })
                        .collect::<Result<_, PlanTooDeep>>()?,
                )),
                Some(item @ Value::Object(_)) => Some(ItemsPlan::Every(Self::build(item, depth)?)),
                _ => None,
            };
        }
        Ok(Self::Walk(Box::new(walk)))
    }

    fn branches(list: Option<&Value>, depth: usize) -> Result<Vec<Branch>, PlanTooDeep> {
        let Some(Value::Array(members)) = list else {
            return Ok(Vec::new());
        };
        members
            .iter()
            .map(|member| {
                Ok(Branch {
                    plan: Self::build(member, depth)?,
                    validator: match member {
                        Value::Object(_) => Some(compile::build(member)),
                        _ => None,
                    },
                })
            })
            .collect()
    }

    /// Coerces `value` in place.
    pub(crate) fn apply(&self, value: &mut Value) -> Result<(), CoerceError> {
        let walk = match self {
            Self::Nothing => return Ok(()),
            Self::NullSchema => return Err(CoerceError::NullSchema),
            Self::Walk(walk) => walk,
        };
        for member in &walk.all_of {
            member.apply(value)?;
        }
        union(&walk.any_of, value)?;
        union(&walk.one_of, value)?;
        let member = walk.types.len() > 1 && walk.types.iter().any(|t| matches_type(value, t));
        if !walk.types.is_empty()
            && !member
            && let Some(coerced) = walk.types.iter().find_map(|t| coerce_primitive(value, t))
        {
            *value = coerced;
        }
        match value {
            Value::Object(map) if walk.types.iter().any(|t| t == "object") => {
                walk.apply_properties(map)?;
            }
            Value::Array(items) => match &walk.items {
                Some(ItemsPlan::Every(plan)) => {
                    for item in items.iter_mut() {
                        plan.apply(item)?;
                    }
                }
                Some(ItemsPlan::Tuple(plans)) => {
                    for (item, plan) in items.iter_mut().zip(plans) {
                        if let Some(plan) = plan {
                            plan.apply(item)?;
                        }
                    }
                }
                None => {}
            },
            _ => {}
        }
        Ok(())
    }
}

impl Walk {
    fn apply_properties(&self, map: &mut Map<String, Value>) -> Result<(), CoerceError> {
        for (key, plan) in &self.properties {
            if let Some(item) = map.get_mut(key) {
                plan.apply(item)?;
            }
        }
        if let Some(additional) = &self.additional {
            for (key, item) in map.iter_mut() {
                if !self.defined.contains(key) {
                    additional.apply(item)?;
                }
            }
        }
        Ok(())
    }
}

/// pi's `coerceWithUnionSchema`: the first branch whose coerced copy validates replaces the
/// value; otherwise it stays as it was.
fn union(branches: &[Branch], value: &mut Value) -> Result<(), CoerceError> {
    for branch in branches {
        let mut candidate = value.clone();
        branch.plan.apply(&mut candidate)?;
        let valid = match &branch.validator {
            Some(Ok(validator)) => validator.is_valid(&candidate),
            Some(Err(error @ SchemaError::Loop(_))) => {
                return Err(CoerceError::Branch(error.clone()));
            }
            _ => false,
        };
        if valid {
            *value = candidate;
            return Ok(());
        }
    }
    Ok(())
}

/// JavaScript falsiness, for the positions of a tuple `items` list pi skips.
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => {
            let n = number_of(n);
            n == 0.0 || n.is_nan()
        }
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// pi's `matchesJsonType` (an unknown type name matches nothing).
fn matches_type(value: &Value, name: &str) -> bool {
    match name {
        "number" | "integer" | "boolean" | "string" | "null" | "array" | "object" => {
            type_matches(name, value)
        }
        _ => false,
    }
}

/// JSON Schema's type names (`integer`: a number with no fraction, 1.0 included).
fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "boolean" => value.is_boolean(),
        "integer" => value.as_number().is_some_and(|n| {
            let n = number_of(n);
            n.is_finite() && n.trunc() == n
        }),
        "number" => value.is_number(),
        "null" => value.is_null(),
        "string" => value.is_string(),
        _ => false,
    }
}

/// A number as the JSON value coercion produces: whole numbers that fit exactly as integers.
pub(crate) fn number_value(n: f64) -> Value {
    if n.trunc() == n && n.abs() < 9_007_199_254_740_992.0 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// pi's `coercePrimitiveByType`; `None` when the value stays as it is.
fn coerce_primitive(value: &Value, name: &str) -> Option<Value> {
    match (name, value) {
        ("number" | "integer", Value::Null) => Some(Value::from(0)),
        ("number" | "integer", Value::Bool(b)) => Some(Value::from(i64::from(*b))),
        ("number" | "integer", Value::String(text)) => {
            if text.trim_matches(js::is_js_whitespace).is_empty() {
                return None;
            }
            let n = string_to_number(text);
            let accepted = if name == "number" {
                n.is_finite()
            } else {
                n.is_finite() && n.trunc() == n
            };
            accepted.then(|| number_value(n))
        }
        ("boolean", Value::Null) => Some(Value::Bool(false)),
        ("boolean", Value::String(text)) => match text.as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ("boolean", Value::Number(n)) => {
            let n = number_of(n);
            if n == 1.0 {
                Some(Value::Bool(true))
            } else if n == 0.0 {
                Some(Value::Bool(false))
            } else {
                None
            }
        }
        ("string", Value::Null) => Some(Value::String(String::new())),
        ("string", Value::Number(n)) => Some(Value::String(number_to_string(number_of(n)))),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("null", Value::String(text)) if text.is_empty() => Some(Value::Null),
        ("null", Value::Bool(false)) => Some(Value::Null),
        ("null", Value::Number(n)) if number_of(n) == 0.0 => Some(Value::Null),
        _ => None,
    }
}

/// JavaScript `===` between two primitives (numbers by value, so 0 equals -0).
pub(crate) fn strictly_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_of(x) == number_of(y),
        (a, b) => a == b,
    }
}
