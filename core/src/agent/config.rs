//! What one agent-loop run needs besides its messages: the model, how to call it, and hooks.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::message::{AgentMessage, default_convert_to_llm};
use super::tool::{AgentTool, AgentToolResult, ToolExecutionMode};
use crate::ai::event_stream::AssistantMessageEventStream;
use crate::ai::model::Model;
use crate::ai::options::{ApiKey, StreamOptions};
use crate::ai::types::{
    AssistantMessage, Context, Message, ToolCall, ToolResultMessage, UserContent,
};

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

/// Rewrites the transcript before each LLM call (e.g. to prune or summarise); the result is sent,
/// never stored. Contract: must not panic (a panic fails the run).
pub type TransformContext = Arc<
    dyn Fn(Vec<AgentMessage>, CancellationToken) -> BoxFuture<'static, Vec<AgentMessage>>
        + Send
        + Sync,
>;

/// What `before_tool_call` sees.
#[derive(Clone, Debug)]
pub struct BeforeToolCallContext {
    /// The assistant message that made the call.
    pub assistant_message: AssistantMessage,
    /// The call as the model made it.
    pub tool_call: ToolCall,
    /// The arguments after `prepare_arguments` and validation.
    pub args: Value,
}

/// What `before_tool_call` decides.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BeforeToolCallResult {
    /// Do not run the tool; the model gets an error result with `reason`.
    pub block: bool,
    /// Why (default text: "Tool execution was blocked").
    pub reason: Option<String>,
    /// Replacement arguments, used without revalidation (pi lets the hook edit them in place).
    pub args: Option<Value>,
}

/// Runs after validation and before execution. `Ok(None)` lets the call run; `Err(message)`
/// becomes an error result, as does a panic.
pub type BeforeToolCall = Arc<
    dyn Fn(
            BeforeToolCallContext,
            CancellationToken,
        ) -> BoxFuture<'static, Result<Option<BeforeToolCallResult>, String>>
        + Send
        + Sync,
>;

/// What `after_tool_call` sees.
#[derive(Clone, Debug)]
pub struct AfterToolCallContext {
    /// The assistant message that made the call.
    pub assistant_message: AssistantMessage,
    /// The call as the model made it.
    pub tool_call: ToolCall,
    /// The arguments the tool ran with.
    pub args: Value,
    /// The tool's result.
    pub result: AgentToolResult,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// Replacements for parts of a tool result; each field present replaces the original whole (no
/// deep merge).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterToolCallResult {
    /// New content.
    pub content: Option<Vec<UserContent>>,
    /// New details.
    pub details: Option<Value>,
    /// New error flag.
    pub is_error: Option<bool>,
    /// New terminate flag.
    pub terminate: Option<bool>,
}

/// Runs after a tool executed (not for calls that never ran: unknown tool, invalid arguments,
/// blocked). `Err(message)` or a panic turns the result into an error result.
pub type AfterToolCall = Arc<
    dyn Fn(
            AfterToolCallContext,
            CancellationToken,
        ) -> BoxFuture<'static, Result<Option<AfterToolCallResult>, String>>
        + Send
        + Sync,
>;

/// What `should_stop_after_turn` sees.
#[derive(Clone, Debug)]
pub struct ShouldStopAfterTurnContext {
    /// The turn's assistant message.
    pub message: AssistantMessage,
    /// The turn's tool results.
    pub tool_results: Vec<ToolResultMessage>,
    /// Everything this run added so far.
    pub new_messages: Vec<AgentMessage>,
}

/// Asked after every turn; `true` ends the run without polling the queues.
pub type ShouldStopAfterTurn =
    Arc<dyn Fn(ShouldStopAfterTurnContext) -> BoxFuture<'static, bool> + Send + Sync>;

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
    /// Rewrites the transcript before each LLM call.
    pub transform_context: Option<TransformContext>,
    /// Runs before each tool call.
    pub before_tool_call: Option<BeforeToolCall>,
    /// Runs after each executed tool call.
    pub after_tool_call: Option<AfterToolCall>,
    /// Asked after each turn whether to stop.
    pub should_stop_after_turn: Option<ShouldStopAfterTurn>,
    /// Watchdog: a model stream that sends nothing for this long is cancelled and the turn
    /// ends with an error message (pi has none and can hang forever).
    pub stream_idle_timeout: Option<Duration>,
    /// Watchdog: a tool call still running after this long is cancelled and gets an error
    /// result.
    pub tool_timeout: Option<Duration>,
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
            transform_context: None,
            before_tool_call: None,
            after_tool_call: None,
            should_stop_after_turn: None,
            stream_idle_timeout: None,
            tool_timeout: None,
        }
    }
}

/// [`crate::ai::stream_simple`] as a [`StreamFn`].
pub fn default_stream_fn() -> StreamFn {
    Arc::new(crate::ai::stream_simple)
}
