//! The state of a `pi_agent`: its transcript, steering and follow-up queues, settings, what a
//! run is doing right now, and snapshots to save and restore it all.

use std::ffi::c_char;

use ::pi_agent::agent::{
    Agent, AgentMessage, AgentOptions, AgentSnapshot, QueueMode, ToolExecutionMode,
};
use ::pi_agent::ai::{ModelThinkingLevel, UserMessage};

use crate::agent::pi_agent;
use crate::boundary::{Out, arg_opt_str, arg_ref, arg_str, into_handle, opt_ref};
use crate::error::{parse_json, pi_error, to_json};
use crate::model::pi_model;
use crate::options::{parse_name, restore_settings};
use crate::string::into_c_string;

// ------------------------------------------------------------------------------ transcript

/// Clears the transcript, the steering and follow-up queues and the error message.
///
/// Errors: `NULL_ARGUMENT`; `ALREADY_RUNNING` while a run is active (the run appends to the
/// transcript: abort it and wait for idle first), and nothing is cleared.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_reset(agent: *mut pi_agent) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        agent.agent.reset().map_err(pi_error::from_agent)
    }
}

/// Writes the transcript as a pi-shaped JSON array of messages to `*json_out` (free it with
/// `pi_string_free`). During a run it holds the messages completed so far.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_messages_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let out = Out::new(json_out, "json_out")?;
        out.write(into_c_string(to_json(&agent.agent.messages(), "messages")?));
        Ok(())
    }
}

/// Replaces the transcript with a pi-shaped JSON array of messages (takes effect for the next
/// run). Messages with a `role` other than `user`, `assistant` and `toolResult` are custom
/// messages, e.g. `{"role":"notification","text":"build finished"}`: they are kept as they
/// are and never sent to the model.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_messages_json(
    agent: *mut pi_agent,
    messages_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let json = arg_str(messages_json, "messages_json")?;
        let messages: Vec<AgentMessage> = parse_json(json, "messages_json")?;
        agent.agent.set_messages(messages).map_err(pi_error::from_agent)
    }
}

// ---------------------------------------------------------------------------------- queues

/// Queues `text` as a user message to inject after the current turn's tool calls (pi's
/// `steer`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_steer_text(agent: *mut pi_agent, text: *const c_char) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let text = arg_str(text, "text")?;
        agent.agent.steer(UserMessage::text(text));
        Ok(())
    }
}

/// Queues `text` as a user message to run when the agent would otherwise stop (pi's
/// `followUp`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_follow_up_text(
    agent: *mut pi_agent,
    text: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let text = arg_str(text, "text")?;
        agent.agent.follow_up(UserMessage::text(text));
        Ok(())
    }
}

/// Queues one pi-shaped message (any role; see `pi_agent_set_messages_json` for custom
/// messages) to inject after the current turn's tool calls (pi's `steer`), e.g.
/// `{"role":"user","content":"Stop after this step.","timestamp":0}`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_steer_json(
    agent: *mut pi_agent,
    message_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let json = arg_str(message_json, "message_json")?;
        let message: AgentMessage = parse_json(json, "message_json")?;
        agent.agent.steer(message);
        Ok(())
    }
}

/// Queues one pi-shaped message (any role) to run when the agent would otherwise stop (pi's
/// `followUp`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_follow_up_json(
    agent: *mut pi_agent,
    message_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let json = arg_str(message_json, "message_json")?;
        let message: AgentMessage = parse_json(json, "message_json")?;
        agent.agent.follow_up(message);
        Ok(())
    }
}

/// Empties the steering queue (no-op when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_clear_steering_queue(agent: *mut pi_agent) {
    ffi_boundary! {
        if let Some(agent) = opt_ref(agent) {
            agent.agent.clear_steering_queue();
        }
    }
}

/// Empties the follow-up queue (no-op when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_clear_follow_up_queue(agent: *mut pi_agent) {
    ffi_boundary! {
        if let Some(agent) = opt_ref(agent) {
            agent.agent.clear_follow_up_queue();
        }
    }
}

/// Empties both queues (no-op when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_clear_queues(agent: *mut pi_agent) {
    ffi_boundary! {
        if let Some(agent) = opt_ref(agent) {
            agent.agent.clear_all_queues();
        }
    }
}

/// Whether the steering or the follow-up queue holds messages (`false` when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_has_queued_messages(agent: *const pi_agent) -> bool {
    ffi_boundary! {
        opt_ref(agent).is_some_and(|agent| agent.agent.has_queued_messages())
    }
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
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let mode: QueueMode = parse_name(arg_str(mode, "mode")?, "mode")?;
        agent.agent.set_steering_mode(mode);
        Ok(())
    }
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
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let mode: QueueMode = parse_name(arg_str(mode, "mode")?, "mode")?;
        agent.agent.set_follow_up_mode(mode);
        Ok(())
    }
}

// -------------------------------------------------------------------------------- settings

/// Sets the system prompt (may be empty, not NULL), for later runs.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_system_prompt(
    agent: *mut pi_agent,
    system_prompt: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let system_prompt = arg_str(system_prompt, "system_prompt")?;
        agent.agent.set_system_prompt(system_prompt);
        Ok(())
    }
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
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let model = arg_ref(model, "model")?;
        agent.agent.set_model(model.model.clone());
        Ok(())
    }
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
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let level: ModelThinkingLevel = parse_name(arg_str(level, "level")?, "level")?;
        agent.agent.set_thinking_level(level);
        Ok(())
    }
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
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let mode: ToolExecutionMode = parse_name(arg_str(mode, "mode")?, "mode")?;
        agent.agent.set_tool_execution(mode);
        Ok(())
    }
}

// ---------------------------------------------------------------------------- run progress

/// Whether a run is active (`false` when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_is_streaming(agent: *const pi_agent) -> bool {
    ffi_boundary! {
        opt_ref(agent).is_some_and(|agent| agent.agent.is_streaming())
    }
}

/// The error message of the last failed turn as a new string (free it with `pi_string_free`),
/// or NULL when there is none (or `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_error_message(agent: *const pi_agent) -> *mut c_char {
    ffi_boundary! {
        opt_ref(agent)
            .and_then(|agent| agent.agent.error_message())
            .map_or(std::ptr::null_mut(), into_c_string)
    }
}

/// Writes the message being streamed right now, as far as it has arrived, as pi-shaped JSON to
/// `*json_out` (free it with `pi_string_free`), or NULL when no message is streaming.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_streaming_message_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let out = Out::new(json_out, "json_out")?;
        let json = match agent.agent.streaming_message() {
            Some(message) => into_c_string(to_json(&message, "message")?),
            None => std::ptr::null_mut(),
        };
        out.write(json);
        Ok(())
    }
}

/// Writes the ids of the tool calls running right now as a sorted JSON array of strings to
/// `*json_out` (free it with `pi_string_free`), e.g. `["call_1","call_2"]`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_pending_tool_calls_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let out = Out::new(json_out, "json_out")?;
        let ids = agent.agent.pending_tool_calls();
        out.write(into_c_string(to_json(&ids, "pending tool calls")?));
        Ok(())
    }
}

/// Writes the failures of event subscribers as a JSON array of strings, oldest first (at most
/// the last 100), to `*json_out` (free it with `pi_string_free`). C callbacks cannot fail, so
/// this is `[]` unless the library itself had a bug delivering an event.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_listener_errors_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let out = Out::new(json_out, "json_out")?;
        out.write(into_c_string(to_json(&agent.agent.listener_errors(), "listener errors")?));
        Ok(())
    }
}

// ------------------------------------------------------------------------------- snapshots

/// Writes everything about the agent that is data as JSON to `*json_out` (free it with
/// `pi_string_free`): `{"version":1,"systemPrompt":...,"model":{...},"thinkingLevel":...,
/// "messages":[...],"toolExecution":...,"steeringMode":...,"followUpMode":...,
/// "steeringQueue":[...],"followUpQueue":[...],"toolNames":[...]}`. Tools, hooks and
/// subscriptions are code: they are not in it (`toolNames` is for reference). During a run the
/// transcript is as of the last completed message. Restore it with `pi_agent_restore`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_snapshot_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let agent = arg_ref(agent, "agent")?;
        let out = Out::new(json_out, "json_out")?;
        out.write(into_c_string(to_json(&agent.agent.snapshot(), "snapshot")?));
        Ok(())
    }
}

/// Creates an agent from a snapshot made by `pi_agent_snapshot_json` (in this process or
/// another, or by another binding): the same system prompt, model, thinking level, transcript,
/// settings and queued messages. Tools, hooks and subscriptions are not in a snapshot: add
/// them again. `options_json` may be NULL, or an object with the keys of `pi_agent_new`'s
/// options except the agent's state (`toolExecution`, `thinkingLevel`, `steeringMode`,
/// `followUpMode`, `messages`), which come from the snapshot: the request options (`apiKey`,
/// ...) and the watchdogs (`streamIdleTimeoutMs`, `toolTimeoutMs`). On success `*agent_out`
/// receives the agent; free it with `pi_agent_free`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_restore(
    snapshot_json: *const c_char,
    options_json: *const c_char,
    agent_out: *mut *mut pi_agent,
) -> *mut pi_error {
    ffi_fallible! {
        let snapshot: AgentSnapshot =
            parse_json(arg_str(snapshot_json, "snapshot_json")?, "snapshot_json")?;
        let run = restore_settings(arg_opt_str(options_json, "options_json")?)?;
        let out = Out::new(agent_out, "agent_out")?;
        let agent = Agent::restore(
            snapshot,
            AgentOptions {
                settings: ::pi_agent::agent::AgentSettings {
                    stream_options: run.stream_options,
                    stream_idle_timeout_ms: run.stream_idle_timeout.map(crate::options::millis),
                    tool_timeout_ms: run.tool_timeout.map(crate::options::millis),
                    ..Default::default()
                },
                ..AgentOptions::default()
            },
        );
        out.write(into_handle(pi_agent::new(agent)));
        Ok(())
    }
}
