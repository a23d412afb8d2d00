//! `Agent`: core's stateful [`Agent`] — construction and `restore`, state and settings, hooks,
//! subscribers — with asyncio and blocking twins of every waiting method (how a run is started
//! and awaited is in [`crate::agent_run`]).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pi_agent::agent::{
    Agent, AgentMessage, AgentOptions, AgentSnapshot, ProxyOptions, QueueMode, Subscription,
    ToolExecutionMode, proxy_stream_fn,
};
use pi_agent::ai::types::UserMessage;
use pi_agent::ai::{ApiKey, ModelThinkingLevel, ThinkingLevel};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyType};
use serde::Serialize;
use serde_json::Value;

use crate::agent_run::{PromptInput, PyAgentRun, RunFuture, run_blocking, run_into_py, start_run};
use crate::bridge::{drive, future_into_py, running_loop};
use crate::callable::{CallerLoop, describe};
use crate::convert::{parse, serde_to_py, to_py, type_name};
use crate::hook::{HookKind, Hooks};
use crate::model::PyModel;
use crate::options::stream_options;
use crate::tools::PyTool;

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
    /// The hook functions, for the getters (core keeps only their closures).
    hooks: Mutex<Hooks>,
    /// The watchdog settings, for the getters (core has no getters for them).
    timeouts: Mutex<Timeouts>,
}

/// An agent's watchdogs, in milliseconds.
struct Timeouts {
    stream_idle_ms: Option<u64>,
    tool_ms: Option<u64>,
}

/// A message to queue: a str (a user message) or a message dict.
fn queued_message(message: &Bound<'_, PyAny>) -> PyResult<AgentMessage> {
    match message.cast::<PyString>() {
        Ok(text) => Ok(UserMessage::text(text.to_cow()?).into()),
        Err(_) => parse(message, "message"),
    }
}

fn parse_mode<T: serde::de::DeserializeOwned>(value: &str, what: &str) -> PyResult<T> {
    crate::convert::parse_value(Value::String(value.to_owned()), what)
}

/// The wire name of a mode enum (`"one-at-a-time"`, `"parallel"`, ...).
fn wire_name(mode: &impl Serialize) -> PyResult<String> {
    match serde_json::to_value(mode) {
        Ok(Value::String(name)) => Ok(name),
        _ => Err(PyTypeError::new_err("a mode without a wire name")),
    }
}

/// The parts of an agent that are code, not data — tools, hooks, watchdogs, how the model is
/// called, request options — as given to `Agent(...)` and `Agent.restore(...)`.
struct Code<'a, 'py> {
    tools: Option<&'a Bound<'py, PyAny>>,
    before_tool_call: Option<&'a Bound<'py, PyAny>>,
    after_tool_call: Option<&'a Bound<'py, PyAny>>,
    should_stop_after_turn: Option<&'a Bound<'py, PyAny>>,
    transform_context: Option<&'a Bound<'py, PyAny>>,
    get_api_key: Option<&'a Bound<'py, PyAny>>,
    stream_idle_timeout_ms: Option<u64>,
    tool_timeout_ms: Option<u64>,
    proxy_url: Option<String>,
    proxy_token: Option<String>,
    options: Option<&'a Bound<'py, PyDict>>,
}

impl Code<'_, '_> {
    /// Builds the agent: `make` gets options holding this code and adds the data.
    fn into_agent(self, make: impl FnOnce(AgentOptions) -> Agent) -> PyResult<PyAgent> {
        if let Some(options) = self.options
            && options.contains("reasoning")?
        {
            return Err(PyTypeError::new_err(
                "an agent's reasoning level is `thinking_level`, not `reasoning`",
            ));
        }
        let stream_options = stream_options(self.options)?;
        let stream_fn = match (self.proxy_url, self.proxy_token) {
            (Some(proxy_url), token) => Some(proxy_stream_fn(ProxyOptions {
                proxy_url,
                auth_token: token.map(ApiKey::new),
            })),
            (None, Some(_)) => {
                return Err(PyTypeError::new_err("`proxy_token` needs `proxy_url`"));
            }
            (None, None) => None,
        };
        let caller_loop = CallerLoop::default();
        let py_tools = match self.tools {
            Some(tools) if !tools.is_none() => extract_tools(tools)?,
            _ => Vec::new(),
        };
        let agent = make(AgentOptions {
            tools: py_tools
                .iter()
                .map(|tool| tool.get().to_agent_tool(caller_loop.clone()))
                .collect(),
            settings: pi_agent::agent::AgentSettings {
                stream_options,
                stream_idle_timeout_ms: self.stream_idle_timeout_ms,
                tool_timeout_ms: self.tool_timeout_ms,
                ..Default::default()
            },
            hooks: pi_agent::agent::AgentHooks {
                stream_fn,
                ..Default::default()
            },
            ..AgentOptions::default()
        });
        let mut hooks = Hooks::default();
        for (kind, function) in [
            (HookKind::BeforeToolCall, self.before_tool_call),
            (HookKind::AfterToolCall, self.after_tool_call),
            (HookKind::ShouldStopAfterTurn, self.should_stop_after_turn),
            (HookKind::TransformContext, self.transform_context),
            (HookKind::GetApiKey, self.get_api_key),
        ] {
            hooks.set(&agent, &caller_loop, kind, function)?;
        }
        Ok(PyAgent {
            agent,
            caller_loop,
            tools: Mutex::new(py_tools),
            hooks: Mutex::new(hooks),
            timeouts: Mutex::new(Timeouts {
                stream_idle_ms: self.stream_idle_timeout_ms,
                tool_ms: self.tool_timeout_ms,
            }),
        })
    }
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
        before_tool_call = None,
        after_tool_call = None,
        should_stop_after_turn = None,
        transform_context = None,
        get_api_key = None,
        stream_idle_timeout_ms = None,
        tool_timeout_ms = None,
        proxy_url = None,
        proxy_token = None,
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
        before_tool_call: Option<&Bound<'_, PyAny>>,
        after_tool_call: Option<&Bound<'_, PyAny>>,
        should_stop_after_turn: Option<&Bound<'_, PyAny>>,
        transform_context: Option<&Bound<'_, PyAny>>,
        get_api_key: Option<&Bound<'_, PyAny>>,
        stream_idle_timeout_ms: Option<u64>,
        tool_timeout_ms: Option<u64>,
        proxy_url: Option<String>,
        proxy_token: Option<String>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        // The data (what a snapshot holds); the rest is code.
        let system_prompt = system_prompt.to_owned();
        let model = model
            .filter(|model| !model.is_none())
            .map(PyModel::extract)
            .transpose()?;
        // pi's values, `"off"` (its default) included; `None` is off too.
        let thinking_level = thinking_level
            .map(|level| parse_mode::<ModelThinkingLevel>(level, "thinking_level"))
            .transpose()?
            .unwrap_or_default();
        let messages = match messages {
            Some(messages) if !messages.is_none() => parse(messages, "messages")?,
            _ => Vec::new(),
        };
        let tool_execution = parse_mode::<ToolExecutionMode>(tool_execution, "tool_execution")?;
        let steering_mode = parse_mode::<QueueMode>(steering_mode, "steering_mode")?;
        let follow_up_mode = parse_mode::<QueueMode>(follow_up_mode, "follow_up_mode")?;
        let code = Code {
            tools,
            before_tool_call,
            after_tool_call,
            should_stop_after_turn,
            transform_context,
            get_api_key,
            stream_idle_timeout_ms,
            tool_timeout_ms,
            proxy_url,
            proxy_token,
            options,
        };
        code.into_agent(|code| {
            let mut options = code;
            options.system_prompt = system_prompt;
            options.model = model;
            options.messages = messages;
            options.settings.thinking_level = thinking_level;
            options.settings.tool_execution = tool_execution;
            options.settings.steering_mode = steering_mode;
            options.settings.follow_up_mode = follow_up_mode;
            Agent::new(options)
        })
    }

    /// A new agent with the data of `snapshot` (a dict from `snapshot()`, or the same JSON
    /// written by the Rust or C side) and the code given here: tools, hooks, watchdogs,
    /// proxy and request options, as for the constructor.
    #[classmethod]
    #[pyo3(signature = (
        snapshot,
        *,
        tools = None,
        before_tool_call = None,
        after_tool_call = None,
        should_stop_after_turn = None,
        transform_context = None,
        get_api_key = None,
        stream_idle_timeout_ms = None,
        tool_timeout_ms = None,
        proxy_url = None,
        proxy_token = None,
        **options,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn restore(
        _cls: &Bound<'_, PyType>,
        snapshot: &Bound<'_, PyAny>,
        tools: Option<&Bound<'_, PyAny>>,
        before_tool_call: Option<&Bound<'_, PyAny>>,
        after_tool_call: Option<&Bound<'_, PyAny>>,
        should_stop_after_turn: Option<&Bound<'_, PyAny>>,
        transform_context: Option<&Bound<'_, PyAny>>,
        get_api_key: Option<&Bound<'_, PyAny>>,
        stream_idle_timeout_ms: Option<u64>,
        tool_timeout_ms: Option<u64>,
        proxy_url: Option<String>,
        proxy_token: Option<String>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let snapshot: AgentSnapshot = parse(snapshot, "snapshot")?;
        let code = Code {
            tools,
            before_tool_call,
            after_tool_call,
            should_stop_after_turn,
            transform_context,
            get_api_key,
            stream_idle_timeout_ms,
            tool_timeout_ms,
            proxy_url,
            proxy_token,
            options,
        };
        code.into_agent(|code| Agent::restore(snapshot, code))
    }

    /// The agent's data as a pi-shaped, JSON-serialisable dict: transcript, queues, model,
    /// settings and tool names (tools and hooks are code: give them to `restore`). During a
    /// run, the transcript is as of the last completed message.
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.agent.snapshot())
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

    /// Clears the transcript, queues, streaming state and error. Raises `AgentBusyError` while
    /// a run is active (abort it and wait for idle first).
    fn reset(&self) -> PyResult<()> {
        self.agent.reset().map_err(crate::errors::agent_error)
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

    /// Empties the steering queue.
    fn clear_steering_queue(&self) {
        self.agent.clear_steering_queue();
    }

    /// Empties the follow-up queue.
    fn clear_follow_up_queue(&self) {
        self.agent.clear_follow_up_queue();
    }

    /// How many steering messages one poll takes: `"one-at-a-time"` or `"all"`.
    #[getter]
    fn steering_mode(&self) -> PyResult<String> {
        wire_name(&self.agent.queue_modes().0)
    }

    #[setter]
    fn set_steering_mode(&self, mode: &str) -> PyResult<()> {
        self.agent
            .set_steering_mode(parse_mode(mode, "steering_mode")?);
        Ok(())
    }

    /// How many follow-up messages one poll takes: `"one-at-a-time"` or `"all"`.
    #[getter]
    fn follow_up_mode(&self) -> PyResult<String> {
        wire_name(&self.agent.queue_modes().1)
    }

    #[setter]
    fn set_follow_up_mode(&self, mode: &str) -> PyResult<()> {
        self.agent
            .set_follow_up_mode(parse_mode(mode, "follow_up_mode")?);
        Ok(())
    }

    /// `"parallel"` or `"sequential"` tool calls (for later runs).
    #[getter]
    fn tool_execution(&self) -> PyResult<String> {
        wire_name(&self.agent.tool_execution())
    }

    #[setter]
    fn set_tool_execution(&self, mode: &str) -> PyResult<()> {
        self.agent
            .set_tool_execution(parse_mode(mode, "tool_execution")?);
        Ok(())
    }

    /// Watchdog: a model stream silent for this long ends the turn with an error (`None`:
    /// off).
    #[getter]
    fn stream_idle_timeout_ms(&self) -> Option<u64> {
        self.timeouts().stream_idle_ms
    }

    #[setter]
    fn set_stream_idle_timeout_ms(&self, timeout: Option<u64>) {
        let mut timeouts = self.timeouts();
        self.agent
            .update_settings(|settings| settings.stream_idle_timeout_ms = timeout);
        timeouts.stream_idle_ms = timeout;
    }

    /// Watchdog: a tool call running this long gets an error result (`None`: off).
    #[getter]
    fn tool_timeout_ms(&self) -> Option<u64> {
        self.timeouts().tool_ms
    }

    #[setter]
    fn set_tool_timeout_ms(&self, timeout: Option<u64>) {
        let mut timeouts = self.timeouts();
        self.agent
            .update_settings(|settings| settings.tool_timeout_ms = timeout);
        timeouts.tool_ms = timeout;
    }

    #[getter]
    fn before_tool_call(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.hooks().get(py, HookKind::BeforeToolCall)
    }

    #[setter]
    fn set_before_tool_call(&self, function: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_hook(HookKind::BeforeToolCall, function)
    }

    #[getter]
    fn after_tool_call(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.hooks().get(py, HookKind::AfterToolCall)
    }

    #[setter]
    fn set_after_tool_call(&self, function: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_hook(HookKind::AfterToolCall, function)
    }

    #[getter]
    fn should_stop_after_turn(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.hooks().get(py, HookKind::ShouldStopAfterTurn)
    }

    #[setter]
    fn set_should_stop_after_turn(&self, function: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_hook(HookKind::ShouldStopAfterTurn, function)
    }

    #[getter]
    fn transform_context(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.hooks().get(py, HookKind::TransformContext)
    }

    #[setter]
    fn set_transform_context(&self, function: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_hook(HookKind::TransformContext, function)
    }

    #[getter(get_api_key)]
    fn api_key_hook(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.hooks().get(py, HookKind::GetApiKey)
    }

    #[setter]
    fn set_get_api_key(&self, function: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_hook(HookKind::GetApiKey, function)
    }

    /// Failures of subscribers, as text, oldest first (at most the last 100).
    #[getter]
    fn listener_errors(&self) -> Vec<String> {
        self.agent.listener_errors()
    }

    /// Whether steering or follow-up messages are queued.
    #[getter]
    fn has_queued_messages(&self) -> bool {
        self.agent.has_queued_messages()
    }

    /// Calls `callback(event)` for every event of every later run, in order, on a runtime
    /// thread with the GIL. Returns a function that unsubscribes. An exception in the callback
    /// is reported through `sys.unraisablehook` and `listener_errors`, and does not affect the
    /// run.
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
            let failure = Python::attach(|py| {
                let callback = callback.bind(py);
                let outcome = to_py(py, &json).and_then(|event| callback.call1((event,)));
                outcome.err().map(|error| {
                    let text = describe(py, &error);
                    error.write_unraisable(py, Some(callback));
                    text
                })
            });
            // Core records a failing subscriber in `listener_errors` (and carries on).
            if let Some(text) = failure {
                std::panic::resume_unwind(Box::new(text));
            }
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
        self.agent
            .set_messages(parse(messages, "messages")?)
            .map_err(crate::errors::agent_error)
    }

    /// Appends a message dict to the transcript.
    fn append_message(&self, message: &Bound<'_, PyAny>) -> PyResult<()> {
        self.agent
            .append_message(parse::<AgentMessage>(message, "message")?)
            .map_err(crate::errors::agent_error)
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
        self.agent
            .thinking_level()
            .thinking_level()
            .map(ThinkingLevel::as_str)
    }

    #[setter]
    fn set_thinking_level(&self, level: Option<&str>) -> PyResult<()> {
        let level = level
            .map(|level| parse_mode::<ModelThinkingLevel>(level, "thinking_level"))
            .transpose()?
            .unwrap_or_default();
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

    /// Removes the tool named `name` (for later runs); returns whether there was one.
    fn remove_tool(&self, name: &str) -> bool {
        let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        tools.retain(|tool| tool.get().name() != name);
        self.agent.remove_tool(name)
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
    fn hooks(&self) -> MutexGuard<'_, Hooks> {
        self.hooks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_hook(&self, kind: HookKind, function: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.hooks()
            .set(&self.agent, &self.caller_loop, kind, function)
    }

    fn timeouts(&self) -> MutexGuard<'_, Timeouts> {
        self.timeouts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn continue_run(&self) -> RunFuture {
        let agent = self.agent.clone();
        Box::pin(async move { agent.continue_run().await.map(drop) })
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
