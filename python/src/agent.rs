//! `Agent`: core's stateful [`Agent`] — construction and `restore`, runs, state and settings,
//! hooks, subscribers — with an asyncio form of every waiting method and a blocking `_sync`
//! twin. A run is core's [`AgentRun`](pi_agent::agent::AgentRun) (see [`crate::agent_run`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pi_agent::agent::{
    Agent, AgentHooks, AgentMessage, AgentOptions, AgentSettings, AgentSnapshot, AgentTool,
    ProxyOptions, RunInput, SubscriberFailure, Subscription, proxy_stream_fn,
};
use pi_agent::ai::{ApiKey, ImageContent, UserMessage};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::agent_run::PyAgentRun;
use crate::bridge::{drive, future_into_py, helper, inside_run_of, running_loop, try_running_loop};
use crate::callable::{self, RunScope, Scope, describe};
use crate::convert::{parse, parse_value, serde_to_py};
use crate::errors::{PiError, agent_error, callable, type_error, type_name};
use crate::event_dict::PyAgentEvent;
use crate::hook::{HookKind, Hooks, PyHook};
use crate::model::PyModel;
use crate::options::{deserialize_named, stream_options, to_keywords, update};
use crate::py_serde::Serialized;
use crate::runtime::{Interrupted, runtime, wait};
use crate::signal::PySignal;
use crate::tools::{PyTool, ToolRefs};

/// Ids of agents and sessions, for `bridge.owners` (which runs the running code belongs to).
pub(crate) static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A stateful agent: a transcript, tools, a model, and runs of pi's agent loop over them.
///
/// Every waiting method has an asyncio form (`await agent.prompt(...)`) and a blocking `_sync`
/// twin (`agent.prompt_sync(...)`) that releases the GIL and never uses the caller's event
/// loop. Collecting the object aborts its run.
#[pyclass(module = "pi_agent", name = "Agent", frozen)]
pub(crate) struct PyAgent {
    agent: Agent,
    id: u64,
    scope: RunScope,
    /// The `Tool` objects behind core's tools (for the `tools` getter), each with the Python
    /// functions its core tool holds. Changed only with the GIL held (see `__traverse__`).
    tools: Mutex<Vec<InstalledTool>>,
    /// The hook functions, for the getters (core keeps only their closures).
    hooks: Mutex<Hooks>,
    /// The `output_type` given (a type or a JSON Schema dict), for `prompt_output`.
    output_type: Mutex<Option<Py<PyAny>>>,
    /// The subscribers' Python objects, for `__traverse__` (core keeps only closures).
    subscribers: Subscribers,
    /// The installed hook functions, for `__traverse__`: a copy of `hooks`' that changes only
    /// with the GIL held (`hooks` itself changes with it released).
    hook_functions: Mutex<Vec<Arc<Py<PyAny>>>>,
}

/// A message to queue: a str (a user message) or a message dict.
fn queued_message(message: &Bound<'_, PyAny>) -> PyResult<AgentMessage> {
    match message.cast::<PyString>() {
        Ok(text) => Ok(UserMessage::text(text.to_cow()?).into()),
        Err(_) => parse(message, "message"),
    }
}

/// A setting's value from its wire name (`"one-at-a-time"`, `"parallel"`, `"off"`, ...).
fn parse_name<T: DeserializeOwned>(value: &str, what: &str) -> PyResult<T> {
    parse_value(Value::String(value.to_owned()), what)
}

/// The wire name of a setting.
fn wire_name(value: &impl Serialize) -> PyResult<String> {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => Ok(name),
        _ => Err(type_error(None, "a setting without a wire name")),
    }
}

/// What a run starts from: a str (with optional image blocks), a message dict, or a list of
/// message dicts.
fn run_input(input: &Bound<'_, PyAny>, images: Option<&Bound<'_, PyAny>>) -> PyResult<RunInput> {
    let images: Vec<ImageContent> = match images {
        Some(images) if !images.is_none() => parse(images, "images")?,
        _ => Vec::new(),
    };
    if let Ok(text) = input.cast::<PyString>() {
        let text = text.to_cow()?.into_owned();
        return Ok(if images.is_empty() {
            RunInput::text(text)
        } else {
            RunInput::text_with_images(text, images)
        });
    }
    if !images.is_empty() {
        return Err(type_error(
            Some("images"),
            "images can only go with a text prompt",
        ));
    }
    if input.is_instance_of::<PyList>() || input.is_instance_of::<PyTuple>() {
        return Ok(RunInput::Prompt(parse(input, "messages")?));
    }
    Ok(RunInput::Prompt(vec![parse(input, "message")?]))
}

/// The parts of an agent that are code, not data — tools, hooks, how the model is called —
/// as given to `Agent(...)` and `Agent.restore(...)`.
struct Code<'a, 'py> {
    tools: Option<&'a Bound<'py, PyAny>>,
    /// The hook functions given, in [`HookKind::ALL`]'s order.
    hooks: [Option<&'a Bound<'py, PyAny>>; HookKind::ALL.len()],
    proxy_url: Option<String>,
    proxy_token: Option<String>,
}

impl Code<'_, '_> {
    /// Builds the agent: `make` gets options holding this code and adds the data.
    fn into_agent(self, make: impl FnOnce(AgentOptions) -> Agent) -> PyResult<PyAgent> {
        let has_stream_fn =
            self.hooks[HookKind::StreamFn as usize].is_some_and(|function| !function.is_none());
        let stream_fn = match (self.proxy_url, self.proxy_token) {
            (Some(_), _) if has_stream_fn => {
                return Err(type_error(
                    Some("proxy_url"),
                    "give either `proxy_url` or `stream_fn`: both say how the model is called",
                ));
            }
            (Some(proxy_url), token) => Some(proxy_stream_fn(ProxyOptions {
                proxy_url,
                auth_token: token.map(ApiKey::new),
            })),
            (None, Some(_)) => {
                return Err(type_error(
                    Some("proxy_token"),
                    "`proxy_token` needs `proxy_url`",
                ));
            }
            (None, None) => None,
        };
        let scope = RunScope::default();
        let (agent_tools, py_tools) = match self.tools {
            Some(tools) if !tools.is_none() => install(tools, &scope)?,
            _ => (Vec::new(), Vec::new()),
        };
        let agent = make(AgentOptions {
            tools: agent_tools,
            hooks: AgentHooks {
                stream_fn,
                ..AgentHooks::default()
            },
            ..AgentOptions::default()
        });
        let mut hooks = Hooks::default();
        for (kind, function) in HookKind::ALL.into_iter().zip(self.hooks) {
            // Nothing to clear on a new agent (a proxy's stream function stays).
            if function.is_some_and(|function| !function.is_none()) {
                hooks.set(&agent, &scope, kind, PyHook::argument(function, kind)?)?;
            }
        }
        let hook_functions = hooks.functions();
        Ok(PyAgent {
            agent,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            scope,
            tools: Mutex::new(py_tools),
            hooks: Mutex::new(hooks),
            output_type: Mutex::new(None),
            subscribers: Subscribers::default(),
            hook_functions: Mutex::new(hook_functions),
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
        convert_to_llm = None,
        get_api_key = None,
        stream_fn = None,
        stream_idle_timeout_ms = None,
        tool_timeout_ms = None,
        limits = None,
        proxy_url = None,
        proxy_token = None,
        output_type = None,
        output_retries = None,
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
        convert_to_llm: Option<&Bound<'_, PyAny>>,
        get_api_key: Option<&Bound<'_, PyAny>>,
        stream_fn: Option<&Bound<'_, PyAny>>,
        stream_idle_timeout_ms: Option<u64>,
        tool_timeout_ms: Option<u64>,
        limits: Option<&Bound<'_, PyAny>>,
        proxy_url: Option<String>,
        proxy_token: Option<String>,
        output_type: Option<&Bound<'_, PyAny>>,
        output_retries: Option<u32>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        refuse_reasoning(options)?;
        let output_type = output_type.filter(|output_type| !output_type.is_none());
        // The type's schema comes from `pi_agent._structured` (Python types are Python's).
        let output_schema: Option<pi_agent::ai::OutputSchema> = output_type
            .map(|output_type| {
                let schema = output_type
                    .py()
                    .import("pi_agent._structured")?
                    .call_method1("output_schema", (output_type,))?;
                parse(&schema, "output_type")
            })
            .transpose()?;
        // The data (what a snapshot holds) goes through core's settings shape.
        let settings: Map<String, Value> = [
            ("thinkingLevel", json!(thinking_level.unwrap_or("off"))),
            ("toolExecution", json!(tool_execution)),
            ("steeringMode", json!(steering_mode)),
            ("followUpMode", json!(follow_up_mode)),
            ("streamIdleTimeoutMs", json!(stream_idle_timeout_ms)),
            ("toolTimeoutMs", json!(tool_timeout_ms)),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
        let mut settings: AgentSettings = deserialize_named(settings, "setting")?;
        settings.stream_options = stream_options(options)?;
        settings.output_schema = output_schema;
        settings.output_retries = output_retries;
        let output_type = output_type.map(|output_type| output_type.clone().unbind());
        if let Some(limits) = limits.filter(|limits| !limits.is_none()) {
            settings.limits = parse(limits, "limits")?;
        }
        let model = model
            .filter(|model| !model.is_none())
            .map(PyModel::extract)
            .transpose()?;
        let messages = match messages {
            Some(messages) if !messages.is_none() => parse(messages, "messages")?,
            _ => Vec::new(),
        };
        let system_prompt = system_prompt.to_owned();
        let code = Code {
            tools,
            // In `HookKind::ALL`'s order.
            hooks: [
                before_tool_call,
                after_tool_call,
                should_stop_after_turn,
                transform_context,
                convert_to_llm,
                get_api_key,
                stream_fn,
            ],
            proxy_url,
            proxy_token,
        };
        let agent = code.into_agent(|mut options| {
            options.system_prompt = system_prompt;
            options.model = model;
            options.messages = messages;
            options.settings = settings;
            Agent::new(options)
        })?;
        *agent
            .output_type
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = output_type;
        Ok(agent)
    }

    /// The `output_type` the agent was made with (a type or a JSON Schema dict), or `None`.
    #[getter]
    fn output_type(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.output_type
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|t| t.clone_ref(py))
    }

    /// `prompt(...)`, then the run's answer as `output_type` (an instance of it):
    /// `await agent.prompt_output(...)`. Raises `OutputValidationError` when the run ended
    /// without a valid answer (after core's re-asks).
    #[pyo3(signature = (input, images = None))]
    fn prompt_output<'py>(
        slf: &Bound<'py, Self>,
        input: Bound<'py, PyAny>,
        images: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let images = images.unwrap_or_else(|| py.None().into_bound(py));
        py.import("pi_agent._structured")?
            .call_method1("prompt_output", (slf, input, images))
    }

    /// `prompt_output` that blocks (GIL released while the run goes).
    #[pyo3(signature = (input, images = None))]
    fn prompt_output_sync<'py>(
        slf: &Bound<'py, Self>,
        input: &Bound<'py, PyAny>,
        images: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let messages = Self::prompt_sync(slf, input, images, false)?;
        let output_type = slf
            .get()
            .output_type
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|t| t.clone_ref(py).into_bound(py))
            .unwrap_or_else(|| py.None().into_bound(py));
        py.import("pi_agent._structured")?
            .call_method1("run_answer", (output_type, messages))
    }

    /// A new agent with the data of `snapshot` (a dict from `snapshot()`, or the same JSON
    /// written by the Rust or C side) and the code given here: tools, hooks, proxy. Request
    /// options given here change the snapshot's (secrets, which a snapshot never holds,
    /// included); watchdogs given here replace the snapshot's.
    #[classmethod]
    #[pyo3(signature = (
        snapshot,
        *,
        tools = None,
        before_tool_call = None,
        after_tool_call = None,
        should_stop_after_turn = None,
        transform_context = None,
        convert_to_llm = None,
        get_api_key = None,
        stream_fn = None,
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
        convert_to_llm: Option<&Bound<'_, PyAny>>,
        get_api_key: Option<&Bound<'_, PyAny>>,
        stream_fn: Option<&Bound<'_, PyAny>>,
        stream_idle_timeout_ms: Option<u64>,
        tool_timeout_ms: Option<u64>,
        proxy_url: Option<String>,
        proxy_token: Option<String>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        refuse_reasoning(options)?;
        let snapshot: AgentSnapshot = parse(snapshot, "snapshot")?;
        let code = Code {
            tools,
            // In `HookKind::ALL`'s order.
            hooks: [
                before_tool_call,
                after_tool_call,
                should_stop_after_turn,
                transform_context,
                convert_to_llm,
                get_api_key,
                stream_fn,
            ],
            proxy_url,
            proxy_token,
        };
        let agent = code.into_agent(|code| Agent::restore(snapshot, code))?;
        if let Some(options) = options {
            agent.update_options(Some(options))?;
        }
        agent.agent.update_settings(|settings| {
            if stream_idle_timeout_ms.is_some() {
                settings.stream_idle_timeout_ms = stream_idle_timeout_ms;
            }
            if tool_timeout_ms.is_some() {
                settings.tool_timeout_ms = tool_timeout_ms;
            }
        });
        Ok(agent)
    }

    /// The agent's data as a pi-shaped, JSON-serialisable dict: transcript, queues, model,
    /// settings and tool names (tools and hooks are code: give them to `restore`). During a
    /// run, the transcript is as of the last completed message.
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.agent.snapshot())
    }

    // ---- runs ---------------------------------------------------------------------------

    /// Starts a run of `input` and returns it at once: an iterator and async iterator of its
    /// events, with `result()`, `abort()` and `signal`; leaving its `with` block early, or
    /// dropping it, aborts the run. `partial=True` adds pi's `message` (the message so far)
    /// to `message_update` events. Raises `AgentBusyError` if a run is active.
    #[pyo3(signature = (input, images = None, *, partial = false))]
    fn run(
        slf: &Bound<'_, Self>,
        input: &Bound<'_, PyAny>,
        images: Option<&Bound<'_, PyAny>>,
        partial: bool,
    ) -> PyResult<PyAgentRun> {
        let input = run_input(input, images)?;
        Self::start(slf, input, try_running_loop(slf.py()), partial)
    }

    /// `run()` for continuing from the transcript (as `continue_()`).
    #[pyo3(signature = (*, partial = false))]
    fn run_continue(slf: &Bound<'_, Self>, partial: bool) -> PyResult<PyAgentRun> {
        Self::start(slf, RunInput::Continue, try_running_loop(slf.py()), partial)
    }

    /// Sends a prompt and waits until the run ends: `new_messages = await agent.prompt("hi")`.
    /// Cancelling the awaiting task aborts the run, and the abort completes before the
    /// cancellation propagates (so a new prompt can start at once). With
    /// `raise_on_error=True`, a run whose last message failed (a model failure, an abort, a run
    /// limit) raises it as the `ModelError` subclass of its kind (`RateLimitError`,
    /// `RunLimitExceeded`, ...); the transcript keeps the message either way.
    #[pyo3(signature = (input, images = None, *, raise_on_error = false))]
    fn prompt<'py>(
        slf: &Bound<'py, Self>,
        input: Bound<'py, PyAny>,
        images: Option<Bound<'py, PyAny>>,
        raise_on_error: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let images = images.unwrap_or_else(|| py.None().into_bound(py));
        let raise_on_error = raise_on_error.into_pyobject(py)?.to_owned().into_any();
        drive(
            "Agent.prompt",
            slf.getattr("_start_prompt")?,
            [input, images, raise_on_error],
        )
    }

    fn _start_prompt<'py>(
        slf: &Bound<'py, Self>,
        input: &Bound<'py, PyAny>,
        images: &Bound<'py, PyAny>,
        raise_on_error: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let input = run_input(input, Some(images))?;
        let run = Self::start(slf, input, Some(running_loop(py)?.unbind()), false)?;
        helper(py, "finish_run")?.call1((run, raise_on_error))
    }

    /// `prompt` that blocks (GIL released) until the run ends. Works from any thread, also one
    /// with a running event loop (async tools then run in a fresh loop on a worker thread).
    /// Ctrl-C aborts the run and waits for the abort to complete.
    #[pyo3(signature = (input, images = None, *, raise_on_error = false))]
    fn prompt_sync(
        slf: &Bound<'_, Self>,
        input: &Bound<'_, PyAny>,
        images: Option<&Bound<'_, PyAny>>,
        raise_on_error: bool,
    ) -> PyResult<Serialized<Vec<AgentMessage>>> {
        let input = run_input(input, images)?;
        Self::start(slf, input, None, false)?.finish_blocking(slf.py(), raise_on_error)
    }

    /// Continues from the transcript (after an error, or to run queued messages):
    /// `await agent.continue_()`. `raise_on_error` as for `prompt`.
    #[pyo3(signature = (*, raise_on_error = false))]
    fn continue_<'py>(slf: &Bound<'py, Self>, raise_on_error: bool) -> PyResult<Bound<'py, PyAny>> {
        let raise_on_error = raise_on_error
            .into_pyobject(slf.py())?
            .to_owned()
            .into_any();
        drive(
            "Agent.continue_",
            slf.getattr("_start_continue")?,
            [raise_on_error],
        )
    }

    fn _start_continue<'py>(
        slf: &Bound<'py, Self>,
        raise_on_error: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let run = Self::start(
            slf,
            RunInput::Continue,
            Some(running_loop(py)?.unbind()),
            false,
        )?;
        helper(py, "finish_run")?.call1((run, raise_on_error))
    }

    /// `continue_` that blocks (GIL released) until the run ends.
    #[pyo3(signature = (*, raise_on_error = false))]
    fn continue_sync(
        slf: &Bound<'_, Self>,
        raise_on_error: bool,
    ) -> PyResult<Serialized<Vec<AgentMessage>>> {
        Self::start(slf, RunInput::Continue, None, false)?.finish_blocking(slf.py(), raise_on_error)
    }

    /// Cancels the active run (thread-safe; does nothing when idle). The run ends promptly:
    /// the model call ends `aborted`, running tools get an aborted result.
    fn abort(&self) {
        self.agent.abort();
    }

    /// The active run's signal (pi's `agent.signal`), `None` when idle.
    #[getter]
    fn signal(&self) -> Option<PySignal> {
        self.agent.signal().map(PySignal::new)
    }

    /// Resolves when no run is active (after an abort, once it completed):
    /// `await agent.wait_for_idle()`. Refused inside the agent's own run (a tool, hook or
    /// subscriber would wait for itself).
    fn wait_for_idle<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        drive(
            "Agent.wait_for_idle",
            slf.getattr("_wait_for_idle_future")?,
            [],
        )
    }

    fn _wait_for_idle_future<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.refuse_inside_own_run(py, "wait_for_idle()")?;
        let agent = self.agent.clone();
        future_into_py(py, async move {
            agent.wait_for_idle().await;
            Ok(())
        })
    }

    /// `wait_for_idle` that blocks (GIL released).
    fn wait_for_idle_sync(&self, py: Python<'_>) -> PyResult<()> {
        self.refuse_inside_own_run(py, "wait_for_idle_sync()")?;
        let agent = self.agent.clone();
        wait(py, async move { agent.wait_for_idle().await }, || {
            Interrupted::Return
        })
    }

    /// Clears the transcript, queues, streaming state and error. Raises `AgentBusyError` while
    /// a run is active (abort it and wait for idle first).
    fn reset(&self) -> PyResult<()> {
        self.agent.reset().map_err(agent_error)
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

    /// Whether steering or follow-up messages are queued.
    #[getter]
    fn has_queued_messages(&self) -> bool {
        self.agent.has_queued_messages()
    }

    // ---- settings -------------------------------------------------------------------------

    /// How many steering messages one poll takes: `"one-at-a-time"` or `"all"`.
    #[getter]
    fn steering_mode(&self) -> PyResult<String> {
        wire_name(&self.agent.queue_modes().0)
    }

    #[setter]
    fn set_steering_mode(&self, mode: &str) -> PyResult<()> {
        self.agent
            .set_steering_mode(parse_name(mode, "steering_mode")?);
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
            .set_follow_up_mode(parse_name(mode, "follow_up_mode")?);
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
            .set_tool_execution(parse_name(mode, "tool_execution")?);
        Ok(())
    }

    /// Reasoning level: `"off"` (pi's default), `"minimal"` ... `"xhigh"`. Setting `None`
    /// means `"off"`.
    #[getter]
    fn thinking_level(&self) -> PyResult<String> {
        wire_name(&self.agent.thinking_level())
    }

    #[setter]
    fn set_thinking_level(&self, level: Option<&str>) -> PyResult<()> {
        self.agent
            .set_thinking_level(parse_name(level.unwrap_or("off"), "thinking_level")?);
        Ok(())
    }

    /// Watchdog: a model stream silent for this long ends the turn with an error (`None`:
    /// off).
    #[getter]
    fn stream_idle_timeout_ms(&self) -> Option<u64> {
        self.agent.settings().stream_idle_timeout_ms
    }

    #[setter]
    fn set_stream_idle_timeout_ms(&self, timeout: Option<u64>) {
        self.agent
            .update_settings(|settings| settings.stream_idle_timeout_ms = timeout);
    }

    /// Watchdog: a tool call running this long gets an error result (`None`: off).
    #[getter]
    fn tool_timeout_ms(&self) -> Option<u64> {
        self.agent.settings().tool_timeout_ms
    }

    /// How far one run may go (a `RunLimits` dict: `maxTurns`, default 100; `maxToolCalls`,
    /// `maxInputTokens`, `maxOutputTokens`, `maxTotalTokens`, `maxCostUsd`). Setting it
    /// replaces every limit (keys left out take their default); it applies from the next run.
    #[getter]
    fn limits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.agent.settings().limits)
    }

    #[setter]
    fn set_limits(&self, limits: &Bound<'_, PyAny>) -> PyResult<()> {
        let limits = if limits.is_none() {
            pi_agent::agent::RunLimits::default()
        } else {
            parse(limits, "limits")?
        };
        self.agent
            .update_settings(|settings| settings.limits = limits);
        Ok(())
    }

    #[setter]
    fn set_tool_timeout_ms(&self, timeout: Option<u64>) {
        self.agent
            .update_settings(|settings| settings.tool_timeout_ms = timeout);
    }

    /// The request options of every model call, as keywords (without secrets and code: no API
    /// key or bearer token, no header that carries a credential).
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut options = self.agent.stream_options().without_credential_headers();
        options.on_payload = None;
        options.on_response = None;
        options.signal = None;
        to_keywords(py, &options, false)
    }

    /// Changes request options for later runs (the same keywords as the constructor's; a
    /// value replaces, `None` unsets): `agent.update_options(api_key=..., session_id=...)`.
    #[pyo3(signature = (**options))]
    fn update_options(&self, options: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        let Some(options) = options else {
            return Ok(());
        };
        refuse_reasoning(Some(options))?;
        let current = self.agent.stream_options();
        let updated = update(&current, options)?;
        self.agent.set_stream_options(updated);
        Ok(())
    }

    // ---- subscribers ----------------------------------------------------------------------

    /// Calls `callback(event)` — or `callback(event, signal)` if it takes two arguments — for
    /// every event of every later run, in order; the run waits for it (an `async def` callback
    /// is awaited). It runs on a worker thread, so it may block or call other agents.
    /// `partial=True` adds pi's `message` to `message_update` events. An exception does not
    /// affect the run: the first one of a subscriber is reported through
    /// `sys.unraisablehook`, every one in `listener_errors`.
    /// `loop=` (an asyncio event loop) calls a plain function on that loop's thread instead,
    /// through `loop.call_soon_threadsafe`, in event order; the run does not wait for it (so a
    /// blocked loop cannot stall the run) and its exceptions go to the loop's exception
    /// handler. Returns a function that unsubscribes.
    #[pyo3(signature = (callback, *, partial = false, r#loop = None))]
    fn subscribe(
        &self,
        callback: Bound<'_, PyAny>,
        partial: bool,
        r#loop: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Unsubscribe> {
        callable(&callback, "subscriber", "callback")?;
        let dispatch = match r#loop {
            None => None,
            Some(event_loop) => Some(Arc::new(loop_dispatch(&callback, &event_loop)?)),
        };
        let held = self.subscribers.clone();
        let with_signal = helper(callback.py(), "takes_second_argument")?
            .call1((&callback,))?
            .is_truthy()?;
        let callback = Arc::new(callback.unbind());
        let id = held.add(Arc::clone(&callback), dispatch.clone());
        let scope = self.scope.clone();
        // The traceback goes to `sys.unraisablehook` once per subscriber, not once per event;
        // every failure is still in `listener_errors`.
        let reported = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let subscription = self.agent.subscribe_async(move |event, signal| {
            let event = PyAgentEvent::new(event, partial);
            let (call, report) = (Arc::clone(&callback), Arc::clone(&callback));
            let dispatch = dispatch.clone();
            let reported = Arc::clone(&reported);
            let scope: Scope = scope.current();
            async move {
                let failure = callable::call(
                    scope,
                    move |py| {
                        let event = event.into_pyobject(py)?;
                        let mut args = vec![event];
                        if with_signal {
                            args.push(Bound::new(py, PySignal::new(signal))?.into_any());
                        }
                        match &dispatch {
                            // `loop.call_soon_threadsafe(callback, *args)`.
                            Some(schedule) => {
                                args.insert(0, call.bind(py).clone().into_any());
                                Ok((schedule.bind(py).clone(), PyTuple::new(py, args)?))
                            }
                            None => Ok((call.bind(py).clone(), PyTuple::new(py, args)?)),
                        }
                    },
                    move |py, outcome| {
                        outcome.err().map(|error| {
                            let text = describe(py, &error);
                            if !reported.swap(true, Ordering::Relaxed) {
                                error.write_unraisable(py, Some(report.bind(py)));
                            }
                            text
                        })
                    },
                    || None,
                )
                .await;
                // Core records a failing subscriber in `listener_errors` (and carries on).
                if let Some(text) = failure {
                    std::panic::resume_unwind(Box::new(SubscriberFailure(text)));
                }
            }
        });
        Ok(Unsubscribe {
            subscription: Mutex::new(Some(subscription)),
            held,
            id,
        })
    }

    /// Failures of subscribers, as text, oldest first (at most the last 100).
    #[getter]
    fn listener_errors(&self) -> Vec<String> {
        self.agent.listener_errors()
    }

    // ---- state ----------------------------------------------------------------------------

    /// The transcript: a list of pi-shaped message dicts (a copy; assign to replace it, when
    /// no run is active).
    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.agent.messages())
    }

    #[setter]
    fn set_messages(&self, messages: &Bound<'_, PyAny>) -> PyResult<()> {
        self.agent
            .set_messages(parse(messages, "messages")?)
            .map_err(agent_error)
    }

    /// Appends a message dict to the transcript (when no run is active).
    fn append_message(&self, message: &Bound<'_, PyAny>) -> PyResult<()> {
        self.agent
            .append_message(parse::<AgentMessage>(message, "message")?)
            .map_err(agent_error)
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

    #[getter]
    fn tools(&self, py: Python<'_>) -> Vec<Py<PyTool>> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(tool, _)| tool.clone_ref(py))
            .collect()
    }

    #[setter]
    fn set_tools(&self, tools: &Bound<'_, PyAny>) -> PyResult<()> {
        let (agent_tools, py_tools) = install(tools, &self.scope)?;
        self.agent.set_tools(agent_tools);
        let replaced = std::mem::replace(
            &mut *self.tools.lock().unwrap_or_else(PoisonError::into_inner),
            py_tools,
        );
        // Released after the lock: the last reference may run Python.
        drop(replaced);
        Ok(())
    }

    /// Removes the tool named `name` (for later runs); returns whether there was one.
    fn remove_tool(&self, name: &str) -> bool {
        let removed: Vec<_> = {
            let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
            let (removed, kept) = std::mem::take(&mut *tools)
                .into_iter()
                .partition(|(tool, _)| tool.get().name() == name);
            *tools = kept;
            removed
        };
        // Core drops its tool under its own lock: `removed` still holds the functions then,
        // and lets them go here, with no lock held (the last reference may run Python).
        let had = self.agent.remove_tool(name);
        drop(removed);
        had
    }

    /// Shows the garbage collector the Python objects this agent holds, so that an agent in a
    /// reference cycle (a tool, hook or subscriber that refers back to it) is collected.
    ///
    /// Its `Tool`s and `output_type` are its own. The functions its core calls — the core
    /// tools', the hooks', the subscribers' — are shared, out of the collector's sight, with a
    /// run while one is going and with any call future still alive (one a finished run left
    /// to be dropped): they are shown only when neither is. Both can end during a collection
    /// but not begin (that takes the GIL, or Python code that a collection runs only between
    /// its analyses), so a pass can only turn an earlier pass's skip into a visit, which the
    /// collector tolerates. The lists change only with the GIL held and no Python run under
    /// their locks, so a lock is never found held here.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let Ok(tools) = self.tools.try_lock() else {
            return Ok(());
        };
        for (tool, _) in tools.iter() {
            visit.call(tool)?;
        }
        if let Ok(output_type) = self.output_type.try_lock() {
            visit.call(output_type.as_ref())?;
        }
        if self.agent.is_streaming() || self.scope.calls_in_flight() {
            return Ok(());
        }
        for refs in tools.iter().filter_map(|(_, refs)| refs.as_ref()) {
            refs.traverse(&visit)?;
        }
        if let Ok(hooks) = self.hook_functions.try_lock() {
            for function in hooks.iter() {
                visit.call(&**function)?;
            }
        }
        self.subscribers.traverse(&visit)
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

/// The hook attributes (`agent.before_tool_call = f`, ...): a getter and a setter per
/// [`HookKind`], from this one table.
macro_rules! hook_attributes {
    ($($kind:ident: $name:ident, $set:ident;)*) => {
        #[pymethods]
        impl PyAgent {
            $(
                #[getter($name)]
                fn $name(&self, py: Python<'_>) -> Option<Py<PyAny>> {
                    self.hooks().get(py, HookKind::$kind)
                }

                #[setter($name)]
                fn $set(
                    &self,
                    py: Python<'_>,
                    function: Option<&Bound<'_, PyAny>>,
                ) -> PyResult<()> {
                    self.set_hook(py, HookKind::$kind, function)
                }
            )*
        }
    };
}

hook_attributes! {
    BeforeToolCall: before_tool_call, set_before_tool_call;
    AfterToolCall: after_tool_call, set_after_tool_call;
    ShouldStopAfterTurn: should_stop_after_turn, set_should_stop_after_turn;
    TransformContext: transform_context, set_transform_context;
    ConvertToLlm: convert_to_llm, set_convert_to_llm;
    GetApiKey: get_api_key, set_get_api_key;
    StreamFn: stream_fn, set_stream_fn;
}

impl Drop for PyAgent {
    fn drop(&mut self) {
        // Nobody can await, read or abort the run any more: stop it (and its request).
        self.agent.abort();
    }
}

impl PyAgent {
    fn hooks(&self) -> MutexGuard<'_, Hooks> {
        self.hooks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_hook(
        &self,
        py: Python<'_>,
        kind: HookKind,
        function: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        // Python runs here (the function's signature is read), before the hooks' lock: a
        // thread holding that lock must never wait for the GIL.
        let hook = PyHook::argument(function, kind)?;
        // Installed with the GIL released: the lock may be held by a thread that waits for
        // nothing else, and the hooks replaced are dropped without running Python under it
        // (their references are released once the GIL is back).
        py.detach(|| self.hooks().set(&self.agent, &self.scope, kind, hook))?;
        // The collector's copy changes with the GIL held (see `__traverse__`).
        let functions = self.hooks().functions();
        let replaced = std::mem::replace(
            &mut *self
                .hook_functions
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            functions,
        );
        drop(replaced);
        Ok(())
    }

    /// Starts a run whose async callbacks go to `event_loop` (the awaiting caller's). The run
    /// value keeps the agent alive (collecting the agent aborts its run).
    fn start(
        slf: &Bound<'_, Self>,
        input: RunInput,
        event_loop: Option<Py<PyAny>>,
        partial: bool,
    ) -> PyResult<PyAgentRun> {
        let py = slf.py();
        let this = slf.get();
        let owners = helper(py, "owners_with")?.call1((this.id,))?.unbind();
        // Core spawns the run on the runtime; its callbacks read the scope, which is set
        // under the lock before any of them can.
        let _runtime = runtime().enter();
        // The run's spans are children of the caller's OpenTelemetry span, if instrumented.
        let caller = crate::otel::caller_span(py);
        let _caller = caller.as_ref().map(tracing::Span::enter);
        let mut scope = this.scope.lock();
        let run = this.agent.start(input).map_err(agent_error)?;
        *scope = Scope::new(event_loop.map(Arc::new), Some(Arc::new(owners)));
        Ok(PyAgentRun::new(
            run,
            partial,
            slf.clone().into_any().unbind(),
            this.id,
        ))
    }

    /// Refuses a wait for the end of this agent's run from inside that run.
    fn refuse_inside_own_run(&self, py: Python<'_>, what: &str) -> PyResult<()> {
        if inside_run_of(py, self.id)? {
            return Err(PiError::new_err(format!(
                "{what} called from inside the agent's own run (a tool, hook or subscriber): it \
                 would wait for itself forever"
            )));
        }
        Ok(())
    }
}

/// Options an agent sets itself: the reasoning level is `thinking_level`, and every run has
/// its own signal (`agent.signal`, `agent.abort()`).
fn refuse_reasoning(options: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let Some(options) = options else {
        return Ok(());
    };
    if options.contains("reasoning")? {
        return Err(type_error(
            Some("options.reasoning"),
            "an agent's reasoning level is `thinking_level`, not `reasoning`",
        ));
    }
    if options.contains("signal")? {
        return Err(type_error(
            Some("options.signal"),
            "an agent's runs have their own signal (`agent.signal`, `agent.abort()`), not \
             `signal`",
        ));
    }
    Ok(())
}

/// Reads a list of `Tool`s and plain functions (wrapped with `Tool.from_function`).
/// A `Tool` of an agent, and the Python functions its core tool holds (`None` for a tool
/// implemented in core).
type InstalledTool = (Py<PyTool>, Option<Arc<ToolRefs>>);

/// `tools` as core tools for an agent whose scope is `scope`, and as its [`InstalledTool`]s.
type Installed = (Vec<Arc<dyn AgentTool>>, Vec<InstalledTool>);

fn install(tools: &Bound<'_, PyAny>, scope: &RunScope) -> PyResult<Installed> {
    let py = tools.py();
    let mut agent_tools = Vec::new();
    let mut py_tools = Vec::new();
    for tool in extract_tools(tools)? {
        let (agent_tool, refs) = tool.get().to_agent_tool_with_refs(py, scope.clone());
        agent_tools.push(agent_tool);
        py_tools.push((tool, refs));
    }
    Ok((agent_tools, py_tools))
}

fn extract_tools(tools: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyTool>>> {
    tools
        .try_iter()?
        .map(|tool| PyTool::extract(&tool?))
        .collect()
}

/// Removes a subscriber when called (again: does nothing).
#[pyclass(module = "pi_agent", name = "Unsubscribe", frozen)]
pub(crate) struct Unsubscribe {
    subscription: Mutex<Option<Subscription>>,
    /// The agent's list of its subscribers' objects, and this one's place in it.
    held: Subscribers,
    id: u64,
}

#[pymethods]
impl Unsubscribe {
    fn __call__(&self) {
        let taken = self
            .subscription
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(subscription) = taken {
            subscription.unsubscribe();
            // Dropped after the list's lock is released: the last reference may run Python.
            drop(self.held.remove(self.id));
        }
    }
}

/// The Python objects an agent's subscriptions hold — the callback, and for one given
/// `loop=` that loop's `call_soon_threadsafe` — by subscription: each is one reference, shared
/// with core's subscriber closure, listed here so that `Agent.__traverse__` can show it to the
/// garbage collector.
#[derive(Clone, Default)]
struct Subscribers(Arc<Mutex<SubscriberList>>);

#[derive(Default)]
struct SubscriberList {
    next_id: u64,
    entries: Vec<(u64, SubscriberObjects)>,
}

type SubscriberObjects = (Arc<Py<PyAny>>, Option<Arc<Py<PyAny>>>);

impl Subscribers {
    fn lock(&self) -> MutexGuard<'_, SubscriberList> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lists a new subscription's objects; returns its id.
    fn add(&self, callback: Arc<Py<PyAny>>, dispatch: Option<Arc<Py<PyAny>>>) -> u64 {
        let mut list = self.lock();
        let id = list.next_id;
        list.next_id += 1;
        list.entries.push((id, (callback, dispatch)));
        id
    }

    /// Takes subscription `id`'s objects off the list (the caller drops them, unlocked).
    fn remove(&self, id: u64) -> Option<SubscriberObjects> {
        let mut list = self.lock();
        let at = list.entries.iter().position(|(entry, _)| *entry == id)?;
        Some(list.entries.swap_remove(at).1)
    }

    /// Visits every listed object (see `Agent.__traverse__` for when, and why the lock is
    /// never found held).
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        let Ok(list) = self.0.try_lock() else {
            return Ok(());
        };
        for (_, (callback, dispatch)) in &list.entries {
            visit.call(&**callback)?;
            visit.call(dispatch.as_deref())?;
        }
        Ok(())
    }
}

/// `event_loop.call_soon_threadsafe`, for a subscriber given `loop=`: refused for an
/// `async def` callback (it already runs on the loop awaiting the run) and for an object that
/// is not an event loop.
fn loop_dispatch(
    callback: &Bound<'_, PyAny>,
    event_loop: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let py = callback.py();
    let is_async = py
        .import("inspect")?
        .call_method1("iscoroutinefunction", (callback,))?
        .is_truthy()?;
    if is_async {
        return Err(type_error(
            Some("loop"),
            "loop= is for plain-function subscribers: an `async def` subscriber already runs on \
             the event loop awaiting the run",
        ));
    }
    match event_loop.getattr("call_soon_threadsafe") {
        Ok(schedule) if schedule.is_callable() => Ok(schedule.unbind()),
        _ => Err(type_error(
            Some("loop"),
            format!(
                "loop must be an asyncio event loop, not {}",
                type_name(event_loop)
            ),
        )),
    }
}
