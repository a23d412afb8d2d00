//! Save and restore: an agent's transcript, queues and settings as JSON (pi's message shapes),
//! so that a new agent — in another process or another language binding — resumes from it.
//!
//! Tools, hooks and the stream function are code, not data: the snapshot records the tool
//! names for reference, and the restoring side supplies the tools again in [`AgentOptions`].
//!
//! No secret is written: the options' `apiKey` is never serialised, and of the headers — the
//! stream options' and the model's own `headers` alike — only those known to carry no
//! credential are kept ([`is_known_safe_header`]: `content-type`, `user-agent`,
//! `anthropic-beta`, the Copilot editor headers, ...). Any other header, whatever its name
//! (`X-Auth-Key`, `X-Tenant-Secret`, `x-my-gateway`), is left out: supply it again when
//! restoring (`AgentOptions::settings.stream_options.headers`, or the model's headers in
//! `AgentOptions::model`).

use serde::{Deserialize, Serialize};

use super::config::AgentSettings;
use super::message::AgentMessage;
use super::queue::QueueMode;
use super::stateful::lock;
use super::tool::ToolExecutionMode;
use super::{Agent, AgentOptions};
use crate::ai::model::Model;
use crate::ai::options::is_known_safe_header;
use crate::ai::thinking::ThinkingLevel;

/// The current snapshot format (2: settings nested under `settings`; 1 is still read).
pub const SNAPSHOT_VERSION: u32 = 2;

/// Everything about an agent that is data.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "SnapshotWire")]
pub struct AgentSnapshot {
    /// Format version ([`SNAPSHOT_VERSION`]).
    pub version: u32,
    /// The system prompt.
    pub system_prompt: String,
    /// The model.
    pub model: Model,
    /// The transcript.
    pub messages: Vec<AgentMessage>,
    /// Thinking level, tool execution, queue modes, stream options (without secrets), watchdogs.
    pub settings: AgentSettings,
    /// Queued steering messages.
    pub steering_queue: Vec<AgentMessage>,
    /// Queued follow-up messages.
    pub follow_up_queue: Vec<AgentMessage>,
    /// Names of the tools the agent had (informational).
    pub tool_names: Vec<String>,
}

/// What is read: the current shape, and version 1's settings at the top level.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotWire {
    version: u32,
    system_prompt: String,
    model: Model,
    messages: Vec<AgentMessage>,
    #[serde(default)]
    settings: Option<AgentSettings>,
    #[serde(default)]
    steering_queue: Vec<AgentMessage>,
    #[serde(default)]
    follow_up_queue: Vec<AgentMessage>,
    #[serde(default)]
    tool_names: Vec<String>,
    // Version 1.
    #[serde(default)]
    thinking_level: Option<ThinkingLevel>,
    #[serde(default)]
    tool_execution: Option<ToolExecutionMode>,
    #[serde(default)]
    steering_mode: Option<QueueMode>,
    #[serde(default)]
    follow_up_mode: Option<QueueMode>,
}

impl From<SnapshotWire> for AgentSnapshot {
    fn from(wire: SnapshotWire) -> Self {
        let mut settings = wire.settings.unwrap_or_default();
        if let Some(level) = wire.thinking_level {
            settings.thinking_level = level;
        }
        if let Some(mode) = wire.tool_execution {
            settings.tool_execution = mode;
        }
        if let Some(mode) = wire.steering_mode {
            settings.steering_mode = mode;
        }
        if let Some(mode) = wire.follow_up_mode {
            settings.follow_up_mode = mode;
        }
        Self {
            version: wire.version,
            system_prompt: wire.system_prompt,
            model: wire.model,
            messages: wire.messages,
            settings,
            steering_queue: wire.steering_queue,
            follow_up_queue: wire.follow_up_queue,
            tool_names: wire.tool_names,
        }
    }
}

impl Agent {
    /// Captures the agent's data. During a run, the transcript is as of the last completed
    /// message.
    pub fn snapshot(&self) -> AgentSnapshot {
        let (system_prompt, mut model, messages, tool_names) = {
            let state = lock(&self.inner.state);
            (
                state.system_prompt.clone(),
                state.model.clone(),
                state.messages.clone(),
                state.tools.iter().map(|t| t.name().to_owned()).collect(),
            )
        };
        let mut settings = self.settings();
        settings
            .stream_options
            .headers
            .retain(|name, _| is_known_safe_header(name));
        if let Some(headers) = &mut model.headers {
            headers.retain(|name, _| is_known_safe_header(name));
        }
        let (steering_queue, follow_up_queue) = self.queued_messages();
        AgentSnapshot {
            version: SNAPSHOT_VERSION,
            system_prompt,
            model,
            messages,
            settings,
            steering_queue,
            follow_up_queue,
            tool_names,
        }
    }

    /// A new agent with `options`' code (tools, hooks) and the snapshot's data. Secrets the
    /// snapshot does not hold (the API key, headers not known to be safe) are taken from
    /// `options.settings.stream_options`, and the model's headers from `options.model` when it
    /// is given (its headers fill in those the snapshot's model lacks).
    pub fn restore(snapshot: AgentSnapshot, mut options: AgentOptions) -> Agent {
        let supplied = std::mem::take(&mut options.settings.stream_options);
        let mut model = snapshot.model;
        if let Some(supplied_headers) = options.model.take().and_then(|model| model.headers) {
            let headers = model.headers.get_or_insert_default();
            for (name, value) in supplied_headers {
                headers.entry(name).or_insert(value);
            }
        }
        options.system_prompt = snapshot.system_prompt;
        options.model = Some(model);
        options.messages = snapshot.messages;
        options.settings = snapshot.settings;
        let stream_options = &mut options.settings.stream_options;
        if stream_options.api_key.is_none() {
            stream_options.api_key = supplied.api_key;
        }
        if stream_options.bearer_token.is_none() {
            stream_options.bearer_token = supplied.bearer_token;
        }
        for (name, value) in supplied.headers {
            stream_options.headers.entry(name).or_insert(value);
        }
        stream_options.on_payload = supplied.on_payload;
        stream_options.on_response = supplied.on_response;
        let agent = Agent::new(options);
        for message in snapshot.steering_queue {
            agent.steer(message);
        }
        for message in snapshot.follow_up_queue {
            agent.follow_up(message);
        }
        agent
    }
}
