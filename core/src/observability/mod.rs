//! What the library reports to [`tracing`]: spans with OpenTelemetry's GenAI semantic-convention
//! names, and log events. Nothing is reported unless the host installs a subscriber, and then
//! it costs what the subscriber does.
//!
//! Spans (`otel.name` gives OpenTelemetry's span name, `otel.kind` and `otel.status_code` its
//! kind and status, as `tracing-opentelemetry` reads them; the other fields are its attribute
//! names):
//! - `invoke_agent` — one agent run: `gen_ai.operation.name = "invoke_agent"`,
//!   `gen_ai.provider.name`, `gen_ai.request.model`;
//! - `turn` — one turn of a run (a model call and its tool calls): `pi.turn`;
//! - `chat` — one model request, retries included, of kind client and with status error when
//!   it fails: `gen_ai.operation.name = "chat"`,
//!   `gen_ai.provider.name`, `gen_ai.request.model`, `server.address`,
//!   `http.response.status_code`, and at its end `gen_ai.response.id`, `gen_ai.response.model`,
//!   `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens` (cache reads and writes
//!   included), `gen_ai.usage.output_tokens`, `error.type` for a failed request;
//! - `execute_tool` — one tool call: `gen_ai.tool.name`, `gen_ai.tool.call.id`, `error.type`.
//!
//! Events: `pi_agent::http` (DEBUG: each request and its response headers, without headers or
//! bodies), `pi_agent::retry` (WARN: each retry with its delay and reason).
//!
//! Logs: [`ForwardLogs`] hands these events to a handler (the bindings feed Python's `logging`
//! and a C callback with it); `PI_AGENT_LOG=debug` asks the bindings for a stderr log.
//!
//! No secret is ever recorded (keys and credential headers are not fields; error texts are the
//! redacted ones). Message content is recorded only when the host opts in
//! ([`set_capture_content`], or `PI_AGENT_TRACE_CONTENT=1`): the response's content as
//! `gen_ai.output.messages`.
//!
//! With the cargo feature `otlp`, the `otlp` module exports these spans to an OpenTelemetry
//! collector.

mod logs;
#[cfg(feature = "otlp")]
pub mod otlp;

pub use logs::{
    ForwardLogs, LogEvent, LogLevel, install_global, install_global_with_env_log,
    log_level_from_env,
};

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use tracing::Span;
use tracing::field::Empty;

use crate::ai::model::Model;
use crate::ai::types::AssistantMessage;

/// 0 = not decided yet (read the environment), 1 = off, 2 = on.
static CAPTURE_CONTENT: AtomicU8 = AtomicU8::new(0);

/// Whether spans record message content (default: no, unless `PI_AGENT_TRACE_CONTENT=1`).
pub fn capture_content() -> bool {
    match CAPTURE_CONTENT.load(Ordering::Relaxed) {
        0 => {
            static FROM_ENV: OnceLock<bool> = OnceLock::new();
            *FROM_ENV.get_or_init(|| {
                std::env::var("PI_AGENT_TRACE_CONTENT")
                    .is_ok_and(|value| matches!(value.as_str(), "1" | "true" | "yes" | "on"))
            })
        }
        value => value == 2,
    }
}

/// Turns the recording of message content in spans on or off for the whole process.
pub fn set_capture_content(capture: bool) {
    CAPTURE_CONTENT.store(if capture { 2 } else { 1 }, Ordering::Relaxed);
}

/// The `chat` span of a model request (`message` is the empty message the response starts as).
pub(crate) fn chat_span(message: &AssistantMessage) -> Span {
    tracing::info_span!(
        target: "pi_agent::ai",
        "chat",
        otel.name = format!("chat {}", message.model),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = %message.provider,
        gen_ai.request.model = %message.model,
        pi.api = %message.api,
        server.address = Empty,
        http.response.status_code = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
        gen_ai.output.messages = Empty,
    )
}

/// Records the end of a request on its `chat` span.
pub(crate) fn record_response(span: &Span, message: &AssistantMessage) {
    if span.is_disabled() {
        return;
    }
    if let Some(id) = &message.response_id {
        span.record("gen_ai.response.id", id.as_str());
    }
    span.record(
        "gen_ai.response.model",
        message.response_model.as_deref().unwrap_or(&message.model),
    );
    span.record(
        "gen_ai.response.finish_reasons",
        message.stop_reason.as_str(),
    );
    let usage = &message.usage;
    span.record(
        "gen_ai.usage.input_tokens",
        usage
            .input
            .saturating_add(usage.cache_read)
            .saturating_add(usage.cache_write),
    );
    span.record("gen_ai.usage.output_tokens", usage.output);
    if message.stop_reason.is_failure() {
        span.record("error.type", message.stop_reason.as_str());
        span.record("otel.status_code", "error");
    }
    if capture_content() {
        let content = serde_json::to_string(&message.content).unwrap_or_default();
        span.record("gen_ai.output.messages", content.as_str());
    }
}

/// The `invoke_agent` span of an agent run.
pub(crate) fn agent_span(model: &Model) -> Span {
    tracing::info_span!(
        target: "pi_agent::agent",
        "invoke_agent",
        otel.name = "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = %model.provider,
        gen_ai.request.model = %model.id,
    )
}

/// The span of one turn of a run.
pub(crate) fn turn_span(turn: usize) -> Span {
    tracing::info_span!(target: "pi_agent::agent", "turn", pi.turn = turn)
}

/// The `execute_tool` span of one tool call.
pub(crate) fn tool_span(name: &str, call_id: &str) -> Span {
    tracing::info_span!(
        target: "pi_agent::agent",
        "execute_tool",
        otel.name = format!("execute_tool {name}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        error.type = Empty,
    )
}
