//! Everything compiled from one tool schema (its validator, pi's coercion plan with the union
//! branches' own validators, and a copy of the schema the reports are rendered against), made
//! once per schema and shared: the agent makes a `CompiledToolSchema` per called tool per batch
//! of tool calls, and that must cost a look-up, not a compilation.
//!
//! The cache is process-wide and keyed by the schema's content, compared in order (the order of
//! a schema's keys decides the order of a report's lines), so two tools with equal schemas
//! share one entry and a tool whose schema changes gets a new one. It is looked up by a hash of
//! the schema and confirmed by comparing it with the stored copy: neither allocates.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use jsonschema::Validator;
use serde_json::{Number, Value};

use super::coerce::{Plan, PlanTooDeep};
use super::compile::{self, SchemaError};

/// How many compiled schemas the cache keeps; past that, the one added first goes.
const CAPACITY: usize = 256;

/// Everything compiled from one schema.
pub(crate) struct Compiled {
    /// The schema as compiled (the reports are rendered against it).
    pub(crate) schema: Value,
    /// The `jsonschema` validator, or why the schema cannot be compiled.
    pub(crate) validator: Result<Validator, SchemaError>,
    /// pi's coercion plan, or why the schema cannot be walked.
    pub(crate) plan: Result<Plan, PlanTooDeep>,
}

impl Compiled {
    /// Compiles `schema` without the cache. The caller has checked its depth.
    fn new(schema: &Value) -> Self {
        Self {
            schema: schema.clone(),
            validator: compile::build(schema),
            plan: Plan::new(schema),
        }
    }
}

/// The compiled schemas with their hashes, oldest first.
type Cache = VecDeque<(u64, Arc<Compiled>)>;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// Empties the cache (the compiled schemas still in use stay alive with their users).
pub(crate) fn clear() {
    cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
}

/// What `schema` compiles to, compiled on first use and shared afterwards. The caller has
/// checked that `schema` is not nested too deep for the walks here and the compilers.
pub(crate) fn compiled(schema: &Value) -> Arc<Compiled> {
    let hash = fingerprint(schema);
    let find = |cache: &Cache| {
        cache
            .iter()
            .find(|(known, entry)| *known == hash && same(&entry.schema, schema))
            .map(|(_, entry)| Arc::clone(entry))
    };
    if let Some(found) = find(&cache().lock().unwrap_or_else(PoisonError::into_inner)) {
        return found;
    }
    // Compiled outside the lock: a big schema must not stall every other validation.
    let built = Arc::new(Compiled::new(schema));
    let mut cache = cache().lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = find(&cache) {
        return found;
    }
    if cache.len() >= CAPACITY {
        cache.pop_front();
    }
    cache.push_back((hash, Arc::clone(&built)));
    built
}

/// A hash of `value`'s content, keys in order. Iterative.
fn fingerprint(value: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Null => hasher.write_u8(0),
            Value::Bool(flag) => hasher.write_u8(1 + u8::from(*flag)),
            Value::Number(number) => {
                hasher.write_u8(3);
                number.hash(&mut hasher);
            }
            Value::String(text) => {
                hasher.write_u8(4);
                text.hash(&mut hasher);
            }
            Value::Array(items) => {
                hasher.write_u8(5);
                hasher.write_usize(items.len());
                stack.extend(items.iter().rev());
            }
            Value::Object(map) => {
                hasher.write_u8(6);
                hasher.write_usize(map.len());
                for key in map.keys() {
                    key.hash(&mut hasher);
                }
                stack.extend(map.values().rev());
            }
        }
    }
    hasher.finish()
}

/// Whether `a` and `b` are the same JSON written the same way: keys in the same order, and
/// numbers of the same kind (`1` is not `1.0`, `-0.0` is not `0.0`), as their printed texts
/// would compare. Iterative.
fn same(a: &Value, b: &Value) -> bool {
    let mut stack = vec![(a, b)];
    while let Some(pair) = stack.pop() {
        match pair {
            (Value::Null, Value::Null) => {}
            (Value::Bool(a), Value::Bool(b)) if a == b => {}
            (Value::Number(a), Value::Number(b)) if same_number(a, b) => {}
            (Value::String(a), Value::String(b)) if a == b => {}
            (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
                stack.extend(a.iter().zip(b));
            }
            (Value::Object(a), Value::Object(b)) if a.len() == b.len() => {
                for ((key_a, a), (key_b, b)) in a.iter().zip(b) {
                    if key_a != key_b {
                        return false;
                    }
                    stack.push((a, b));
                }
            }
            _ => return false,
        }
    }
    true
}

fn same_number(a: &Number, b: &Number) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_f64() && b.is_f64() => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_schemas_share_an_entry_and_different_ones_do_not() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let first = compiled(&schema);
        assert!(Arc::ptr_eq(&first, &compiled(&schema.clone())));
        for other in [
            json!({"type": "object", "properties": {"a": {"type": "number"}}}),
            json!({"properties": {"a": {"type": "integer"}}, "type": "object"}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}}}),
        ] {
            assert!(!Arc::ptr_eq(&first, &compiled(&other)), "{other}");
        }
    }

    #[test]
    fn sameness_follows_the_printed_text() {
        let cases = [
            (json!({"a": 1, "b": 2}), json!({"a": 1, "b": 2}), true),
            (json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1}), false),
            (json!({"a": 1}), json!({"a": 1.0}), false),
            (json!({"a": 0.0}), json!({"a": -0.0}), false),
            (json!({"a": -3}), json!({"a": -3}), true),
            (
                json!([1, [2, {"x": null}]]),
                json!([1, [2, {"x": null}]]),
                true,
            ),
            (
                json!([1, [2, {"x": null}]]),
                json!([1, [2, {"x": false}]]),
                false,
            ),
            (json!([1, 2]), json!([1, 2, 3]), false),
            (json!({"a": "x"}), json!({"a": "y"}), false),
        ];
        for (a, b, expected) in cases {
            assert_eq!(same(&a, &b), expected, "{a} vs {b}");
            let (text_a, text_b) = (a.to_string(), b.to_string());
            assert_eq!(text_a == text_b, expected, "{a} vs {b}");
            if expected {
                assert_eq!(fingerprint(&a), fingerprint(&b), "{a}");
            }
        }
        // Keys and values are told apart, as are levels.
        assert_ne!(
            fingerprint(&json!({"a": "b"})),
            fingerprint(&json!({"b": "a"}))
        );
        assert_ne!(fingerprint(&json!([[1], 2])), fingerprint(&json!([[1, 2]])));
    }
}
