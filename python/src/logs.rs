//! Core's log events → Python's `logging`, under the logger `pi_agent` (a target
//! `pi_agent::http` goes to `pi_agent.http`, a child of it): request and response summaries at
//! DEBUG, retries at WARNING, as core emits them. Records carry the event's fields in
//! `record.pi_fields`. Core never puts a secret in an event, so no record holds one.
//!
//! `PI_AGENT_LOG=debug` (or `info`, `warn`, `trace`) sets the `pi_agent` logger's level and,
//! when no handler would see its records (neither its own nor the root's), adds one writing to stderr.

use std::sync::{Mutex, PoisonError};

use pi_agent::observability::{ForwardLogs, LogEvent, LogLevel, log_level_from_env};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::exit::with_gil;

/// Python's number for a core level (TRACE has none: 5, below DEBUG).
fn python_level(level: LogLevel) -> u8 {
    match level {
        LogLevel::Error => 40,
        LogLevel::Warn => 30,
        LogLevel::Info => 20,
        LogLevel::Debug => 10,
        LogLevel::Trace => 5,
    }
}

/// Whether the target's logger takes records of `level` now (`isEnabledFor`, asked per event:
/// a level set later applies at once). Asked before the event's fields are formatted, so a
/// DEBUG record nobody listens to costs this call only. `false` while the interpreter is exiting.
fn wants(level: LogLevel, target: &str) -> bool {
    with_gil(|py| {
        logger(py, target)
            .and_then(|logger| {
                logger
                    .call_method1(intern!(py, "isEnabledFor"), (python_level(level),))?
                    .is_truthy()
            })
            .unwrap_or_else(|error| {
                let _ = crate::errors::keep_interrupt(py, &error);
                false
            })
    })
    .unwrap_or(false)
}

/// Hands one event [`wants`] let through to `logging` (on the thread that emitted it, with the
/// GIL, unless the interpreter is exiting). A failing handler is `logging`'s business, not the
/// request's; a Ctrl-C that interrupted it is put back for the main thread.
fn emit(event: &LogEvent) {
    with_gil(|py| {
        if let Err(error) = emit_with_gil(py, event) {
            let _ = crate::errors::keep_interrupt(py, &error);
        }
    });
}

/// The `logging.Logger` of every target seen so far. `logging.getLogger` returns the same
/// object for a name for the process's life, so it is asked once per target: per event, the
/// import, the name's conversion and that call were most of what a disabled DEBUG record
/// cost (about 12,000 instructions; two such records per request).
static LOGGERS: Mutex<Vec<(String, Py<PyAny>)>> = Mutex::new(Vec::new());

/// The logger of `target` (`pi_agent::http` → `pi_agent.http`).
fn logger<'py>(py: Python<'py>, target: &str) -> PyResult<Bound<'py, PyAny>> {
    let lock = || LOGGERS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, logger)) = lock().iter().find(|(name, _)| name == target) {
        return Ok(logger.bind(py).clone());
    }
    let logger = py
        .import("logging")?
        .call_method1("getLogger", (target.replace("::", "."),))?;
    lock().push((target.to_owned(), logger.clone().unbind()));
    Ok(logger)
}

fn emit_with_gil(py: Python<'_>, event: &LogEvent) -> PyResult<()> {
    let level = python_level(event.level);
    let logger = logger(py, &event.target)?;
    let fields = PyDict::new(py);
    for (key, value) in &event.fields {
        fields.set_item(key, value)?;
    }
    let extra = PyDict::new(py);
    extra.set_item("pi_fields", fields)?;
    let keywords = PyDict::new(py);
    keywords.set_item("extra", extra)?;
    logger.call_method("log", (level, "%s", event.to_string()), Some(&keywords))?;
    Ok(())
}

/// Installs the process's `tracing` subscriber (at import): this forwarding, and beside it the
/// span recording for OpenTelemetry ([`crate::spans`], off until Python opts in). Unless the
/// process already has a subscriber (then neither runs). Applies `PI_AGENT_LOG`.
pub(crate) fn install(py: Python<'_>) -> PyResult<()> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    let from_env = log_level_from_env();
    let max_level = from_env.map_or(LogLevel::Debug, |level| level.max(LogLevel::Debug));
    // Only the library's own events: other crates' events (hyper's, at TRACE) are never built,
    // and spans are left to the span layer (recorded for this one, every poll of a request's
    // future would enter its span in the registry: a cost per streamed event).
    let logs = ForwardLogs::gated(max_level, wants, emit).with_filter(
        tracing_subscriber::filter::filter_fn(|metadata| {
            metadata.is_event() && metadata.target().starts_with("pi_agent")
        }),
    );
    let subscriber = tracing_subscriber::registry()
        .with(logs)
        .with(crate::spans::SpanLayer.with_filter(crate::spans::WhenEnabled));
    let installed = tracing::subscriber::set_global_default(subscriber).is_ok();
    crate::spans::set_installed(installed);
    if let Some(level) = from_env {
        let logging = py.import("logging")?;
        let logger = logging.call_method1("getLogger", ("pi_agent",))?;
        logger.call_method1("setLevel", (python_level(level),))?;
        if !logger.call_method0("hasHandlers")?.is_truthy()? {
            let handler = logging.call_method1("StreamHandler", ())?;
            let format = logging.call_method1(
                "Formatter",
                ("pi_agent %(levelname)s %(name)s: %(message)s",),
            )?;
            handler.call_method1("setFormatter", (format,))?;
            logger.call_method1("addHandler", (handler,))?;
        }
    }
    Ok(())
}
