//! The AI level: `stream()` / `stream_simple()` over core's [`pi_agent::ai::stream`] and
//! [`pi_agent::ai::stream_simple`], `complete*`, and `AssistantMessageEventStream`, iterable
//! with `for` and `async for`. Dropping a stream (a `with` block left early, or the object
//! collected) cancels its request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use futures::StreamExt;
use pi_agent::ai::{
    self, AssistantMessageEventStream, Context, PartialMessage, StreamOptions, WaitTimedOut,
};
use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};
use tokio_util::sync::CancellationToken;

use crate::bridge::{drive, future_into_py, ready_future};
use crate::convert::{Json, parse, serde_to_py};
use crate::event_dict::{PyEvent, Ready, event_to_py};
use crate::exit::park_if_exiting;
use crate::loop_wake::{self, Locked};
use crate::model::PyModel;
use crate::options::stream_options;
use crate::put_back::{Reader, Shared, general_next};
use crate::runtime::{Interrupted, SIGNAL_POLL, runtime, wait};
use crate::signal::PySignal;

/// A core stream shared with the runtime tasks that wait on it for a Python caller.
pub(crate) type SharedStream = Shared<AssistantMessageEventStream>;

/// The events of one model response, as pi-shaped dicts. Iterate with `for` or `async for`
/// (not both at once); `await result()` / `result_sync()` give the final message. As a (sync
/// or async) context manager it aborts the request if the block exits before the end; so does
/// collecting the object.
#[pyclass(module = "pi_agent", name = "AssistantMessageEventStream", frozen)]
pub(crate) struct PyEventStream {
    stream: SharedStream,
    partial: PartialMessage,
    /// Cancels the request: the caller's signal (`signal=` option), or the stream's own.
    signal: CancellationToken,
    /// The stream was handed to an agent (a stream function returned it): the agent reads
    /// and cancels it from now on, not this object's drop.
    handed_over: AtomicBool,
}

/// The next event, or `None` after the terminal one.
async fn next_event(stream: SharedStream) -> Option<PyEvent> {
    let mut stream = stream.lock().await;
    stream.next().await.map(PyEvent)
}

/// The next event as its dict if it is there already (`Some(None)` after the terminal one),
/// polled on the caller's thread: no runtime task, no lock wait, and the event converted where
/// it lies. `None` when it would wait (the queue is empty, or another reader holds the stream).
/// This is the path of nearly every event of a stream read as fast as it arrives.
fn ready_event<'py>(
    py: Python<'py>,
    stream: &SharedStream,
) -> Option<PyResult<Option<Bound<'py, PyAny>>>> {
    let mut stream = stream.try_lock().ok()?;
    // No waker registered: a pending `async for` wait stays the one woken.
    let Poll::Ready(event) = stream.poll_next_ready() else {
        return None;
    };
    Some(event.map(|event| event_to_py(py, &event)).transpose())
}

/// The next event (`None` after the terminal one), read on the calling thread with the GIL
/// released: core's `blocking_next`, where the thread waits for the response's socket itself.
/// Every [`SIGNAL_POLL`] it takes the GIL back to let Python deliver signals; one that raises
/// (Ctrl-C) aborts the request and is returned. `None` when another reader holds the stream.
fn read_here(
    py: Python<'_>,
    stream: &SharedStream,
    signal: &CancellationToken,
) -> Option<PyResult<Option<PyEvent>>> {
    let mut stream = stream.try_lock().ok()?;
    if let Some(event) = stream.take_front() {
        return Some(Ok(Some(PyEvent(event))));
    }
    loop {
        let read = py.detach(|| {
            let read = stream.inner_mut().blocking_next_timeout(SIGNAL_POLL);
            // Taking the GIL back during the interpreter's exit would kill this thread.
            park_if_exiting();
            read
        });
        match read {
            Ok(event) => return Some(Ok(event.map(PyEvent))),
            Err(WaitTimedOut) => {
                if let Err(error) = py.check_signals() {
                    signal.cancel();
                    return Some(Err(error));
                }
            }
        }
    }
}

/// Consumes the rest of the stream and returns the final message.
/// The final message; with `raise_on_error`, a failed one is raised as its `ModelError`.
async fn final_message(stream: SharedStream, raise_on_error: bool) -> PyResult<Json> {
    let mut stream = stream.lock().await;
    while stream.next().await.is_some() {}
    let message = stream
        .final_message()
        .unwrap_or_else(|| stream.partial().snapshot());
    if raise_on_error {
        crate::model_errors::check(&message)?;
    }
    Ok(Json(serde_json::to_value(&message).unwrap_or_default()))
}

/// `async for`'s hold on the stream while it waits for the next event.
impl Locked for tokio::sync::OwnedMutexGuard<Reader<AssistantMessageEventStream>> {
    fn poll_here<'py>(
        &mut self,
        py: Python<'py>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<PyResult<Bound<'py, PyAny>>> {
        self.poll_next_unpin(cx).map(|event| match event {
            Some(event) => event_to_py(py, &event),
            None => Err(PyStopAsyncIteration::new_err(())),
        })
    }
}

impl PyEventStream {
    pub(crate) fn open(
        model: &Bound<'_, PyAny>,
        context: &Bound<'_, PyAny>,
        mut stream_options: StreamOptions,
        simple: bool,
    ) -> PyResult<Self> {
        let model_value = PyModel::extract(model)?;
        let context: Context = parse(context, "context")?;
        // The caller's signal aborts the request; so does the stream's own (abort(), drop).
        let signal = match &stream_options.signal {
            Some(signal) => signal.child_token(),
            None => CancellationToken::new(),
        };
        stream_options.signal = Some(signal.clone());
        // The request's span is a child of the caller's OpenTelemetry span, if instrumented.
        let caller = crate::otel::caller_span(model.py());
        // Providers spawn their request on the runtime, and may call `on_payload` (Python, on
        // a worker thread) before they return: without the GIL.
        let stream = model.py().detach(|| {
            let _runtime = runtime().enter();
            let _caller = caller.as_ref().map(tracing::Span::enter);
            if simple {
                ai::stream_simple(&model_value, &context, &stream_options)
            } else {
                ai::stream(&model_value, &context, &stream_options)
            }
        });
        Ok(Self {
            partial: stream.partial(),
            stream: Arc::new(tokio::sync::Mutex::new(Reader::new(stream))),
            signal,
            handed_over: AtomicBool::new(false),
        })
    }

    /// Gives the stream to a new reader (an agent whose stream function returned it): its
    /// events and its cancellation token, which this object no longer fires when dropped.
    pub(crate) fn hand_over(&self) -> (SharedStream, CancellationToken) {
        self.handed_over.store(true, Ordering::Relaxed);
        (Arc::clone(&self.stream), self.signal.clone())
    }

    fn finished(&self) -> bool {
        self.stream
            .try_lock()
            .is_ok_and(|stream| stream.final_message().is_some())
    }

    fn cancel_unless_finished(&self) {
        if !self.finished() {
            self.signal.cancel();
        }
    }
}

impl Drop for PyEventStream {
    fn drop(&mut self) {
        // Nobody can read the stream any more: stop its request (after the end: nothing to do).
        if !self.handed_over.load(Ordering::Relaxed) {
            self.signal.cancel();
        }
    }
}

#[pymethods]
impl PyEventStream {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let next = match ready_event(py, &self.stream) {
            Some(next) => next?,
            None => {
                let next = match read_here(py, &self.stream, &self.signal) {
                    Some(next) => next?,
                    // Another reader holds the stream (an `async for`): wait for it on the
                    // runtime.
                    None => {
                        let signal = self.signal.clone();
                        wait(py, next_event(Arc::clone(&self.stream)), move || {
                            signal.cancel();
                            Interrupted::Return
                        })?
                    }
                };
                next.map(|event| event.into_pyobject(py)).transpose()?
            }
        };
        next.ok_or_else(|| PyStopIteration::new_err(()))
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let (py, this) = (slf.py(), slf.get());
        let Ok(mut stream) = Arc::clone(&this.stream).try_lock_owned() else {
            // Another reader holds the stream: wait for it on the runtime.
            return general_next(slf.as_any(), &this.stream);
        };
        // An event loop may read thousands of streams: their responses are parsed on the
        // runtime's workers, without the GIL, not on the loop's thread.
        stream.inner_mut().drive_in_background();
        // An event already there (nearly every event of a stream read as fast as it arrives)
        // is converted where it lies.
        if let Poll::Ready(event) = stream.poll_next_ready() {
            drop(stream);
            let outcome = match event {
                Some(event) => event_to_py(py, &event),
                None => Err(PyStopAsyncIteration::new_err(())),
            };
            return Ready::awaitable(py, outcome);
        }
        loop_wake::await_next(py, Box::new(stream), || {
            general_next(slf.as_any(), &this.stream)
        })
    }

    /// Waits for the end of the stream (consuming the remaining events) and returns the final
    /// assistant message: `message = await stream.result()`. Failures are a message with
    /// `stopReason` `"error"` or `"aborted"`, or, with `raise_on_error=True`, raised as the
    /// `ModelError` subclass of their kind.
    #[pyo3(signature = (*, raise_on_error = false))]
    fn result<'py>(slf: &Bound<'py, Self>, raise_on_error: bool) -> PyResult<Bound<'py, PyAny>> {
        let raise_on_error = raise_on_error
            .into_pyobject(slf.py())?
            .to_owned()
            .into_any();
        drive(
            "AssistantMessageEventStream.result",
            slf.getattr("_result_future")?,
            [raise_on_error],
        )
    }

    #[pyo3(signature = (raise_on_error = false))]
    fn _result_future<'py>(
        &self,
        py: Python<'py>,
        raise_on_error: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let stream = Arc::clone(&self.stream);
        future_into_py(py, final_message(stream, raise_on_error))
    }

    /// `result()` that blocks (GIL released); Ctrl-C aborts the request.
    #[pyo3(signature = (*, raise_on_error = false))]
    fn result_sync(&self, py: Python<'_>, raise_on_error: bool) -> PyResult<Json> {
        let stream = Arc::clone(&self.stream);
        let signal = self.signal.clone();
        wait(py, final_message(stream, raise_on_error), move || {
            signal.cancel();
            Interrupted::Return
        })?
    }

    /// Cancels the request; the stream then ends with an `error` event whose reason is
    /// `"aborted"`. Thread-safe; does nothing once the stream has ended.
    fn abort(&self) {
        self.signal.cancel();
    }

    /// The request's signal (aborting it aborts the request).
    #[getter]
    fn signal(&self) -> PySignal {
        PySignal::new(self.signal.clone())
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
        self.cancel_unless_finished();
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
        self.cancel_unless_finished();
        ready_future(py, Ok(PyBool::new(py, false).to_owned().into_any()))
    }
}

/// Starts a request to `model` with `context` (pi's `Context` dict: `systemPrompt`,
/// `messages`, `tools`) and returns its event stream at once (pi's `stream`). Never raises for
/// provider failures: they end the stream with an `error` event.
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

fn complete_async<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyDict>>,
    simple: bool,
    raise_on_error: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let stream = Bound::new(
        py,
        PyEventStream::open(model, context, stream_options(options)?, simple)?,
    )?;
    let raise_on_error = raise_on_error.into_pyobject(py)?.to_owned().into_any();
    let name = if simple {
        "complete_simple"
    } else {
        "complete"
    };
    drive(name, stream.getattr("_result_future")?, [raise_on_error])
}

/// `stream(...)`, then the final assistant message: `await pi_agent.complete(...)`.
#[pyfunction]
#[pyo3(signature = (model, context, *, raise_on_error = false, **options))]
pub(crate) fn complete<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
    raise_on_error: bool,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    complete_async(py, model, context, options, false, raise_on_error)
}

/// `complete` that blocks (GIL released) until the final assistant message.
#[pyfunction]
#[pyo3(signature = (model, context, *, raise_on_error = false, **options))]
pub(crate) fn complete_sync(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    context: &Bound<'_, PyAny>,
    raise_on_error: bool,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Json> {
    PyEventStream::open(model, context, stream_options(options)?, false)?
        .result_sync(py, raise_on_error)
}

/// `stream_simple(...)`, then the final assistant message: `await
/// pi_agent.complete_simple(...)`.
#[pyfunction]
#[pyo3(signature = (model, context, *, raise_on_error = false, **options))]
pub(crate) fn complete_simple<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
    raise_on_error: bool,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    complete_async(py, model, context, options, true, raise_on_error)
}

/// `complete_simple` that blocks (GIL released) until the final assistant message.
#[pyfunction]
#[pyo3(signature = (model, context, *, raise_on_error = false, **options))]
pub(crate) fn complete_simple_sync(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    context: &Bound<'_, PyAny>,
    raise_on_error: bool,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Json> {
    PyEventStream::open(model, context, stream_options(options)?, true)?
        .result_sync(py, raise_on_error)
}
