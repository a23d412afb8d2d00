//! The AI level: `stream()` / `complete()` / `acomplete()` over core's [`pi_agent::ai::stream`],
//! and `AssistantMessageEventStream`, iterable with `for` and `async for`.

use std::sync::Arc;

use futures::StreamExt;
use pi_agent::ai::{self, AssistantMessageEventStream, Context, PartialMessage, StreamOptions};
use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tokio_util::sync::CancellationToken;

use crate::bridge::{drive, future_into_py, ready, ready_future};
use crate::convert::{Json, parse, serde_to_py};
use crate::model::PyModel;
use crate::options::stream_options;
use crate::runtime::{RUNTIME, wait};

/// The events of one model response, as pi-shaped dicts. Iterate with `for` or `async for`
/// (not both at once); `result()` / `await aresult()` give the final message. As a (sync or
/// async) context manager it aborts the request if the block exits before the end.
#[pyclass(module = "pi_agent", name = "AssistantMessageEventStream", frozen)]
pub(crate) struct PyEventStream {
    /// Shared with the runtime tasks that wait on it for a Python caller.
    stream: Arc<tokio::sync::Mutex<AssistantMessageEventStream>>,
    partial: PartialMessage,
    signal: CancellationToken,
}

/// The next event, or `None` after the terminal one.
async fn next_event(stream: Arc<tokio::sync::Mutex<AssistantMessageEventStream>>) -> Option<Json> {
    let mut stream = stream.lock().await;
    let event = stream.next().await?;
    Some(Json(serde_json::to_value(&event).unwrap_or_default()))
}

/// Consumes the rest of the stream and returns the final message.
async fn final_message(stream: Arc<tokio::sync::Mutex<AssistantMessageEventStream>>) -> Json {
    let mut stream = stream.lock().await;
    while stream.next().await.is_some() {}
    let message = stream
        .final_message()
        .unwrap_or_else(|| stream.partial().snapshot());
    Json(serde_json::to_value(&message).unwrap_or_default())
}

impl PyEventStream {
    fn open(
        model: &Bound<'_, PyAny>,
        context: &Bound<'_, PyAny>,
        mut stream_options: StreamOptions,
        simple: bool,
    ) -> PyResult<Self> {
        let model = PyModel::extract(model)?;
        let context: Context = parse(context, "context")?;
        let signal = CancellationToken::new();
        stream_options.signal = Some(signal.clone());
        // Providers spawn their request on the runtime.
        let stream = {
            let _runtime = RUNTIME.enter();
            if simple {
                ai::stream_simple(&model, &context, &stream_options)
            } else {
                ai::stream(&model, &context, &stream_options)
            }
        };
        Ok(Self {
            partial: stream.partial(),
            stream: Arc::new(tokio::sync::Mutex::new(stream)),
            signal,
        })
    }

    fn finished(&self) -> bool {
        self.stream
            .try_lock()
            .is_ok_and(|stream| stream.final_message().is_some())
    }
}

#[pymethods]
impl PyEventStream {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Json> {
        let stream = Arc::clone(&self.stream);
        let next = match ready(next_event(Arc::clone(&stream))) {
            Some(next) => next,
            None => {
                let signal = self.signal.clone();
                wait(py, next_event(stream), move || signal.cancel())?
            }
        };
        next.ok_or_else(|| PyStopIteration::new_err(()))
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = Arc::clone(&self.stream);
        if let Some(next) = ready(next_event(Arc::clone(&stream))) {
            let outcome = next.map_or_else(
                || Err(PyStopAsyncIteration::new_err(())),
                |event| event.into_pyobject(py),
            );
            return ready_future(py, outcome);
        }
        future_into_py(py, async move {
            next_event(stream)
                .await
                .ok_or_else(|| PyStopAsyncIteration::new_err(()))
        })
    }

    /// Waits for the end of the stream (consuming the remaining events) and returns the final
    /// assistant message; failures are a message with `stopReason` `"error"` or `"aborted"`.
    fn result(&self, py: Python<'_>) -> PyResult<Json> {
        let stream = Arc::clone(&self.stream);
        let signal = self.signal.clone();
        wait(py, final_message(stream), move || signal.cancel())
    }

    /// `result()` for asyncio.
    fn aresult<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        drive(slf.getattr("_aresult_future")?, [])
    }

    fn _aresult_future<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = Arc::clone(&self.stream);
        future_into_py(py, async move { Ok(final_message(stream).await) })
    }

    /// Cancels the request; the stream then ends with an `error` event whose reason is
    /// `"aborted"`. Thread-safe; does nothing once the stream has ended.
    fn abort(&self) {
        self.signal.cancel();
    }

    /// The message so far (what the events yielded until now add up to).
    #[getter]
    fn partial<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.partial.snapshot())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> bool {
        if !self.finished() {
            self.signal.cancel();
        }
        false
    }

    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        ready_future(slf.py(), Ok(slf.clone().into_any()))
    }

    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc_type: &Bound<'py, PyAny>,
        _exc: &Bound<'py, PyAny>,
        _traceback: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !self.finished() {
            self.signal.cancel();
        }
        ready_future(
            py,
            Ok(pyo3::types::PyBool::new(py, false).to_owned().into_any()),
        )
    }
}

/// Starts a request to `model` with `context` (pi's `Context` dict: `systemPrompt`,
/// `messages`, `tools`) and returns its event stream at once. Never raises for provider
/// failures: they end the stream with an `error` event.
#[pyfunction]
#[pyo3(signature = (model, context, **options))]
pub(crate) fn stream(
    model: &Bound<'_, PyAny>,
    context: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyEventStream> {
    PyEventStream::open(model, context, stream_options(options)?, false)
}

/// pi's `streamSimple`: like `stream`, but `reasoning` (a level, `"off"` for none) is mapped
/// onto the provider's own options, thinking is turned off explicitly when no level is given,
/// and `max_tokens` defaults to `min(model.max_tokens, 32000)` (what the agent uses).
#[pyfunction]
#[pyo3(signature = (model, context, **options))]
pub(crate) fn stream_simple(
    model: &Bound<'_, PyAny>,
    context: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyEventStream> {
    PyEventStream::open(model, context, stream_options(options)?, true)
}

/// `stream_simple(...)`, then blocks (without the GIL) until the final assistant message.
#[pyfunction]
#[pyo3(signature = (model, context, **options))]
pub(crate) fn complete_simple(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    context: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Json> {
    PyEventStream::open(model, context, stream_options(options)?, true)?.result(py)
}

/// `await acomplete_simple(...)`: `complete_simple` for asyncio.
#[pyfunction]
#[pyo3(signature = (model, context, **options))]
pub(crate) fn acomplete_simple<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let stream = Bound::new(
        py,
        PyEventStream::open(model, context, stream_options(options)?, true)?,
    )?;
    drive(stream.getattr("_aresult_future")?, [])
}

/// `stream(...)`, then blocks (without the GIL) until the final assistant message.
#[pyfunction]
#[pyo3(signature = (model, context, **options))]
pub(crate) fn complete(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    context: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Json> {
    PyEventStream::open(model, context, stream_options(options)?, false)?.result(py)
}

/// `await acomplete(...)`: `complete` for asyncio.
#[pyfunction]
#[pyo3(signature = (model, context, **options))]
pub(crate) fn acomplete<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let stream = Bound::new(
        py,
        PyEventStream::open(model, context, stream_options(options)?, false)?,
    )?;
    drive(stream.getattr("_aresult_future")?, [])
}
