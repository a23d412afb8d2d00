//! The settings of a `pi_agent` (core's `AgentSettings`: thinking level, tool execution, queue
//! modes, the options of every model call, watchdogs), its system prompt, model and tools:
//! getters and setters. Every change applies from the next run; a run keeps what it started with.

use std::ffi::c_char;

use ::pi_agent::agent::{Agent, ToolExecutionMode};
use ::pi_agent::ai::{ApiKey, StreamOptions, Tool};
use serde::de::DeserializeOwned;

use crate::agent::pi_agent;
use crate::agent_state::write_agent_json;
use crate::args::{Out, arg_opt_str, arg_ref, arg_str, method};
use crate::boundary::into_handle;
use crate::error::{parse_object, pi_error};
use crate::model::pi_model;
use crate::options::parse_name;
use crate::stream_options::pi_stream_options;
use crate::string::{into_c_string, pi_str, view};

/// Sets the system prompt (may be empty, not NULL), for later runs.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_system_prompt(
    agent: *mut pi_agent,
    system_prompt: *const c_char,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let system_prompt = arg_str(system_prompt, "system_prompt")?;
        agent.shared.agent.set_system_prompt(system_prompt);
        Ok(())
    })
}

/// Sets the model (copied; `model` may be freed right after), for later runs.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_model(
    agent: *mut pi_agent,
    model: *const pi_model,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let model = arg_ref(model, "model")?;
        agent.shared.agent.set_model(model.model.clone());
        Ok(())
    })
}

/// Sets the reasoning level, for later runs: `level` is `"off"`, `"minimal"`, `"low"`,
/// `"medium"`, `"high"` or `"xhigh"` (see `pi_model_supported_thinking_levels_json`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_ARGUMENT` (another `level`).
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_thinking_level(
    agent: *mut pi_agent,
    level: *const c_char,
) -> *mut pi_error {
    set_named(agent, level, "level", Agent::set_thinking_level)
}

/// Sets how the tool calls of one assistant message run, for later runs: `mode` is
/// `"parallel"` (the default: prepared in order, then run concurrently) or `"sequential"`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_ARGUMENT` (another `mode`).
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_tool_execution(
    agent: *mut pi_agent,
    mode: *const c_char,
) -> *mut pi_error {
    set_named(agent, mode, "mode", Agent::set_tool_execution)
}

/// Sets how many steering messages the agent takes at a time: `mode` is `"one-at-a-time"` (the
/// default) or `"all"`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_ARGUMENT` (another `mode`).
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_steering_mode(
    agent: *mut pi_agent,
    mode: *const c_char,
) -> *mut pi_error {
    set_named(agent, mode, "mode", Agent::set_steering_mode)
}

/// Sets how many follow-up messages the agent takes at a time: `mode` is `"one-at-a-time"`
/// (the default) or `"all"`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_ARGUMENT` (another `mode`).
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_follow_up_mode(
    agent: *mut pi_agent,
    mode: *const c_char,
) -> *mut pi_error {
    set_named(agent, mode, "mode", Agent::set_follow_up_mode)
}

/// The body of each setter of a setting named by a string (`"parallel"`, `"all"`, ...): the
/// name `value` read as core's `T` (`INVALID_ARGUMENT` for another name) and handed to `set`.
fn set_named<T: DeserializeOwned>(
    agent: *mut pi_agent,
    value: *const c_char,
    name: &str,
    set: fn(&Agent, T),
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        set(
            &agent.shared.agent,
            parse_name(arg_str(value, name)?, name)?,
        );
        Ok(())
    })
}

// --------------------------------------------------------------------------------- getters

/// Writes the system prompt to `*system_prompt_out` (free it with `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_system_prompt(
    agent: *const pi_agent,
    system_prompt_out: *mut *mut c_char,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let out = Out::new(system_prompt_out, "system_prompt_out")?;
        out.write(into_c_string(agent.shared.agent.system_prompt()));
        Ok(())
    })
}

/// Writes a copy of the agent's model to `*model_out` (free it with `pi_model_free`).
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_model(
    agent: *const pi_agent,
    model_out: *mut *mut pi_model,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let out = Out::new(model_out, "model_out")?;
        out.write(into_handle(pi_model {
            model: agent.shared.agent.model(),
        }));
        Ok(())
    })
}

/// The reasoning level: `"off"` (pi's default), `"minimal"`, `"low"`, `"medium"`, `"high"` or
/// `"xhigh"` (empty when `agent` is NULL). Static: valid forever.
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_thinking_level(agent: *const pi_agent) -> pi_str {
    view(agent, |agent| {
        pi_str::new(agent.shared.agent.thinking_level().as_str())
    })
}

/// Writes the agent's settings as core's `AgentSettings` JSON to `*json_out` (free it with
/// `pi_string_free`): `{"thinkingLevel":...,"toolExecution":...,"steeringMode":...,
/// "followUpMode":...,"streamOptions":{...},"streamIdleTimeoutMs":...,"toolTimeoutMs":...}`
/// (the shape `pi_agent_new` takes). Secrets (`apiKey`, `bearerToken`, and the headers that
/// carry a credential, such as `Authorization`) are never written.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_settings_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    write_agent_json(agent, json_out, "settings", |agent| {
        let mut settings = agent.settings();
        settings.stream_options = settings.stream_options.without_credential_headers();
        settings
    })
}

/// Writes the agent's tools as the model sees them, a JSON array of pi `Tool`s
/// (`[{"name":...,"description":...,"parameters":{...}}]`, in the order they were added), to
/// `*json_out` (free it with `pi_string_free`). See `pi_agent_tool_label` and
/// `pi_agent_tool_execution_mode` for the rest of a tool's description.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_tools_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    write_agent_json(agent, json_out, "tools", |agent| {
        agent
            .tools()
            .iter()
            .map(|tool| tool.definition())
            .collect::<Vec<Tool>>()
    })
}

/// Writes the label of the tool named `name` (pi's `label`; its name unless one was set) to
/// `*label_out` (free it with `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `NOT_FOUND` (no tool with that name).
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_tool_label(
    agent: *const pi_agent,
    name: *const c_char,
    label_out: *mut *mut c_char,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let name = arg_str(name, "name")?;
        let out = Out::new(label_out, "label_out")?;
        let tools = agent.shared.agent.tools();
        let tool = tools
            .iter()
            .find(|tool| tool.name() == name)
            .ok_or_else(|| no_tool(name))?;
        out.write(into_c_string(tool.label().to_owned()));
        Ok(())
    })
}

/// Writes the execution mode the tool named `name` forces (pi's `executionMode`) to
/// `*mode_out`: `"sequential"`, `"parallel"`, or empty when it forces none. Static: valid
/// forever.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `NOT_FOUND` (no tool with that name).
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_tool_execution_mode(
    agent: *const pi_agent,
    name: *const c_char,
    mode_out: *mut pi_str,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let name = arg_str(name, "name")?;
        let out = Out::new(mode_out, "mode_out")?;
        let tools = agent.shared.agent.tools();
        let tool = tools
            .iter()
            .find(|tool| tool.name() == name)
            .ok_or_else(|| no_tool(name))?;
        out.write(match tool.execution_mode() {
            Some(ToolExecutionMode::Sequential) => pi_str::new("sequential"),
            Some(ToolExecutionMode::Parallel) => pi_str::new("parallel"),
            None => pi_str::EMPTY,
        });
        Ok(())
    })
}

fn no_tool(name: &str) -> pi_error {
    pi_error::not_found(format!("no tool named `{name}`"))
}

// ------------------------------------------------------------------ options of model calls

/// Replaces the options of every model call (the `streamOptions` of the settings) with core's
/// `StreamOptions` JSON, as `pi_stream_open` takes it; the API key and the `on_payload` /
/// `on_response` callbacks are replaced too (give `apiKey` again, or use the finer setters
/// below). `reasoning` is ignored: the agent sets it from its thinking level.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (nothing changes).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_stream_options_json(
    agent: *mut pi_agent,
    options_json: *const c_char,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let options: StreamOptions =
            parse_object(arg_str(options_json, "options_json")?, "options_json")?;
        agent.shared.agent.set_stream_options(options);
        Ok(())
    })
}

/// Replaces the options of every model call with a copy of `options` (made with
/// `pi_stream_options_from_json`, with its `on_payload` / `on_response` callbacks, which then
/// run for this agent's model calls too). `options` may be freed right after.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_stream_options(
    agent: *mut pi_agent,
    options: *const pi_stream_options,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let options = arg_ref(options, "options")?;
        // Its callbacks become the agent's own (see `pi_agent_free` from a callback).
        let options = options.for_site(&agent.shared.site());
        agent.shared.agent.set_stream_options(options);
        Ok(())
    })
}

/// Sets the API key of every model call (`streamOptions.apiKey`; copied, never logged or saved
/// in snapshots); NULL removes it (the provider's environment variable then applies).
///
/// Errors: `NULL_ARGUMENT` (for `agent`), `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_api_key(
    agent: *mut pi_agent,
    api_key: *const c_char,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let api_key = arg_opt_str(api_key, "api_key")?.map(ApiKey::new);
        agent
            .shared
            .agent
            .update_settings(|settings| settings.stream_options.api_key = api_key);
        Ok(())
    })
}

/// Sets the session id of every model call (`streamOptions.sessionId`: prompt-cache keys and
/// affinity headers); NULL removes it.
///
/// Errors: `NULL_ARGUMENT` (for `agent`), `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_session_id(
    agent: *mut pi_agent,
    session_id: *const c_char,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let session_id = arg_opt_str(session_id, "session_id")?.map(str::to_owned);
        agent
            .shared
            .agent
            .update_settings(|settings| settings.stream_options.session_id = session_id);
        Ok(())
    })
}

/// Sets one extra HTTP header of every model call (`streamOptions.headers`, applied last so it
/// overrides the model's); a NULL `value` removes it.
///
/// Errors: `NULL_ARGUMENT` (for `agent` or `name`), `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_header(
    agent: *mut pi_agent,
    name: *const c_char,
    value: *const c_char,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let name = arg_str(name, "name")?.to_owned();
        let value = arg_opt_str(value, "value")?.map(str::to_owned);
        agent.shared.agent.update_settings(|settings| {
            let headers = &mut settings.stream_options.headers;
            match value {
                Some(value) => headers.insert(name, value),
                None => headers.remove(&name),
            }
        });
        Ok(())
    })
}

// ------------------------------------------------------------------------------ watchdogs

/// Sets the tool watchdog (`toolTimeoutMs`): a tool call (with its `before` / `after` hooks)
/// still running after `timeout_ms` milliseconds gets an error result; 0 removes the watchdog.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_tool_timeout_ms(
    agent: *mut pi_agent,
    timeout_ms: u64,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let timeout = (timeout_ms > 0).then_some(timeout_ms);
        agent
            .shared
            .agent
            .update_settings(|settings| settings.tool_timeout_ms = timeout);
        Ok(())
    })
}

/// Sets the stream watchdog (`streamIdleTimeoutMs`): a model stream that sends nothing for
/// `timeout_ms` milliseconds ends the turn with an error message; 0 removes the watchdog.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_stream_idle_timeout_ms(
    agent: *mut pi_agent,
    timeout_ms: u64,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let timeout = (timeout_ms > 0).then_some(timeout_ms);
        agent
            .shared
            .agent
            .update_settings(|settings| settings.stream_idle_timeout_ms = timeout);
        Ok(())
    })
}
