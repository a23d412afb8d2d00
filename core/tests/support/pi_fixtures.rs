//! Replaying pi's recorded transcripts (`tests/fixtures/pi/<api>/<scenario>.json`, written by
//! `scripts/pi-fixtures/record.mjs`) and comparing what a layer of ours did with what pi did.
//!
//! Shared, as plain JSON, by the Rust replay (`core/tests/pi_fixtures.rs`) and the C ABI replay
//! (`ffi/tests/pi_fixtures.rs`, which includes this file with `#[path]`); the Python replay
//! (`tests/python/test_pi_fixtures.py`) mirrors [`normalise`] and [`diff`] rule for rule and reads
//! the same known-gap list.
//!
//! A layer produces an *observation* shaped like the fixture's own: `{"events", "result",
//! "requests"}` for a stream fixture, `{"events", "messages", "requests"}` for an agent fixture.
//! Both sides go through [`normalise`] (the one place where the README's documented differences
//! are applied), then [`diff`] lists every JSON path where they still differ. The list must
//! equal what `tests/fixtures/pi/known_gaps.json` says for that fixture and layer: a new
//! mismatch fails, and so does a gap that went away (remove its entry when you fix it).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// `tests/fixtures/pi` (both including crates live one level below the repository root).
pub(crate) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crate directory has a parent")
        .join("tests/fixtures/pi")
}

/// One recorded scenario.
#[derive(Debug, Clone)]
pub(crate) struct Fixture {
    /// `<api>/<scenario>`, e.g. `anthropic-messages/plain_text`.
    pub(crate) name: String,
    /// The whole fixture file.
    pub(crate) json: Value,
}

impl Fixture {
    /// `stream` or `agent`.
    pub(crate) fn kind(&self) -> &str {
        self.json["kind"].as_str().unwrap_or("")
    }

    /// The scenario name, e.g. `plain_text`.
    pub(crate) fn scenario(&self) -> &str {
        self.json["scenario"].as_str().unwrap_or("")
    }

    /// The model JSON with `{MOCK}` replaced by the mock server's origin.
    pub(crate) fn model(&self, origin: &str) -> Value {
        let mut model = self.json["model"].clone();
        if let Some(url) = model["baseUrl"].as_str() {
            model["baseUrl"] = Value::from(url.replace("{MOCK}", origin));
        }
        model
    }

    /// The scripted replies, in order.
    pub(crate) fn replies(&self) -> Vec<Value> {
        self.json["replies"].as_array().cloned().unwrap_or_default()
    }

    /// What pi did, shaped like an observation.
    pub(crate) fn pi_observation(&self) -> Value {
        let j = &self.json;
        if self.kind() == "agent" {
            json!({"events": j["events"], "messages": j["messages"], "requests": j["requests"]})
        } else {
            json!({"events": j["events"], "result": j["result"], "requests": j["requests"]})
        }
    }
}

/// Every fixture, sorted by name.
pub(crate) fn load_all() -> Vec<Fixture> {
    let mut out = Vec::new();
    let root = fixtures_dir();
    let mut apis: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .collect();
    apis.sort_by_key(|e| e.file_name());
    for api in apis {
        let mut files: Vec<_> = std::fs::read_dir(api.path())
            .expect("readable fixture directory")
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort_by_key(|e| e.file_name());
        for file in files {
            let path = file.path();
            let text = std::fs::read_to_string(&path).expect("readable fixture");
            let json: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let name = format!(
                "{}/{}",
                api.file_name().to_string_lossy(),
                path.file_stem().unwrap_or_default().to_string_lossy()
            );
            out.push(Fixture { name, json });
        }
    }
    assert!(!out.is_empty(), "no fixtures under {}", root.display());
    out
}

/// Whether a request header is left out of the comparison: the same rule as the recorder's
/// (`scripts/pi-fixtures/mock.mjs`): transport and client-identification headers, and
/// `accept: */*` (fetch's default, i.e. no preference).
pub(crate) fn ignored_header(name: &str, value: &str) -> bool {
    matches!(
        name,
        "host"
            | "content-length"
            | "connection"
            | "accept-encoding"
            | "accept-language"
            | "user-agent"
            | "cookie"
            | "sec-fetch-mode"
            | "x-goog-api-client"
    ) || name.starts_with("x-stainless-")
        || (name == "accept" && value == "*/*")
}

/// The request log of the mock server as the fixtures store it: `{method, path, headers: {name:
/// value}, body}` without ignored headers, `origin` replaced by `{MOCK}` in every string.
pub(crate) fn requests_json<'a>(
    requests: impl IntoIterator<Item = (&'a str, &'a str, &'a [(String, String)], &'a Value)>,
    origin: &str,
) -> Value {
    let list: Vec<Value> = requests
        .into_iter()
        .map(|(method, path, headers, body)| {
            let mut kept = Map::new();
            for (name, value) in headers {
                let name = name.to_ascii_lowercase();
                if ignored_header(&name, value) {
                    continue;
                }
                let joined = match kept.get(&name).and_then(Value::as_str) {
                    Some(previous) => format!("{previous}, {value}"),
                    None => value.clone(),
                };
                kept.insert(name, Value::from(joined));
            }
            json!({"method": method, "path": path, "headers": kept, "body": body})
        })
        .collect();
    unmock(Value::Array(list), origin)
}

/// Replaces the mock server's `origin` by `{MOCK}` in every string of `value`.
pub(crate) fn unmock(mut value: Value, origin: &str) -> Value {
    fn walk(value: &mut Value, origin: &str) {
        match value {
            Value::String(s) if s.contains(origin) => *s = s.replace(origin, "{MOCK}"),
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, origin)),
            Value::Object(map) => map.values_mut().for_each(|v| walk(v, origin)),
            _ => {}
        }
    }
    walk(&mut value, origin);
    value
}

/// Which side of the comparison a value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// pi's recording.
    Pi,
    /// One of our layers.
    Ours,
}

/// Scenarios whose server closes the body early (cleanly or abruptly) before the protocol's
/// terminal event.
const ENDED_EARLY: &[&str] = &["dropped_mid_stream", "truncated_stream"];

/// **The one place where documented differences from pi are normalised** (README, "Differences
/// from pi"); the Python replay mirrors it. Every rule names the difference it stands for;
/// anything else that differs is a gap.
///
/// 1. Any `timestamp` key becomes 0 (wall-clock times of two different runs).
/// 2. Events carry no `partial` (difference 1): pi's recordings have it removed already, and
///    `message_update` keeps only `assistantMessageEvent` (the recorder drops pi's `message`;
///    ours is serialised without it, a binding may add it). Our `start` event does carry its
///    empty `partial` (as pi's does); it is removed here since the recordings cannot compare it.
/// 3. Our `toolcall_start` carries `id` and `toolName`, and our `text_end`/`thinking_end` may
///    carry `contentSignature` (difference 1): removed from our events.
/// 4. `errorMessage` wording is not compared (README, Errors: failures are messages with
///    `errorMessage`; pi's text is whatever each SDK throws, often the raw error body, ours is
///    the library's): any string `errorMessage` becomes `"<errorMessage>"` on both sides, so
///    only its presence is compared.
/// 5. `totalTokens` is always the sum `input + output + cacheRead + cacheWrite` (difference
///    14): pi's is recomputed as that sum.
/// 6. Retries are recorded in `diagnostics` (difference 5): our `retry` diagnostics are
///    removed (and the key, when nothing else is left).
/// 7. A body that ends before the protocol's terminal event is an error (differences 3 and 16):
///    in the `dropped_mid_stream` / `truncated_stream` scenarios, when pi ended with `done` and
///    we ended with an `error` of reason `error`, our terminal event and final message are
///    rewritten to pi's `done` shape (`reason` and `stopReason` from pi, no `errorMessage`) so
///    that the content streamed before the cut is still compared.
/// 8. In parallel tool execution `tool_execution_end` events come in completion order (README,
///    Events), a race between tools that finish at once: each run of consecutive
///    `tool_execution_end` events is sorted by `toolCallId` on both sides.
pub(crate) fn normalise(observation: &Value, side: Side, fixture: &Fixture, pi: &Value) -> Value {
    let mut value = observation.clone();
    walk_mut(&mut value, &mut |key, v| {
        if key == "timestamp" && v.is_number() {
            *v = json!(0);
        }
        if key == "errorMessage" && v.is_string() {
            *v = json!("<errorMessage>");
        }
    });
    if let Some(events) = value["events"].as_array_mut() {
        sort_tool_execution_end_runs(events);
    }
    match side {
        Side::Pi => walk_objects(&mut value, &mut |object| {
            let fields = ["input", "output", "cacheRead", "cacheWrite"];
            if object.contains_key("totalTokens") && fields.iter().all(|f| object.contains_key(*f))
            {
                let sum: f64 = fields.iter().filter_map(|f| object[*f].as_f64()).sum();
                object.insert("totalTokens".into(), number(sum));
            }
        }),
        Side::Ours => {
            walk_objects(&mut value, &mut |object| {
                // README "Differences": messages carry their measured `timing` (pi has none).
                if matches!(
                    object.get("role").and_then(Value::as_str),
                    Some("assistant" | "toolResult")
                ) {
                    object.shift_remove("timing");
                }
                // README "Errors a program can act on": failed messages carry `errorKind`,
                // `httpStatus` and `retryAfterMs` (pi has none).
                if object.get("role").and_then(Value::as_str) == Some("assistant") {
                    for key in ["errorKind", "httpStatus", "retryAfterMs"] {
                        object.shift_remove(key);
                    }
                }
                match object.get("type").and_then(Value::as_str) {
                    Some("start") if object.len() <= 2 => {
                        object.shift_remove("partial");
                    }
                    Some("message_update") if object.contains_key("assistantMessageEvent") => {
                        object.shift_remove("message");
                    }
                    Some("toolcall_start") if object.contains_key("contentIndex") => {
                        object.shift_remove("id");
                        object.shift_remove("toolName");
                    }
                    Some("text_end" | "thinking_end") if object.contains_key("contentIndex") => {
                        object.shift_remove("contentSignature");
                    }
                    _ => {}
                }
                if let Some(Value::Array(items)) = object.get_mut("diagnostics") {
                    items.retain(|d| d["type"] != "retry");
                    if items.is_empty() {
                        object.shift_remove("diagnostics");
                    }
                }
            });
            if ENDED_EARLY.contains(&fixture.scenario()) {
                ended_early_as_done(&mut value, pi);
            }
        }
    }
    value
}

/// Rule 8 of [`normalise`].
fn sort_tool_execution_end_runs(events: &mut [Value]) {
    let is_end = |e: &Value| e["type"] == "tool_execution_end";
    let mut start = 0;
    while start < events.len() {
        if !is_end(&events[start]) {
            start += 1;
            continue;
        }
        let end = (start..events.len())
            .find(|&i| !is_end(&events[i]))
            .unwrap_or(events.len());
        events[start..end].sort_by(|a, b| {
            let id = |e: &Value| e["toolCallId"].as_str().unwrap_or("").to_owned();
            id(a).cmp(&id(b))
        });
        start = end;
    }
}

/// Rule 7 of [`normalise`].
fn ended_early_as_done(ours: &mut Value, pi: &Value) {
    let Some(pi_last) = pi["events"].as_array().and_then(|e| e.last()) else {
        return;
    };
    if pi_last["type"] != "done" {
        return;
    }
    let reason = pi_last["reason"].clone();
    let Some(events) = ours["events"].as_array_mut() else {
        return;
    };
    let Some(last) = events.last_mut() else {
        return;
    };
    if last["type"] != "error" || last["reason"] != "error" {
        return;
    }
    let as_done = |message: &Value| {
        let mut message = message.clone();
        if let Some(object) = message.as_object_mut() {
            object.insert("stopReason".into(), reason.clone());
            object.shift_remove("errorMessage");
        }
        message
    };
    *last = json!({"type": "done", "reason": reason, "message": as_done(&last["error"])});
    if ours["result"]["stopReason"] == "error" {
        ours["result"] = as_done(&ours["result"]);
    }
}

/// A JSON number from an `f64`, as an integer when it is one.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn walk_mut(value: &mut Value, f: &mut impl FnMut(&str, &mut Value)) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| walk_mut(v, f)),
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                f(key, v);
                walk_mut(v, f);
            }
        }
        _ => {}
    }
}

fn walk_objects(value: &mut Value, f: &mut impl FnMut(&mut Map<String, Value>)) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| walk_objects(v, f)),
        Value::Object(map) => {
            f(map);
            map.values_mut().for_each(|v| walk_objects(v, f));
        }
        _ => {}
    }
}

/// One place where pi and we still differ after [`normalise`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mismatch {
    /// JSON pointer into the observation, e.g. `/requests/0/body/max_tokens`; `…/length` when
    /// two arrays differ in length; `…/@order` when two objects have the same keys in a
    /// different order.
    pub(crate) path: String,
    /// pi's value (`None`: pi has nothing there).
    pub(crate) pi: Option<Value>,
    /// Our value (`None`: we have nothing there).
    pub(crate) ours: Option<Value>,
}

fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Numbers are equal when their values are (`1` and `1.0` are the same number).
fn same_number(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Every path where `ours` differs from `pi`.
///
/// Objects are compared key by key (a missing key is a mismatch), and the order of their keys
/// is compared outside `/requests` (request bodies are order-insensitive JSON; events and
/// messages are compared as emitted). Arrays of equal length are compared item by item; arrays
/// of different lengths give `…/length` plus the first differing item, so one missing event
/// does not flag every later one.
pub(crate) fn diff(pi: &Value, ours: &Value) -> Vec<Mismatch> {
    let mut out = Vec::new();
    diff_at("", pi, ours, &mut out);
    out
}

fn diff_at(path: &str, pi: &Value, ours: &Value, out: &mut Vec<Mismatch>) {
    match (pi, ours) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, va) in a {
                let sub = format!("{path}/{}", pointer_escape(key));
                match b.get(key) {
                    Some(vb) => diff_at(&sub, va, vb, out),
                    None => out.push(Mismatch {
                        path: sub,
                        pi: Some(va.clone()),
                        ours: None,
                    }),
                }
            }
            for (key, vb) in b {
                if !a.contains_key(key) {
                    out.push(Mismatch {
                        path: format!("{path}/{}", pointer_escape(key)),
                        pi: None,
                        ours: Some(vb.clone()),
                    });
                }
            }
            let same_keys = a.len() == b.len() && a.keys().all(|k| b.contains_key(k));
            if same_keys && !path.starts_with("/requests") && !a.keys().eq(b.keys()) {
                let keys =
                    |m: &Map<String, Value>| Value::from(m.keys().cloned().collect::<Vec<_>>());
                out.push(Mismatch {
                    path: format!("{path}/@order"),
                    pi: Some(keys(a)),
                    ours: Some(keys(b)),
                });
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() == b.len() {
                for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                    diff_at(&format!("{path}/{i}"), va, vb, out);
                }
            } else {
                out.push(Mismatch {
                    path: format!("{path}/length"),
                    pi: Some(json!(a.len())),
                    ours: Some(json!(b.len())),
                });
                if let Some(i) = (0..a.len().min(b.len())).find(|&i| !values_equal(&a[i], &b[i])) {
                    diff_at(&format!("{path}/{i}"), &a[i], &b[i], out);
                }
            }
        }
        (Value::Number(_), Value::Number(_)) if same_number(pi, ours) => {}
        _ if pi == ours => {}
        _ => out.push(Mismatch {
            path: path.to_owned(),
            pi: Some(pi.clone()),
            ours: Some(ours.clone()),
        }),
    }
}

fn values_equal(a: &Value, b: &Value) -> bool {
    let mut probe = Vec::new();
    diff_at("", a, b, &mut probe);
    probe.is_empty()
}

/// Whether a mismatch `path` matches a known-gap `pattern`: the same segments, where a `*`
/// segment matches any one segment (e.g. `/events/*/message/@order`).
pub(crate) fn path_matches(pattern: &str, path: &str) -> bool {
    let (mut p, mut q) = (pattern.split('/'), path.split('/'));
    loop {
        match (p.next(), q.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == "*" || a == b => {}
            _ => return false,
        }
    }
}

/// One entry of `tests/fixtures/pi/known_gaps.json`.
#[derive(Debug, Clone)]
pub(crate) struct Gap {
    /// Fixture names (`<api>/<scenario>`) it applies to.
    pub(crate) fixtures: Vec<String>,
    /// Layers it applies to: `rust`, `c`, `python`.
    pub(crate) layers: Vec<String>,
    /// The mismatching paths it stands for (`*` matches any one path segment). In each listed
    /// fixture every path must match at least one mismatch, and every mismatch some listed path.
    pub(crate) paths: Vec<String>,
    /// One line: what differs and why.
    pub(crate) reason: String,
}

/// The known gaps, from `tests/fixtures/pi/known_gaps.json`.
pub(crate) fn known_gaps() -> Vec<Gap> {
    let path = fixtures_dir().join("known_gaps.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let json: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    json["gaps"]
        .as_array()
        .expect("known_gaps.json has a `gaps` array")
        .iter()
        .map(|g| Gap {
            fixtures: strings(&g["fixtures"]),
            layers: strings(&g["layers"]),
            paths: strings(&g["paths"]),
            reason: g["reason"].as_str().unwrap_or("").to_owned(),
        })
        .collect()
}

/// What one layer did for one fixture, after normalisation.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The fixture name.
    pub(crate) fixture: String,
    /// Every remaining mismatch.
    pub(crate) mismatches: Vec<Mismatch>,
}

/// Compares pi's recording of `fixture` with `ours` (an observation of `layer`).
pub(crate) fn compare(fixture: &Fixture, ours: &Value) -> Outcome {
    let pi_raw = fixture.pi_observation();
    let pi = normalise(&pi_raw, Side::Pi, fixture, &pi_raw);
    let ours = normalise(ours, Side::Ours, fixture, &pi_raw);
    Outcome {
        fixture: fixture.name.clone(),
        mismatches: diff(&pi, &ours),
    }
}

/// The outcome of a layer that refused the fixture's options (pi's, as is): one mismatch at
/// `/options`, pi's options against the layer's error message.
pub(crate) fn refused_options(fixture: &Fixture, message: String) -> Outcome {
    Outcome {
        fixture: fixture.name.clone(),
        mismatches: vec![Mismatch {
            path: "/options".to_owned(),
            pi: Some(fixture.json["options"].clone()),
            ours: Some(Value::from(message)),
        }],
    }
}

fn short(value: &Option<Value>) -> String {
    match value {
        None => "(absent)".to_owned(),
        Some(v) => {
            let text = v.to_string();
            if text.chars().count() > 160 {
                format!("{}…", text.chars().take(160).collect::<String>())
            } else {
                text
            }
        }
    }
}

/// Checks every outcome of `layer` against the known gaps and panics with a report when a
/// mismatch is not listed or a listed one is gone. Prints a per-API summary either way, and,
/// when `PI_FIXTURES_REPORT` names a file, writes every mismatch there as JSON.
pub(crate) fn check_against_known_gaps(layer: &str, outcomes: &[Outcome]) {
    let gaps = known_gaps();
    let mut expected: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for gap in gaps.iter().filter(|g| g.layers.iter().any(|l| l == layer)) {
        for fixture in &gap.fixtures {
            expected
                .entry(fixture.as_str())
                .or_default()
                .extend(gap.paths.iter().map(String::as_str));
        }
    }
    let mut problems = String::new();
    let mut per_api: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for outcome in outcomes {
        let api = outcome.fixture.split('/').next().unwrap_or("").to_owned();
        let entry = per_api.entry(api).or_default();
        entry.1 += 1;
        if outcome.mismatches.is_empty() {
            entry.0 += 1;
        }
        let listed = expected
            .remove(outcome.fixture.as_str())
            .unwrap_or_default();
        let new: Vec<&Mismatch> = outcome
            .mismatches
            .iter()
            .filter(|m| !listed.iter().any(|p| path_matches(p, &m.path)))
            .collect();
        let gone: Vec<&&str> = listed
            .iter()
            .filter(|p| !outcome.mismatches.iter().any(|m| path_matches(p, &m.path)))
            .collect();
        if new.is_empty() && gone.is_empty() {
            continue;
        }
        let _ = writeln!(problems, "\n{} [{layer}]", outcome.fixture);
        for m in new {
            let _ = writeln!(
                problems,
                "  NEW   {}\n        pi:   {}\n        ours: {}",
                m.path,
                short(&m.pi),
                short(&m.ours)
            );
        }
        for path in gone {
            let _ = writeln!(
                problems,
                "  FIXED {path} (listed in known_gaps.json, no longer differs: remove it there)"
            );
        }
    }
    for (fixture, paths) in &expected {
        let _ = writeln!(
            problems,
            "\n{fixture} [{layer}]: known_gaps.json lists {paths:?} but the fixture did not run"
        );
    }
    let mut summary = format!("pi fixtures through {layer}: exact matches per api\n");
    for (api, (exact, total)) in &per_api {
        let _ = writeln!(summary, "  {api:<24} {exact:>3}/{total}");
    }
    println!("{summary}");
    if let Ok(path) = std::env::var("PI_FIXTURES_REPORT") {
        let report: Vec<Value> = outcomes
            .iter()
            .map(|o| {
                json!({"fixture": o.fixture, "layer": layer, "mismatches": o.mismatches.iter().map(|m| json!({
                    "path": m.path, "pi": m.pi, "ours": m.ours})).collect::<Vec<_>>()})
            })
            .collect();
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    assert!(
        problems.is_empty(),
        "pi fixture replay through {layer} differs from tests/fixtures/pi/known_gaps.json:\n{problems}"
    );
}
