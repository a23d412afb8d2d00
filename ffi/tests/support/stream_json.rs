//! One request through the C pull stream by the C program `tests/c/stream_json.c`, its output
//! read back as JSON: shared by `bedrock.rs` and `vertex_adc.rs` through `#[path]` (the including
//! crate declares `c_build` too).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::c_build::{assert_success, compile, run as run_program};

/// The event kind names of `PI_STREAM_EVENT_KIND_*`, by value.
const KINDS: [&str; 13] = [
    "none",
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
];

fn program() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    // Named per test crate: the test binaries that include this may run at once.
    EXE.get_or_init(|| {
        compile(
            "tests/c/stream_json.c",
            &format!("stream_json_{}", env!("CARGO_CRATE_NAME")),
        )
    })
    .clone()
}

/// What C received: every event's JSON (checked against its `pi_event` fields) and the final
/// message's JSON, as the library wrote them.
pub(crate) struct Observed {
    /// `pi_stream_event_json` of each event.
    pub(crate) events: Vec<Value>,
    /// `pi_stream_result_json`.
    pub(crate) result: Value,
}

/// Streams `context` to `model` with `options` (`pi_stream_open_simple` when `simple`) in a
/// process whose whole environment is `env`.
pub(crate) fn run(
    model: &Value,
    context: &Value,
    options: &Value,
    simple: bool,
    env: &[(String, String)],
) -> Observed {
    let mut command = Command::new(program());
    command
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .arg(model.to_string())
        .arg(context.to_string())
        .arg(options.to_string())
        .arg(if simple { "simple" } else { "stream" });
    let output = run_program(command);
    assert_success(&output, "stream_json");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
    let mut events = Vec::new();
    let mut result = None;
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("event ") {
            let mut fields = rest.splitn(4, ' ');
            let mut number = || -> usize { fields.next().unwrap().parse().unwrap() };
            let (kind, index, delta_len) = (number(), number(), number());
            let event: Value = serde_json::from_str(fields.next().unwrap()).expect("event JSON");
            assert_eq!(event["type"], KINDS[kind], "{line}");
            if let Some(i) = event["contentIndex"].as_u64() {
                assert_eq!(index as u64, i, "{line}");
            }
            let delta = event["delta"].as_str().map_or(0, str::len);
            assert_eq!(delta_len, delta, "the delta view: {line}");
            events.push(event);
        } else if let Some(rest) = line.strip_prefix("result ") {
            result = Some(serde_json::from_str(rest).expect("message JSON"));
        } else {
            panic!("unexpected output line: {line}");
        }
    }
    Observed {
        events,
        result: result.expect("a result line"),
    }
}
