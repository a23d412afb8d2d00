//! Validation never panics and never recurses without bound, whatever the schema and the
//! arguments: random schema-shaped JSON against random arguments, self-referential schemas, and
//! deep nesting on a thread with a small stack.

use pi_agent::ai::{CompiledToolSchema, ValidationError};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "additionalItems",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$defs",
    "definitions",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minItems",
    "maxItems",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "minProperties",
    "$anchor",
    "$id",
    "a",
    "b",
    "0",
];

const STRINGS: &[&str] = &[
    "object",
    "array",
    "string",
    "number",
    "integer",
    "boolean",
    "null",
    "#",
    "#/$defs/a",
    "#/$defs/b",
    "#/properties/a",
    "#/definitions/a",
    "#a",
    "(",
    "^a",
    "[",
    "\\d+",
    "email",
    "date-time",
    "uri",
    "hostname",
    "regex",
    "",
    "a",
    "b",
    "0",
    "true",
    "1.5",
    "x-y",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..20).prop_map(Value::from),
        (-2.0f64..2.0).prop_map(Value::from),
        proptest::sample::select(STRINGS).prop_map(Value::from),
    ]
}

/// JSON whose object keys are mostly schema keywords, so that schemas come out meaningful.
fn schema_like() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(KEYWORDS), inner), 0..6).prop_map(
                |entries| {
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect::<Map<_, _>>(),
                    )
                }
            ),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_schemas_and_arguments_never_panic(schema in schema_like(), arguments in schema_like()) {
        let compiled = CompiledToolSchema::new("t", &schema);
        let first = compiled.validate_and_coerce(&arguments);
        // Deterministic, and every error renders.
        let second = compiled.validate_and_coerce(&arguments);
        prop_assert_eq!(&first, &second);
        if let Err(error) = first {
            prop_assert!(!error.to_string().is_empty());
        }
        let _ = compiled.validate(&arguments);
    }
}

/// Runs `f` on a thread with a 2 MiB stack, what tokio gives its worker threads (the agent
/// validates there), in whatever profile the tests are built.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .expect("validation overflowed a small stack");
}

/// `{"n": depth, "child": …}` nested `depth` times around `leaf`, built without recursion.
fn chain(depth: usize, leaf: Value, key: &str) -> Value {
    let mut value = leaf;
    for level in 0..depth {
        let mut map = Map::new();
        map.insert("n".into(), Value::from(level));
        map.insert(key.into(), value);
        value = Value::Object(map);
    }
    value
}

/// Drops a deep chain without recursing (serde_json drops values recursively).
fn unchain(mut value: Value, key: &str) {
    while let Some(child) = value.get_mut(key).map(Value::take) {
        value = child;
    }
}

#[test]
fn deep_values_through_a_recursive_schema_stay_on_the_stack() {
    on_small_stack(|| {
        let schema = json!({
            "type": "object",
            "properties": {"child": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}, "n": {"type": "integer"}},
            "required": ["n"]
        });
        let compiled = CompiledToolSchema::new("t", &schema);
        let value = chain(120, json!({"n": 0, "child": null}), "child");
        // The anyOf `$ref` branch loops when validated on its own (pi overflows its stack).
        assert!(matches!(
            compiled.validate_and_coerce(&value),
            Err(ValidationError::InvalidSchema { .. })
        ));
        // Checked without coercion, the whole depth validates, and errors report the full path.
        assert_eq!(compiled.validate(&value), Ok(()));
        unchain(value, "child");
        let bad = chain(120, json!({"n": "x", "child": null}), "child");
        let error = compiled.validate(&bad).unwrap_err().to_string();
        assert!(
            error.contains(&format!("  - {}n: must be integer", "child.".repeat(120))),
            "{error}"
        );
        unchain(bad, "child");
    });
}

#[test]
fn deeper_than_the_limit_is_an_error_not_a_crash() {
    on_small_stack(|| {
        let schema = json!({"$defs": {"node": {"properties": {"c": {"$ref": "#/$defs/node"}}}},
                            "$ref": "#/$defs/node"});
        let compiled = CompiledToolSchema::new("t", &schema);
        // Deeper than 512 evaluation levels, shallow enough for serde_json's recursive clone.
        let value = chain(600, json!({}), "c");
        let result = compiled.validate_and_coerce(&value);
        assert!(
            matches!(result, Err(ValidationError::TooDeep { .. })),
            "{result:?}"
        );
        unchain(value, "c");
    });
}

#[test]
fn deeply_nested_schemas_are_refused() {
    on_small_stack(|| {
        let mut schema = json!({"type": "string"});
        for _ in 0..1000 {
            let mut properties = Map::new();
            properties.insert("a".into(), schema);
            let mut map = Map::new();
            map.insert("type".into(), json!("object"));
            map.insert("properties".into(), Value::Object(properties));
            schema = Value::Object(map);
        }
        let compiled = CompiledToolSchema::new("t", &schema);
        assert!(matches!(
            compiled.validate_and_coerce(&json!({})),
            Err(ValidationError::InvalidSchema { .. })
        ));
        while let Some(child) = schema.pointer_mut("/properties/a").map(Value::take) {
            schema = child;
        }
    });
}

#[test]
fn schemas_at_the_depth_limit_compile_and_report_on_a_small_stack() {
    on_small_stack(|| {
        // 127 nested `properties` (254 JSON levels, under the 256 refused above) and arguments
        // 127 objects deep (under the 128 refused): the crate's recursive compile and
        // validation both fit.
        let mut schema = json!({"type": "string"});
        let mut value = json!(5);
        for _ in 0..127 {
            schema = json!({"type": "object", "properties": {"a": schema}});
            value = json!({"a": value});
        }
        let compiled = CompiledToolSchema::new("t", &schema);
        let error = compiled.validate(&value).unwrap_err().to_string();
        assert!(
            error.contains(&format!("  - {}a: must be string", "a.".repeat(126))),
            "{error}"
        );
        // The same schema again is the cached validator, not a second compilation.
        let again = CompiledToolSchema::new("t2", &schema);
        assert!(
            again
                .validate(&value)
                .unwrap_err()
                .to_string()
                .contains("\"t2\"")
        );
    });
}

#[test]
fn a_report_over_many_unexpected_keys_is_linear() {
    // Every key of 20,000 is unexpected (numeric keys: JavaScript orders them apart), and each
    // is also an error of `additionalProperties`' schema in the second case. Looking up each
    // key's position by recomputing the object's key order made the report quadratic: minutes
    // here, where it now takes milliseconds. (A hang guard, not a timing: generous on purpose.)
    let arguments = Value::Object(
        (0..20_000)
            .map(|i| (i.to_string(), json!("x")))
            .collect::<Map<String, Value>>(),
    );
    let schemas = [
        json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false}),
        json!({"type": "object", "additionalProperties": {"type": "integer"}}),
    ];
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for schema in schemas {
            let compiled = CompiledToolSchema::new("t", &schema);
            let report = compiled
                .validate_and_coerce(&arguments)
                .unwrap_err()
                .to_string();
            let _ = done.send(report);
        }
    });
    for _ in 0..2 {
        let report = finished
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the report was rendered");
        assert!(report.contains("\n  - 0: "), "{report}");
    }
}
