//! Core's `tracing` spans, recorded for Python's OpenTelemetry SDK (`pi_agent._otel`).
//!
//! A [`SpanLayer`] beside the log forwarding sees the library's spans (targets `pi_agent::*`)
//! only while Python has opted in ([`set_enabled`]); otherwise its filter turns every span
//! away before the layer runs. It turns each span into two records, a [`SpanRecord::Start`]
//! when the span opens (name, kind, start time, first attributes, parent) and a
//! [`SpanRecord::End`] when it closes (end time, attributes recorded since, status), and puts
//! them on one queue that a Python thread drains ([`wait`], [`take`]). A span's start reaches
//! Python before its children's, so Python creates the OpenTelemetry span of a parent before
//! those of its children and can link them.
//!
//! Nothing here waits for Python: the runtime threads only lock the queue for a push. The
//! queue is bounded: once [`MAX_PENDING_STARTS`] starts wait for Python, new spans are dropped
//! (counted by [`dropped`]) together with their ends; the end of a span whose start was
//! queued is always queued, so no span Python opened stays open (those ends are bounded by
//! the number of spans open at once).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::{Py, PyAny};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Filter};
use tracing_subscriber::registry::LookupSpan;

/// How many span starts may wait for Python before new spans are dropped.
pub(crate) const MAX_PENDING_STARTS: usize = 4096;

/// Whether the layer is part of the process's subscriber (another one may have come first).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Whether Python has opted in.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// The next span key (keys are never reused, unlike `tracing`'s span ids).
static NEXT_KEY: AtomicU64 = AtomicU64::new(1);
/// Spans the layer saw (opened while enabled), dropped ones included.
static SEEN: AtomicU64 = AtomicU64::new(0);

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    records: VecDeque::new(),
    pending_starts: 0,
    dropped: 0,
});
static READY: Condvar = Condvar::new();

/// The target of the spans that carry a Python caller's OpenTelemetry context ([`caller_span`]).
const CALLER_TARGET: &str = "pi_agent::python";

thread_local! {
    /// The context [`caller_span`] hands to the layer, on the thread that opens the span.
    static PENDING_CONTEXT: RefCell<Option<Py<PyAny>>> = const { RefCell::new(None) };
}

struct Queue {
    records: VecDeque<SpanRecord>,
    pending_starts: usize,
    dropped: u64,
}

fn queue() -> MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An attribute's value, as `tracing` recorded it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Str(String),
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
}

/// What Python receives about a span.
#[derive(Debug)]
pub(crate) enum SpanRecord {
    /// A span opened.
    Start {
        key: u64,
        /// The key of the closest enclosing span Python knows of.
        parent: Option<u64>,
        /// `otel.name`, else the span's name.
        name: String,
        /// `otel.kind` (`client`, ...), if given.
        kind: Option<String>,
        start_ns: u64,
        attributes: Vec<(&'static str, Value)>,
        /// For a span of [`caller_span`]: the Python caller's OpenTelemetry context (the span
        /// only carries it to its children; it is no OpenTelemetry span itself).
        caller: Option<Py<PyAny>>,
    },
    /// A span closed.
    End {
        key: u64,
        end_ns: u64,
        /// Attributes recorded after the span opened.
        attributes: Vec<(&'static str, Value)>,
        /// `otel.status_code` (`error`, `ok`), if recorded.
        status: Option<String>,
    },
}

/// Notes whether the layer was installed (at import).
pub(crate) fn set_installed(installed: bool) {
    INSTALLED.store(installed, Ordering::Release);
}

/// Whether the layer is part of the process's subscriber.
pub(crate) fn installed() -> bool {
    INSTALLED.load(Ordering::Acquire)
}

/// Whether Python has opted in.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// Turns the recording on or off (spans open when it is turned off still report their end).
pub(crate) fn set_enabled(enabled: bool) {
    if ENABLED.swap(enabled, Ordering::AcqRel) != enabled {
        // The callsites' interest depends on the switch (see `WhenEnabled`): ask again.
        tracing::callsite::rebuild_interest_cache();
    }
}

/// Spans seen since the process started (0 while Python never opted in).
pub(crate) fn seen() -> u64 {
    SEEN.load(Ordering::Relaxed)
}

/// Spans dropped because Python was behind.
pub(crate) fn dropped() -> u64 {
    queue().dropped
}

/// A span standing for the Python caller's OpenTelemetry `context` (from
/// `opentelemetry.context.get_current()`): core's spans opened inside it (entered) become, in
/// OpenTelemetry, children of the caller's current span. `None` while the recording is off.
pub(crate) fn caller_span(context: Py<PyAny>) -> Option<tracing::Span> {
    if !enabled() {
        return None;
    }
    PENDING_CONTEXT.with(|pending| *pending.borrow_mut() = Some(context));
    let span = tracing::info_span!(target: CALLER_TARGET, "python_context");
    // Taken by the layer when it saw the span; dropped here when it did not.
    PENDING_CONTEXT.with(|pending| pending.borrow_mut().take());
    Some(span)
}

/// Waits up to `timeout` for records; `true` when some are queued.
pub(crate) fn wait(timeout: Duration) -> bool {
    let guard = queue();
    let (guard, _) = READY
        .wait_timeout_while(guard, timeout, |queue| queue.records.is_empty())
        .unwrap_or_else(PoisonError::into_inner);
    !guard.records.is_empty()
}

/// Everything queued, oldest first.
pub(crate) fn take() -> Vec<SpanRecord> {
    let mut queue = queue();
    queue.pending_starts = 0;
    queue.records.drain(..).collect()
}

fn push_start(record: SpanRecord) -> bool {
    let mut queue = queue();
    if queue.pending_starts >= MAX_PENDING_STARTS {
        queue.dropped += 1;
        return false;
    }
    queue.pending_starts += 1;
    queue.records.push_back(record);
    drop(queue);
    READY.notify_one();
    true
}

fn push_end(record: SpanRecord) {
    queue().records.push_back(record);
    READY.notify_one();
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
        })
}

fn ours(metadata: &Metadata<'_>) -> bool {
    metadata.is_span() && metadata.target().starts_with("pi_agent")
}

/// The layer's filter: the library's spans, while Python has opted in.
pub(crate) struct WhenEnabled;

impl<S> Filter<S> for WhenEnabled {
    fn enabled(&self, metadata: &Metadata<'_>, _cx: &Context<'_, S>) -> bool {
        ours(metadata) && ENABLED.load(Ordering::Acquire)
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        // Decided per span while the switch is on, never for others' callsites, and never
        // while it is off (the switch rebuilds the cache): with no layer interested, a span
        // is not recorded at all. (Per-layer filters that each say no at run time still leave
        // the registry recording the span, and entering it at every poll of a request's
        // future cost a look-up per streamed event.)
        if ours(metadata) && ENABLED.load(Ordering::Acquire) {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }
}

/// The fields of a span, sorted out: `otel.*` are OpenTelemetry's span properties, the rest
/// its attributes.
#[derive(Default)]
struct Fields {
    name: Option<String>,
    kind: Option<String>,
    status: Option<String>,
    attributes: Vec<(&'static str, Value)>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        let text = |value: Value| match value {
            Value::Str(text) => text,
            other => format!("{other:?}"),
        };
        match field.name() {
            "otel.name" => self.name = Some(text(value)),
            "otel.kind" => self.kind = Some(text(value).to_ascii_lowercase()),
            "otel.status_code" => self.status = Some(text(value).to_ascii_lowercase()),
            name if name.starts_with("otel.") => {}
            name => self.attributes.push((name, value)),
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::Str(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::Str(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::I64(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::U64(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::F64(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }
}

/// A span whose start Python received: what its end needs.
struct Live {
    key: u64,
    later: Fields,
}

/// Records the library's spans for Python (see the module's documentation).
pub(crate) struct SpanLayer;

impl<S> tracing_subscriber::Layer<S> for SpanLayer
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        SEEN.fetch_add(1, Ordering::Relaxed);
        let parent = span
            .scope()
            .skip(1)
            .find_map(|ancestor| ancestor.extensions().get::<Live>().map(|live| live.key));
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
        let caller = if attrs.metadata().target() == CALLER_TARGET {
            PENDING_CONTEXT.with(|pending| pending.borrow_mut().take())
        } else {
            None
        };
        let start = SpanRecord::Start {
            key,
            parent,
            name: fields
                .name
                .unwrap_or_else(|| attrs.metadata().name().to_owned()),
            kind: fields.kind,
            start_ns: now_ns(),
            attributes: fields.attributes,
            caller,
        };
        if push_start(start) {
            span.extensions_mut().insert(Live {
                key,
                later: Fields::default(),
            });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        if let Some(live) = span.extensions_mut().get_mut::<Live>() {
            values.record(&mut live.later);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(live) = span.extensions_mut().remove::<Live>() else {
            return;
        };
        push_end(SpanRecord::End {
            key: live.key,
            end_ns: now_ns(),
            attributes: live.later.attributes,
            status: live.later.status,
        });
    }
}
