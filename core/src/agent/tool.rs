//! Tools an agent can run: the [`AgentTool`] trait, [`FnTool`] for closures, and the result
//! types.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::error::message_error;
use crate::ai::types::{Tool, UserContent};

/// How the tool calls of one assistant message run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolExecutionMode {
    /// One after the other, each finished before the next starts.
    Sequential,
    /// Prepared one by one, then run concurrently (pi's default).
    #[default]
    Parallel,
}

/// What describes a tool apart from what it does (pi's `AgentTool` fields besides `execute` and
/// `prepareArguments`): the one shape every tool of every layer carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// A label for user interfaces (`None`: the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments object.
    pub parameters: Value,
    /// Forces sequential execution of the batch this tool's call is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<ToolExecutionMode>,
    /// May run again after the process died while it ran (see [`AgentTool::replay_safe`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub replay_safe: bool,
}

fn is_false(value: &bool) -> bool {
    !value
}

impl ToolSpec {
    /// A tool named `name`, without label or execution mode.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            label: None,
            description: description.into(),
            parameters,
            execution_mode: None,
            replay_safe: false,
        }
    }
}

/// What a tool returns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolResult {
    /// What the model sees.
    pub content: Vec<UserContent>,
    /// Data for the application (kept in the tool-result message, never sent to the model).
    #[serde(default)]
    pub details: Value,
    /// Ask the agent to stop after this batch of tool calls (it stops when every result of
    /// the batch asks for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate: Option<bool>,
}

impl AgentToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![UserContent::text(text.into())],
            details: Value::Null,
            terminate: None,
        }
    }

    /// Adds details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// The error result pi gives the model: the message as text, empty details.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![UserContent::text(message.into())],
            details: Value::Object(serde_json::Map::new()),
            terminate: None,
        }
    }
}

message_error! {
    /// A tool's failure. The message becomes the text of an `isError` tool result that the
    /// model reads, so say what went wrong in words the model can act on.
    ToolError
}

impl From<serde_json::Error> for ToolError {
    fn from(error: serde_json::Error) -> Self {
        Self(error.to_string())
    }
}

impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> Self {
        Self(error.to_string())
    }
}

/// How many progress reports may wait to become events before a call's new report replaces
/// its latest waiting one.
const UPDATE_CAPACITY: usize = 256;

/// The progress reports of one batch of tool calls, waiting for the loop to emit them.
///
/// Bounded without making a tool wait (`ToolUpdates::send` is synchronous): once
/// [`UPDATE_CAPACITY`] reports wait, a new report of a call replaces that call's latest waiting
/// one, since a report is the call's partial result so far. So at most one report per call
/// beyond the capacity waits, however fast a tool reports.
#[derive(Debug, Default)]
pub(crate) struct UpdateQueue {
    waiting: Mutex<VecDeque<(usize, AgentToolResult)>>,
    ready: Notify,
    /// Set when the batch is over: later reports are dropped.
    closed: AtomicBool,
}

impl UpdateQueue {
    fn waiting(&self) -> std::sync::MutexGuard<'_, VecDeque<(usize, AgentToolResult)>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, index: usize, partial: AgentToolResult) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let mut waiting = self.waiting();
        if waiting.len() >= UPDATE_CAPACITY
            && let Some(slot) = waiting.iter_mut().rev().find(|(call, _)| *call == index)
        {
            slot.1 = partial;
            return;
        }
        waiting.push_back((index, partial));
        drop(waiting);
        self.ready.notify_one();
    }

    /// The next waiting report, if any.
    pub(crate) fn try_next(&self) -> Option<(usize, AgentToolResult)> {
        self.waiting().pop_front()
    }

    /// Every report waiting now (not those pushed while they are emitted: a tool reporting
    /// without pause must not keep its caller emitting forever).
    pub(crate) fn take_waiting(&self) -> VecDeque<(usize, AgentToolResult)> {
        std::mem::take(&mut *self.waiting())
    }

    /// The next report, once there is one.
    pub(crate) async fn next(&self) -> (usize, AgentToolResult) {
        loop {
            if let Some(update) = self.try_next() {
                return update;
            }
            // A report pushed since `try_next` left a permit: this returns at once.
            self.ready.notified().await;
        }
    }

    /// Ends the batch: reports sent later (by a tool that kept its `ToolUpdates`) are dropped
    /// and the waiting ones are released.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.waiting().clear();
    }
}

/// Sends progress reports of a running tool (`tool_execution_update` events).
#[derive(Clone, Debug)]
pub struct ToolUpdates {
    index: usize,
    queue: Option<Arc<UpdateQueue>>,
}

impl ToolUpdates {
    pub(crate) fn new(index: usize, queue: Arc<UpdateQueue>) -> Self {
        Self {
            index,
            queue: Some(queue),
        }
    }

    /// Updates that go nowhere (for calling a tool outside an agent, e.g. in tests).
    pub fn disconnected() -> Self {
        Self {
            index: 0,
            queue: None,
        }
    }

    /// Reports progress. Never blocks; reports after the call finished are dropped. A tool
    /// that reports faster than the events are delivered has its waiting reports coalesced to
    /// the latest (see the README, "Reliability").
    pub fn send(&self, partial: AgentToolResult) {
        if let Some(queue) = &self.queue {
            queue.push(self.index, partial);
        }
    }
}

/// Everything a tool gets for one call.
#[derive(Clone, Debug)]
pub struct ToolCallContext {
    /// The call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Arguments after `prepare_arguments` and validation against the schema.
    pub arguments: Value,
    /// Fires when the run is aborted, when the tool watchdog (`tool_timeout_ms`) gives up on
    /// the call, or when whoever awaited the batch of tool calls drops it. A tool that is still
    /// running then is dropped (its future is not polled again); after an abort its result
    /// becomes an `aborted` error result.
    pub signal: CancellationToken,
    /// Progress reports.
    pub updates: ToolUpdates,
}

/// A tool the agent can call.
///
/// An implementation gives its [`ToolSpec`] and `execute`; the getters read the spec.
///
/// Contract: `execute` reports failure by returning `Err` (it becomes an `isError` tool result
/// the model reads); a panic is caught and reported the same way. It runs on the tokio runtime,
/// so blocking work belongs in `tokio::task::spawn_blocking`.
pub trait AgentTool: Send + Sync {
    /// The tool's name, label, description, schema and execution mode.
    fn spec(&self) -> &ToolSpec;
    /// The name the model calls it by.
    fn name(&self) -> &str {
        &self.spec().name
    }
    /// What it does, for the model.
    fn description(&self) -> &str {
        &self.spec().description
    }
    /// JSON Schema of its arguments object.
    fn parameters(&self) -> &Value {
        &self.spec().parameters
    }
    /// A label for user interfaces (default: the name).
    fn label(&self) -> &str {
        let spec = self.spec();
        spec.label.as_deref().unwrap_or(&spec.name)
    }
    /// Forces sequential execution of the batch this tool's call is in.
    fn execution_mode(&self) -> Option<ToolExecutionMode> {
        self.spec().execution_mode
    }
    /// Whether a call may run again after the process died while it ran (pi-durable's
    /// `replay: "safe"`): a durable session re-runs such a call on reopen, and gives any other
    /// an `interrupted` error result instead (default false: a call with effects is not
    /// repeated behind the caller's back).
    fn replay_safe(&self) -> bool {
        self.spec().replay_safe
    }
    /// Rewrites raw arguments before validation (pi's `prepareArguments`, a compatibility shim
    /// for sloppy models). `Err` becomes an error result the model reads.
    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        Ok(arguments)
    }
    /// Runs one call.
    fn execute(
        &self,
        call: ToolCallContext,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>>;

    /// The tool as the LLM sees it.
    fn definition(&self) -> Tool {
        Tool {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters().clone(),
        }
    }
}

type Handler = Arc<
    dyn Fn(ToolCallContext) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> + Send + Sync,
>;

/// A tool made from an async closure.
///
/// ```
/// use pi_agent::agent::{AgentToolResult, FnTool};
/// let add = FnTool::new(
///     "add",
///     "Adds two numbers",
///     serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
///                        "required": ["a", "b"]}),
///     |call| async move {
///         let sum = call.arguments["a"].as_f64().unwrap_or(0.0) + call.arguments["b"].as_f64().unwrap_or(0.0);
///         Ok(AgentToolResult::text(sum.to_string()))
///     },
/// );
/// ```
#[derive(Clone)]
pub struct FnTool {
    spec: ToolSpec,
    prepare: Option<PrepareArguments>,
    handler: Handler,
}

type PrepareArguments = Arc<dyn Fn(Value) -> Result<Value, ToolError> + Send + Sync>;

impl std::fmt::Debug for FnTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl FnTool {
    /// A tool named `name` that runs `handler` for each call.
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(ToolCallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
    {
        Self::from_spec(ToolSpec::new(name, description, parameters), handler)
    }

    /// A tool described by `spec` that runs `handler` for each call.
    pub fn from_spec<F, Fut>(spec: ToolSpec, handler: F) -> Self
    where
        F: Fn(ToolCallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
    {
        Self {
            spec,
            prepare: None,
            handler: Arc::new(move |call| Box::pin(handler(call))),
        }
    }

    /// Sets the UI label.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.spec.label = Some(label.into());
        self
    }

    /// Sets the tool's execution mode.
    #[must_use]
    pub fn with_execution_mode(mut self, mode: ToolExecutionMode) -> Self {
        self.spec.execution_mode = Some(mode);
        self
    }

    /// Declares the tool safe to run again after a crash (see [`AgentTool::replay_safe`]).
    #[must_use]
    pub fn with_replay_safe(mut self, replay_safe: bool) -> Self {
        self.spec.replay_safe = replay_safe;
        self
    }

    /// Sets the arguments shim that runs before validation (see
    /// [`AgentTool::prepare_arguments`]).
    #[must_use]
    pub fn with_prepare_arguments(
        mut self,
        prepare: impl Fn(Value) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.prepare = Some(Arc::new(prepare));
        self
    }
}

impl AgentTool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        match &self.prepare {
            Some(prepare) => prepare(arguments),
            None => Ok(arguments),
        }
    }
    fn execute(
        &self,
        call: ToolCallContext,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        (self.handler)(call)
    }
}
