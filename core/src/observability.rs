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

#[cfg(feature = "otlp")]
pub mod otlp;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use tracing::Span;
use tracing::field::Empty;

use crate::ai::{AssistantMessage, Model};

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
        usage.input + usage.cache_read + usage.cache_write,
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

/// The severity of a [`LogEvent`] (tracing's levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum LogLevel {
    /// Failures.
    Error = 1,
    /// Retries and other recovered trouble.
    Warn = 2,
    /// Milestones.
    Info = 3,
    /// Requests and responses, summarised.
    Debug = 4,
    /// Everything.
    Trace = 5,
}

impl LogLevel {
    /// `error`, `warn`, `info`, `debug` or `trace` (case-insensitive), as `PI_AGENT_LOG` takes
    /// them.
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "error" => Some(Self::Error),
            "warn" | "warning" => Some(Self::Warn),
            "info" => Some(Self::Info),
            "debug" => Some(Self::Debug),
            "trace" => Some(Self::Trace),
            _ => None,
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }

    fn of(level: tracing::Level) -> Self {
        match level {
            tracing::Level::ERROR => Self::Error,
            tracing::Level::WARN => Self::Warn,
            tracing::Level::INFO => Self::Info,
            tracing::Level::DEBUG => Self::Debug,
            _ => Self::Trace,
        }
    }
}

/// The level `PI_AGENT_LOG` asks for, if it is set to one.
pub fn log_level_from_env() -> Option<LogLevel> {
    std::env::var("PI_AGENT_LOG")
        .ok()
        .and_then(|name| LogLevel::parse(&name))
}

/// One event of the library's, as handed to a [`ForwardLogs`] handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEvent {
    /// How severe.
    pub level: LogLevel,
    /// Where from (`pi_agent::http`, `pi_agent::retry`, ...).
    pub target: String,
    /// The message.
    pub message: String,
    /// The other fields, in order, as text.
    pub fields: Vec<(String, String)>,
}

impl std::fmt::Display for LogEvent {
    /// `message key=value ...`, one line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        for (key, value) in &self.fields {
            write!(f, " {key}={value}")?;
        }
        Ok(())
    }
}

type LogHandler = dyn Fn(&LogEvent) + Send + Sync;

/// A `tracing` layer that hands the library's events (targets starting with `pi_agent`) up to
/// `max_level` to a handler: what the bindings use to feed Python's `logging` and a C log
/// callback. Events of other crates are not forwarded.
#[derive(Clone)]
pub struct ForwardLogs {
    handler: std::sync::Arc<LogHandler>,
    max_level: LogLevel,
}

impl std::fmt::Debug for ForwardLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForwardLogs")
            .field("max_level", &self.max_level)
            .finish_non_exhaustive()
    }
}

impl ForwardLogs {
    /// Forwards events up to `max_level` to `handler`.
    pub fn new(max_level: LogLevel, handler: impl Fn(&LogEvent) + Send + Sync + 'static) -> Self {
        Self {
            handler: std::sync::Arc::new(handler),
            max_level,
        }
    }

    /// A handler writing one line per event to stderr (`PI_AGENT_LOG=debug`).
    pub fn stderr(max_level: LogLevel) -> Self {
        Self::new(max_level, |event| {
            eprintln!(
                "pi_agent {:<5} {}: {event}",
                event.level.as_str(),
                event.target
            );
        })
    }
}

struct EventFields {
    message: String,
    fields: Vec<(String, String)>,
}

impl tracing::field::Visit for EventFields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.fields
                .push((field.name().to_owned(), format!("{value:?}")));
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            value.clone_into(&mut self.message);
        } else {
            self.fields
                .push((field.name().to_owned(), value.to_owned()));
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ForwardLogs {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let metadata = event.metadata();
        let level = LogLevel::of(*metadata.level());
        if level > self.max_level || !metadata.target().starts_with("pi_agent") {
            return;
        }
        let mut fields = EventFields {
            message: String::new(),
            fields: Vec::new(),
        };
        event.record(&mut fields);
        (self.handler)(&LogEvent {
            level,
            target: metadata.target().to_owned(),
            message: fields.message,
            fields: fields.fields,
        });
    }
}

/// Installs `layer` as the process's `tracing` subscriber, unless one is installed already
/// (then the host's wins and this returns `false`). For bindings, which own their process's
/// logging setup; a Rust program composes [`ForwardLogs`] into its own subscriber instead.
pub fn install_global(layer: ForwardLogs) -> bool {
    use tracing_subscriber::layer::SubscriberExt as _;
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).is_ok()
}
