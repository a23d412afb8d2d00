//! Runs the tool calls of one assistant message: prepare (find, shim, validate), execute
//! (sequentially or concurrently), and report, in pi's event order.
//!
//! Whatever a tool does — fail, panic, never finish before an abort — every call gets exactly one
//! tool result, so the transcript stays valid for the next request.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::agent_loop::Emit;
use super::config::{
    AfterToolCall, AfterToolCallContext, AgentContext, AgentLoopConfig, BeforeToolCallContext,
};
use super::event::AgentEvent;
use super::tool::{
    AgentTool, AgentToolResult, ToolCallContext, ToolError, ToolExecutionMode, ToolUpdates,
};
use crate::ai::providers::faux::panic_text;
use crate::ai::types::{AssistantMessage, ToolCall, ToolResultMessage, now_ms};
use crate::ai::validation::CompiledToolSchema;

/// The text of a tool result for a call that `before_tool_call` blocked without a reason.
pub const TOOL_BLOCKED: &str = "Tool execution was blocked";

/// The text of a tool result for a call cut short by an abort.
pub const TOOL_ABORTED: &str = "Tool execution was aborted";

/// The results of one batch.
#[derive(Debug)]
pub(crate) struct ToolBatch {
    /// One result per call, in the assistant's order.
    pub(crate) results: Vec<ToolResultMessage>,
    /// Every result asked to stop.
    pub(crate) terminate: bool,
}

/// A finished call.
struct Outcome {
    result: AgentToolResult,
    is_error: bool,
}

impl Outcome {
    fn error(message: impl Into<String>) -> Self {
        Self {
            result: AgentToolResult::error(message),
            is_error: true,
        }
    }
}

/// A call ready to run.
struct Prepared {
    tool: Arc<dyn AgentTool>,
    arguments: Value,
}

fn find_tool<'a>(context: &'a AgentContext, name: &str) -> Option<&'a Arc<dyn AgentTool>> {
    context.tools.iter().find(|tool| tool.name() == name)
}

async fn prepare(
    call: &ToolCall,
    assistant: &AssistantMessage,
    context: &AgentContext,
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    schemas: &mut HashMap<String, CompiledToolSchema>,
) -> Result<Prepared, Outcome> {
    let Some(tool) = find_tool(context, &call.name) else {
        return Err(Outcome::error(format!("Tool {} not found", call.name)));
    };
    let raw = call.arguments.clone();
    let arguments =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.prepare_arguments(raw)))
            .map_err(|panic| {
                Outcome::error(format!(
                    "prepare_arguments panicked: {}",
                    panic_text(&*panic)
                ))
            })?;
    let schema = schemas
        .entry(tool.name().to_owned())
        .or_insert_with(|| CompiledToolSchema::new(tool.name(), tool.parameters()));
    let mut arguments = schema
        .validate_and_coerce(&arguments)
        .map_err(|error| Outcome::error(error.to_string()))?;
    if let Some(hook) = &config.before_tool_call {
        let hook_context = BeforeToolCallContext {
            assistant_message: assistant.clone(),
            tool_call: call.clone(),
            args: arguments.clone(),
        };
        let decision = std::panic::AssertUnwindSafe(hook(hook_context, signal.clone()))
            .catch_unwind()
            .await
            .map_err(|panic| {
                Outcome::error(format!(
                    "before_tool_call panicked: {}",
                    panic_text(&*panic)
                ))
            })?
            .map_err(Outcome::error)?;
        if let Some(decision) = decision {
            if decision.block {
                return Err(Outcome::error(
                    decision.reason.unwrap_or_else(|| TOOL_BLOCKED.to_owned()),
                ));
            }
            if let Some(replacement) = decision.args {
                arguments = replacement;
            }
        }
    }
    Ok(Prepared {
        tool: Arc::clone(tool),
        arguments,
    })
}

/// Applies `after_tool_call` to an executed call's outcome.
async fn finalize(
    outcome: Outcome,
    hook: Option<AfterToolCall>,
    hook_context: Option<(AssistantMessage, ToolCall, Value)>,
    signal: CancellationToken,
) -> Outcome {
    let (Some(hook), Some((assistant_message, tool_call, args))) = (hook, hook_context) else {
        return outcome;
    };
    let context = AfterToolCallContext {
        assistant_message,
        tool_call,
        args,
        result: outcome.result.clone(),
        is_error: outcome.is_error,
    };
    match std::panic::AssertUnwindSafe(hook(context, signal))
        .catch_unwind()
        .await
    {
        Err(panic) => Outcome::error(format!("after_tool_call panicked: {}", panic_text(&*panic))),
        Ok(Err(message)) => Outcome::error(message),
        Ok(Ok(None)) => outcome,
        Ok(Ok(Some(change))) => {
            let mut outcome = outcome;
            if let Some(content) = change.content {
                outcome.result.content = content;
            }
            if let Some(details) = change.details {
                outcome.result.details = details;
            }
            if let Some(terminate) = change.terminate {
                outcome.result.terminate = Some(terminate);
            }
            if let Some(is_error) = change.is_error {
                outcome.is_error = is_error;
            }
            outcome
        }
    }
}

fn to_message(call: &ToolCall, outcome: &Outcome) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: outcome.result.content.clone(),
        details: (!outcome.result.details.is_null()).then(|| outcome.result.details.clone()),
        is_error: outcome.is_error,
        timestamp: now_ms(),
    }
}

type Running = FuturesUnordered<futures::future::BoxFuture<'static, (usize, Outcome)>>;

/// Starts `prepared` on the runtime; the returned future resolves to its outcome, with panics
/// and aborts turned into error outcomes.
fn spawn_call(
    index: usize,
    call: &ToolCall,
    assistant: &AssistantMessage,
    prepared: Prepared,
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    updates: &mpsc::UnboundedSender<(usize, AgentToolResult)>,
) -> futures::future::BoxFuture<'static, (usize, Outcome)> {
    let hook = config.after_tool_call.clone();
    let hook_context = hook
        .as_ref()
        .map(|_| (assistant.clone(), call.clone(), prepared.arguments.clone()));
    let timeout = config.tool_timeout;
    let context = ToolCallContext {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: prepared.arguments,
        signal: signal.clone(),
        updates: ToolUpdates::new(index, updates.clone()),
    };
    let tool = prepared.tool;
    let name = call.name.clone();
    let handle = tokio::spawn(async move {
        // `execute` itself may panic before returning a future.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.execute(context))) {
            Ok(future) => std::panic::AssertUnwindSafe(future).catch_unwind().await,
            Err(panic) => Err(panic),
        }
    });
    let signal = signal.clone();
    async move {
        let abort = handle.abort_handle();
        let deadline = async {
            match timeout {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        // Biased so that an abort that races a finishing tool always wins: the run is ending.
        let outcome = tokio::select! {
            biased;
            () = signal.cancelled() => {
                abort.abort();
                return (index, Outcome::error(TOOL_ABORTED));
            }
            joined = handle => match joined {
                Ok(Ok(Ok(result))) => Outcome { result, is_error: false },
                Ok(Ok(Err(ToolError(message)))) => Outcome::error(message),
                Ok(Err(panic)) => Outcome::error(format!("Tool {name} panicked: {}", panic_text(&*panic))),
                Err(join) if join.is_panic() => Outcome::error(format!("Tool {name} panicked")),
                Err(_) => Outcome::error(TOOL_ABORTED),
            },
            () = deadline => {
                abort.abort();
                let limit = timeout.unwrap_or_default();
                Outcome::error(format!("Tool {name} timed out after {} ms", limit.as_millis()))
            }
        };
        (index, finalize(outcome, hook, hook_context, signal).await)
    }
    .boxed()
}

/// Emits the updates waiting in `updates` for calls of this batch.
fn drain_updates(
    updates: &mut mpsc::UnboundedReceiver<(usize, AgentToolResult)>,
    calls: &[ToolCall],
    emit: &mut Emit<'_>,
) {
    while let Ok((index, partial_result)) = updates.try_recv() {
        emit_update(index, partial_result, calls, emit);
    }
}

fn emit_update(
    index: usize,
    partial_result: AgentToolResult,
    calls: &[ToolCall],
    emit: &mut Emit<'_>,
) {
    if let Some(call) = calls.get(index) {
        emit(AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            partial_result,
        });
    }
}

fn emit_end(call: &ToolCall, outcome: &Outcome, emit: &mut Emit<'_>) {
    emit(AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: outcome.result.clone(),
        is_error: outcome.is_error,
    });
}

fn emit_result_message(message: &ToolResultMessage, emit: &mut Emit<'_>) {
    emit(AgentEvent::MessageStart {
        message: message.clone().into(),
    });
    emit(AgentEvent::MessageEnd {
        message: message.clone().into(),
    });
}

/// Waits for every running call, reporting updates and ends in the order they happen.
async fn collect(
    mut running: Running,
    updates: &mut mpsc::UnboundedReceiver<(usize, AgentToolResult)>,
    calls: &[ToolCall],
    outcomes: &mut [Option<Outcome>],
    emit: &mut Emit<'_>,
) {
    while !running.is_empty() {
        tokio::select! {
            biased;
            Some((index, partial)) = updates.recv() => emit_update(index, partial, calls, emit),
            Some((index, outcome)) = running.next() => {
                drain_updates(updates, calls, emit);
                emit_end(&calls[index], &outcome, emit);
                outcomes[index] = Some(outcome);
            }
        }
    }
}

/// Runs the tool calls of `assistant`.
pub(crate) async fn execute_tool_calls(
    assistant: &AssistantMessage,
    calls: Vec<ToolCall>,
    context: &AgentContext,
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    emit: &mut Emit<'_>,
) -> ToolBatch {
    let sequential = config.tool_execution == ToolExecutionMode::Sequential
        || calls.iter().any(|call| {
            find_tool(context, &call.name)
                .is_some_and(|tool| tool.execution_mode() == Some(ToolExecutionMode::Sequential))
        });
    let mut schemas = HashMap::new();
    let (updates_tx, mut updates_rx) = mpsc::unbounded_channel();
    let mut outcomes: Vec<Option<Outcome>> = calls.iter().map(|_| None).collect();
    let mut results = Vec::with_capacity(calls.len());

    if sequential {
        for (index, call) in calls.iter().enumerate() {
            emit(AgentEvent::ToolExecutionStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: call.arguments.clone(),
            });
            match prepare(call, assistant, context, config, signal, &mut schemas).await {
                Err(outcome) => {
                    emit_end(call, &outcome, emit);
                    outcomes[index] = Some(outcome);
                }
                Ok(prepared) => {
                    let running: Running = FuturesUnordered::new();
                    running.push(spawn_call(
                        index,
                        call,
                        assistant,
                        prepared,
                        config,
                        signal,
                        &updates_tx,
                    ));
                    collect(running, &mut updates_rx, &calls, &mut outcomes, emit).await;
                }
            }
            if let Some(outcome) = &outcomes[index] {
                let message = to_message(call, outcome);
                emit_result_message(&message, emit);
                results.push(message);
            }
        }
    } else {
        let running: Running = FuturesUnordered::new();
        for (index, call) in calls.iter().enumerate() {
            emit(AgentEvent::ToolExecutionStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: call.arguments.clone(),
            });
            match prepare(call, assistant, context, config, signal, &mut schemas).await {
                Err(outcome) => {
                    emit_end(call, &outcome, emit);
                    outcomes[index] = Some(outcome);
                }
                Ok(prepared) => running.push(spawn_call(
                    index,
                    call,
                    assistant,
                    prepared,
                    config,
                    signal,
                    &updates_tx,
                )),
            }
        }
        collect(running, &mut updates_rx, &calls, &mut outcomes, emit).await;
        for (call, outcome) in calls.iter().zip(&outcomes) {
            if let Some(outcome) = outcome {
                let message = to_message(call, outcome);
                emit_result_message(&message, emit);
                results.push(message);
            }
        }
    }
    let terminate = !outcomes.is_empty()
        && outcomes.iter().all(|outcome| {
            outcome
                .as_ref()
                .is_some_and(|o| o.result.terminate == Some(true))
        });
    ToolBatch { results, terminate }
}
