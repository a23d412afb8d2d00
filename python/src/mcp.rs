//! `McpServer`: core's MCP client (`pi_agent::mcp`) for Python. `pi_agent.mcp` wraps it in
//! context managers (`stdio(...)`, `http(...)`); its tools are ordinary `Tool`s.

use std::sync::Arc;

use pi_agent::agent::{AgentTool, ToolCallContext, ToolUpdates};
use pi_agent::mcp::{McpServer, McpServerConfig};
use pyo3::create_exception;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::bridge::future_into_py;
use crate::convert::{Json, from_py, parse_value, serde_to_py, to_py};
use crate::errors::PiError;
use crate::runtime::{Interrupted, wait};
use crate::tools::PyTool;

create_exception!(
    pi_agent,
    McpError,
    PiError,
    "An MCP server could not be started or reached, or failed a request; the message names \
     the server and says why. (A failing tool call inside an agent run is an error tool \
     result instead.)"
);

/// core's `mcp::INHERITED_ENV`: the host's variables a stdio server gets without
/// `inheritEnv`.
#[pyfunction]
pub(crate) fn _mcp_inherited_env() -> Vec<&'static str> {
    pi_agent::mcp::INHERITED_ENV.to_vec()
}

fn mcp_error(error: pi_agent::mcp::McpError) -> PyErr {
    McpError::new_err(error.to_string())
}

/// A connected MCP server (see `pi_agent.mcp`).
#[pyclass(module = "pi_agent", name = "McpServer", frozen)]
pub(crate) struct PyMcpServer {
    server: McpServer,
}

#[pymethods]
impl PyMcpServer {
    /// Connects to the server `config` describes (core's `McpServerConfig` as a dict:
    /// `{"name", "transport": "stdio"|"http", "command", "args", "env", "cwd", "url",
    /// "headers", "toolPrefix", "includeTools", "callTimeoutMs", "connectTimeoutMs"}`) and
    /// completes `initialize`. Blocks (without the GIL).
    #[staticmethod]
    fn connect(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<Self> {
        let config: McpServerConfig = parse_value(from_py(config)?, "config")?;
        let server =
            wait(py, McpServer::connect(config), || Interrupted::Return)?.map_err(mcp_error)?;
        Ok(Self { server })
    }

    /// `connect` as an awaitable (the connecting runs on the runtime, not on a thread of the
    /// caller's): cancelling the awaiting task stops it, ending a server being started.
    #[staticmethod]
    fn connect_async<'py>(
        py: Python<'py>,
        config: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let config: McpServerConfig = parse_value(from_py(config)?, "config")?;
        future_into_py(py, async move {
            let server = McpServer::connect(config).await.map_err(mcp_error)?;
            Ok(Self { server })
        })
    }

    /// `list_tools` as an awaitable; cancelling it stops the listing.
    fn list_tools_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let server = self.server.clone();
        future_into_py(py, async move {
            let tools = server.list_tools().await.map_err(mcp_error)?;
            Ok(Json(serde_json::to_value(&tools).unwrap_or_default()))
        })
    }

    /// `tools` as an awaitable; cancelling it stops the listing.
    fn tools_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let server = self.server.clone();
        future_into_py(py, async move {
            let tools = server.tools().await.map_err(mcp_error)?;
            Ok(NativeTools(tools))
        })
    }

    /// `close` as an awaitable.
    fn close_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let server = self.server.clone();
        future_into_py(py, async move {
            server.close().await;
            Ok(())
        })
    }

    /// The server's name (from the configuration).
    #[getter]
    fn name(&self) -> &str {
        self.server.name()
    }

    /// What the server said about itself: `{"name", "version", "protocolVersion",
    /// "capabilities", "instructions"?}`.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.server.info())
    }

    /// Every tool the server lists, as MCP describes them (dicts with `name`, `description`,
    /// `inputSchema`, ...). Blocks (without the GIL).
    fn list_tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let server = self.server.clone();
        let tools = wait(py, async move { server.list_tools().await }, || {
            Interrupted::Return
        })?
        .map_err(mcp_error)?;
        serde_to_py(py, &tools)
    }

    /// The server's tools as `Tool`s for an `Agent` (prefixed and filtered as configured).
    /// Blocks (without the GIL).
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let server = self.server.clone();
        let tools = wait(py, async move { server.tools().await }, || {
            Interrupted::Return
        })?
        .map_err(mcp_error)?;
        NativeTools(tools).into_pyobject(py)
    }

    /// Whether the server announced a change of its tools since they were last listed.
    #[getter]
    fn tools_changed(&self) -> bool {
        self.server.tools_changed()
    }

    /// Closes the session (a stdio server is ended). Tools still held reconnect when called.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let server = self.server.clone();
        wait(py, async move { server.close().await }, || {
            Interrupted::Return
        })
    }

    fn __repr__(&self) -> String {
        format!("McpServer(name={:?})", self.server.name())
    }
}

/// A server's tools, made `Tool`s when they reach Python.
struct NativeTools(Vec<Arc<dyn AgentTool>>);

impl<'py> IntoPyObject<'py> for NativeTools {
    type Target = PyList;
    type Output = Bound<'py, PyList>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .0
            .into_iter()
            .map(|tool| {
                let call = Py::new(py, NativeToolCall(Arc::clone(&tool)))?.into_any();
                Py::new(py, PyTool::from_native(tool, call))
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }
}

/// Calling an MCP tool from Python: `tool(**arguments)` runs it and returns the result dict
/// (`{"content", "details"}`), raising `McpError` when the call fails.
#[pyclass(module = "pi_agent", name = "_NativeToolCall", frozen)]
pub(crate) struct NativeToolCall(Arc<dyn AgentTool>);

#[pymethods]
impl NativeToolCall {
    #[pyo3(signature = (**kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arguments = match kwargs {
            Some(kwargs) => from_py(kwargs.as_any())?,
            None => Value::Object(serde_json::Map::new()),
        };
        let tool = Arc::clone(&self.0);
        let signal = CancellationToken::new();
        let abort = signal.clone();
        let future = tool.execute(ToolCallContext {
            tool_call_id: "python".into(),
            tool_name: tool.name().to_owned(),
            arguments,
            signal,
            updates: ToolUpdates::disconnected(),
        });
        let result = wait(py, future, move || {
            abort.cancel();
            Interrupted::Return
        })?
        .map_err(|error| McpError::new_err(error.0))?;
        let value = serde_json::to_value(&result).unwrap_or(Value::Null);
        to_py(py, &value)
    }
}
