//! A Python `stream_fn` as core's [`StreamFn`]: how an agent calls its model, written in
//! Python (pi's `streamFn`). The function gets `(model, context, options)` — options as the
//! keywords `pi_agent.stream` takes, secrets and signal included — and returns (or, if `async
//! def`, resolves to) one of:
//! - an `AssistantMessageEventStream` (e.g. `pi_agent.stream_simple(model, context,
//!   **options)` with other options), used as it is;
//! - an assistant message dict: the whole answer, streamed as one delta per block;
//! - an iterable or async iterable of pi-shaped events (`AssistantMessageEvent` dicts, with
//!   or without `partial`; pi's proxy events work too).
//!
//! Core turns all three into a stream ([`stream_from_events`], [`stream_message`]); the run's
//! abort cancels the request, the iteration, or the returned stream.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use pi_agent::agent::{EventSourceError, StreamFn, stream_from_events, stream_message};
use pi_agent::ai::{AssistantMessage, Context, Model, StreamOptions};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::bridge::{Done, helper, spawn_job};
use crate::callable::{self, EXITING, RunScope, Scope, describe};
use crate::convert::{from_py, parse, serde_to_py};
use crate::errors::type_name;
use crate::exit::with_gil;
use crate::model::PyModel;
use crate::options::to_keywords;
use crate::stream::{PyEventStream, SharedStream};

/// Core's stream function calling `function`.
pub(crate) fn stream_fn(function: Arc<Py<PyAny>>, scope: RunScope) -> StreamFn {
    Arc::new(move |model, context, options| {
        let start = Start {
            function: Arc::clone(&function),
            scope: scope.current(),
            model: model.clone(),
            context: context.clone(),
            options: options.clone(),
        };
        stream_from_events(model, options.signal.clone(), source(start))
    })
}

/// What the first read calls.
struct Start {
    function: Arc<Py<PyAny>>,
    scope: Scope,
    model: Model,
    context: Context,
    options: StreamOptions,
}

/// What the Python function returned, as a source of events.
enum Source {
    Start(Box<Start>),
    /// Events of a core stream (one the function returned, or a message replayed).
    Stream(SharedStream, CancelOnDrop),
    /// Events of a Python iterable, read through `bridge.EventPump`.
    Pump(Pump, Scope),
    /// Events known in advance.
    Ready(VecDeque<Result<Value, EventSourceError>>),
}

/// Cancels the stream the function returned when the agent no longer reads it (abort).
struct CancelOnDrop(CancellationToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// A `bridge.EventPump`; dropping it stops a pending read and shuts its loop down.
struct Pump(Option<Py<PyAny>>);

impl Drop for Pump {
    fn drop(&mut self) {
        if let Some(pump) = self.0.take() {
            with_gil(|py| {
                let pump = pump.bind(py);
                let _ = pump.call_method0("cancel");
                // Closing runs the generator's cleanup (user code): on a worker thread.
                let closed = pump.getattr("close").and_then(|close| {
                    let report = close.clone().unbind();
                    let done = Done::new(move |py, outcome| {
                        if let Err(error) = outcome {
                            error.write_unraisable(py, Some(report.bind(py)));
                        }
                    });
                    spawn_job(py, &close, &PyTuple::empty(py), done, None)
                });
                if let Err(error) = closed {
                    error.write_unraisable(py, Some(pump));
                }
            });
        }
    }
}

fn source(start: Start) -> BoxStream<'static, Result<Value, EventSourceError>> {
    futures::stream::unfold(Source::Start(Box::new(start)), |mut state| async move {
        loop {
            state = match state {
                Source::Start(start) => call_function(*start).await,
                Source::Stream(stream, guard) => {
                    let event = stream.lock().await.next().await;
                    return match event {
                        Some(event) => {
                            let value = serde_json::to_value(&event)
                                .map_err(|e| EventSourceError(e.to_string()));
                            Some((value, Source::Stream(stream, guard)))
                        }
                        None => None,
                    };
                }
                Source::Pump(pump, scope) => {
                    return pull(&pump, scope.clone())
                        .await
                        .map(|event| (event, Source::Pump(pump, scope)));
                }
                Source::Ready(mut events) => {
                    return events
                        .pop_front()
                        .map(|event| (event, Source::Ready(events)));
                }
            };
        }
    })
    .boxed()
}

fn failed(message: String) -> Source {
    Source::Ready(VecDeque::from([Err(message.into())]))
}

/// Calls the Python function and classifies what it returned.
async fn call_function(start: Start) -> Source {
    let Start {
        function,
        scope,
        model,
        context,
        options,
    } = start;
    let signal = options.signal.clone();
    let event_loop = scope.event_loop.clone();
    let pump_scope = scope.clone();
    let model_for_message = model.clone();
    callable::call(
        scope,
        move |py| {
            let args = PyTuple::new(
                py,
                [
                    Bound::new(py, PyModel { model })?.into_any(),
                    serde_to_py(py, &context)?,
                    to_keywords(py, &options, true)?.into_any(),
                ],
            )?;
            Ok((function.bind(py).clone(), args))
        },
        move |py, outcome| {
            let value = match outcome {
                Ok(value) => value,
                Err(error) => return failed(format!("stream_fn raised {}", describe(py, &error))),
            };
            if let Ok(stream) = value.cast::<PyEventStream>() {
                let (stream, signal) = stream.get().hand_over();
                return Source::Stream(stream, CancelOnDrop(signal));
            }
            if value.is_instance_of::<PyDict>() {
                return match parse::<AssistantMessage>(&value, "stream_fn result") {
                    Ok(message) => {
                        let _runtime = crate::runtime::runtime().enter();
                        // The replay follows the request's signal; nothing else to cancel.
                        let replay = stream_message(&model_for_message, signal.clone(), message);
                        Source::Stream(
                            Arc::new(tokio::sync::Mutex::new(crate::put_back::Reader::new(
                                replay,
                            ))),
                            CancelOnDrop(CancellationToken::new()),
                        )
                    }
                    Err(error) => failed(describe(py, &error)),
                };
            }
            let iterable = !value.is_instance_of::<PyString>()
                && (value.hasattr("__aiter__").unwrap_or(false)
                    || value.hasattr("__iter__").unwrap_or(false));
            if !iterable {
                return failed(format!(
                    "stream_fn must return an AssistantMessageEventStream, an assistant message \
                     dict or an iterable of events, not {}",
                    type_name(&value)
                ));
            }
            let event_loop = match &event_loop {
                Some(event_loop) => event_loop.bind(py).clone(),
                None => py.None().into_bound(py),
            };
            // The run's owners: a wait for this run that blocks the loop moves the reads off it.
            let owners = match &pump_scope.owners {
                Some(owners) => owners.bind(py).clone(),
                None => py.None().into_bound(py),
            };
            match helper(py, "EventPump").and_then(|pump| pump.call1((value, event_loop, owners))) {
                Ok(pump) => Source::Pump(Pump(Some(pump.unbind())), pump_scope),
                Err(error) => failed(describe(py, &error)),
            }
        },
        || failed(EXITING.to_owned()),
    )
    .await
}

/// The next event of a pump, `None` at the end.
async fn pull(pump: &Pump, scope: Scope) -> Option<Result<Value, EventSourceError>> {
    let pump = with_gil(|py| pump.0.as_ref().map(|pump| pump.clone_ref(py))).flatten()?;
    callable::call(
        scope,
        move |py| {
            let next = pump.bind(py).getattr("next")?;
            Ok((next, PyTuple::empty(py)))
        },
        |py, outcome| {
            let item = outcome.and_then(|pair| pair.extract::<(bool, Bound<'_, PyAny>)>());
            match item {
                Ok((false, _)) => None,
                Ok((true, event)) => {
                    Some(from_py(&event).map_err(|error| describe(py, &error).into()))
                }
                Err(error) => Some(Err(format!(
                    "stream_fn events raised {}",
                    describe(py, &error)
                )
                .into())),
            }
        },
        || Some(Err(EXITING.into())),
    )
    .await
}
