//! How an agent is configured, in one place: [`AgentSettings`] (data, serde, the same JSON the
//! C ABI and Python take), [`AgentHooks`] (code), and the [`AgentLoopConfig`] of one run, which
//! is just the two plus the model and the queue sources.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::message_error;
use super::limits::RunLimits;
use super::message::{AgentMessage, default_convert_to_llm};
use super::queue::QueueMode;
use super::tool::{AgentTool, AgentToolResult, ToolExecutionMode};
use crate::ai::event_stream::AssistantMessageEventStream;
use crate::ai::model::Model;
use crate::ai::options::{ApiKey, StreamOptions};
use crate::ai::structured::OutputSchema;
use crate::ai::thinking::ThinkingLevel;
use crate::ai::types::{
    AssistantMessage, Context, Message, ToolCall, ToolResultMessage, UserContent,
};

message_error! {
    /// A hook's failure. What happens then depends on the hook (an error tool result, or a
    /// failed turn); the text is what the model or the transcript shows, so say what went
    /// wrong.
    HookError
}

/// Calls the model. Contract: never fails; failures end the returned stream with `error`
/// (the default, [`crate::ai::stream_simple`], honours this).
pub type StreamFn =
    Arc<dyn Fn(&Model, &Context, &StreamOptions) -> AssistantMessageEventStream + Send + Sync>;

/// Turns the transcript into the messages the LLM sees (filters or converts custom messages).
/// A failure fails the turn (an assistant message with `stopReason: "error"`).
pub type ConvertToLlm =
    Arc<dyn Fn(&[AgentMessage]) -> Result<Vec<Message>, HookError> + Send + Sync>;

/// Resolves an API key for a provider before every LLM call (for short-lived tokens). `None` or
/// an empty key falls back to the configured one; a failure fails the turn.
pub type GetApiKey =
    Arc<dyn Fn(&str) -> BoxFuture<'static, Result<Option<ApiKey>, HookError>> + Send + Sync>;

/// Yields queued messages when the loop polls (steering or follow-up).
pub type MessageSource = Arc<dyn Fn() -> Vec<AgentMessage> + Send + Sync>;

/// Rewrites the transcript before each LLM call (e.g. to prune or summarise); the result is sent,
/// never stored. A failure fails the turn.
pub type TransformContext = Arc<
    dyn Fn(
            Vec<AgentMessage>,
            CancellationToken,
        ) -> BoxFuture<'static, Result<Vec<AgentMessage>, HookError>>
        + Send
        + Sync,
>;

/// What `before_tool_call` sees (pi's `BeforeToolCallContext`, without the whole context).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BeforeToolCallContext {
    /// The assistant message that made the call.
    pub assistant_message: AssistantMessage,
    /// The call as the model made it.
    pub tool_call: ToolCall,
    /// The arguments after `prepare_arguments` and validation.
    pub args: Value,
}

/// What `before_tool_call` decides (pi's `BeforeToolCallResult`, plus replacement arguments).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BeforeToolCallResult {
    /// Do not run the tool; the model gets an error result with `reason`.
    pub block: bool,
    /// Why (default text: "Tool execution was blocked").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Replacement arguments, used without revalidation (pi lets the hook edit them in place).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
}

/// Runs after validation and before execution. `Ok(None)` lets the call run; `Err` becomes an
/// error result, as does a panic. Like a tool, it is cut short by an abort and by the tool
/// watchdog.
pub type BeforeToolCall = Arc<
    dyn Fn(
            BeforeToolCallContext,
            CancellationToken,
        ) -> BoxFuture<'static, Result<Option<BeforeToolCallResult>, HookError>>
        + Send
        + Sync,
>;

/// What `after_tool_call` sees (pi's `AfterToolCallContext`, without the whole context).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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

/// Replacements for parts of a tool result (pi's `AfterToolCallResult`); each field present
/// replaces the original whole (no deep merge).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AfterToolCallResult {
    /// New content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<UserContent>>,
    /// New details; a JSON `null` given explicitly replaces the details with `null` (absent
    /// keeps them).
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// New error flag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// New terminate flag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminate: Option<bool>,
}

/// A field that is present — even as `null` — is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Runs after a tool executed (not for calls that never ran: unknown tool, invalid arguments,
/// blocked). `Err` or a panic turns the result into an error result. Cut short by an abort and
/// by the tool watchdog, like the tool.
pub type AfterToolCall = Arc<
    dyn Fn(
            AfterToolCallContext,
            CancellationToken,
        ) -> BoxFuture<'static, Result<Option<AfterToolCallResult>, HookError>>
        + Send
        + Sync,
>;

/// What `should_stop_after_turn` sees (pi's `ShouldStopAfterTurnContext`, without the whole
/// context).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShouldStopAfterTurnContext {
    /// The turn's assistant message.
    pub message: AssistantMessage,
    /// The turn's tool results.
    pub tool_results: Vec<ToolResultMessage>,
    /// Everything this run added so far.
    pub new_messages: Vec<AgentMessage>,
}

/// Asked after every turn (after `turn_end`); `true` ends the run without polling the queues. A
/// failure ends the run with a failure message.
pub type ShouldStopAfterTurn = Arc<
    dyn Fn(
            ShouldStopAfterTurnContext,
            CancellationToken,
        ) -> BoxFuture<'static, Result<bool, HookError>>
        + Send
        + Sync,
>;

/// The agent's settings that are data (pi's `AgentOptions` minus the hooks and the initial
/// state). The JSON form has pi's camelCase names; unknown keys are refused.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AgentSettings {
    /// Reasoning level sent with every model call (`off`, the default, sends none).
    pub thinking_level: ThinkingLevel,
    /// Parallel (default) or sequential tool calls.
    pub tool_execution: ToolExecutionMode,
    /// How many steering messages one poll takes.
    pub steering_mode: QueueMode,
    /// How many follow-up messages one poll takes.
    pub follow_up_mode: QueueMode,
    /// Options for every model call: API key, temperature, max tokens, headers, session id,
    /// provider keys, timeouts. (`signal` and `reasoning` are set by the agent.)
    pub stream_options: StreamOptions,
    /// Watchdog: a model stream that sends nothing for this long is cancelled and the turn ends
    /// with an error message (pi has none and can hang forever).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_idle_timeout_ms: Option<u64>,
    /// Watchdog: a tool call still running after this long is cancelled and gets an error
    /// result. Its `before_tool_call` and `after_tool_call` hooks are each cut after this long
    /// too (each phase has the whole limit: a call with both hooks is bounded by three times
    /// it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_timeout_ms: Option<u64>,
    /// The run ends in a value of this shape: every model call asks for it (tools stay
    /// usable), the final answer is validated, and [`RunOutcome::output`](super::RunOutcome)
    /// carries it. An answer that does not validate is re-asked with the report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
    /// How many times an answer that does not match [`output_schema`](Self::output_schema) is
    /// re-asked (with the validation report) before the run ends with the `invalid_output`
    /// message. Default [`DEFAULT_OUTPUT_RETRIES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_retries: Option<u32>,
    /// How far one run may go: model calls (default
    /// [`DEFAULT_MAX_TURNS`](super::DEFAULT_MAX_TURNS)), tool calls, tokens, cost. A run that
    /// reaches one ends with an `errorKind: "run_limit"` message.
    pub limits: RunLimits,
}

/// Default number of re-asks of an answer that does not match the output schema.
pub const DEFAULT_OUTPUT_RETRIES: u32 = 1;

impl AgentSettings {
    /// The output schema a run ends in: [`output_schema`](Self::output_schema), else the
    /// stream options' own.
    pub fn output(&self) -> Option<&OutputSchema> {
        self.output_schema
            .as_ref()
            .or(self.stream_options.output_schema.as_ref())
    }

    /// The stream watchdog as a duration.
    pub fn stream_idle_timeout(&self) -> Option<Duration> {
        self.stream_idle_timeout_ms.map(Duration::from_millis)
    }

    /// The tool watchdog as a duration.
    pub fn tool_timeout(&self) -> Option<Duration> {
        self.tool_timeout_ms.map(Duration::from_millis)
    }

    /// Parses pi-shaped JSON settings; an unknown key or a wrong type is an error naming it.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// The agent's code: how the model is called and the hooks around the loop. Every field is
/// optional; `Default` is pi's behaviour.
#[derive(Clone, Default)]
pub struct AgentHooks {
    /// How the model is called (default: [`crate::ai::stream_simple`]).
    pub stream_fn: Option<StreamFn>,
    /// Transcript → LLM messages (default: drop custom messages).
    pub convert_to_llm: Option<ConvertToLlm>,
    /// Per-call API key lookup.
    pub get_api_key: Option<GetApiKey>,
    /// Rewrites the transcript before each LLM call.
    pub transform_context: Option<TransformContext>,
    /// Runs before each tool call (may block it or replace its arguments).
    pub before_tool_call: Option<BeforeToolCall>,
    /// Runs after each executed tool call (may replace parts of its result).
    pub after_tool_call: Option<AfterToolCall>,
    /// Asked after each turn whether to stop.
    pub should_stop_after_turn: Option<ShouldStopAfterTurn>,
}

impl std::fmt::Debug for AgentHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set: Vec<&str> = [
            ("stream_fn", self.stream_fn.is_some()),
            ("convert_to_llm", self.convert_to_llm.is_some()),
            ("get_api_key", self.get_api_key.is_some()),
            ("transform_context", self.transform_context.is_some()),
            ("before_tool_call", self.before_tool_call.is_some()),
            ("after_tool_call", self.after_tool_call.is_some()),
            (
                "should_stop_after_turn",
                self.should_stop_after_turn.is_some(),
            ),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        f.debug_struct("AgentHooks").field("set", &set).finish()
    }
}

impl AgentHooks {
    /// The stream function to use (the configured one, else [`crate::ai::stream_simple`]).
    pub fn stream_fn(&self) -> StreamFn {
        self.stream_fn.clone().unwrap_or_else(default_stream_fn)
    }

    /// Converts `messages` for the LLM with the configured conversion, else pi's default.
    pub fn convert(&self, messages: &[AgentMessage]) -> Result<Vec<Message>, HookError> {
        match &self.convert_to_llm {
            Some(convert) => convert(messages),
            None => Ok(default_convert_to_llm(messages)),
        }
    }
}

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

/// Configuration of one run of the loop: the model, the agent's settings and hooks, and where
/// queued messages come from.
#[derive(Clone)]
pub struct AgentLoopConfig {
    /// The model to call.
    pub model: Model,
    /// Data settings (thinking level, tool execution, stream options, watchdogs).
    pub settings: AgentSettings,
    /// Code: stream function and hooks.
    pub hooks: AgentHooks,
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
            .field("settings", &self.settings)
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl AgentLoopConfig {
    /// A config that calls `model` through the registry with pi's defaults.
    pub fn new(model: Model) -> Self {
        Self {
            model,
            settings: AgentSettings::default(),
            hooks: AgentHooks::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_results_parse_pi_json_and_refuse_unknown_keys() {
        let change: AfterToolCallResult =
            serde_json::from_str(r#"{"details":null,"isError":true}"#).unwrap();
        assert_eq!(change.details, Some(Value::Null));
        assert_eq!(change.is_error, Some(true));
        let change: AfterToolCallResult =
            serde_json::from_str(r#"{"content":[{"type":"text","text":"x"}]}"#).unwrap();
        assert_eq!(change.details, None);
        let error = serde_json::from_str::<AfterToolCallResult>(r#"{"detail":1}"#).unwrap_err();
        assert!(
            error.to_string().contains("unknown field `detail`"),
            "{error}"
        );
        let decision: BeforeToolCallResult =
            serde_json::from_str(r#"{"block":true,"reason":"no"}"#).unwrap();
        assert!(decision.block);
        let settings =
            AgentSettings::from_json(r#"{"thinkingLevel":"off","toolTimeoutMs":5}"#).unwrap();
        assert_eq!(settings.tool_timeout(), Some(Duration::from_millis(5)));
        assert!(AgentSettings::from_json(r#"{"reasoning":"high"}"#).is_err());
    }
}
