//! Python bindings of pi-agent (`pi_agent._core`).
//!
//! The binding translates and holds no behaviour of its own: messages, events and contexts
//! cross as pi-shaped dicts (core's serde JSON), every wait releases the GIL, and everything
//! async runs on the binding's one tokio runtime ([`runtime`]).

mod agent;
mod agent_run;
mod bridge;
mod callable;
mod convert;
mod errors;
mod faux;
mod hook;
mod model;
mod options;
mod overflow;
mod runtime;
mod stream;
mod tools;

/// pi-agent's Rust core: models, streams, faux provider, tools and the agent.
#[pyo3::pymodule(gil_used = false)]
mod _core {
    use pyo3::prelude::*;

    #[pymodule_export]
    use super::agent::{PyAgent, Unsubscribe};
    #[pymodule_export]
    use super::agent_run::PyAgentRun;
    #[pymodule_export]
    use super::errors::{AgentBusyError, AgentRunError, CannotContinueError, PiError};
    #[pymodule_export]
    use super::faux::{PyFauxProvider, faux_text, faux_thinking, faux_tool_call};
    #[pymodule_export]
    use super::model::{PyModel, get_model, get_models, get_providers, resolve_model};
    #[pymodule_export]
    use super::overflow::is_context_overflow;
    #[pymodule_export]
    use super::stream::{
        PyEventStream, acomplete, acomplete_simple, complete, complete_simple, stream,
        stream_simple,
    };
    #[pymodule_export]
    use super::tools::{PyTool, PyToolContext};

    #[pymodule_init]
    fn init(module: &Bound<'_, PyModule>) -> PyResult<()> {
        super::bridge::register_exit_hook(module)?;
        module.add("__version__", pi_agent::VERSION)
    }
}
