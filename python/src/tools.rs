//! `Tool`: a Python function (sync or `async def`) the model can call, and its bridge to core's
//! [`AgentTool`].
//!
//! Sync functions run on a runtime blocking thread with the GIL. Coroutine functions run on the
//! event loop of the caller awaiting `agent.prompt()` when there is one, else with
//! `asyncio.run` on the blocking thread (so `prompt_sync` never needs, or blocks, the caller's
//! loop). A raised exception becomes an `isError` tool result whose text the model reads.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use pi_agent::agent::{AgentTool, AgentToolResult, ToolCallContext, ToolError, ToolExecutionMode};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use serde_json::Value;

use crate::bridge::{FreshCancel, loop_is_usable, run_fresh, run_on_loop};
use crate::convert::{from_py, parse_value, to_py, type_name};

/// A tool: name, description, JSON Schema of its arguments, and the Python function that runs
/// it. Calling the tool calls the function.
#[pyclass(module = "pi_agent", name = "Tool", frozen)]
pub(crate) struct PyTool {
    name: String,
    description: String,
    parameters: Value,
    label: Option<String>,
    execution_mode: Option<ToolExecutionMode>,
    function: Arc<Py<PyAny>>,
}

impl PyTool {
    /// The tool as the LLM sees it (`{"name", "description", "parameters"}`).
    pub(crate) fn definition_json(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        })
    }

    /// Reads a `Tool`, or wraps a plain function with [`PyTool::from_function`].
    pub(crate) fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Py<PyTool>> {
        match obj.cast::<PyTool>() {
            Ok(tool) => Ok(tool.clone().unbind()),
            Err(_) => {
                let py = obj.py();
                let cls = py.get_type::<PyTool>();
                Ok(Self::from_function(&cls, obj, None, None, None)?.unbind())
            }
        }
    }

    /// The core tool that runs this one for an agent whose awaiting caller's loop is in
    /// `caller_loop`.
    pub(crate) fn to_agent_tool(&self, caller_loop: CallerLoop) -> Arc<dyn AgentTool> {
        Arc::new(PythonTool {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
            label: self.label.clone(),
            execution_mode: self.execution_mode,
            function: Arc::clone(&self.function),
            caller_loop,
        })
    }
}

#[pymethods]
impl PyTool {
    #[new]
    #[pyo3(signature = (name, description, parameters, function, *, label = None, execution_mode = None))]
    fn new(
        name: String,
        description: String,
        parameters: &Bound<'_, PyAny>,
        function: Bound<'_, PyAny>,
        label: Option<String>,
        execution_mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        if !function.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "tool function must be callable, not {}",
                type_name(&function)
            )));
        }
        Ok(Self {
            name,
            description,
            parameters: from_py(parameters)?,
            label,
            execution_mode: execution_mode
                .map(|mode| parse_value(from_py(mode)?, "execution_mode"))
                .transpose()?,
            function: Arc::new(function.unbind()),
        })
    }

    /// Makes a tool from a function: the name defaults to the function's, the description to
    /// the first paragraph of its docstring, and the JSON Schema of the parameters is derived
    /// from its signature and type hints, with per-parameter descriptions from an `Args:`
    /// (Google) or `:param x:` (Sphinx) docstring section.
    #[classmethod]
    #[pyo3(signature = (function, name = None, description = None, parameters = None))]
    fn from_function<'py>(
        cls: &Bound<'py, pyo3::types::PyType>,
        function: &Bound<'py, PyAny>,
        name: Option<String>,
        description: Option<String>,
        parameters: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTool>> {
        let py = cls.py();
        let spec = py.import("pi_agent._tools")?.call_method1(
            "describe_function",
            (function, name, description, parameters),
        )?;
        let (name, description, parameters): (String, String, Bound<'py, PyAny>) =
            spec.extract()?;
        Bound::new(
            py,
            Self::new(name, description, &parameters, function.clone(), None, None)?,
        )
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn description(&self) -> &str {
        &self.description
    }

    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.parameters)
    }

    #[getter]
    fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.name)
    }

    #[getter]
    fn function(&self, py: Python<'_>) -> Py<PyAny> {
        self.function.clone_ref(py)
    }

    /// The tool as the LLM sees it: `{"name", "description", "parameters"}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.definition_json())
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.function.bind(py).call(args, kwargs)
    }

    fn __repr__(&self) -> String {
        format!("Tool(name={:?})", self.name)
    }
}

/// The event loop of the caller awaiting an agent's current run (`None` for `prompt_sync` and
/// sync iteration). Shared by the agent and its tools; the agent sets it while it starts a run,
/// holding the lock so that no tool of that run can read it before it is set.
#[derive(Clone, Default)]
pub(crate) struct CallerLoop(Arc<Mutex<Option<Arc<Py<PyAny>>>>>);

impl CallerLoop {
    /// Locks the slot.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<Arc<Py<PyAny>>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn current(&self) -> Option<Arc<Py<PyAny>>> {
        self.lock().clone()
    }
}

/// Core's view of a [`PyTool`] inside one agent.
struct PythonTool {
    name: String,
    description: String,
    parameters: Value,
    label: Option<String>,
    execution_mode: Option<ToolExecutionMode>,
    function: Arc<Py<PyAny>>,
    caller_loop: CallerLoop,
}

/// What the worker thread did with a call.
enum Step {
    /// Finished (a sync function, or a coroutine run with `asyncio.run`).
    Done(Result<AgentToolResult, ToolError>),
    /// A coroutine to run on the caller's loop.
    OnLoop(Py<PyAny>, Py<PyAny>),
}

/// Cancels a fresh-loop coroutine when core drops the call (abort).
struct CancelOnDrop(Option<FreshCancel>);

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel.cancel();
        }
    }
}

impl AgentTool for PythonTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.name)
    }

    fn execution_mode(&self) -> Option<ToolExecutionMode> {
        self.execution_mode
    }

    fn execute(
        &self,
        call: ToolCallContext,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let function = Arc::clone(&self.function);
        let caller_loop = self.caller_loop.current();
        Box::pin(async move {
            let cancel = FreshCancel::default();
            let mut guard = CancelOnDrop(Some(cancel.clone()));
            let arguments = call.arguments;
            let step = tokio::task::spawn_blocking(move || {
                Python::attach(|py| start_call(py, &function, &arguments, caller_loop, &cancel))
            })
            .await
            .map_err(|error| ToolError::new(format!("tool panicked: {error}")))?;
            let result = match step {
                Step::Done(result) => result,
                Step::OnLoop(event_loop, coroutine) => {
                    let outcome = run_on_loop(event_loop, coroutine).await;
                    Python::attach(|py| match outcome {
                        Ok(value) => tool_result(value.bind(py)),
                        Err(error) => Err(tool_error(py, &error)),
                    })
                }
            };
            guard.disarm();
            result
        })
    }
}

/// Calls the function (on a blocking thread, attached). A coroutine is run here with
/// `asyncio.run` unless the caller's loop can take it.
fn start_call(
    py: Python<'_>,
    function: &Py<PyAny>,
    arguments: &Value,
    caller_loop: Option<Arc<Py<PyAny>>>,
    cancel: &FreshCancel,
) -> Step {
    let outcome = to_py(py, arguments).and_then(|arguments| match arguments.cast::<PyDict>() {
        Ok(kwargs) => function.bind(py).call((), Some(kwargs)),
        Err(_) => function.bind(py).call1((arguments,)),
    });
    let value = match outcome {
        Ok(value) => value,
        Err(error) => return Step::Done(Err(tool_error(py, &error))),
    };
    if !value.hasattr("__await__").unwrap_or(false) {
        return Step::Done(tool_result(&value));
    }
    if let Some(event_loop) = caller_loop.filter(|event_loop| loop_is_usable(py, event_loop)) {
        return Step::OnLoop(event_loop.clone_ref(py), value.unbind());
    }
    Step::Done(match run_fresh(value, cancel) {
        Ok(value) => tool_result(&value),
        Err(error) => Err(tool_error(py, &error)),
    })
}

/// A function's return value as a tool result: a str is the text, a dict with `"content"` is
/// an `AgentToolResult` (content may be a str), anything else is sent as its JSON text.
fn tool_result(value: &Bound<'_, PyAny>) -> Result<AgentToolResult, ToolError> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(AgentToolResult::text(text.to_string()));
    }
    if let Ok(dict) = value.cast::<PyDict>()
        && dict.contains("content").unwrap_or(false)
    {
        let mut json = from_py(value).map_err(|error| ToolError::new(error.to_string()))?;
        if let Some(content) = json.get_mut("content")
            && let Value::String(text) = content
        {
            *content = serde_json::json!([{"type": "text", "text": text}]);
        }
        return serde_json::from_value(json)
            .map_err(|error| ToolError::new(format!("invalid tool result: {error}")));
    }
    match from_py(value) {
        Ok(json) => Ok(AgentToolResult::text(json.to_string())),
        Err(_) => Ok(AgentToolResult::text(
            value.str().map(|s| s.to_string()).unwrap_or_default(),
        )),
    }
}

/// The text the model reads for a raised exception: its message, or its type name.
fn tool_error(py: Python<'_>, error: &PyErr) -> ToolError {
    let value = error.value(py);
    let message = value.str().map(|s| s.to_string()).unwrap_or_default();
    if message.is_empty() {
        ToolError::new(type_name(value.as_any()))
    } else {
        ToolError::new(message)
    }
}
