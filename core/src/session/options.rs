//! [`SessionOptions`]: the model, tools and settings a session runs with.

use std::sync::Arc;

use super::compaction::CompactionSettings;
use crate::agent::{AgentHooks, AgentSettings, AgentTool};
use crate::ai::Model;

/// How a durable session runs. Not stored: a reopened session gets its options again from
/// the host (the tools are code), and its journal from the store.
#[derive(Clone)]
pub struct SessionOptions {
    /// The model.
    pub model: Model,
    /// The system prompt.
    pub system_prompt: String,
    /// The tools. A tool that was running when the process died is run again on reopen only
    /// when it is [`replay_safe`](AgentTool::replay_safe); otherwise it gets an `interrupted`
    /// error result.
    pub tools: Vec<Arc<dyn AgentTool>>,
    /// Thinking level, tool execution, queue modes, stream options, watchdogs (as an agent's).
    pub settings: AgentSettings,
    /// Stream function and hooks (as an agent's; `should_stop_after_turn` is not asked).
    pub hooks: AgentHooks,
    /// When older turns are summarised.
    pub compaction: CompactionSettings,
}

impl SessionOptions {
    /// Options for `model` with pi's defaults, no tools and no system prompt.
    pub fn new(model: Model) -> Self {
        Self {
            model,
            system_prompt: String::new(),
            tools: Vec::new(),
            settings: AgentSettings::default(),
            hooks: AgentHooks::default(),
            compaction: CompactionSettings::default(),
        }
    }
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("model", &self.model.id)
            .field("tools", &self.tools.len())
            .field("settings", &self.settings)
            .field("compaction", &self.compaction)
            .finish_non_exhaustive()
    }
}
