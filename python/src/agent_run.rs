//! `AgentRun`: the events of one agent run as a (sync or async) iterator, fed by a temporary
//! subscription.

use std::sync::{Arc, Mutex, PoisonError};

use pi_agent::agent::{Agent, AgentError, Subscription};
use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration};
use pyo3::prelude::*;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::agent::{PromptInput, start_run};
use crate::bridge::{future_into_py, try_running_loop};
use crate::convert::Json;
use crate::errors::agent_error;
use crate::runtime::{RUNTIME, wait};
use crate::tools::CallerLoop;

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
        let agent = self.agent.clone();
        wait(py, next_run_event(events, subscription), move || {
            agent.abort()
        })??
        .ok_or_else(|| PyStopIteration::new_err(()))
    }
}

impl Drop for PyAgentRun {
    fn drop(&mut self) {
        unsubscribe(&self.subscription);
    }
}
