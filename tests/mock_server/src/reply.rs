//! Builders for scripted replies (see the crate docs for the format).
//!
//! Each function returns a complete reply object; add transport shaping or
//! overrides by indexing, e.g. `reply["delay_ms"] = json!(5)`.

use serde_json::{Value, json};

/// A streamed completion whose content is `text`.
pub fn text(text: impl Into<String>) -> Value {
    json!({ "text": text.into() })
}

/// A streamed completion making one tool call. `arguments` is serialised
/// compactly (a `Value::String` is sent verbatim, so malformed JSON can be
/// scripted).
pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Value {
    json!({
        "tool_calls": [{ "id": id.into(), "name": name.into(), "arguments": arguments }]
    })
}

/// A streamed completion making several tool calls. Each item is either a
/// reply built by [`tool_call`] (its calls are taken) or a bare call object
/// `{"id", "name", "arguments"}`.
pub fn tool_calls(calls: impl IntoIterator<Item = Value>) -> Value {
    let mut out = Vec::new();
    for call in calls {
        match call {
            Value::Object(mut obj) if obj.contains_key("tool_calls") => {
                if let Some(Value::Array(inner)) = obj.remove("tool_calls") {
                    out.extend(inner);
                }
            }
            other => out.push(other),
        }
    }
    json!({ "tool_calls": out })
}

/// A streamed completion with `reasoning` (as `reasoning_content` deltas)
/// followed by `text`.
pub fn reasoning_then_text(reasoning: impl Into<String>, text: impl Into<String>) -> Value {
    json!({ "reasoning": reasoning.into(), "text": text.into() })
}

/// A plain HTTP response with `status` and `body` (a `Value::String` is sent
/// verbatim, anything else as compact JSON).
pub fn http_error(status: u16, body: Value) -> Value {
    json!({ "status": status, "body": body })
}

/// A redirect: `status` (301, 302, 303, 307 or 308) with `Location: location` and an empty
/// body. Point `location` at a second [`MockServer`](crate::MockServer) to redirect to another
/// origin and see which headers followed.
pub fn redirect(status: u16, location: impl Into<String>) -> Value {
    json!({ "status": status, "body": "", "headers": { "location": location.into() } })
}

/// A streamed completion making one tool call whose arguments nest `depth` containers
/// (`{"v":[[…1…]]}`), sent as a raw string: deep arguments for the agent's depth limit.
///
/// # Panics
///
/// If `depth` is 0.
pub fn deep_tool_call(id: impl Into<String>, name: impl Into<String>, depth: usize) -> Value {
    assert!(depth > 0, "a depth of at least 1");
    let inner = depth - 1;
    let arguments = format!(r#"{{"v":{}1{}}}"#, "[".repeat(inner), "]".repeat(inner));
    tool_call(id, name, Value::String(arguments))
}

/// A raw SSE body of OpenAI chat chunks whose text carries a lone surrogate escape (`h\ud800i`,
/// which strict JSON decoders refuse): a client should answer `h\u{FFFD}i`.
pub fn lone_surrogate_text() -> Value {
    json!({
        "sse": [
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\\ud800i\"},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n"
        ]
    })
}
