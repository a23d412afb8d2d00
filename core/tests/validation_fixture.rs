//! Replays `tests/fixtures/pi/validation.json`, recorded from pi 0.73.1's own
//! `validateToolArguments` by `scripts/pi-fixtures/record-validation.mjs`: every case must give
//! the same coerced arguments, or a byte-identical error report, or (where pi throws something
//! other than a validation error: a schema it cannot compile, a `$ref` loop) an error too.

use pi_agent::ai::validation::{CompiledToolSchema, ValidationError};
use serde_json::Value;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/pi/validation.json"
    );
    let text = std::fs::read_to_string(path).expect("fixture");
    serde_json::from_str(&text).expect("fixture JSON")
}

/// The raw text when the case has one (it keeps key order and number spelling that a
/// JavaScript round trip loses), else the value.
fn input(case: &Value, raw: &str, value: &str) -> Value {
    match case.get(raw).and_then(Value::as_str) {
        Some(text) => serde_json::from_str(text).expect("raw JSON"),
        None => case[value].clone(),
    }
}

/// Every number as the double JavaScript holds, so 42 and 42.0 compare equal.
fn normalize(value: &Value) -> Value {
    match value {
        Value::Number(n) => serde_json::Number::from_f64(n.as_f64().unwrap_or(f64::NAN))
            .map_or(Value::Null, Value::Number),
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| (key.clone(), normalize(item)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn every_recorded_case_matches_pi() {
    let fixture = fixture();
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() > 300, "the fixture lost its cases");
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap_or("?");
        let tool = case["tool"].as_str().unwrap_or("t");
        let schema = input(case, "schemaJson", "schema");
        let arguments = input(case, "argumentsJson", "arguments");
        let result = CompiledToolSchema::new(tool, &schema).validate_and_coerce(&arguments);
        let verdict = if let Some(expected) = case.get("ok") {
            match &result {
                Ok(value) if normalize(value) == normalize(expected) => None,
                other => Some(format!("expected ok {expected}, got {other:?}")),
            }
        } else if let Some(expected) = case.get("error").and_then(Value::as_str) {
            match &result {
                Err(ValidationError::InvalidArguments { report, .. }) if report == expected => None,
                Err(ValidationError::InvalidArguments { report, .. }) => {
                    Some(format!("expected\n{expected}\n--- got\n{report}"))
                }
                other => Some(format!("expected\n{expected}\n--- got {other:?}")),
            }
        } else {
            match &result {
                Err(ValidationError::InvalidSchema { .. }) => None,
                other => Some(format!(
                    "pi throws {:?}; expected an invalid-schema error, got {other:?}",
                    case["thrown"]
                )),
            }
        };
        if let Some(message) = verdict {
            failures.push(format!("== {name}\n{message}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from pi:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
