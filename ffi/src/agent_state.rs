//! The state of a `pi_agent`: its transcript, steering and follow-up queues, what a run is
//! doing right now, and snapshots to save and restore it all (settings are in
//! `agent_settings.rs`).

use std::ffi::c_char;

use ::pi_agent::agent::{Agent, AgentMessage, AgentOptions, AgentSettings, AgentSnapshot};
use ::pi_agent::ai::{StreamOptions, UserMessage};
use serde::Serialize;

use crate::agent::{pi_agent, wrap};
use crate::args::{Out, arg_json, arg_opt_str, arg_str, method, write_json};
use crate::boundary::{act, flag, opt_ref};
use crate::error::{parse_object, pi_error, to_json};
use crate::options::parse_or_default;
use crate::string::into_c_string;

// ------------------------------------------------------------------------------ transcript

/// Clears the transcript, the steering and follow-up queues and the error message.
///
/// Errors: `NULL_ARGUMENT`; `ALREADY_RUNNING` while a run is active (the run appends to the
/// transcript: abort it and wait for idle first), and nothing is cleared.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_reset(agent: *mut pi_agent) -> *mut pi_error {
    method(agent, "agent", |agent| {
        agent.shared.agent.reset().map_err(pi_error::from_agent)
    })
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
    write_agent_json(agent, json_out, "messages", |agent| agent.messages())
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
    method(agent, "agent", |agent| {
        let messages: Vec<AgentMessage> = arg_json(messages_json, "messages_json")?;
        agent
            .shared
            .agent
            .set_messages(messages)
            .map_err(pi_error::from_agent)
    })
}

/// Appends one pi-shaped message (any role; see `pi_agent_set_messages_json` for custom
/// messages) to the transcript, for the next run.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`; `ALREADY_RUNNING` while a run is
/// active (use `pi_agent_steer_json` or `pi_agent_follow_up_json` then), and nothing changes.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_append_message_json(
    agent: *mut pi_agent,
    message_json: *const c_char,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let message: AgentMessage = arg_json(message_json, "message_json")?;
        agent
            .shared
            .agent
            .append_message(message)
            .map_err(pi_error::from_agent)
    })
}

// ---------------------------------------------------------------------------------- queues

/// Writes the queued steering messages, oldest first, as a pi-shaped JSON array to
/// `*json_out` (free it with `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_steering_queue_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    write_agent_json(agent, json_out, "messages", |agent| {
        agent.queued_messages().0
    })
}

/// Writes the queued follow-up messages, oldest first, as a pi-shaped JSON array to
/// `*json_out` (free it with `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_follow_up_queue_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    write_agent_json(agent, json_out, "messages", |agent| {
        agent.queued_messages().1
    })
}

/// Queues `text` as a user message to inject after the current turn's tool calls (pi's
/// `steer`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_steer_text(agent: *mut pi_agent, text: *const c_char) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let text = arg_str(text, "text")?;
        agent.shared.agent.steer(UserMessage::text(text));
        Ok(())
    })
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
    method(agent, "agent", |agent| {
        let text = arg_str(text, "text")?;
        agent.shared.agent.follow_up(UserMessage::text(text));
        Ok(())
    })
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
    method(agent, "agent", |agent| {
        let message: AgentMessage = arg_json(message_json, "message_json")?;
        agent.shared.agent.steer(message);
        Ok(())
    })
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
    method(agent, "agent", |agent| {
        let message: AgentMessage = arg_json(message_json, "message_json")?;
        agent.shared.agent.follow_up(message);
        Ok(())
    })
}

/// Empties the steering queue (no-op when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_clear_steering_queue(agent: *mut pi_agent) {
    act(agent, |agent| agent.shared.agent.clear_steering_queue())
}

/// Empties the follow-up queue (no-op when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_clear_follow_up_queue(agent: *mut pi_agent) {
    act(agent, |agent| agent.shared.agent.clear_follow_up_queue())
}

/// Empties both queues (no-op when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_clear_queues(agent: *mut pi_agent) {
    act(agent, |agent| agent.shared.agent.clear_all_queues())
}

/// Whether the steering or the follow-up queue holds messages (`false` when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_has_queued_messages(agent: *const pi_agent) -> bool {
    flag(agent, |agent| agent.shared.agent.has_queued_messages())
}

// ---------------------------------------------------------------------------- run progress

/// Whether a run is active (`false` when `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_is_streaming(agent: *const pi_agent) -> bool {
    flag(agent, |agent| agent.shared.agent.is_streaming())
}

/// The error message of the last failed turn as a new string (free it with `pi_string_free`),
/// or NULL when there is none (or `agent` is NULL).
///
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_error_message(agent: *const pi_agent) -> *mut c_char {
    ffi_boundary! {
        opt_ref(agent)
            .and_then(|agent| agent.shared.agent.error_message())
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
    method(agent, "agent", |agent| {
        let out = Out::new(json_out, "json_out")?;
        let json = match agent.shared.agent.streaming_message() {
            Some(message) => into_c_string(to_json(&message, "message")?),
            None => std::ptr::null_mut(),
        };
        out.write(json);
        Ok(())
    })
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
    write_agent_json(agent, json_out, "pending tool calls", |agent| {
        agent.pending_tool_calls()
    })
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
    write_agent_json(agent, json_out, "listener errors", |agent| {
        agent.listener_errors()
    })
}

// ------------------------------------------------------------------------------- snapshots

/// Writes everything about the agent that is data as core's `AgentSnapshot` JSON to
/// `*json_out` (free it with `pi_string_free`): `{"version":2,"systemPrompt":...,
/// "model":{...},"messages":[...],"settings":{...},"steeringQueue":[...],
/// "followUpQueue":[...],"toolNames":[...]}`, `settings` being the `AgentSettings` of
/// `pi_agent_settings_json`. Secrets are never saved: no API key or bearer token, and of the
/// headers (the stream options' and the model's own `headers` alike) only those known to carry
/// no credential (`content-type`, `user-agent`, `anthropic-beta`, ...); every other header,
/// whatever its name, is left out, so pass it again to `pi_agent_restore`. Tools, hooks and
/// subscriptions are code: they are not in it (`toolNames` is for reference). During a run
/// the transcript is as of the last completed message. Restore it with `pi_agent_restore`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_snapshot_json(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    write_agent_json(agent, json_out, "snapshot", |agent| agent.snapshot())
}

/// Creates an agent from a snapshot made by `pi_agent_snapshot_json` (in this process or
/// another, or by another binding): the same system prompt, model, settings, transcript and
/// queued messages. Tools, hooks and subscriptions are not in a snapshot: add them again.
/// Secrets are not in a snapshot either: `stream_options_json` (nullable; core's
/// `StreamOptions` JSON, as for `pi_stream_open`) supplies them: its `apiKey`, `bearerToken`
/// and headers the snapshot lacks (credential headers are never saved); its other keys are
/// ignored. On success `*agent_out` receives the agent; free it with `pi_agent_free`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_restore(
    snapshot_json: *const c_char,
    stream_options_json: *const c_char,
    agent_out: *mut *mut pi_agent,
) -> *mut pi_error {
    ffi_fallible! {
        // Without quoting values in its errors: the model's headers may hold credentials.
        let snapshot: AgentSnapshot =
            parse_object(arg_str(snapshot_json, "snapshot_json")?, "snapshot_json")?;
        let name = "stream_options_json";
        let stream_options: StreamOptions =
            parse_or_default(arg_opt_str(stream_options_json, name)?, name)?;
        let out = Out::new(agent_out, "agent_out")?;
        let agent = Agent::restore(
            snapshot,
            AgentOptions {
                settings: AgentSettings {
                    stream_options,
                    ..AgentSettings::default()
                },
                ..AgentOptions::default()
            },
        );
        out.write(wrap(agent));
        Ok(())
    }
}

/// The body of each function that writes some of the agent's data as JSON: `read` picks the
/// data, and its JSON goes to `*json_out` (freed with `pi_string_free`).
pub(crate) fn write_agent_json<T: Serialize>(
    agent: *const pi_agent,
    json_out: *mut *mut c_char,
    what: &str,
    read: impl FnOnce(&Agent) -> T,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        write_json(json_out, &read(&agent.shared.agent), what)
    })
}
