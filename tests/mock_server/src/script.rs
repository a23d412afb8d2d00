//! Turns a scripted reply (JSON) into the exact bytes to send.

use serde_json::{Map, Value};

use crate::body::{Piece, parse_piece};
use crate::http::{self, Framing, Shaping};

/// Every key a reply may carry (besides `_comment`-style keys).
const KNOWN_KEYS: &[&str] = &[
    "status",
    "body",
    "headers",
    "text",
    "reasoning",
    "reasoning_field",
    "tool_calls",
    "finish_reason",
    "usage",
    "id",
    "model",
    "created",
    "delta_size",
    "done",
    "chunks",
    "sse",
    "bytes_b64",
    "split",
    "split_random",
    "delay_ms",
    "drop_after_bytes",
    "stall_after_bytes",
    "stall_ms",
    "head_stall_ms",
    "end_delay_ms",
];

/// Keys that only make sense for a generated completion stream.
const GENERATED_KEYS: &[&str] = &[
    "text",
    "reasoning",
    "reasoning_field",
    "tool_calls",
    "finish_reason",
    "usage",
    "id",
    "model",
    "created",
    "delta_size",
];

/// Keys that select a streamed (rather than fixed) response.
const STREAM_CONTENT_KEYS: &[&str] = &[
    "text",
    "reasoning",
    "tool_calls",
    "chunks",
    "sse",
    "bytes_b64",
];

/// Headers the server manages itself.
const FRAMING_HEADERS: &[&str] = &["content-length", "transfer-encoding", "connection"];

/// Default `created` timestamp of generated chunks.
const DEFAULT_CREATED: u64 = 1_700_000_000;

/// Everything needed to write one response.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) status: u16,
    /// All headers, framing included, in wire order.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) pieces: Vec<Piece>,
    pub(crate) framing: Framing,
    pub(crate) shaping: Shaping,
}

impl Plan {
    /// A plain JSON response with `Content-Length` framing.
    pub(crate) fn json(status: u16, body: &Value) -> Plan {
        fixed(
            status,
            body.to_string().into_bytes(),
            Vec::new(),
            Shaping::default(),
        )
    }

    /// Serialised response head.
    pub(crate) fn head(&self) -> Vec<u8> {
        http::head(self.status, &self.headers)
    }
}

/// Request-dependent inputs of a generated stream.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    /// 1-based number of the reply being served (for default ids).
    pub(crate) seq: u64,
    /// The `model` field of the request body, if any.
    pub(crate) request_model: Option<&'a str>,
}

/// Checks a reply without serving it.
pub(crate) fn validate(reply: &Value) -> Result<(), String> {
    if crate::websocket::is_ws_reply(reply) {
        return crate::websocket::validate(reply);
    }
    plan(
        reply,
        &Ctx {
            seq: 1,
            request_model: None,
        },
    )
    .map(|_| ())
}

fn get_u64(obj: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{key}` must be a non-negative integer, got {v}")),
    }
}

fn get_usize(obj: &Map<String, Value>, key: &str) -> Result<Option<usize>, String> {
    get_u64(obj, key)?
        .map(|n| usize::try_from(n).map_err(|_| format!("`{key}` is too large")))
        .transpose()
}

fn get_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(format!("`{key}` must be a string, got {v}")),
    }
}

fn get_bool(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(format!("`{key}` must be a boolean, got {v}")),
    }
}

fn parse_shaping(obj: &Map<String, Value>) -> Result<Shaping, String> {
    let split = get_usize(obj, "split")?;
    if split == Some(0) {
        return Err("`split` must be at least 1".into());
    }
    let split_random = match obj.get("split_random") {
        None | Some(Value::Null) => None,
        // Any integer seed; negative ones are reinterpreted as u64.
        Some(v) => Some(
            v.as_u64()
                .or_else(|| v.as_i64().map(|i| i as u64))
                .ok_or_else(|| format!("`split_random` must be an integer seed, got {v}"))?,
        ),
    };
    if split.is_some() && split_random.is_some() {
        return Err("`split` and `split_random` are exclusive".into());
    }
    Ok(Shaping {
        split,
        split_random,
        delay_ms: get_u64(obj, "delay_ms")?.unwrap_or(0),
        drop_after_bytes: get_usize(obj, "drop_after_bytes")?,
        stall_after_bytes: get_usize(obj, "stall_after_bytes")?,
        stall_ms: get_u64(obj, "stall_ms")?,
        head_stall_ms: get_u64(obj, "head_stall_ms")?,
        end_delay_ms: get_u64(obj, "end_delay_ms")?.unwrap_or(0),
    })
}

fn parse_headers(obj: &Map<String, Value>) -> Result<Vec<(String, String)>, String> {
    let Some(headers) = obj.get("headers") else {
        return Ok(Vec::new());
    };
    let Value::Object(map) = headers else {
        return Err(format!("`headers` must be an object, got {headers}"));
    };
    let mut out = Vec::new();
    for (name, value) in map {
        let value = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let bad = |s: &str| s.contains(['\r', '\n']);
        if name.is_empty() || bad(name) || name.contains(':') || bad(&value) {
            return Err(format!("invalid header {name:?}: {value:?}"));
        }
        if FRAMING_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "header {name:?} is managed by the mock server and cannot be scripted"
            ));
        }
        out.push((name.clone(), value));
    }
    Ok(out)
}

/// `base` headers overridden in place by same-named `extra` headers, then the
/// `framing` headers, then the remaining `extra` headers.
fn merge_headers(
    mut base: Vec<(String, String)>,
    framing: Vec<(String, String)>,
    extra: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let mut appended = Vec::new();
    for (name, value) in extra {
        match base.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            Some(slot) => *slot = (name, value),
            None => appended.push((name, value)),
        }
    }
    base.extend(framing);
    base.extend(appended);
    base
}

fn fixed(status: u16, body: Vec<u8>, extra: Vec<(String, String)>, shaping: Shaping) -> Plan {
    let headers = merge_headers(
        vec![("Content-Type".into(), "application/json".into())],
        vec![
            ("Content-Length".into(), body.len().to_string()),
            ("Connection".into(), "close".into()),
        ],
        extra,
    );
    Plan {
        status,
        headers,
        pieces: http::pieces(vec![Piece::Bytes(body)], &shaping),
        framing: Framing::Length,
        shaping,
    }
}

fn streamed(
    status: u16,
    events: Vec<Piece>,
    extra: Vec<(String, String)>,
    shaping: Shaping,
) -> Plan {
    streamed_as("text/event-stream", status, events, extra, shaping)
}

fn streamed_as(
    content_type: &str,
    status: u16,
    events: Vec<Piece>,
    extra: Vec<(String, String)>,
    shaping: Shaping,
) -> Plan {
    let headers = merge_headers(
        vec![
            ("Content-Type".into(), content_type.into()),
            ("Cache-Control".into(), "no-cache".into()),
        ],
        vec![
            ("Transfer-Encoding".into(), "chunked".into()),
            ("Connection".into(), "close".into()),
        ],
        extra,
    );
    Plan {
        status,
        headers,
        pieces: http::pieces(events, &shaping),
        framing: Framing::Chunked,
        shaping,
    }
}

/// `data: <payload>\n\n`.
fn event(payload: &str) -> Vec<u8> {
    format!("data: {payload}\n\n").into_bytes()
}

/// JSON string literal.
fn js(s: &str) -> String {
    Value::from(s).to_string()
}

/// Splits `s` into pieces of `n` chars (`n == 0`: one piece). Empty input
/// gives no pieces.
fn split_chars(s: &str, n: usize) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    if n == 0 {
        return vec![s];
    }
    let mut out = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in s.char_indices().enumerate() {
        if count > 0 && count % n == 0 {
            out.push(&s[start..i]);
            start = i;
        }
    }
    out.push(&s[start..]);
    out
}

/// Builds the response for one scripted reply.
pub(crate) fn plan(reply: &Value, ctx: &Ctx<'_>) -> Result<Plan, String> {
    let Value::Object(obj) = reply else {
        return Err(format!("a reply must be a JSON object, got {reply}"));
    };
    if crate::websocket::is_ws_reply(reply) {
        return Err("a WebSocket reply (`ws`) answers only WebSocket messages".into());
    }
    for key in obj.keys() {
        if !key.starts_with('_') && !KNOWN_KEYS.contains(&key.as_str()) {
            return Err(format!("unknown key `{key}`"));
        }
    }
    let has = |k: &str| obj.contains_key(k);
    let status = match get_u64(obj, "status")? {
        None => None,
        Some(s @ 100..=999) => Some(s as u16),
        Some(s) => return Err(format!("`status` {s} is not an HTTP status")),
    };
    let headers = parse_headers(obj)?;
    let shaping = parse_shaping(obj)?;
    let generated_present: Vec<&str> = GENERATED_KEYS.iter().copied().filter(|k| has(k)).collect();

    if has("bytes_b64") {
        if let Some(k) = ["sse", "chunks", "body", "done"]
            .into_iter()
            .find(|k| has(k))
        {
            return Err(format!("`bytes_b64` cannot be combined with `{k}`"));
        }
        if let Some(k) = generated_present.first() {
            return Err(format!("`bytes_b64` cannot be combined with `{k}`"));
        }
        let pieces = crate::raw_bytes::decode_pieces(&obj["bytes_b64"])?
            .into_iter()
            .map(Piece::Bytes)
            .collect();
        return Ok(streamed_as(
            crate::raw_bytes::DEFAULT_CONTENT_TYPE,
            status.unwrap_or(200),
            pieces,
            headers,
            shaping,
        ));
    }

    if has("sse") {
        if let Some(k) = ["chunks", "body", "done"].into_iter().find(|k| has(k)) {
            return Err(format!("`sse` cannot be combined with `{k}`"));
        }
        if let Some(k) = generated_present.first() {
            return Err(format!("`sse` cannot be combined with `{k}`"));
        }
        let events: Vec<Piece> = match &obj["sse"] {
            Value::String(s) => vec![Piece::Bytes(s.as_bytes().to_vec())],
            Value::Array(items) => items.iter().map(parse_piece).collect::<Result<_, _>>()?,
            other => {
                return Err(format!(
                    "`sse` must be a string or array of strings and pieces, got {other}"
                ));
            }
        };
        if events.iter().any(Piece::is_generated)
            && (shaping.split.is_some() || shaping.split_random.is_some())
        {
            return Err("`split`/`split_random` cannot re-cut generated (`repeat`) pieces".into());
        }
        return Ok(streamed(status.unwrap_or(200), events, headers, shaping));
    }

    if has("chunks") {
        if has("body") {
            return Err("`chunks` cannot be combined with `body`".into());
        }
        if let Some(k) = generated_present.first() {
            return Err(format!("`chunks` cannot be combined with `{k}`"));
        }
        let Value::Array(items) = &obj["chunks"] else {
            return Err("`chunks` must be an array".into());
        };
        let mut events: Vec<Piece> = items
            .iter()
            .map(|item| match item {
                Value::String(s) => Piece::Bytes(event(s)),
                other => Piece::Bytes(event(&other.to_string())),
            })
            .collect();
        if get_bool(obj, "done")?.unwrap_or(true) {
            events.push(Piece::Bytes(event("[DONE]")));
        }
        return Ok(streamed(status.unwrap_or(200), events, headers, shaping));
    }

    let streams = STREAM_CONTENT_KEYS.iter().any(|k| has(k));
    if has("body") || (!streams && status.is_some_and(|s| s >= 400)) {
        if let Some(k) = generated_present.first() {
            return Err(format!("a fixed (`body`/error) reply cannot have `{k}`"));
        }
        if has("done") {
            return Err("a fixed (`body`/error) reply cannot have `done`".into());
        }
        let status = status.unwrap_or(200);
        let body = match obj.get("body") {
            Some(Value::String(s)) => s.clone().into_bytes(),
            Some(v) => v.to_string().into_bytes(),
            None => serde_json::json!({
                "error": {
                    "message": format!("mock server: scripted HTTP {status}"),
                    "type": "mock_error",
                }
            })
            .to_string()
            .into_bytes(),
        };
        return Ok(fixed(status, body, headers, shaping));
    }

    let events = generate(obj, ctx)?.into_iter().map(Piece::Bytes).collect();
    Ok(streamed(status.unwrap_or(200), events, headers, shaping))
}

/// One parsed entry of `tool_calls`.
struct ToolCall {
    id: String,
    name: String,
    arguments: String,
}

fn parse_tool_calls(obj: &Map<String, Value>) -> Result<Vec<ToolCall>, String> {
    let Some(calls) = obj.get("tool_calls") else {
        return Ok(Vec::new());
    };
    let Value::Array(calls) = calls else {
        return Err(format!("`tool_calls` must be an array, got {calls}"));
    };
    calls
        .iter()
        .enumerate()
        .map(|(k, call)| {
            let Value::Object(call) = call else {
                return Err(format!("`tool_calls[{k}]` must be an object"));
            };
            for key in call.keys() {
                if !key.starts_with('_') && !["id", "name", "arguments"].contains(&key.as_str()) {
                    return Err(format!("unknown key `{key}` in `tool_calls[{k}]`"));
                }
            }
            Ok(ToolCall {
                id: get_str(call, "id")?.map_or_else(|| format!("call_{k}"), str::to_string),
                name: get_str(call, "name")?.unwrap_or("").to_string(),
                arguments: match call.get("arguments") {
                    None => "{}".to_string(),
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                },
            })
        })
        .collect()
}

/// The SSE events of a generated chat completion stream.
fn generate(obj: &Map<String, Value>, ctx: &Ctx<'_>) -> Result<Vec<Vec<u8>>, String> {
    let text = get_str(obj, "text")?.unwrap_or("");
    let reasoning = get_str(obj, "reasoning")?.unwrap_or("");
    let reasoning_field = get_str(obj, "reasoning_field")?.unwrap_or("reasoning_content");
    let tool_calls = parse_tool_calls(obj)?;
    let delta_size = get_usize(obj, "delta_size")?.unwrap_or(4);
    let id =
        get_str(obj, "id")?.map_or_else(|| format!("chatcmpl-mock-{}", ctx.seq), str::to_string);
    let model = get_str(obj, "model")?
        .or(ctx.request_model)
        .unwrap_or("mock-model");
    let created = get_u64(obj, "created")?.unwrap_or(DEFAULT_CREATED);
    let finish_reason: Option<String> = match obj.get("finish_reason") {
        None if tool_calls.is_empty() => Some(js("stop")),
        None => Some(js("tool_calls")),
        Some(Value::Null) => None,
        Some(v) => Some(v.to_string()),
    };
    let chars = text.chars().count()
        + reasoning.chars().count()
        + tool_calls
            .iter()
            .map(|c| c.arguments.chars().count())
            .sum::<usize>();
    let usage: Option<String> = match obj.get("usage") {
        None | Some(Value::Bool(true)) => {
            let completion = chars.div_ceil(4);
            Some(format!(
                r#"{{"prompt_tokens":10,"completion_tokens":{completion},"total_tokens":{}}}"#,
                10 + completion
            ))
        }
        Some(Value::Bool(false) | Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(v) => return Err(format!("`usage` must be an object or a boolean, got {v}")),
    };
    let done = get_bool(obj, "done")?.unwrap_or(true);

    let prefix = format!(
        r#"{{"id":{},"object":"chat.completion.chunk","created":{created},"model":{}"#,
        js(&id),
        js(model)
    );
    let delta = |d: &str| {
        event(&format!(
            r#"{prefix},"choices":[{{"index":0,"delta":{d},"finish_reason":null}}]}}"#
        ))
    };

    let mut events = vec![delta(r#"{"role":"assistant","content":""}"#)];
    for piece in split_chars(reasoning, delta_size) {
        events.push(delta(&format!("{{{}:{}}}", js(reasoning_field), js(piece))));
    }
    for piece in split_chars(text, delta_size) {
        events.push(delta(&format!(r#"{{"content":{}}}"#, js(piece))));
    }
    for (k, call) in tool_calls.iter().enumerate() {
        events.push(delta(&format!(
            r#"{{"tool_calls":[{{"index":{k},"id":{},"type":"function","function":{{"name":{},"arguments":""}}}}]}}"#,
            js(&call.id),
            js(&call.name)
        )));
        for piece in split_chars(&call.arguments, delta_size) {
            events.push(delta(&format!(
                r#"{{"tool_calls":[{{"index":{k},"function":{{"arguments":{}}}}}]}}"#,
                js(piece)
            )));
        }
    }
    if let Some(fr) = finish_reason {
        events.push(event(&format!(
            r#"{prefix},"choices":[{{"index":0,"delta":{{}},"finish_reason":{fr}}}]}}"#
        )));
    }
    if let Some(usage) = usage {
        events.push(event(&format!(
            r#"{prefix},"choices":[],"usage":{usage}}}"#
        )));
    }
    if done {
        events.push(event("[DONE]"));
    }
    Ok(events)
}
