//! `AgentRun`: one run of an agent as a value, over core's [`AgentRun`] — an iterator and async
//! iterator of the run's events, its result, and an abort that also happens when the value is
//! dropped or its `with` / `async with` block is left early.

use std::sync::Arc;
use std::task::Poll;

use futures::StreamExt;
use pi_agent::agent::{AgentMessage, AgentRun};
use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration};
use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};
use tokio_util::sync::CancellationToken;

use crate::bridge::{future_into_py, helper, inside_run_of, ready_future};
use crate::errors::PiError;
use crate::event_dict::{PyAgentEvent, Ready};
use crate::loop_wake::{self, Locked};
use crate::put_back::{Reader, Shared, general_next};
use crate::py_serde::Serialized;
use crate::runtime::{Interrupted, wait};
use crate::signal::PySignal;

/// A core run shared with the runtime tasks that wait on it for a Python caller.
type SharedRun = Shared<AgentRun>;

/// The events of one agent run, as pi-shaped dicts, ending after `agent_end`; its result; and
/// its abort. Dropping it before the run ended aborts the run.
#[pyclass(module = "pi_agent", name = "AgentRun", frozen)]
pub(crate) struct PyAgentRun {
    run: SharedRun,
    /// The agent: kept alive while its run is (collecting an agent aborts its run).
    _agent: Py<PyAny>,
    signal: CancellationToken,
    /// Whether `message_update` events carry pi's `message` (the partial message).
    partial: bool,
    /// The agent's id among `bridge.owners`.
    owner: u64,
}

/// The event loop that the calling thread runs, if any, while it blocks until a run of agent
/// `owner` moves on: the coroutines of that run's callbacks queued on the loop run on workers
/// meanwhile, since the wait is for them (`_bridge.block_loop`).
struct BlockedLoop<'py> {
    event_loop: Option<Bound<'py, PyAny>>,
    owner: u64,
}

impl<'py> BlockedLoop<'py> {
    fn enter(py: Python<'py>, owner: u64) -> Self {
        let event_loop = helper(py, "block_loop")
            .and_then(|block| block.call1((owner,)))
            .ok()
            .filter(|event_loop| !event_loop.is_none());
        Self { event_loop, owner }
    }
}

impl Drop for BlockedLoop<'_> {
    fn drop(&mut self) {
        if let Some(event_loop) = self.event_loop.take() {
            let py = event_loop.py();
            let _ = helper(py, "unblock_loop")
                .and_then(|unblock| unblock.call1((event_loop, self.owner)));
        }
    }
}

/// The next event, `None` after the last.
async fn next_event(run: SharedRun, partial: bool) -> Option<PyAgentEvent> {
    let event = run.lock().await.next().await?;
    Some(PyAgentEvent::new(event, partial))
}

/// The next event as its dict if it is there already (`Some(None)` after the last), polled
/// on the caller's thread (no runtime task, no lock wait); `None` when it would wait.
fn ready_event<'py>(
    py: Python<'py>,
    run: &SharedRun,
    partial: bool,
) -> Option<PyResult<Option<Bound<'py, PyAny>>>> {
    let mut run = run.try_lock().ok()?;
    // No waker registered: a pending `async for` wait stays the one woken.
    let Poll::Ready(event) = run.poll_next_ready() else {
        return None;
    };
    Some(
        event
            .map(|event| PyAgentEvent::new(event, partial).into_pyobject(py))
            .transpose(),
    )
}

/// `async for`'s hold on the run while it waits for the next event.
struct RunLocked {
    guard: tokio::sync::OwnedMutexGuard<Reader<AgentRun>>,
    partial: bool,
}

impl Locked for RunLocked {
    fn poll_here<'py>(
        &mut self,
        py: Python<'py>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<PyResult<Bound<'py, PyAny>>> {
        self.guard.poll_next_unpin(cx).map(|event| match event {
            Some(event) => PyAgentEvent::new(event, self.partial).into_pyobject(py),
            None => Err(PyStopAsyncIteration::new_err(())),
        })
    }
}

/// Waits until the run is over; the messages it added. With `raise_on_error`, a run whose
/// last message failed raises that failure as its `ModelError`.
async fn finish(run: SharedRun, raise_on_error: bool) -> PyResult<Serialized<Vec<AgentMessage>>> {
    let outcome = run.lock().await.inner_mut().finish().await;
    if raise_on_error && let Some(last) = outcome.new_messages.last().and_then(|m| m.as_assistant())
    {
        crate::model_errors::check(last)?;
    }
    Ok(Serialized(outcome.new_messages))
}

/// Aborts `run` and waits until the abort completed.
async fn abort_and_finish(run: SharedRun, signal: CancellationToken) {
    signal.cancel();
    let _ = finish(run, false).await;
}

impl PyAgentRun {
    pub(crate) fn new(run: AgentRun, partial: bool, agent: Py<PyAny>, owner: u64) -> Self {
        Self {
            signal: run.signal(),
            run: Arc::new(tokio::sync::Mutex::new(Reader::new(run))),
            _agent: agent,
            partial,
            owner,
        }
    }

    fn is_over(&self) -> bool {
        self.run.try_lock().is_ok_and(|run| run.is_finished())
    }

    /// Refuses a wait for this run from inside it (a tool, hook or subscriber of its agent):
    /// the run waits for that code, which would wait for the run for ever.
    fn refuse_inside(&self, py: Python<'_>, what: &str) -> PyResult<()> {
        if !self.is_over() && inside_run_of(py, self.owner)? {
            return Err(PiError::new_err(format!(
                "{what} called from inside the run itself (a tool, hook or subscriber of its \
                 agent): it would wait for itself forever"
            )));
        }
        Ok(())
    }

    /// Blocks until the run is over; Ctrl-C aborts it (and waits for the abort to complete).
    pub(crate) fn finish_blocking(
        &self,
        py: Python<'_>,
        raise_on_error: bool,
    ) -> PyResult<Serialized<Vec<AgentMessage>>> {
        self.refuse_inside(py, "waiting for the run")?;
        let _blocked = BlockedLoop::enter(py, self.owner);
        let (run, signal) = (Arc::clone(&self.run), self.signal.clone());
        wait(py, finish(Arc::clone(&run), raise_on_error), move || {
            Interrupted::Finish(Box::pin(abort_and_finish(run, signal)))
        })?
    }
}

#[pymethods]
impl PyAgentRun {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Shows the garbage collector the agent this run keeps alive (a run kept by an object
    /// that the agent's tool or subscriber refers to closes a cycle through it).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self._agent)
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let next = match ready_event(py, &self.run, self.partial) {
            Some(next) => next?,
            None => {
                self.refuse_inside(py, "reading the run's events")?;
                let _blocked = BlockedLoop::enter(py, self.owner);
                let (run, signal) = (Arc::clone(&self.run), self.signal.clone());
                wait(py, next_event(Arc::clone(&run), self.partial), move || {
                    Interrupted::Finish(Box::pin(abort_and_finish(run, signal)))
                })?
                .map(|event| event.into_pyobject(py))
                .transpose()?
            }
        };
        next.ok_or_else(|| PyStopIteration::new_err(()))
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let (py, this) = (slf.py(), slf.get());
        let partial = this.partial;
        let Ok(mut guard) = Arc::clone(&this.run).try_lock_owned() else {
            // Another reader holds the run: wait for it on the runtime.
            this.refuse_inside(py, "reading the run's events")?;
            return general_next(slf.as_any(), &this.run);
        };
        if let Poll::Ready(event) = guard.poll_next_ready() {
            drop(guard);
            let outcome = match event {
                Some(event) => PyAgentEvent::new(event, partial).into_pyobject(py),
                None => Err(PyStopAsyncIteration::new_err(())),
            };
            return Ready::awaitable(py, outcome);
        }
        // A tool, hook or subscriber of the run waiting for its next event would wait for
        // itself (as `__next__` and `result()` refuse).
        this.refuse_inside(py, "reading the run's events")?;
        loop_wake::await_next(py, Box::new(RunLocked { guard, partial }), || {
            general_next(slf.as_any(), &this.run)
        })
    }

    /// Waits until the run is over (reading the remaining events) and returns the messages it
    /// added: `new_messages = await run.result()`. Cancelling the awaiting task aborts the run
    /// and waits for the abort to complete before the cancellation propagates. With
    /// `raise_on_error=True`, a run whose last message failed (a model failure, an abort, a run
    /// limit) raises it as the `ModelError` subclass of its kind instead.
    #[pyo3(signature = (*, raise_on_error = false))]
    fn result<'py>(slf: &Bound<'py, Self>, raise_on_error: bool) -> PyResult<Bound<'py, PyAny>> {
        helper(slf.py(), "finish_run")?.call1((slf, raise_on_error))
    }

    /// `result()` that blocks (GIL released); Ctrl-C aborts the run and waits for the abort.
    #[pyo3(signature = (*, raise_on_error = false))]
    fn result_sync(
        &self,
        py: Python<'_>,
        raise_on_error: bool,
    ) -> PyResult<Serialized<Vec<AgentMessage>>> {
        self.finish_blocking(py, raise_on_error)
    }

    #[pyo3(signature = (raise_on_error = false))]
    fn _finish_future<'py>(
        &self,
        py: Python<'py>,
        raise_on_error: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.refuse_inside(py, "waiting for the run")?;
        future_into_py(py, finish(Arc::clone(&self.run), raise_on_error))
    }

    /// `await agent.run(...)` waits for the end and gives the messages the run added (as
    /// `await run.result()`, pydantic-ai's `await agent.run(...)`).
    fn __await__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        helper(slf.py(), "finish_run")?
            .call1((slf, false))?
            .call_method0("__await__")
    }

    /// The answer's text as it streams: `async for delta in run.text_deltas(): ...` (the
    /// `text_delta`s of the run's `message_update` events; the other events are read and
    /// dropped). Consumes the run's events, like iterating the run.
    fn text_deltas<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        helper(slf.py(), "text_deltas")?.call1((slf,))
    }

    /// Aborts the run (thread-safe): it ends promptly with `agent_end`.
    fn abort(&self) {
        self.signal.cancel();
    }

    /// The run's signal (tools, hooks and subscribers get the same).
    #[getter]
    fn signal(&self) -> PySignal {
        PySignal::new(self.signal.clone())
    }

    /// Whether the run is over (its events read and the agent idle again).
    #[getter]
    fn is_finished(&self) -> bool {
        self.is_over()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving the block before the run ended aborts it and waits for the abort.
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        if !self.is_over() {
            self.signal.cancel();
            // From inside the run it cannot wait for the abort (the run waits for this code):
            // the run ends once it has returned.
            if !inside_run_of(py, self.owner)? {
                self.finish_blocking(py, false)?;
            }
        }
        Ok(false)
    }

    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        ready_future(slf.py(), Ok(slf.clone().into_any()))
    }

    /// Leaving the block before the run ended aborts it and waits for the abort.
    fn __aexit__<'py>(
        slf: &Bound<'py, Self>,
        _exc_type: &Bound<'py, PyAny>,
        _exc: &Bound<'py, PyAny>,
        _traceback: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        helper(slf.py(), "exit_run")?.call1((slf,))
    }

    fn __repr__(&self) -> String {
        format!(
            "AgentRun(finished={})",
            if self.is_over() { "True" } else { "False" }
        )
    }
}
