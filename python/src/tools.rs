//! `Tool`: a Python function (sync or `async def`) the model can call, and its bridge to core's
//! [`AgentTool`]; `ToolContext`, what a tool function may ask for besides its arguments.
//!
//! Where the function runs is [`callable`]'s business. A raised exception becomes an `isError`
//! tool result whose text the model reads.

use std::sync::Arc;

use futures::future::BoxFuture;
use pi_agent::agent::{
    AgentTool, AgentToolResult, ToolCallContext, ToolError, ToolExecutionMode, ToolSpec,
    ToolUpdates,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::bridge::helper;
use crate::callable::{self, EXITING, RunScope, exception_message};
use crate::convert::{from_py, parse_value, to_py};
use crate::errors::{callable, optional_callable, type_error, value_error};
use crate::signal::PySignal;

/// A tool: name, description, JSON Schema of its arguments, and the Python function that runs
/// it. Calling the tool calls the function.
#[pyclass(module = "pi_agent", name = "Tool", frozen)]
pub(crate) struct PyTool {
    /// Name, label, description, schema, execution mode.
    spec: ToolSpec,
    function: Arc<Py<PyAny>>,
    /// pi's `prepareArguments`: rewrites the raw arguments before validation.
    prepare_arguments: Option<Arc<Py<PyAny>>>,
    /// The function's parameter annotated with `ToolContext`, if any.
    context_parameter: Option<Arc<str>>,
    /// `pi_agent._tools.argument_converter(function)`: builds the dataclass, enum and pydantic
    /// instances the type hints ask for; `None` when the JSON arguments are used as they are.
    converter: Option<Arc<Py<PyAny>>>,
    /// A tool implemented in core (an MCP server's): the agent runs it as it is, and
    /// `function` calls it.
    native: Option<Arc<dyn AgentTool>>,
}

impl PyTool {
    /// A `Tool` for a tool implemented in core; `function` is what calling it from Python
    /// runs.
    pub(crate) fn from_native(tool: Arc<dyn AgentTool>, function: Py<PyAny>) -> Self {
        Self {
            spec: tool.spec().clone(),
            function: Arc::new(function),
            prepare_arguments: None,
            context_parameter: None,
            converter: None,
            native: Some(tool),
        }
    }

    /// The tool as the LLM sees it (`{"name", "description", "parameters"}`).
    pub(crate) fn definition_json(&self) -> Value {
        serde_json::json!({
            "name": self.spec.name,
            "description": self.spec.description,
            "parameters": self.spec.parameters,
        })
    }

    /// A `Tool` object's definition (for [`crate::convert::from_py`]).
    pub(crate) fn as_json(obj: &Bound<'_, PyAny>) -> Option<PyResult<Value>> {
        let tool = obj.cast::<PyTool>().ok()?;
        Some(Ok(tool.get().definition_json()))
    }

    /// Reads a `Tool`, or wraps a plain function with [`PyTool::from_function`].
    pub(crate) fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Py<PyTool>> {
        match obj.cast::<PyTool>() {
            Ok(tool) => Ok(tool.clone().unbind()),
            Err(_) => {
                let py = obj.py();
                let cls = py.get_type::<PyTool>();
                Ok(
                    Self::from_function(&cls, obj, None, None, None, None, None, None, false)?
                        .unbind(),
                )
            }
        }
    }

    /// The core tool that runs this one for an agent whose runs' scope is in `scope`.
    pub(crate) fn to_agent_tool(&self, py: Python<'_>, scope: RunScope) -> Arc<dyn AgentTool> {
        self.to_agent_tool_with_refs(py, scope).0
    }

    /// [`to_agent_tool`](Self::to_agent_tool), and the Python functions the core tool holds
    /// (`None` for a tool implemented in core). They are references of its own, not this
    /// `Tool`'s: a run holding the core tool may call them after the `Tool` is gone, so only
    /// their owner (an agent, when no run of it is going) may show them to the collector.
    pub(crate) fn to_agent_tool_with_refs(
        &self,
        py: Python<'_>,
        scope: RunScope,
    ) -> (Arc<dyn AgentTool>, Option<Arc<ToolRefs>>) {
        if let Some(native) = &self.native {
            return (Arc::clone(native), None);
        }
        let own = |function: &Arc<Py<PyAny>>| Arc::new(function.clone_ref(py));
        let refs = Arc::new(ToolRefs {
            function: own(&self.function),
            prepare_arguments: self.prepare_arguments.as_ref().map(own),
            converter: self.converter.as_ref().map(own),
        });
        let tool = Arc::new(PythonTool {
            spec: self.spec.clone(),
            functions: Arc::clone(&refs),
            context_parameter: self.context_parameter.clone(),
            scope,
        });
        (tool, Some(refs))
    }
}

/// The Python functions of one core tool made from a [`PyTool`] (see
/// [`PyTool::to_agent_tool_with_refs`]).
pub(crate) struct ToolRefs {
    function: Arc<Py<PyAny>>,
    prepare_arguments: Option<Arc<Py<PyAny>>>,
    converter: Option<Arc<Py<PyAny>>>,
}

impl ToolRefs {
    /// Visits each function once (for the owner's `__traverse__`).
    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit_functions(
            visit,
            &self.function,
            self.prepare_arguments.as_deref(),
            self.converter.as_deref(),
        )
    }
}

/// Visits a tool's function, `prepare_arguments` and converter, each once.
fn visit_functions(
    visit: &PyVisit<'_>,
    function: &Py<PyAny>,
    prepare_arguments: Option<&Py<PyAny>>,
    converter: Option<&Py<PyAny>>,
) -> Result<(), PyTraverseError> {
    visit.call(function)?;
    visit.call(prepare_arguments)?;
    visit.call(converter)
}

#[pymethods]
impl PyTool {
    #[new]
    #[pyo3(signature = (
        name, description, parameters, function, *, label = None, execution_mode = None,
        prepare_arguments = None, replay_safe = false,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        name: String,
        description: String,
        parameters: &Bound<'_, PyAny>,
        function: Bound<'_, PyAny>,
        label: Option<String>,
        execution_mode: Option<&Bound<'_, PyAny>>,
        prepare_arguments: Option<&Bound<'_, PyAny>>,
        replay_safe: bool,
    ) -> PyResult<Self> {
        callable(&function, "tool function", "function")?;
        let tools = function.py().import("pi_agent._tools")?;
        let context_parameter: Option<String> = tools
            .call_method1("context_parameter", (&function,))?
            .extract()?;
        let converter = tools.call_method1("argument_converter", (&function,))?;
        let parameters = from_py(parameters)?;
        if let Err(error) = pi_agent::ai::check_tool_parameters(&parameters) {
            let raise = if error.not_an_object {
                type_error
            } else {
                value_error
            };
            return Err(raise(Some(&error.path), error.to_string()));
        }
        let spec = ToolSpec {
            name,
            label,
            description,
            parameters,
            execution_mode: execution_mode
                .filter(|mode| !mode.is_none())
                .map(|mode| parse_value(from_py(mode)?, "execution_mode"))
                .transpose()?,
            replay_safe,
        };
        Ok(Self {
            spec,
            function: Arc::new(function.unbind()),
            prepare_arguments: optional_callable(prepare_arguments, "prepare_arguments")?
                .map(|prepare| Arc::new(prepare.clone().unbind())),
            context_parameter: context_parameter.map(Arc::from),
            converter: (!converter.is_none()).then(|| Arc::new(converter.unbind())),
            native: None,
        })
    }

    /// Makes a tool from a function: the name defaults to the function's, the description to
    /// the first paragraph of its docstring, and the JSON Schema of the parameters is derived
    /// from its signature and type hints, with per-parameter descriptions from an `Args:`
    /// (Google) or `:param x:` (Sphinx) docstring section.
    #[classmethod]
    #[pyo3(signature = (
        function, name = None, description = None, parameters = None, *, label = None,
        execution_mode = None, prepare_arguments = None, replay_safe = false,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn from_function<'py>(
        cls: &Bound<'py, pyo3::types::PyType>,
        function: &Bound<'py, PyAny>,
        name: Option<String>,
        description: Option<String>,
        parameters: Option<&Bound<'py, PyAny>>,
        label: Option<String>,
        execution_mode: Option<&Bound<'py, PyAny>>,
        prepare_arguments: Option<&Bound<'py, PyAny>>,
        replay_safe: bool,
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
            Self::new(
                name,
                description,
                &parameters,
                function.clone(),
                label,
                execution_mode,
                prepare_arguments,
                replay_safe,
            )?,
        )
    }

    #[getter]
    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    #[getter]
    fn description(&self) -> &str {
        &self.spec.description
    }

    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.spec.parameters)
    }

    /// A label for user interfaces (default: the name).
    #[getter]
    fn label(&self) -> &str {
        self.spec.label.as_deref().unwrap_or(&self.spec.name)
    }

    /// `"sequential"` forces the batch this tool's calls are in to run one call at a time;
    /// `None` follows the agent's `tool_execution`.
    #[getter]
    fn execution_mode(&self) -> Option<&'static str> {
        self.spec.execution_mode.map(|mode| match mode {
            ToolExecutionMode::Sequential => "sequential",
            ToolExecutionMode::Parallel => "parallel",
        })
    }

    /// Whether a durable `Session` may run a call again after the process died while it ran
    /// (pi-durable's `replay: "safe"`); other tools' calls then end `interrupted`.
    #[getter]
    fn replay_safe(&self) -> bool {
        self.spec.replay_safe
    }

    /// pi's `prepareArguments`: called with the model's raw arguments before validation;
    /// returns the arguments to validate instead.
    #[getter]
    fn prepare_arguments(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.prepare_arguments
            .as_ref()
            .map(|function| function.clone_ref(py))
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
        format!("Tool(name={:?})", self.spec.name)
    }

    /// Shows the garbage collector the functions this tool holds (its own references: the core
    /// tools made from it hold others), so that a tool whose function refers back to it, or to
    /// an agent holding it, can be collected.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit_functions(
            &visit,
            &self.function,
            self.prepare_arguments.as_deref(),
            self.converter.as_deref(),
        )
    }
}

/// Core's view of a [`PyTool`] inside one agent.
struct PythonTool {
    /// Name, label, description, schema, execution mode.
    spec: ToolSpec,
    /// References of its own (see [`PyTool::to_agent_tool_with_refs`]).
    functions: Arc<ToolRefs>,
    context_parameter: Option<Arc<str>>,
    scope: RunScope,
}

impl AgentTool for PythonTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        let Some(prepare) = self.functions.prepare_arguments.clone() else {
            return Ok(arguments);
        };
        callable::call_blocking(callable::call(
            self.scope.current(),
            move |py| {
                let args = PyTuple::new(py, [to_py(py, &arguments)?])?;
                Ok((prepare.bind(py).clone(), args))
            },
            |py, outcome| {
                outcome.and_then(|value| from_py(&value)).map_err(|error| {
                    ToolError::new(format!(
                        "prepare_arguments failed: {}",
                        exception_message(py, &error)
                    ))
                })
            },
            || Err(ToolError::new(EXITING)),
        ))
    }

    fn execute(
        &self,
        call: ToolCallContext,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let functions = Arc::clone(&self.functions);
        let context_parameter = self.context_parameter.clone();
        Box::pin(callable::call(
            self.scope.current(),
            move |py| {
                let ToolCallContext {
                    tool_call_id,
                    tool_name,
                    arguments,
                    signal,
                    updates,
                } = call;
                let context = match context_parameter.as_deref() {
                    Some(_) => Bound::new(
                        py,
                        PyToolContext {
                            tool_call_id,
                            tool_name,
                            signal,
                            updates,
                        },
                    )?
                    .into_any(),
                    None => py.None().into_bound(py),
                };
                let converter = match &functions.converter {
                    Some(converter) => converter.bind(py).clone(),
                    None => py.None().into_bound(py),
                };
                let args = PyTuple::new(
                    py,
                    [
                        functions.function.bind(py).clone(),
                        converter,
                        to_py(py, &arguments)?,
                        context_parameter.as_deref().map_or_else(
                            || py.None().into_bound(py),
                            |name| PyString::new(py, name).into_any(),
                        ),
                        context,
                    ],
                )?;
                Ok((helper(py, "call_tool")?, args))
            },
            |py, outcome| match outcome {
                Ok(value) => tool_result(&value),
                Err(error) => Err(ToolError::new(exception_message(py, &error))),
            },
            || Err(ToolError::new(EXITING)),
        ))
    }
}

/// What a tool function gets in its parameter annotated with `ToolContext`: the call's id
/// and tool name, the run's signal, and `update()` for progress reports.
#[pyclass(module = "pi_agent", name = "ToolContext", frozen)]
pub(crate) struct PyToolContext {
    tool_call_id: String,
    tool_name: String,
    signal: CancellationToken,
    updates: ToolUpdates,
}

#[pymethods]
impl PyToolContext {
    /// The id of this tool call.
    #[getter]
    fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The name the model called the tool by.
    #[getter]
    fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// Whether the run was aborted: a sync tool should then return soon (its result is
    /// discarded; the call already has an aborted result).
    #[getter]
    fn aborted(&self) -> bool {
        self.signal.is_cancelled()
    }

    /// The run's signal (`aborted`, `wait()`, `wait_sync(timeout)`).
    #[getter]
    fn signal(&self) -> PySignal {
        PySignal::new(self.signal.clone())
    }

    /// Reports progress as a `tool_execution_update` event: a str (the text) or a tool result
    /// dict (`{"content": ..., "details": ...}`), like a return value. Never blocks; updates
    /// after the call ended are dropped.
    fn update(&self, partial: &Bound<'_, PyAny>) -> PyResult<()> {
        let partial =
            tool_result(partial).map_err(|error| value_error(Some("partial"), error.0))?;
        self.updates.send(partial);
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolContext(tool_call_id={:?}, tool_name={:?})",
            self.tool_call_id, self.tool_name
        )
    }
}

/// Characters converted at a time by [`str_to_string`].
const STR_CHUNK: usize = 1 << 20;

/// A str's text as a `String`, one copy. Under the stable ABI (3.9) a str's UTF-8 comes out as
/// a `bytes` object that is then copied again, so a big str is converted in slices of
/// [`STR_CHUNK`] characters: the transient cost is one slice, not the whole text twice. A str
/// with a lone surrogate is converted lossily (U+FFFD), as before.
fn str_to_string(text: &Bound<'_, PyString>) -> String {
    let length = text.len().unwrap_or(0);
    if length <= STR_CHUNK {
        return match text.to_cow() {
            Ok(text) => text.into_owned(),
            Err(_) => text.to_string_lossy().into_owned(),
        };
    }
    let mut out = String::with_capacity(length);
    for start in (0..length).step_by(STR_CHUNK) {
        let slice =
            pyo3::types::PySlice::new(text.py(), start as isize, (start + STR_CHUNK) as isize, 1);
        let Ok(chunk) = text.as_any().get_item(slice) else {
            return text.to_string_lossy().into_owned();
        };
        let Ok(chunk) = chunk.cast_into::<PyString>() else {
            return text.to_string_lossy().into_owned();
        };
        match chunk.to_cow() {
            Ok(part) => out.push_str(&part),
            Err(_) => out.push_str(&chunk.to_string_lossy()),
        }
    }
    out
}

/// A function's return value as a tool result: a str is the text, a dict with `"content"` is
/// an `AgentToolResult` (content may be a str), anything else is sent as its JSON text (or,
/// when it is not JSON, its `str()`).
fn tool_result(value: &Bound<'_, PyAny>) -> Result<AgentToolResult, ToolError> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(AgentToolResult::text(str_to_string(text)));
    }
    if let Ok(dict) = value.cast::<PyDict>()
        && dict.contains("content").unwrap_or(false)
    {
        let mut json = from_py(value).map_err(|error| ToolError::new(error.to_string()))?;
        text_content_to_blocks(&mut json);
        return serde_json::from_value(json)
            .map_err(|error| ToolError::new(format!("invalid tool result: {error}")));
    }
    match from_py(value) {
        Ok(json) => Ok(AgentToolResult::text(json.to_string())),
        Err(error)
            if value.is_instance_of::<PyDict>()
                || value.is_instance_of::<pyo3::types::PyList>() =>
        {
            // A container that is not JSON (too deep, self-referential, odd keys): say so.
            Err(ToolError::new(format!("invalid tool result: {error}")))
        }
        Err(_) => Ok(AgentToolResult::text(
            value.str().map(|s| s.to_string()).unwrap_or_default(),
        )),
    }
}

/// Replaces a str `"content"` of a result dict with one text block (the shorthand that tool
/// results, `ToolContext.update` and `after_tool_call` accept).
pub(crate) fn text_content_to_blocks(result: &mut Value) {
    if let Some(content) = result.get_mut("content")
        && let Value::String(text) = content
    {
        *content = serde_json::json!([{"type": "text", "text": text}]);
    }
}
