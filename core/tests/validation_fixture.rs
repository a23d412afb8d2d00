//! Replays `tests/fixtures/pi/validation.json`, recorded from pi 0.73.1's own
//! `validateToolArguments` by `scripts/pi-fixtures/record-validation.mjs`: every case must give
//! the same coerced arguments, or a byte-identical error report, or (where pi throws something
//! other than a validation error: a schema it cannot compile, a `$ref` loop) an error too.
//!
//! The cases where the `jsonschema` crate cannot give pi's answer are listed, each with its
//! reason and our answer, in `tests/fixtures/validation_differences.json` (README "Differences
//! from pi" explains each reason); for those the test asserts our documented answer instead.
//! `PI_RECORD_VALIDATION_DIFFERENCES=1` rewrites that file from the current answers.

use pi_agent::ai::{CompiledToolSchema, ValidationError};
use serde_json::{Map, Value, json};

const DIFFERENCES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/validation_differences.json"
);

/// Why a case differs, by the start of its name (the README's list uses the same words).
const REASONS: &[(&str, &str)] = &[
    (
        "type/",
        "a type name TypeBox ignores or invents is a schema error",
    ),
    ("bad-schema/", "a malformed keyword is a schema error"),
    (
        "coerce/tuple-items-falsy-entries",
        "a malformed keyword is a schema error",
    ),
    ("ref/unresolvable", "an unresolvable $ref is a schema error"),
    (
        "ref/remote-unresolvable",
        "an unresolvable $ref is a schema error",
    ),
    (
        "ref/mutual-loop-absent",
        "a $ref loop is a schema error even where the arguments do not reach it",
    ),
    (
        "root/true-schema",
        "true as the whole schema accepts anything",
    ),
    ("format", "the crate's format checks"),
    ("pattern-more/", "the crate's ECMA-262 regex engine"),
    (
        "array/unique-items-zero-and-negative-zero",
        "uniqueItems compares 0 and -0 as equal",
    ),
];

/// Our answer to a case, as the differences file records it.
fn answer(result: &Result<Value, ValidationError>) -> Value {
    match result {
        Ok(value) => json!({"ok": value}),
        Err(ValidationError::InvalidArguments { report, .. }) => json!({"error": report}),
        Err(other) => json!({"invalidSchema": other.to_string()}),
    }
}

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
    let recording = std::env::var_os("PI_RECORD_VALIDATION_DIFFERENCES").is_some();
    let documented: Map<String, Value> = if recording {
        Map::new()
    } else {
        serde_json::from_str(&std::fs::read_to_string(DIFFERENCES).expect("differences file"))
            .expect("differences JSON")
    };
    let mut recorded = Map::new();
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap_or("?");
        let tool = case["tool"].as_str().unwrap_or("t");
        let schema = input(case, "schemaJson", "schema");
        let arguments = input(case, "argumentsJson", "arguments");
        let result = CompiledToolSchema::new(tool, &schema).validate_and_coerce(&arguments);
        if let Some(difference) = documented.get(name) {
            if answer(&result) != difference["ours"] {
                failures.push(format!(
                    "== {name}\ndocumented {}, got {}",
                    difference["ours"],
                    answer(&result)
                ));
            }
            continue;
        }
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
            let reason = REASONS.iter().find(|(prefix, _)| name.starts_with(prefix));
            if let (true, Some((_, reason))) = (recording, reason) {
                recorded.insert(
                    name.to_owned(),
                    json!({"reason": reason, "ours": answer(&result)}),
                );
                continue;
            }
            failures.push(format!("== {name}\n{message}"));
        }
    }
    if recording {
        let text = serde_json::to_string_pretty(&Value::Object(recorded)).expect("JSON");
        std::fs::write(DIFFERENCES, text + "\n").expect("write the differences file");
    }
    assert!(
        documented.len() < 40,
        "more than 40 documented differences: the rendering regressed"
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from pi:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
