//! `Agent`: core's stateful [`Agent`], with asyncio and blocking twins of every waiting method,
//! subscriber callbacks, and `AgentRun` (one run's events as an iterator).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use pi_agent::agent::{
    Agent, AgentError, AgentMessage, AgentOptions, QueueMode, Subscription, ToolExecutionMode,
};
use pi_agent::ai::ThinkingLevel;
use pi_agent::ai::types::{ImageContent, UserMessage};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use crate::agent_run::PyAgentRun;
use crate::bridge::{drive, future_into_py, ready_future, running_loop};
use crate::convert::{parse, serde_to_py, to_py, type_name};
use crate::errors::agent_error;
use crate::model::PyModel;
use crate::options::stream_options;
use crate::runtime::{RUNTIME, wait};
use crate::tools::{CallerLoop, PyTool};

/// A run of core's agent, as started by `prompt*` / `continue*`.
pub(crate) type RunFuture = Pin<Box<dyn Future<Output = Result<(), AgentError>> + Send>>;

/// A stateful agent: a transcript, tools, a model, and runs of pi's agent loop over them.
///
/// Every waiting method has an asyncio form (`await agent.prompt(...)`) and a blocking form
/// (`agent.prompt_sync(...)`) that releases the GIL and never uses the caller's event loop.
#[pyclass(module = "pi_agent", name = "Agent", frozen)]
pub(crate) struct PyAgent {
    agent: Agent,
    caller_loop: CallerLoop,
    /// The `Tool` objects behind core's tools, for the `tools` getter.
    tools: Mutex<Vec<Py<PyTool>>>,
}

/// What a prompt sends.
pub(crate) enum PromptInput {
    Text(String, Vec<ImageContent>),
    Messages(Vec<AgentMessage>),
}

impl PromptInput {
    /// A str (with optional image blocks), a message dict, or a list of message dicts.
    fn extract(input: &Bound<'_, PyAny>, images: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
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
                Self::Text(text, images) if images.is_empty() => agent.prompt(text).await,
                Self::Text(text, images) => agent.prompt_with_images(text, images).await,
                Self::Messages(messages) => agent.prompt_messages(messages).await,
            }
        })
    }
}

/// A message to queue: a str (a user message) or a message dict.
fn queued_message(message: &Bound<'_, PyAny>) -> PyResult<AgentMessage> {
    match message.cast::<PyString>() {
        Ok(text) => Ok(UserMessage::text(text.to_cow()?).into()),
        Err(_) => parse(message, "message"),
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
fn run_into_py<'py>(
    py: Python<'py>,
    agent: &Agent,
    started: Option<RunFuture>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(future) = started else {
        return ready_future(py, py.None().into_bound(py));
    };
    let mut guard = AbortOnDrop(Some(agent.clone()));
    future_into_py(py, async move {
        let result = future.await;
        guard.disarm();
        result.map_err(agent_error)
    })
}

/// Blocks until the run ends (GIL released); Ctrl-C aborts it.
fn run_blocking(py: Python<'_>, agent: &Agent, started: Option<RunFuture>) -> PyResult<()> {
    let Some(future) = started else {
        return Ok(());
    };
    let agent = agent.clone();
    wait(py, future, move || agent.abort())?.map_err(agent_error)
}

fn parse_mode<T: serde::de::DeserializeOwned>(value: &str, what: &str) -> PyResult<T> {
    crate::convert::parse_value(Value::String(value.to_owned()), what)
}

#[pymethods]
impl PyAgent {
    #[new]
    #[pyo3(signature = (
        model = None,
        *,
        system_prompt = "",
        tools = None,
        tool_execution = "parallel",
        messages = None,
        thinking_level = None,
        steering_mode = "one-at-a-time",
        follow_up_mode = "one-at-a-time",
        **options,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        model: Option<&Bound<'_, PyAny>>,
        system_prompt: &str,
        tools: Option<&Bound<'_, PyAny>>,
        tool_execution: &str,
        messages: Option<&Bound<'_, PyAny>>,
        thinking_level: Option<&str>,
        steering_mode: &str,
        follow_up_mode: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if let Some(options) = options
            && options.contains("reasoning")?
        {
            return Err(PyTypeError::new_err(
                "an agent's reasoning level is `thinking_level`, not `reasoning`",
            ));
        }
        let stream_options = stream_options(options)?;
        let caller_loop = CallerLoop::default();
        let py_tools = match tools {
            Some(tools) => extract_tools(tools)?,
            None => Vec::new(),
        };
        let agent_tools = py_tools
            .iter()
            .map(|tool| tool.get().to_agent_tool(caller_loop.clone()))
            .collect();
        let options = AgentOptions {
            system_prompt: system_prompt.to_owned(),
            model: model
                .filter(|model| !model.is_none())
                .map(PyModel::extract)
                .transpose()?,
            thinking_level: thinking_level
                .map(|level| parse_mode::<ThinkingLevel>(level, "thinking_level"))
                .transpose()?,
            tools: agent_tools,
            messages: match messages {
                Some(messages) if !messages.is_none() => parse(messages, "messages")?,
                _ => Vec::new(),
            },
            tool_execution: parse_mode::<ToolExecutionMode>(tool_execution, "tool_execution")?,
            steering_mode: parse_mode::<QueueMode>(steering_mode, "steering_mode")?,
            follow_up_mode: parse_mode::<QueueMode>(follow_up_mode, "follow_up_mode")?,
            stream_options,
            ..AgentOptions::default()
        };
        Ok(Self {
            agent: Agent::new(options),
            caller_loop,
            tools: Mutex::new(py_tools),
        })
    }

    /// Sends a prompt and waits until the run ends: `await agent.prompt("hi")`.
    #[pyo3(signature = (input, images = None))]
    fn prompt<'py>(
        slf: &Bound<'py, Self>,
        input: Bound<'py, PyAny>,
        images: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let images = images.unwrap_or_else(|| py.None().into_bound(py));
        drive(slf.getattr("_prompt_future")?, [input, images])
    }

    fn _prompt_future<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        images: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let input = PromptInput::extract(input, Some(images))?;
        let event_loop = running_loop(py)?.unbind();
        let started = start_run(
            &self.caller_loop,
            input.into_future(self.agent.clone()),
            Some(event_loop),
        )?;
        run_into_py(py, &self.agent, started)
    }

    /// `prompt` that blocks (GIL released) until the run ends. Works from any thread, also one
    /// with a running event loop: async tools then run in a fresh loop on a worker thread.
    #[pyo3(signature = (input, images = None))]
    fn prompt_sync(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        images: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let input = PromptInput::extract(input, images)?;
        let started = start_run(
            &self.caller_loop,
            input.into_future(self.agent.clone()),
            None,
        )?;
        run_blocking(py, &self.agent, started)
    }

    /// Continues from the transcript (after an error, or to run queued messages):
    /// `await agent.continue_()`.
    fn continue_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        drive(slf.getattr("_continue_future")?, [])
    }

    fn _continue_future<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let event_loop = running_loop(py)?.unbind();
        let started = start_run(&self.caller_loop, self.continue_run(), Some(event_loop))?;
        run_into_py(py, &self.agent, started)
    }

    /// `continue_` that blocks (GIL released) until the run ends.
    fn continue_sync(&self, py: Python<'_>) -> PyResult<()> {
        let started = start_run(&self.caller_loop, self.continue_run(), None)?;
        run_blocking(py, &self.agent, started)
    }

    /// Iterates over the events of one run of `input`, ending after `agent_end`:
    /// `async for event in agent.run("hi")` (or a plain `for`, which blocks per event).
    #[pyo3(signature = (input, images = None))]
    fn run(
        &self,
        input: &Bound<'_, PyAny>,
        images: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyAgentRun> {
        let input = PromptInput::extract(input, images)?;
        Ok(PyAgentRun::new(
            self.agent.clone(),
            self.caller_loop.clone(),
            input,
        ))
    }

    /// Cancels the active run (thread-safe; does nothing when idle). The run ends promptly:
    /// the model call ends `aborted`, running tools get an aborted result.
    fn abort(&self) {
        self.agent.abort();
    }

    /// Resolves when no run is active: `await agent.wait_for_idle()`.
    fn wait_for_idle<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        drive(slf.getattr("_wait_for_idle_future")?, [])
    }

    fn _wait_for_idle_future<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let agent = self.agent.clone();
        future_into_py(py, async move {
            agent.wait_for_idle().await;
            Ok(())
        })
    }

    /// Clears the transcript, queues, streaming state and error (does not abort a run).
    fn reset(&self) {
        self.agent.reset();
    }

    /// Queues a message (str or message dict) to inject after the current turn's tool calls.
    fn steer(&self, message: &Bound<'_, PyAny>) -> PyResult<()> {
        self.agent.steer(queued_message(message)?);
        Ok(())
    }

    /// Queues a message (str or message dict) to run when the agent would otherwise stop.
    fn follow_up(&self, message: &Bound<'_, PyAny>) -> PyResult<()> {
        self.agent.follow_up(queued_message(message)?);
        Ok(())
    }

    /// Empties the steering and follow-up queues.
    fn clear_all_queues(&self) {
        self.agent.clear_all_queues();
    }

    /// Whether steering or follow-up messages are queued.
    #[getter]
    fn has_queued_messages(&self) -> bool {
        self.agent.has_queued_messages()
    }

    /// Calls `callback(event)` for every event of every later run, in order, on a runtime
    /// thread with the GIL. Returns a function that unsubscribes. An exception in the callback
    /// is reported through `sys.unraisablehook` and does not affect the run.
    fn subscribe(&self, callback: Bound<'_, PyAny>) -> PyResult<Unsubscribe> {
        if !callback.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "subscriber must be callable, not {}",
                type_name(&callback)
            )));
        }
        let callback = Arc::new(callback.unbind());
        let subscription = self.agent.subscribe(move |event| {
            let json = event.to_json(false);
            Python::attach(|py| {
                let callback = callback.bind(py);
                let outcome = to_py(py, &json).and_then(|event| callback.call1((event,)));
                if let Err(error) = outcome {
                    error.write_unraisable(py, Some(callback));
                }
            });
        });
        Ok(Unsubscribe(Mutex::new(Some(subscription))))
    }

    /// The transcript: a list of pi-shaped message dicts (a copy; assign to replace it).
    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.agent.messages())
    }

    #[setter]
    fn set_messages(&self, messages: &Bound<'_, PyAny>) -> PyResult<()> {
        self.agent.set_messages(parse(messages, "messages")?);
        Ok(())
    }

    /// Appends a message dict to the transcript.
    fn append_message(&self, message: &Bound<'_, PyAny>) -> PyResult<()> {
        self.agent
            .append_message(parse::<AgentMessage>(message, "message")?);
        Ok(())
    }

    /// Whether a run is active.
    #[getter]
    fn is_streaming(&self) -> bool {
        self.agent.is_streaming()
    }

    /// The message being streamed, as far as it has arrived (`None` when idle).
    #[getter]
    fn streaming_message<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.agent.streaming_message())
    }

    /// Ids of the tool calls running now.
    #[getter]
    fn pending_tool_calls(&self) -> Vec<String> {
        self.agent.pending_tool_calls().into_iter().collect()
    }

    /// The error of the last failed turn, if any.
    #[getter]
    fn error_message(&self) -> Option<String> {
        self.agent.error_message()
    }

    #[getter]
    fn system_prompt(&self) -> String {
        self.agent.system_prompt()
    }

    #[setter]
    fn set_system_prompt(&self, prompt: String) {
        self.agent.set_system_prompt(prompt);
    }

    #[getter]
    fn model(&self) -> PyModel {
        PyModel {
            model: self.agent.model(),
        }
    }

    #[setter]
    fn set_model(&self, model: &Bound<'_, PyAny>) -> PyResult<()> {
        self.agent.set_model(PyModel::extract(model)?);
        Ok(())
    }

    /// Reasoning level (`"minimal"` ... `"xhigh"`, or `None` for off).
    #[getter]
    fn thinking_level(&self) -> Option<&'static str> {
        self.agent.thinking_level().map(ThinkingLevel::as_str)
    }

    #[setter]
    fn set_thinking_level(&self, level: Option<&str>) -> PyResult<()> {
        let level = level
            .map(|level| parse_mode::<ThinkingLevel>(level, "thinking_level"))
            .transpose()?;
        self.agent.set_thinking_level(level);
        Ok(())
    }

    #[getter]
    fn tools(&self, py: Python<'_>) -> Vec<Py<PyTool>> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|tool| tool.clone_ref(py))
            .collect()
    }

    #[setter]
    fn set_tools(&self, tools: &Bound<'_, PyAny>) -> PyResult<()> {
        let py_tools = extract_tools(tools)?;
        let agent_tools = py_tools
            .iter()
            .map(|tool| tool.get().to_agent_tool(self.caller_loop.clone()))
            .collect();
        self.agent.set_tools(agent_tools);
        *self.tools.lock().unwrap_or_else(PoisonError::into_inner) = py_tools;
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "Agent(model={:?}, messages={}, is_streaming={})",
            self.agent.model().id,
            self.agent.messages().len(),
            if self.agent.is_streaming() {
                "True"
            } else {
                "False"
            }
        )
    }
}

impl PyAgent {
    fn continue_run(&self) -> RunFuture {
        let agent = self.agent.clone();
        Box::pin(async move { agent.continue_run().await })
    }
}

/// Reads a list of `Tool`s and plain functions (wrapped with `Tool.from_function`).
fn extract_tools(tools: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyTool>>> {
    tools
        .try_iter()?
        .map(|tool| PyTool::extract(&tool?))
        .collect()
}

/// Removes a subscriber when called (again: does nothing).
#[pyclass(module = "pi_agent", name = "Unsubscribe", frozen)]
pub(crate) struct Unsubscribe(Mutex<Option<Subscription>>);

#[pymethods]
impl Unsubscribe {
    fn __call__(&self) {
        if let Some(subscription) = self.0.lock().unwrap_or_else(PoisonError::into_inner).take() {
            subscription.unsubscribe();
        }
    }
}
