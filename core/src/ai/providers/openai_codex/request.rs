//! The Codex request: URL, body and headers (pi's `buildRequestBody`, `resolveCodexUrl`,
//! `buildSSEHeaders` and `buildWebSocketHeaders`).

use serde_json::{Map, Value, json};

use super::super::http::Headers;
use super::super::openai_responses::request::{
    INCLUDE_ENCRYPTED_REASONING, convert_input_with, convert_tools_with_strict,
};
use crate::ai::model::Model;
use crate::ai::options::{ApiKey, StreamOptions};
use crate::ai::simple_options::mapped_effort;
use crate::ai::tool_choice::ToolChoice;
use crate::ai::types::Context;

/// The endpoint used when a model has no base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://chatgpt.com/backend-api";

/// Target providers whose `call_id|item_id` tool-call ids are kept as two ids (pi's
/// `CODEX_TOOL_CALL_PROVIDERS`).
pub(crate) const TOOL_CALL_PROVIDERS: &[&str] = &["openai", "openai-codex", "opencode"];

/// The instructions sent when the context has no system prompt.
pub(crate) const DEFAULT_INSTRUCTIONS: &str = "You are a helpful assistant.";

/// `OpenAI-Beta` over SSE.
pub(crate) const SSE_BETA: &str = "responses=experimental";

/// `OpenAI-Beta` over a WebSocket.
pub(crate) const WEBSOCKET_BETA: &str = "responses_websockets=2026-02-06";

/// `{base}/codex/responses` (pi's `resolveCodexUrl`): a base that already ends in `/codex` or
/// `/codex/responses` is completed, not doubled.
pub(crate) fn resolve_url(base_url: &str) -> String {
    let raw = if base_url.trim().is_empty() {
        DEFAULT_BASE_URL
    } else {
        base_url
    };
    let normalized = raw.trim_end_matches('/');
    if normalized.ends_with("/codex/responses") {
        normalized.to_owned()
    } else if normalized.ends_with("/codex") {
        format!("{normalized}/responses")
    } else {
        format!("{normalized}/codex/responses")
    }
}

/// The same endpoint as a WebSocket URL (`https` → `wss`, `http` → `ws`).
pub(crate) fn websocket_url(base_url: &str) -> String {
    let url = resolve_url(base_url);
    if let Some(rest) = url.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = url.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        url
    }
}

/// The request body, in pi's key order. The system prompt is `instructions`, not an input
/// item; tools are sent with `strict: null`.
pub(crate) fn build_body(model: &Model, context: &Context, options: &StreamOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("store".into(), json!(false));
    body.insert("stream".into(), json!(true));
    let instructions = context
        .system_prompt
        .as_deref()
        .filter(|prompt| !prompt.is_empty())
        .unwrap_or(DEFAULT_INSTRUCTIONS);
    body.insert("instructions".into(), json!(instructions));
    body.insert(
        "input".into(),
        Value::Array(convert_input_with(
            model,
            context,
            TOOL_CALL_PROVIDERS,
            false,
        )),
    );
    let verbosity = options
        .text_verbosity
        .as_deref()
        .filter(|v| !v.is_empty())
        .unwrap_or("low");
    let mut text = json!({"verbosity": verbosity});
    if let Some(schema) = &options.output_schema {
        text["format"] = schema.text_format();
    }
    body.insert("text".into(), text);
    body.insert("include".into(), json!([INCLUDE_ENCRYPTED_REASONING]));
    if let Some(session) = &options.session_id {
        body.insert("prompt_cache_key".into(), json!(session));
    }
    // pi always sends "auto"; a caller's tool choice is sent as given (README, difference 17).
    body.insert(
        "tool_choice".into(),
        options
            .tool_choice
            .as_ref()
            .map_or_else(|| json!("auto"), ToolChoice::responses),
    );
    body.insert("parallel_tool_calls".into(), json!(true));
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(tier) = &options.service_tier {
        body.insert("service_tier".into(), json!(tier));
    }
    if let Some(tools) = context.tools.as_deref().filter(|tools| !tools.is_empty()) {
        body.insert(
            "tools".into(),
            Value::Array(convert_tools_with_strict(tools, &Value::Null)),
        );
    }
    if let Some(effort) = options.reasoning_effort.as_deref() {
        let effort = if effort == "none" {
            model
                .thinking_level_map
                .as_ref()
                .and_then(|map| map.get("off").cloned().flatten())
                .unwrap_or_else(|| "none".to_owned())
        } else {
            mapped_effort(model, effort)
        };
        body.insert(
            "reasoning".into(),
            json!({
                "effort": effort,
                "summary": options.reasoning_summary.as_deref().unwrap_or("auto"),
            }),
        );
    }
    Value::Object(body)
}

/// `pi (<platform> <release>; <arch>)`, with Node's names for the platform and architecture.
pub(crate) fn user_agent() -> String {
    let platform = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        other => other,
    };
    match os_release() {
        Some(release) => format!("pi ({platform} {release}; {arch})"),
        None => format!("pi ({platform}; {arch})"),
    }
}

/// The kernel release, where it can be read without a system call binding.
fn os_release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|release| release.trim().to_owned())
        .filter(|release| !release.is_empty())
}

/// The headers both transports send: the model's and the caller's, then (replacing theirs) the
/// token, the account id, `originator: pi` and the user agent.
fn base_headers(
    model: &Model,
    options: &StreamOptions,
    account_id: &str,
    token: &ApiKey,
) -> Headers {
    let mut headers = Headers::default();
    headers.extend(model.headers.iter().flatten());
    headers.extend(&options.headers);
    headers.set("Authorization", format!("Bearer {}", token.expose()));
    headers.set("chatgpt-account-id", account_id);
    headers.set("originator", "pi");
    headers.set("User-Agent", user_agent());
    headers
}

/// The headers of a request over SSE.
pub(crate) fn sse_headers(
    model: &Model,
    options: &StreamOptions,
    account_id: &str,
    token: &ApiKey,
) -> Headers {
    let mut headers = base_headers(model, options, account_id, token);
    headers.set("OpenAI-Beta", SSE_BETA);
    headers.set("accept", "text/event-stream");
    headers.set("content-type", "application/json");
    if let Some(session) = &options.session_id {
        headers.set("session_id", session.as_str());
        headers.set("x-client-request-id", session.as_str());
    }
    headers
}

/// The headers of a WebSocket handshake; `request_id` is the session id, or a fresh UUID.
pub(crate) fn websocket_headers(
    model: &Model,
    options: &StreamOptions,
    account_id: &str,
    token: &ApiKey,
    request_id: &str,
) -> Headers {
    let mut headers = base_headers(model, options, account_id, token);
    headers.0.retain(|(name, _)| {
        !matches!(
            name.to_ascii_lowercase().as_str(),
            "accept" | "content-type"
        )
    });
    headers.set("OpenAI-Beta", WEBSOCKET_BETA);
    headers.set("x-client-request-id", request_id);
    headers.set("session_id", request_id);
    headers
}

/// A random (version 4) UUID, pi's request id for a WebSocket without a session.
pub(crate) fn random_uuid() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness: the clock still makes ids distinct enough for a request id.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::{Message, Tool, UserMessage};

    #[test]
    fn urls_like_pi() {
        assert_eq!(
            resolve_url(""),
            "https://chatgpt.com/backend-api/codex/responses"
        );
        assert_eq!(
            resolve_url("http://127.0.0.1:9/v1/"),
            "http://127.0.0.1:9/v1/codex/responses"
        );
        assert_eq!(resolve_url("https://x/codex"), "https://x/codex/responses");
        assert_eq!(
            resolve_url("https://x/codex/responses//"),
            "https://x/codex/responses"
        );
        assert_eq!(
            websocket_url(DEFAULT_BASE_URL),
            "wss://chatgpt.com/backend-api/codex/responses"
        );
        assert_eq!(
            websocket_url("http://127.0.0.1:9"),
            "ws://127.0.0.1:9/codex/responses"
        );
    }

    #[test]
    fn body_in_pis_order_with_instructions_and_null_strict_tools() {
        let mut model = Model::new("openai-codex-responses", "openai-codex", "gpt-5.2", "");
        model.reasoning = true;
        model.thinking_level_map = Some(
            [("minimal".to_owned(), Some("low".to_owned()))]
                .into_iter()
                .collect(),
        );
        let context = Context {
            system_prompt: None,
            messages: vec![Message::User(UserMessage::text("hi"))],
            tools: Some(vec![Tool {
                name: "t".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }]),
        };
        let options = StreamOptions {
            session_id: Some("s-1".into()),
            reasoning_effort: Some("minimal".into()),
            ..StreamOptions::default()
        };
        let body = build_body(&model, &context, &options);
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "model",
                "store",
                "stream",
                "instructions",
                "input",
                "text",
                "include",
                "prompt_cache_key",
                "tool_choice",
                "parallel_tool_calls",
                "tools",
                "reasoning"
            ]
        );
        assert_eq!(body["instructions"], DEFAULT_INSTRUCTIONS);
        assert_eq!(body["input"][0]["role"], "user");
        assert_eq!(body["tools"][0]["strict"], Value::Null);
        assert_eq!(
            body["reasoning"],
            json!({"effort": "low", "summary": "auto"})
        );
        let off = StreamOptions {
            reasoning_effort: Some("none".into()),
            ..StreamOptions::default()
        };
        assert_eq!(
            build_body(&model, &context, &off)["reasoning"]["effort"],
            "none"
        );
    }

    #[test]
    fn headers_override_the_callers_and_differ_per_transport() {
        let model = Model::new("openai-codex-responses", "openai-codex", "gpt-5.2", "");
        let options = StreamOptions {
            headers: [
                ("authorization".to_owned(), "Bearer theirs".to_owned()),
                ("x-extra".to_owned(), "kept".to_owned()),
            ]
            .into(),
            session_id: Some("sess".into()),
            ..StreamOptions::default()
        };
        let token = ApiKey::new("tok");
        let sse = sse_headers(&model, &options, "acc", &token).0;
        let get = |headers: &[(String, String)], name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get(&sse, "authorization").as_deref(), Some("Bearer tok"));
        assert_eq!(get(&sse, "x-extra").as_deref(), Some("kept"));
        assert_eq!(get(&sse, "chatgpt-account-id").as_deref(), Some("acc"));
        assert_eq!(get(&sse, "openai-beta").as_deref(), Some(SSE_BETA));
        assert_eq!(get(&sse, "session_id").as_deref(), Some("sess"));
        let ws = websocket_headers(&model, &options, "acc", &token, "req-1").0;
        assert_eq!(get(&ws, "openai-beta").as_deref(), Some(WEBSOCKET_BETA));
        assert_eq!(get(&ws, "session_id").as_deref(), Some("req-1"));
        assert_eq!(get(&ws, "accept"), None);
        assert!(user_agent().starts_with("pi ("));
        let uuid = random_uuid();
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
        assert_ne!(uuid, random_uuid());
    }
}
