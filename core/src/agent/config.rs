//! What one agent-loop run needs besides its messages: the model, how to call it, and hooks.

use std::sync::Arc;

use super::message::{AgentMessage, default_convert_to_llm};
use super::tool::{AgentTool, ToolExecutionMode};
use crate::ai::event_stream::AssistantMessageEventStream;
use crate::ai::model::Model;
use crate::ai::options::{ApiKey, StreamOptions};
use crate::ai::types::{Context, Message};

/// Calls the model. Contract: never fails; failures end the returned stream with `error`
/// (the default, [`crate::ai::stream_simple`], honours this).
pub type StreamFn =
    Arc<dyn Fn(&Model, &Context, &StreamOptions) -> AssistantMessageEventStream + Send + Sync>;

/// Turns the transcript into the messages the LLM sees (filters or converts custom messages).
pub type ConvertToLlm = Arc<dyn Fn(&[AgentMessage]) -> Vec<Message> + Send + Sync>;

/// Resolves an API key for a provider before every LLM call (for short-lived tokens).
pub type GetApiKey = Arc<dyn Fn(&str) -> Option<ApiKey> + Send + Sync>;

/// Yields queued messages when the loop polls (steering or follow-up).
pub type MessageSource = Arc<dyn Fn() -> Vec<AgentMessage> + Send + Sync>;

/// The transcript and tools a run works on.
#[derive(Clone, Default)]
pub struct AgentContext {
    /// The system prompt.
    pub system_prompt: String,
    /// The transcript.
    pub messages: Vec<AgentMessage>,
    /// The tools the model may call.
    pub tools: Vec<Arc<dyn AgentTool>>,
}

impl std::fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentContext")
            .field("system_prompt", &self.system_prompt)
            .field("messages", &self.messages.len())
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Configuration of one run of the loop.
#[derive(Clone)]
pub struct AgentLoopConfig {
    /// The model to call.
    pub model: Model,
    /// Options for every LLM call (the loop sets `signal`; `api_key` is the fallback when
    /// `get_api_key` gives none).
    pub stream_options: StreamOptions,
    /// Sequential or parallel tool calls.
    pub tool_execution: ToolExecutionMode,
    /// How the model is called.
    pub stream_fn: StreamFn,
    /// Transcript → LLM messages.
    pub convert_to_llm: ConvertToLlm,
    /// Per-call API key lookup.
    pub get_api_key: Option<GetApiKey>,
    /// Polled before the first LLM call and after every turn.
    pub get_steering_messages: Option<MessageSource>,
    /// Polled when the loop would otherwise stop.
    pub get_follow_up_messages: Option<MessageSource>,
    /// Skip the steering poll before the first call (used when the run was started from
    /// steering messages).
    pub skip_initial_steering_poll: bool,
}

impl std::fmt::Debug for AgentLoopConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentLoopConfig")
            .field("model", &self.model.id)
            .field("tool_execution", &self.tool_execution)
            .finish_non_exhaustive()
    }
}

impl AgentLoopConfig {
    /// A config that calls `model` through the registry with pi's defaults.
    pub fn new(model: Model) -> Self {
        Self {
            model,
            stream_options: StreamOptions::default(),
            tool_execution: ToolExecutionMode::Parallel,
            stream_fn: default_stream_fn(),
            convert_to_llm: Arc::new(default_convert_to_llm),
            get_api_key: None,
            get_steering_messages: None,
            get_follow_up_messages: None,
            skip_initial_steering_poll: false,
        }
    }
}

/// [`crate::ai::stream_simple`] as a [`StreamFn`].
pub fn default_stream_fn() -> StreamFn {
    Arc::new(crate::ai::stream_simple)
}
