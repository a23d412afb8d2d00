//! Tool-argument validation per call: a typical tool schema (nested objects, an array of
//! objects, `enum`, `pattern`, `format`, a `$ref`) against arguments that validate after
//! coercion, and against arguments whose report lists several problems. The schema is compiled
//! once, as the agent does, so the figures are the cost of one tool call. The `compile/` figures
//! are a new `CompiledToolSchema` for a schema already seen, as the agent makes one per called
//! tool per batch of tool calls.

use criterion::{Criterion, criterion_group, criterion_main};
use pi_agent::ai::CompiledToolSchema;
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["path", "mode", "edits"],
        "properties": {
            "path": {"type": "string", "minLength": 1, "pattern": "^[^\\s].*$"},
            "mode": {"type": "string", "enum": ["replace", "append", "insert"]},
            "line": {"type": "integer", "minimum": 0},
            "dryRun": {"type": "boolean"},
            "author": {"type": "string", "format": "email"},
            "edits": {"type": "array", "maxItems": 64, "items": {"$ref": "#/$defs/edit"}}
        },
        "additionalProperties": false,
        "$defs": {
            "edit": {
                "type": "object",
                "required": ["old", "new"],
                "properties": {
                    "old": {"type": "string"},
                    "new": {"type": "string"},
                    "count": {"type": "integer", "minimum": 1}
                }
            }
        }
    })
}

/// A schema with optional fields written as `anyOf` unions, as MCP servers' generated schemas
/// often are (coercion tries each branch, compiled on its own).
fn union_schema() -> Value {
    json!({
        "type": "object",
        "required": ["query"],
        "properties": {
            "query": {"type": "string"},
            "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "since": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}
        }
    })
}

fn valid() -> Value {
    json!({
        "path": "src/main.rs", "mode": "replace", "line": "12", "dryRun": "false",
        "author": "ann@example.com",
        "edits": [{"old": "a", "new": "b", "count": 2}, {"old": "c", "new": "d"}]
    })
}

fn invalid() -> Value {
    json!({
        "path": "", "mode": "rewrite", "line": -1, "author": "not an email", "extra": 1,
        "edits": [{"old": "a"}, {"new": 3, "count": 0}]
    })
}

fn bench(c: &mut Criterion) {
    let compiled = CompiledToolSchema::new("edit", &schema());
    let (ok, bad) = (valid(), invalid());
    assert!(compiled.validate_and_coerce(&ok).is_ok());
    assert!(compiled.validate_and_coerce(&bad).is_err());
    c.bench_function("validate_and_coerce/valid_after_coercion", |b| {
        b.iter(|| compiled.validate_and_coerce(std::hint::black_box(&ok)))
    });
    c.bench_function("validate_and_coerce/invalid_with_report", |b| {
        b.iter(|| compiled.validate_and_coerce(std::hint::black_box(&bad)))
    });
    let (edit, union) = (schema(), union_schema());
    c.bench_function("compile/new_tool_schema", |b| {
        b.iter(|| CompiledToolSchema::new("edit", std::hint::black_box(&edit)))
    });
    c.bench_function("compile/new_tool_schema_with_unions", |b| {
        b.iter(|| CompiledToolSchema::new("search", std::hint::black_box(&union)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
