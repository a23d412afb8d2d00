//! Runs of an agent: starting one (`prompt*` / `continue*`) as an asyncio future or a blocking
//! wait, and `AgentRun`, one run's events as a (sync or async) iterator fed by a temporary
//! subscription.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use pi_agent::agent::{Agent, AgentError, AgentMessage, Subscription};
use pi_agent::ai::types::ImageContent;
use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::bridge::{future_into_py, ready, ready_future, try_running_loop};
use crate::callable::CallerLoop;
use crate::convert::{Json, parse};
use crate::errors::agent_error;
use crate::runtime::{RUNTIME, wait};

/// A run of core's agent, as started by `prompt*` / `continue*`.
pub(crate) type RunFuture = Pin<Box<dyn Future<Output = Result<(), AgentError>> + Send>>;

/// What a prompt sends.
pub(crate) enum PromptInput {
    Text(String, Vec<ImageContent>),
    Messages(Vec<AgentMessage>),
}

impl PromptInput {
    /// A str (with optional image blocks), a message dict, or a list of message dicts.
    pub(crate) fn extract(
        input: &Bound<'_, PyAny>,
        images: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let images: Vec<ImageContent> = match images {
            Some(images) if !images.is_none() => parse(images, "images")?,
            _ => Vec::new(),
        };
        if let Ok(text) = input.cast::<PyString>() {
            return Ok(Self::Text(text.to_cow()?.into_owned(), images));
        }
        if !images.is_empty() {
            return Err(PyTypeError::new_err(
                "images can only go with a text prompt",
            ));
        }
        if input.is_instance_of::<PyList>() || input.is_instance_of::<PyTuple>() {
            return Ok(Self::Messages(parse(input, "messages")?));
        }
        Ok(Self::Messages(vec![parse(input, "message")?]))
    }

    pub(crate) fn into_future(self, agent: Agent) -> RunFuture {
        Box::pin(async move {
            match self {
                Self::Text(text, images) if images.is_empty() => agent.prompt(text).await.map(drop),
                Self::Text(text, images) => agent.prompt_with_images(text, images).await.map(drop),
                Self::Messages(messages) => agent.prompt_messages(messages).await.map(drop),
            }
        })
    }
}

/// Starts a run: polls it once (core registers the run, or refuses with a busy error,
/// synchronously on that first poll) while holding the caller-loop slot, and records the loop
/// that async tools of this run should use. `None` means the run already finished.
pub(crate) fn start_run(
    caller_loop: &CallerLoop,
    mut future: RunFuture,
    event_loop: Option<Py<PyAny>>,
) -> PyResult<Option<RunFuture>> {
    let _runtime = RUNTIME.enter();
    let mut slot = caller_loop.lock();
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(result) => result.map(|()| None).map_err(agent_error),
        Poll::Pending => {
            *slot = event_loop.map(Arc::new);
            Ok(Some(future))
        }
    }
}

/// Aborts the agent if dropped before the run ended (the awaiting task was cancelled).
struct AbortOnDrop(Option<Agent>);

impl AbortOnDrop {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(agent) = self.0.take() {
            agent.abort();
        }
    }
}

/// The run as an asyncio future of the caller's loop; cancelling it aborts the run.
pub(crate) fn run_into_py<'py>(
    py: Python<'py>,
    agent: &Agent,
    started: Option<RunFuture>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(future) = started else {
        return ready_future(py, Ok(py.None().into_bound(py)));
    };
    let mut guard = AbortOnDrop(Some(agent.clone()));
    future_into_py(py, async move {
        let result = future.await;
        guard.disarm();
        result.map_err(agent_error)
    })
}

/// Blocks until the run ends (GIL released); Ctrl-C aborts it.
pub(crate) fn run_blocking(
    py: Python<'_>,
    agent: &Agent,
    started: Option<RunFuture>,
) -> PyResult<()> {
    let Some(future) = started else {
        return Ok(());
    };
    let agent = agent.clone();
    wait(py, future, move || agent.abort())?.map_err(agent_error)
}

/// One item of a run's event channel.
enum RunItem {
    Event(Value),
    Finished(Result<(), AgentError>),
}

struct RunEvents {
    rx: mpsc::UnboundedReceiver<RunItem>,
    /// Events before this run's `agent_start` belong to an earlier run.
    seen_start: bool,
    /// `agent_end` was yielded; only `Finished` is awaited now.
    ended: bool,
    done: bool,
}

/// The events of one agent run, as pi-shaped dicts: `async for event in agent.run("hi")`.
/// The run starts at the first iteration step; leaving the loop early does not stop it (call
/// `agent.abort()`).
#[pyclass(module = "pi_agent", name = "AgentRun", frozen)]
pub(crate) struct PyAgentRun {
    agent: Agent,
    caller_loop: CallerLoop,
    start: Mutex<Option<(PromptInput, mpsc::UnboundedSender<RunItem>)>>,
    subscription: Arc<Mutex<Option<Subscription>>>,
    events: Arc<tokio::sync::Mutex<RunEvents>>,
}

fn unsubscribe(subscription: &Mutex<Option<Subscription>>) {
    if let Some(subscription) = subscription
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    {
        subscription.unsubscribe();
    }
}

/// The next event of the run, `None` at the end.
async fn next_run_event(
    events: Arc<tokio::sync::Mutex<RunEvents>>,
    subscription: Arc<Mutex<Option<Subscription>>>,
) -> PyResult<Option<Json>> {
    let mut events = events.lock().await;
    loop {
        if events.done {
            return Ok(None);
        }
        let Some(item) = events.rx.recv().await else {
            events.done = true;
            unsubscribe(&subscription);
            return Ok(None);
        };
        match item {
            RunItem::Event(event) => {
                if events.ended {
                    continue;
                }
                let kind = event
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !events.seen_start {
                    if kind != "agent_start" {
                        continue;
                    }
                    events.seen_start = true;
                }
                if kind == "agent_end" {
                    events.ended = true;
                    unsubscribe(&subscription);
                }
                return Ok(Some(Json(event)));
            }
            RunItem::Finished(result) => {
                events.done = true;
                unsubscribe(&subscription);
                result.map_err(agent_error)?;
                return Ok(None);
            }
        }
    }
}

impl PyAgentRun {
    pub(crate) fn new(agent: Agent, caller_loop: CallerLoop, input: PromptInput) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            agent,
            caller_loop,
            start: Mutex::new(Some((input, tx))),
            subscription: Arc::new(Mutex::new(None)),
            events: Arc::new(tokio::sync::Mutex::new(RunEvents {
                rx,
                seen_start: false,
                ended: false,
                done: false,
            })),
        }
    }

    /// Subscribes and starts the run on the first iteration step.
    fn ensure_started(&self, event_loop: Option<Py<PyAny>>) -> PyResult<()> {
        let Some((input, tx)) = self
            .start
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return Ok(());
        };
        let events_tx = tx.clone();
        let subscription = self.agent.subscribe(move |event| {
            let _ = events_tx.send(RunItem::Event(event.to_json(false)));
        });
        *self
            .subscription
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(subscription);
        let started = match start_run(
            &self.caller_loop,
            input.into_future(self.agent.clone()),
            event_loop,
        ) {
            Ok(started) => started,
            Err(error) => {
                unsubscribe(&self.subscription);
                return Err(error);
            }
        };
        match started {
            Some(future) => {
                RUNTIME.spawn(async move {
                    let _ = tx.send(RunItem::Finished(future.await));
                });
            }
            None => {
                let _ = tx.send(RunItem::Finished(Ok(())));
            }
        }
        Ok(())
    }
}

#[pymethods]
impl PyAgentRun {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.ensure_started(try_running_loop(py))?;
        let events = Arc::clone(&self.events);
        let subscription = Arc::clone(&self.subscription);
        if let Some(next) = ready(next_run_event(
            Arc::clone(&events),
            Arc::clone(&subscription),
        )) {
            let outcome = next
                .and_then(|next| next.ok_or_else(|| PyStopAsyncIteration::new_err(())))
                .and_then(|event| event.into_pyobject(py));
            return ready_future(py, outcome);
        }
        future_into_py(py, async move {
            next_run_event(events, subscription)
                .await?
                .ok_or_else(|| PyStopAsyncIteration::new_err(()))
        })
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Json> {
        self.ensure_started(None)?;
        let events = Arc::clone(&self.events);
        let subscription = Arc::clone(&self.subscription);
        let next = match ready(next_run_event(
            Arc::clone(&events),
            Arc::clone(&subscription),
        )) {
            Some(next) => next,
            None => {
                let agent = self.agent.clone();
                wait(py, next_run_event(events, subscription), move || {
                    agent.abort()
                })?
            }
        };
        next?.ok_or_else(|| PyStopIteration::new_err(()))
    }
}

impl Drop for PyAgentRun {
    fn drop(&mut self) {
        unsubscribe(&self.subscription);
    }
}
