//! Save and restore: an agent's transcript, queues and settings as JSON (pi's message shapes),
//! so that a new agent — in another process or another language binding — resumes from it.
//!
//! Tools, hooks and the stream function are code, not data: the snapshot records the tool
//! names for reference, and the restoring side supplies the tools again in [`AgentOptions`].

use serde::{Deserialize, Serialize};

use super::message::AgentMessage;
use super::queue::QueueMode;
use super::tool::ToolExecutionMode;
use super::{Agent, AgentOptions, lock};
use crate::ai::model::Model;
use crate::ai::options::ThinkingLevel;

/// The current snapshot format.
pub const SNAPSHOT_VERSION: u32 = 1;

/// Everything about an agent that is data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSnapshot {
    /// Format version ([`SNAPSHOT_VERSION`]).
    pub version: u32,
    /// The system prompt.
    pub system_prompt: String,
    /// The model.
    pub model: Model,
    /// The reasoning level (`null` = off).
    #[serde(default)]
    pub thinking_level: Option<ThinkingLevel>,
    /// The transcript.
    pub messages: Vec<AgentMessage>,
    /// Sequential or parallel tool calls.
    #[serde(default)]
    pub tool_execution: ToolExecutionMode,
    /// Steering queue mode.
    #[serde(default)]
    pub steering_mode: QueueMode,
    /// Follow-up queue mode.
    #[serde(default)]
    pub follow_up_mode: QueueMode,
    /// Queued steering messages.
    #[serde(default)]
    pub steering_queue: Vec<AgentMessage>,
    /// Queued follow-up messages.
    #[serde(default)]
    pub follow_up_queue: Vec<AgentMessage>,
    /// Names of the tools the agent had (informational).
    #[serde(default)]
    pub tool_names: Vec<String>,
}

impl Agent {
    /// Captures the agent's data. During a run, the transcript is as of the last completed
    /// message.
    pub fn snapshot(&self) -> AgentSnapshot {
        let (system_prompt, model, thinking_level, messages, tool_names) = {
            let state = lock(&self.inner.state);
            (
                state.system_prompt.clone(),
                state.model.clone(),
                state.thinking_level,
                state.messages.clone(),
                state.tools.iter().map(|t| t.name().to_owned()).collect(),
            )
        };
        let tool_execution = lock(&self.inner.settings).tool_execution;
        let steering = lock(&self.inner.steering);
        let follow_up = lock(&self.inner.follow_up);
        AgentSnapshot {
            version: SNAPSHOT_VERSION,
            system_prompt,
            model,
            thinking_level,
            messages,
            tool_execution,
            steering_mode: steering.mode,
            follow_up_mode: follow_up.mode,
            steering_queue: steering.messages().cloned().collect(),
            follow_up_queue: follow_up.messages().cloned().collect(),
            tool_names,
        }
    }

    /// A new agent with `options`' code (tools, hooks, stream function) and the snapshot's data.
    pub fn restore(snapshot: AgentSnapshot, mut options: AgentOptions) -> Agent {
        options.system_prompt = snapshot.system_prompt;
        options.model = Some(snapshot.model);
        options.thinking_level = snapshot.thinking_level;
        options.messages = snapshot.messages;
        options.tool_execution = snapshot.tool_execution;
        options.steering_mode = snapshot.steering_mode;
        options.follow_up_mode = snapshot.follow_up_mode;
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
