//! The OpenAI-compatible population's stream shapes (`tests/fixtures/openai-compatible/<family>/
//! <case>.sse`, each with `<case>.expected.json`), shared by the Rust and C replays (the
//! Python replay, `tests/python/test_openai_compatible.py`, mirrors [`summarise`]).
//!
//! A case's expected file holds what the final message must be, summarised: `stopReason`,
//! `errorMessage`/`errorKind` when the stream fails, every content block (`type` and its text,
//! or a call's `id`, `name`, `arguments` and `thoughtSignature`), and the usage counts it names.

#![allow(dead_code)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// One recorded stream shape.
pub(crate) struct Case {
    /// `<family>/<case>`.
    pub name: String,
    /// The SSE body, byte for byte.
    pub sse: String,
    /// The expected summary (`_about` removed).
    pub expected: Value,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests/fixtures/openai-compatible")
}

/// Every case, sorted by name.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut families: Vec<_> = std::fs::read_dir(root())
        .expect("tests/fixtures/openai-compatible")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    families.sort();
    for family in families {
        let mut files: Vec<_> = std::fs::read_dir(&family)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
            .collect();
        files.sort();
        for sse_path in files {
            let stem = sse_path.file_stem().unwrap().to_str().unwrap().to_owned();
            let expected_path = family.join(format!("{stem}.expected.json"));
            let mut expected: Value = serde_json::from_str(
                &std::fs::read_to_string(&expected_path)
                    .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display())),
            )
            .unwrap();
            expected.as_object_mut().unwrap().shift_remove("_about");
            cases.push(Case {
                name: format!("{}/{stem}", family.file_name().unwrap().to_str().unwrap()),
                sse: std::fs::read_to_string(&sse_path).unwrap(),
                expected,
            });
        }
    }
    assert!(cases.len() >= 20, "fixtures missing: {}", cases.len());
    cases
}

/// The summary of a final message (its JSON as a layer emitted it) in the expected file's
/// shape; the usage keys compared are those `expected` names.
pub(crate) fn summarise(message: &Value, expected: &Value) -> Value {
    let mut out = Map::new();
    out.insert("stopReason".into(), message["stopReason"].clone());
    for key in ["errorMessage", "errorKind"] {
        if expected.get(key).is_some() {
            out.insert(key.into(), message[key].clone());
        }
    }
    let content: Vec<Value> = message["content"]
        .as_array()
        .map(|blocks| blocks.iter().map(summarise_block).collect())
        .unwrap_or_default();
    out.insert("content".into(), Value::Array(content));
    if let Some(usage) = expected.get("usage").and_then(Value::as_object) {
        let picked: Map<String, Value> = usage
            .keys()
            .map(|key| (key.clone(), message["usage"][key].clone()))
            .collect();
        out.insert("usage".into(), Value::Object(picked));
    }
    Value::Object(out)
}

fn summarise_block(block: &Value) -> Value {
    let kind = block["type"].as_str().unwrap_or_default();
    let keys: &[&str] = match kind {
        "text" => &["text"],
        "thinking" => &["thinking", "thinkingSignature"],
        "toolCall" => &["id", "name", "arguments", "thoughtSignature"],
        _ => &[],
    };
    let mut out = Map::new();
    out.insert("type".into(), json!(kind));
    for key in keys {
        if let Some(value) = block.get(*key) {
            out.insert((*key).into(), value.clone());
        }
    }
    Value::Object(out)
}

/// What must hold for every case whatever its expected file says: no tool call with an empty
/// id or name, no two calls with one id.
pub(crate) fn check_invariants(name: &str, message: &Value) {
    let mut ids = HashSet::new();
    for block in message["content"].as_array().into_iter().flatten() {
        if block["type"] != "toolCall" {
            continue;
        }
        let id = block["id"].as_str().unwrap_or_default();
        assert!(!id.is_empty(), "{name}: a call with an empty id: {message}");
        assert!(
            !block["name"].as_str().unwrap_or_default().is_empty(),
            "{name}: a call with an empty name: {message}"
        );
        assert!(ids.insert(id.to_owned()), "{name}: duplicate id {id}");
    }
}

/// The transport shapings every case is replayed with: whole events, one byte at a time, and
/// random pieces of 1..=16 bytes from three seeds.
pub(crate) fn shapings() -> [Value; 5] {
    [
        json!({}),
        json!({"split": 1}),
        json!({"split_random": 3}),
        json!({"split_random": 29}),
        json!({"split_random": 4242}),
    ]
}

/// The mock-server reply that serves `case` with `shaping`.
pub(crate) fn reply(case: &Case, shaping: &Value) -> Value {
    let mut reply = json!({"sse": case.sse});
    for (key, value) in shaping.as_object().unwrap() {
        reply[key] = value.clone();
    }
    reply
}
