//! Python bindings of pi-agent (`pi_agent._core`).
//!
//! The binding translates and holds no behaviour or shape of its own: messages, events,
//! contexts, options and hook results cross as pi-shaped dicts read and written by core's
//! serde types, every wait releases the GIL, everything async runs on the binding's one tokio
//! runtime ([`runtime`]), and Python code the runtime calls runs on Python's own threads
//! ([`bridge`]), and the interpreter's exit never catches a runtime thread holding the GIL
//! ([`exit`]).

mod agent;
mod agent_run;
mod bridge;
mod callable;
mod convert;
mod errors;
mod event_dict;
mod exit;
mod faux;
mod helpers;
mod hook;
mod logs;
mod loop_wake;
mod mcp;
mod model;
mod model_errors;
mod names;
mod oauth;
mod oauth_config;
mod options;
mod otel;
mod overflow;
mod put_back;
mod py_serde;
mod runtime;
mod session;
mod session_subscription;
mod shape;
mod signal;
mod socket_pair;
mod spans;
mod stepper;
mod stream;
mod stream_fn;
mod structured;
mod tools;

/// pi-agent's Rust core: models, streams, faux provider, tools, the agent, OAuth.
#[pyo3::pymodule(gil_used = false)]
mod _core {
    use pyo3::prelude::*;

    #[pymodule_export]
    use super::agent::{PyAgent, Unsubscribe};
    #[pymodule_export]
    use super::agent_run::PyAgentRun;
    #[pymodule_export]
    use super::errors::{
        AgentBusyError, AgentRunError, CannotContinueError, PiError, SessionError,
        SessionInUseError, ToolValidationError,
    };
    #[pymodule_export]
    use super::faux::{PyFauxProvider, faux_text, faux_thinking, faux_tool_call};
    #[pymodule_export]
    use super::helpers::{
        calculate_cost, clamp_thinking_level, default_convert_to_llm, find_env_keys,
        get_env_api_key, get_supported_thinking_levels, models_are_equal, parse_streaming_json,
        transform_messages, validate_tool_arguments, validate_tool_call,
    };
    #[pymodule_export]
    use super::mcp::{_mcp_inherited_env, McpError, NativeToolCall, PyMcpServer};
    #[pymodule_export]
    use super::model::{PyModel, get_model, get_models, get_providers, resolve_model};
    #[pymodule_export]
    use super::model_errors::raise_for_error;
    #[pymodule_export]
    use super::oauth::{
        OAuthError, PyOAuthLogin, oauth_get_api_key, oauth_get_api_key_sync, oauth_login,
        oauth_modify_models, oauth_providers, oauth_read_auth_file, oauth_refresh,
        oauth_refresh_sync, oauth_write_auth_file,
    };
    #[pymodule_export]
    use super::oauth_config::{oauth_register_provider, oauth_reset_providers};
    #[pymodule_export]
    use super::options::{PyOnPayload, PyOnResponse};
    #[pymodule_export]
    use super::otel::{_otel_enable, _otel_stats, _otel_take, _otel_wait};
    #[pymodule_export]
    use super::overflow::is_context_overflow;
    #[pymodule_export]
    use super::runtime::release_memory;
    #[pymodule_export]
    use super::session::PySession;
    #[pymodule_export]
    use super::session_subscription::PySessionSubscription;
    #[pymodule_export]
    use super::shape::_shape_fields;
    #[pymodule_export]
    use super::signal::PySignal;
    #[pymodule_export]
    use super::stepper::{PyAgentStepper, execute_tool_calls_sync};
    #[pymodule_export]
    use super::stream::{
        PyEventStream, complete, complete_simple, complete_simple_sync, complete_sync, stream,
        stream_simple,
    };
    #[pymodule_export]
    use super::structured::{_output_schema, _parse_output};
    #[pymodule_export]
    use super::tools::{PyTool, PyToolContext};

    #[pymodule_init]
    fn init(module: &Bound<'_, PyModule>) -> PyResult<()> {
        super::exit::register_exit_hook(module)?;
        super::bridge::register_fork_hook(module)?;
        super::convert::register_json_classes(vec![
            super::model::PyModel::as_json,
            super::tools::PyTool::as_json,
        ]);
        super::errors::register(module)?;
        super::model_errors::register(module)?;
        super::logs::install(module.py())?;
        module.add("__version__", pi_agent::VERSION)
    }
}
