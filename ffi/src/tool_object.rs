//! `pi_tool`: a tool implemented in C, described in full before it is added to an agent (core's
//! `FnTool` with `with_label`, `with_execution_mode` and `with_prepare_arguments`; the argument
//! shim itself is in `prepare_arguments.rs`).

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use pi_agent::agent::{ToolExecutionMode, ToolSpec};
use serde_json::Value;

use crate::args::{Out, arg_mut, arg_opt_str, arg_str};
use crate::boundary::{free, into_handle};
use crate::callback::CallbackSite;
use crate::error::{parse_json, pi_error, pi_error_kind};
use crate::options::parse_name;
use crate::prepare_arguments::{PrepareFn, pi_prepare_arguments_callback};
use crate::tool::{CTool, ToolCallbacks, ToolFn, pi_tool_callback};
use crate::user_data::{Registrations, UserData, pi_free_callback};

/// A tool not yet added to an agent: made by `pi_tool_new`, completed with `pi_tool_set_*`, and
/// handed to `pi_agent_add_tool_object` (or freed with `pi_tool_free`).
///
/// Not thread-safe: use it from one thread at a time.
pub struct pi_tool {
    spec: ToolSpec,
    execute: ToolFn,
    prepare_arguments: Option<PrepareFn>,
    /// Released (its `free_user_data` called) when the tool is freed without being added.
    user_data: UserData,
}

impl pi_tool {
    /// The agent tool, its `user_data` now registered with the agent.
    pub(crate) fn into_agent_tool(
        self,
        registrations: &Registrations,
        site: CallbackSite,
    ) -> CTool {
        CTool {
            spec: self.spec,
            callbacks: Arc::new(ToolCallbacks {
                execute: self.execute,
                prepare_arguments: self.prepare_arguments,
                user_data: registrations.adopt(self.user_data),
            }),
            site,
        }
    }
}

/// Describes a tool implemented in C: its `name`, `description` (for the model) and
/// `parameters_json_schema` (the JSON Schema of its arguments object; arguments are validated
/// against it before `callback` runs, see `pi_tool_callback`). `user_data` goes to `callback`
/// and to the `pi_prepare_arguments_callback`, if set; `free_user_data` (nullable) is called
/// with it exactly once: by `pi_tool_free`, or, once the tool was added, as described at
/// `pi_agent_add_tool`. On success `*tool_out` receives the tool; on error nothing is kept and
/// `free_user_data` is not called.
///
/// Errors: `NULL_ARGUMENT` (also for a NULL `callback`), `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_new(
    name: *const c_char,
    description: *const c_char,
    parameters_json_schema: *const c_char,
    callback: pi_tool_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
    tool_out: *mut *mut pi_tool,
) -> *mut pi_error {
    ffi_fallible! {
        let name = arg_str(name, "name")?;
        let description = arg_str(description, "description")?;
        let schema = arg_str(parameters_json_schema, "parameters_json_schema")?;
        let execute = callback.ok_or_else(|| pi_error::null_argument("callback"))?;
        let parameters: Value = parse_json(schema, "parameters_json_schema")?;
        pi_agent::ai::check_tool_parameters(&parameters).map_err(|error| {
            pi_error::new(
                pi_error_kind::InvalidJson,
                format!("`parameters_json_schema` is not valid: {error}"),
            )
        })?;
        let out = Out::new(tool_out, "tool_out")?;
        out.write(into_handle(pi_tool {
            spec: ToolSpec::new(name, description, parameters),
            execute,
            prepare_arguments: None,
            user_data: UserData::new(user_data, free_user_data),
        }));
        Ok(())
    }
}

/// Sets the label user interfaces show for the tool (pi's `label`; default: its name). NULL
/// removes it.
///
/// Errors: `NULL_ARGUMENT` (for `tool`), `INVALID_UTF8`.
/// Thread-safety: not concurrently with other calls on `tool`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_set_label(tool: *mut pi_tool, label: *const c_char) -> *mut pi_error {
    ffi_fallible! {
        let label = arg_opt_str(label, "label")?.map(str::to_owned);
        arg_mut(tool, "tool")?.spec.label = label;
        Ok(())
    }
}

/// Forces how the batch of tool calls this tool is called in runs (pi's `executionMode`):
/// `"sequential"` makes the whole batch sequential, `"parallel"` leaves it to the agent's
/// setting; NULL removes the override.
///
/// Errors: `NULL_ARGUMENT` (for `tool`), `INVALID_UTF8`, `INVALID_ARGUMENT` (another `mode`).
/// Thread-safety: not concurrently with other calls on `tool`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_set_execution_mode(
    tool: *mut pi_tool,
    mode: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let mode = arg_opt_str(mode, "mode")?
            .map(|mode| parse_name::<ToolExecutionMode>(mode, "mode"))
            .transpose()?;
        arg_mut(tool, "tool")?.spec.execution_mode = mode;
        Ok(())
    }
}

/// Declares whether a call of this tool may run again after the process died while it ran
/// (pi-durable's `replay: "safe"`; default false). A durable session (`pi_session_open`)
/// re-runs such a call when it resumes, and gives a call of any other tool an `interrupted`
/// error result instead. Agents ignore it.
///
/// Errors: `NULL_ARGUMENT` (for `tool`).
/// Thread-safety: not concurrently with other calls on `tool`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_set_replay_safe(tool: *mut pi_tool, replay_safe: bool) -> *mut pi_error {
    ffi_fallible! {
        arg_mut(tool, "tool")?.spec.replay_safe = replay_safe;
        Ok(())
    }
}

/// Sets the argument shim (see `pi_prepare_arguments_callback`); NULL removes it. It gets the
/// tool's `user_data`.
///
/// Errors: `NULL_ARGUMENT` (for `tool`).
/// Thread-safety: not concurrently with other calls on `tool`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_set_prepare_arguments(
    tool: *mut pi_tool,
    callback: pi_prepare_arguments_callback,
) -> *mut pi_error {
    ffi_fallible! {
        arg_mut(tool, "tool")?.prepare_arguments = callback;
        Ok(())
    }
}

/// Frees a tool that was not added to an agent, calling its `free_user_data`. NULL is a no-op.
///
/// Thread-safety: call once, when no other thread uses `tool`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_free(tool: *mut pi_tool) {
    free(tool, drop)
}
