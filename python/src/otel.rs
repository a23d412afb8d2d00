//! The native half of `pi_agent._otel`: switching the span recording ([`crate::spans`]) on and
//! off, and handing its records to the Python thread that turns them into OpenTelemetry spans.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::exit::park_if_exiting;
use crate::spans::{self, SpanRecord, Value};

/// The longest single wait of [`_otel_wait`] (the Python thread loops).
const MAX_WAIT: Duration = Duration::from_secs(5);

/// Turns the recording of core's spans on or off; `False` when it cannot run (another
/// `tracing` subscriber was installed in the process before `pi_agent`'s).
#[pyfunction]
pub(crate) fn _otel_enable(enabled: bool) -> bool {
    if !spans::installed() {
        return false;
    }
    spans::set_enabled(enabled);
    true
}

/// `(enabled, spans seen, spans dropped because Python was behind)`.
#[pyfunction]
pub(crate) fn _otel_stats() -> (bool, u64, u64) {
    (spans::enabled(), spans::seen(), spans::dropped())
}

/// Waits (GIL released) up to `timeout` seconds for span records; `True` when some wait.
#[pyfunction]
pub(crate) fn _otel_wait(py: Python<'_>, timeout: f64) -> bool {
    let timeout = Duration::try_from_secs_f64(timeout)
        .unwrap_or(Duration::ZERO)
        .min(MAX_WAIT);
    py.detach(|| {
        let ready = spans::wait(timeout);
        // Taking the GIL back during the interpreter's exit would kill this thread.
        park_if_exiting();
        ready
    })
}

/// The span records queued, oldest first: `(0, key, parent, name, kind, start_ns, attributes,
/// caller)` for a start (`caller`: the Python caller's context, for a span standing for it), `(1, key, end_ns, attributes, status)` for an end.
#[pyfunction]
pub(crate) fn _otel_take(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let records = spans::take();
    let list = PyList::empty(py);
    for record in records {
        let item = match record {
            SpanRecord::Start {
                key,
                parent,
                name,
                kind,
                start_ns,
                attributes,
                caller,
            } => PyTuple::new(
                py,
                [
                    0u8.into_pyobject(py)?.into_any(),
                    key.into_pyobject(py)?.into_any(),
                    parent.into_pyobject(py)?,
                    name.into_pyobject(py)?.into_any(),
                    kind.into_pyobject(py)?,
                    start_ns.into_pyobject(py)?.into_any(),
                    attribute_dict(py, attributes)?.into_any(),
                    caller.map_or_else(|| py.None().into_bound(py), |caller| caller.into_bound(py)),
                ],
            )?,
            SpanRecord::End {
                key,
                end_ns,
                attributes,
                status,
            } => PyTuple::new(
                py,
                [
                    1u8.into_pyobject(py)?.into_any(),
                    key.into_pyobject(py)?.into_any(),
                    end_ns.into_pyobject(py)?.into_any(),
                    attribute_dict(py, attributes)?.into_any(),
                    status.into_pyobject(py)?,
                ],
            )?,
        };
        list.append(item)?;
    }
    Ok(list)
}

/// While the recording is on and the Python caller has a current OpenTelemetry span: a span
/// to enter while core opens the request's or run's spans, so that they become its children.
pub(crate) fn caller_span(py: Python<'_>) -> Option<tracing::Span> {
    if !spans::enabled() {
        return None;
    }
    let otel = py
        .import("sys")
        .and_then(|sys| sys.getattr("modules"))
        .and_then(|modules| modules.get_item("pi_agent._otel"))
        .ok()?;
    let context = otel.call_method0("_caller_context").ok()?;
    if context.is_none() {
        return None;
    }
    spans::caller_span(context.unbind())
}

fn attribute_dict<'py>(
    py: Python<'py>,
    attributes: Vec<(&'static str, Value)>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, value) in attributes {
        match value {
            Value::Str(text) => dict.set_item(name, text)?,
            Value::I64(number) => dict.set_item(name, number)?,
            Value::U64(number) => dict.set_item(name, number)?,
            Value::F64(number) => dict.set_item(name, number)?,
            Value::Bool(flag) => dict.set_item(name, flag)?,
        }
    }
    Ok(dict)
}
