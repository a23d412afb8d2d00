//! `AgentStepper`: core's sans-IO agent loop ([`AgentStepper`]) for Python drivers — a
//! durable workflow engine, a test, a custom runtime. Pure: no runtime, thread or I/O; the
//! same inputs give the same steps, and the state is a JSON dict to store between steps.
//!
//! A step is `{"events": [...], "action": {...}}`: the events to deliver now (pi-shaped
//! `AgentEvent` dicts) and what the driver must do next (`{"type": "poll_steering"}`,
//! `{"type": "call_model"}`, `{"type": "execute_tools", "assistantMessage", "toolCalls",
//! "mode"}`, `{"type": "should_stop_after_turn", "message", "toolResults", "newMessages"}`,
//! `{"type": "finished", "newMessages"}`); the driver answers with a `StepInput` dict
//! (`{"type": "model_result", "message", "startEmitted"}`, ...).

use pi_agent::agent::{
    AgentEvent, AgentLoopConfig, AgentMessage, AgentStepper, RunStart, Step, StepAction, StepInput,
    StepperConfig, execute_tool_calls,
};
use pi_agent::ai::Model;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::callable::RunScope;
use crate::convert::{parse, serde_to_py};
use crate::errors::value_error;
use crate::hook::{self, HookKind, PyHook};
use crate::py_serde::Serialized;
use crate::runtime::{Interrupted, Messages, wait, wait_with_messages};
use crate::signal::PySignal;
use crate::tools::PyTool;

/// The agent loop as a state machine: `start`, then `resume` with the result of each action.
#[pyclass(module = "pi_agent", name = "AgentStepper")]
pub(crate) struct PyAgentStepper {
    inner: AgentStepper,
}

#[pymethods]
impl PyAgentStepper {
    /// Starts a run on `messages` (the transcript): with `prompts` (a list of message dicts)
    /// as pi's `agentLoop`, or without (`None`) as `agentLoopContinue`. `config` is core's
    /// `StepperConfig` (`{"toolExecution", "toolModes", "shouldStopAfterTurn",
    /// "skipInitialSteeringPoll"}`). Returns `(stepper, first_step)`.
    #[classmethod]
    #[pyo3(signature = (*, system_prompt = "", messages = None, prompts = None, config = None))]
    fn start<'py>(
        _cls: &Bound<'py, PyType>,
        py: Python<'py>,
        system_prompt: &str,
        messages: Option<&Bound<'py, PyAny>>,
        prompts: Option<&Bound<'py, PyAny>>,
        config: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Self, Bound<'py, PyAny>)> {
        let messages: Vec<AgentMessage> = match messages.filter(|m| !m.is_none()) {
            Some(messages) => parse(messages, "messages")?,
            None => Vec::new(),
        };
        let start = match prompts.filter(|p| !p.is_none()) {
            Some(prompts) => RunStart::Prompt {
                prompts: parse(prompts, "prompts")?,
            },
            None => RunStart::Continue,
        };
        let config: StepperConfig = match config.filter(|c| !c.is_none()) {
            Some(config) => parse(config, "stepper config")?,
            None => StepperConfig::default(),
        };
        let (inner, step) = AgentStepper::start(config, system_prompt.to_owned(), messages, start);
        // A step becomes its dict (`{"events": [...], "action": {...}}`) through core's serde.
        Ok((Self { inner }, serde_to_py(py, &step)?))
    }

    /// Feeds the result of the last action (a `StepInput` dict) and returns the next step.
    /// `ValueError` if it does not answer the pending action (the state is unchanged).
    fn resume(&mut self, input: &Bound<'_, PyAny>) -> PyResult<Serialized<Step>> {
        let input: StepInput = parse(input, "step input")?;
        self.inner
            .resume(input)
            .map(Serialized)
            .map_err(|error| value_error(Some("input"), error.to_string()))
    }

    /// Records an abort: after the current turn's tools the run ends instead of starting
    /// another turn, and the queues are not polled.
    fn abort(&mut self) {
        self.inner.abort();
    }

    /// Whether `abort()` was called.
    #[getter]
    fn is_aborted(&self) -> bool {
        self.inner.is_aborted()
    }

    /// Whether the run is over.
    #[getter]
    fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }

    /// The run's system prompt.
    #[getter]
    fn system_prompt(&self) -> &str {
        self.inner.system_prompt()
    }

    /// The transcript as the run sees it now (what `call_model` sends, after the driver's
    /// `transform_context` / `convert_to_llm`).
    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.inner.messages())
    }

    /// The messages this run added so far.
    #[getter]
    fn new_messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.inner.new_messages())
    }

    /// The state as a JSON-serialisable dict (core's serde shape), to store between steps.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.inner)
    }

    /// A stepper from `to_dict()`'s output (possibly through `json.dumps` / `json.loads`).
    #[classmethod]
    fn from_dict(_cls: &Bound<'_, PyType>, data: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Self {
            inner: parse(data, "stepper state")?,
        })
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Self>()
            .is_ok_and(|other| other.borrow().inner == self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "AgentStepper(messages={}, finished={})",
            self.inner.messages().len(),
            if self.inner.is_finished() {
                "True"
            } else {
                "False"
            }
        )
    }
}

/// Performs an `execute_tools` action (the dict a step's `action` holds) with `tools` as the
/// agent does — `prepare_arguments`, validation, the tool functions, `ToolContext` updates,
/// the abort through `signal` — and blocks (GIL released) until every call has its outcome.
/// Returns `{"outcomes": [...], "events": [...]}`: the outcomes to answer the stepper with
/// (`{"type": "tool_results", "outcomes": ...}`) and the `tool_execution_*` events, in order.
/// `before_tool_call` / `after_tool_call` (as the agent's hooks of those names) and
/// `tool_timeout_ms` (the agent's tool watchdog) apply as in an agent run. `on_event(event)`,
/// if given, gets each of those events as it happens (a tool's start and its updates while it
/// still runs), in order, on the calling thread (the calls go on meanwhile); what it raises
/// goes to `sys.unraisablehook` and the calls go on.
#[pyfunction]
#[pyo3(signature = (action, tools, *, signal = None, before_tool_call = None, after_tool_call = None, tool_timeout_ms = None, on_event = None))]
#[allow(clippy::too_many_arguments)] // keyword arguments of one Python call
pub(crate) fn execute_tool_calls_sync<'py>(
    py: Python<'py>,
    action: &Bound<'_, PyAny>,
    tools: &Bound<'_, PyAny>,
    signal: Option<PyRef<'_, PySignal>>,
    before_tool_call: Option<&Bound<'_, PyAny>>,
    after_tool_call: Option<&Bound<'_, PyAny>>,
    tool_timeout_ms: Option<u64>,
    on_event: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let on_event = crate::errors::optional_callable(on_event, "on_event")?
        .map(|function| function.clone().unbind());
    let action: StepAction = parse(action, "execute_tools action")?;
    let StepAction::ExecuteTools {
        assistant_message,
        tool_calls,
        mode,
    } = action
    else {
        let kind = serde_json::to_value(&action)
            .ok()
            .and_then(|value| value.get("type").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        return Err(value_error(
            Some("action"),
            format!("execute_tool_calls_sync: the action is `{kind}`, not `execute_tools`"),
        ));
    };
    let scope = RunScope::default();
    let tools = tools
        .try_iter()?
        .map(|tool| {
            Ok(PyTool::extract(&tool?)?
                .get()
                .to_agent_tool(py, scope.clone()))
        })
        .collect::<PyResult<Vec<_>>>()?;
    // The tools never see the model; the config only carries the settings (watchdog) and
    // the tool-call hooks.
    let mut config = AgentLoopConfig::new(Model::new(
        assistant_message.api.clone(),
        assistant_message.provider.clone(),
        assistant_message.model.clone(),
        "",
    ));
    config.settings.tool_timeout_ms = tool_timeout_ms;
    if let Some(function) = PyHook::argument(before_tool_call, HookKind::BeforeToolCall)? {
        config.hooks.before_tool_call = Some(hook::before_tool_call(function, scope.clone()));
    }
    if let Some(function) = PyHook::argument(after_tool_call, HookKind::AfterToolCall)? {
        config.hooks.after_tool_call = Some(hook::after_tool_call(function, scope.clone()));
    }
    let token = signal.map_or_else(CancellationToken::new, |signal| signal.token.clone());
    let on_interrupt = token.clone();
    // The tool spans are children of the caller's OpenTelemetry span, if instrumented.
    let caller = crate::otel::caller_span(py).unwrap_or_else(tracing::Span::none);
    let run = move |messages: Option<Messages<AgentEvent, _>>| {
        tracing::Instrument::instrument(
            async move {
                let mut events = Vec::new();
                let mut sink = |event: AgentEvent| {
                    if let Some(messages) = &messages {
                        messages.send(event.clone());
                    }
                    events.push(event);
                };
                let outcomes = execute_tool_calls(
                    &assistant_message,
                    tool_calls,
                    mode,
                    &tools,
                    &config,
                    &token,
                    &mut sink,
                )
                .await;
                (outcomes, events)
            },
            caller,
        )
    };
    let interrupted = move || {
        on_interrupt.cancel();
        Interrupted::Return
    };
    let (outcomes, events) = match on_event {
        // Each event is handed to `on_event` on this thread as it happens (the calls go on
        // meanwhile on the runtime): it may block or call the library, as any Python code.
        Some(function) => wait_with_messages(
            py,
            |messages| run(Some(messages)),
            |py, event: AgentEvent| {
                let called = serde_to_py(py, &event).and_then(|event| function.call1(py, (event,)));
                if let Err(error) = called {
                    // A Ctrl-C in it stops the wait below, as anywhere else on this thread
                    // (put back after the hook, which is Python code it would interrupt).
                    if !crate::errors::keep_interrupt(py, &error) {
                        error.write_unraisable(py, Some(function.bind(py)));
                    }
                }
            },
            interrupted,
        )?,
        None => wait(py, run(None), interrupted)?,
    };
    let executed = PyDict::new(py);
    executed.set_item("outcomes", serde_to_py(py, &outcomes)?)?;
    executed.set_item("events", serde_to_py(py, &events)?)?;
    Ok(executed)
}
