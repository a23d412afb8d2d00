//! The library's log events handed to a host logger: [`ForwardLogs`], its levels, and the
//! process-wide installation the bindings use (with `PI_AGENT_LOG`'s stderr log).

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

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

    /// The level numbered `value` (1 = error ... 5 = trace, the enum's discriminants, as the
    /// C API passes them).
    pub fn from_u8(value: u8) -> Option<Self> {
        match value {
            1 => Some(Self::Error),
            2 => Some(Self::Warn),
            3 => Some(Self::Info),
            4 => Some(Self::Debug),
            5 => Some(Self::Trace),
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

/// Whether the host wants an event of this level from this target (see [`ForwardLogs::gated`]).
type LogGate = dyn Fn(LogLevel, &str) -> bool + Send + Sync;

/// A `tracing` layer that hands the library's events (targets starting with `pi_agent`) up to
/// a maximum level to a handler: what the bindings use to feed Python's `logging` and a C log
/// callback. Events of other crates are not forwarded.
///
/// Clones share the handler: [`set_handler`](Self::set_handler) and
/// [`remove_handler`](Self::remove_handler) on any clone change what the installed layer
/// forwards, from any thread, at any time. A handler that is replaced or removed may still be
/// finishing a call on another thread; it is dropped after its last call. An event logged by a
/// handler itself (on the thread it runs on) is not forwarded again.
#[derive(Clone)]
pub struct ForwardLogs {
    shared: Arc<Shared>,
}

struct Shared {
    /// The current maximum level as `LogLevel as u8`, 0 with no handler: the check that lets
    /// an event pass by without its fields being formatted.
    max_level: AtomicU8,
    handler: RwLock<Option<(LogLevel, Arc<LogHandler>)>>,
    /// Asked after the level check and before the event's fields are formatted.
    gate: Option<Box<LogGate>>,
}

thread_local! {
    /// Whether this thread is inside a handler (its own events are then dropped, so a handler
    /// that logs cannot recurse).
    static FORWARDING: Cell<bool> = const { Cell::new(false) };
}

impl std::fmt::Debug for ForwardLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForwardLogs")
            .field("max_level", &self.max_level())
            .finish_non_exhaustive()
    }
}

impl ForwardLogs {
    /// Forwards events up to `max_level` to `handler`.
    pub fn new(max_level: LogLevel, handler: impl Fn(&LogEvent) + Send + Sync + 'static) -> Self {
        let logs = Self::none();
        logs.set_handler(max_level, handler);
        logs
    }

    /// As [`new`](Self::new), and each event that passes the level is first offered to
    /// `wants` with its level and target: only those it says yes to have their fields
    /// formatted and reach `handler`. For a host logger whose level can change at any moment
    /// (Python's `logging`): it answers per event, and the events it does not want (DEBUG
    /// records, most of the time) cost no formatting. Like the handler, `wants` runs on the
    /// thread that emitted the event, and an event it logs itself is not forwarded.
    pub fn gated(
        max_level: LogLevel,
        wants: impl Fn(LogLevel, &str) -> bool + Send + Sync + 'static,
        handler: impl Fn(&LogEvent) + Send + Sync + 'static,
    ) -> Self {
        let logs = Self::with_gate(Some(Box::new(wants)));
        logs.set_handler(max_level, handler);
        logs
    }

    /// Forwards nothing until [`set_handler`](Self::set_handler): a layer to install once whose
    /// handler comes and goes later (the C API's `pi_set_log_callback`).
    pub fn none() -> Self {
        Self::with_gate(None)
    }

    fn with_gate(gate: Option<Box<LogGate>>) -> Self {
        Self {
            shared: Arc::new(Shared {
                max_level: AtomicU8::new(0),
                handler: RwLock::new(None),
                gate,
            }),
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

    /// Forwards events up to `max_level` to `handler` from now on, in place of the handler
    /// before (for this value and all its clones).
    pub fn set_handler(
        &self,
        max_level: LogLevel,
        handler: impl Fn(&LogEvent) + Send + Sync + 'static,
    ) {
        let handler: Arc<LogHandler> = Arc::new(handler);
        let previous = {
            let mut slot = self.write();
            self.shared
                .max_level
                .store(max_level as u8, Ordering::Release);
            slot.replace((max_level, handler))
        };
        // Dropped outside the lock: dropping a handler may run a host finaliser.
        drop(previous);
    }

    /// Stops forwarding (for this value and all its clones).
    pub fn remove_handler(&self) {
        let previous = {
            let mut slot = self.write();
            self.shared.max_level.store(0, Ordering::Release);
            slot.take()
        };
        drop(previous);
    }

    /// The level events are forwarded up to, `None` with no handler.
    pub fn max_level(&self) -> Option<LogLevel> {
        LogLevel::from_u8(self.shared.max_level.load(Ordering::Acquire))
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Option<(LogLevel, Arc<LogHandler>)>> {
        self.shared
            .handler
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The handler for an event of `level`, if it is to be forwarded.
    fn handler_for(&self, level: LogLevel) -> Option<Arc<LogHandler>> {
        if level as u8 > self.shared.max_level.load(Ordering::Acquire) {
            return None;
        }
        let slot = self
            .shared
            .handler
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        // Checked again under the lock: the handler may have changed since.
        slot.as_ref()
            .filter(|(max_level, _)| level <= *max_level)
            .map(|(_, handler)| Arc::clone(handler))
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

/// Marks the thread as inside a handler until dropped (also when the handler panics).
struct Forwarding;

impl Forwarding {
    fn enter() -> Option<Self> {
        FORWARDING.with(|inside| (!inside.replace(true)).then_some(Self))
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        FORWARDING.with(|inside| inside.set(false));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ForwardLogs {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let metadata = event.metadata();
        if !metadata.target().starts_with("pi_agent") {
            return;
        }
        let level = LogLevel::of(*metadata.level());
        let Some(handler) = self.handler_for(level) else {
            return;
        };
        let Some(_inside) = Forwarding::enter() else {
            return;
        };
        if let Some(wants) = &self.shared.gate
            && !wants(level, metadata.target())
        {
            return;
        }
        let mut fields = EventFields {
            message: String::new(),
            fields: Vec::new(),
        };
        event.record(&mut fields);
        handler(&LogEvent {
            level,
            target: metadata.target().to_owned(),
            message: fields.message,
            fields: fields.fields,
        });
    }
}

/// `layer` with a per-layer filter passing only the library's own events, so that, in a
/// subscriber of the bindings' own, other crates' events (hyper's, at TRACE) are never built,
/// and no span is recorded for it (the layer reads events only; a recorded span would cost a
/// registry look-up at every poll of a request's future, that is, per streamed event).
fn ours_only<S>(layer: ForwardLogs) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    use tracing_subscriber::Layer as _;
    layer.with_filter(tracing_subscriber::filter::filter_fn(|metadata| {
        metadata.is_event() && metadata.target().starts_with("pi_agent")
    }))
}

/// Installs `layer` as the process's `tracing` subscriber, unless one is installed already
/// (then the host's wins and this returns `false`). For bindings, which own their process's
/// logging setup; a Rust program composes [`ForwardLogs`] into its own subscriber instead.
pub fn install_global(layer: ForwardLogs) -> bool {
    use tracing_subscriber::layer::SubscriberExt as _;
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(ours_only(layer)))
        .is_ok()
}

/// As [`install_global`], and when `PI_AGENT_LOG` names a level, a stderr log at that level
/// ([`ForwardLogs::stderr`]) beside `layer`: the bindings' logging, where the host's handler
/// and the environment's quick log work together.
pub fn install_global_with_env_log(layer: ForwardLogs) -> bool {
    use tracing_subscriber::layer::SubscriberExt as _;
    let stderr = log_level_from_env().map(|level| ours_only(ForwardLogs::stderr(level)));
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(ours_only(layer))
            .with(stderr),
    )
    .is_ok()
}
