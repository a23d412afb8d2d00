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
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::config::{
    AfterToolCall, AfterToolCallContext, AgentLoopConfig, BeforeToolCallContext, HookError,
};
use super::event::AgentEvent;
use super::guard::{EventSink, Guarded, guarded};
use super::message::AgentMessage;
use super::step::ToolOutcome;
use super::tool::{
    AgentTool, AgentToolResult, ToolCallContext, ToolError, ToolExecutionMode, ToolUpdates,
    UpdateQueue,
};
use crate::ai::types::{AssistantMessage, ToolCall, ToolResultMessage, ToolTiming, now_ms};
use crate::ai::validation::{CompiledToolSchema, check_argument_depth};
use crate::panics::panic_text;

/// The text of a tool result for a call that `before_tool_call` blocked without a reason.
pub const TOOL_BLOCKED: &str = "Tool execution was blocked";

/// The text of a tool result for a call cut short by an abort.
pub const TOOL_ABORTED: &str = "Tool execution was aborted";

/// A finished call.
struct Outcome {
    result: AgentToolResult,
    is_error: bool,
    /// How long it ran (`None` for a call that never ran).
    duration: Option<std::time::Duration>,
}

impl Outcome {
    fn error(message: impl Into<String>) -> Self {
        Self {
            result: AgentToolResult::error(message),
            is_error: true,
            duration: None,
        }
    }
}

/// A call ready to run.
struct Prepared {
    tool: Arc<dyn AgentTool>,
    arguments: Value,
}

fn find_tool<'a>(tools: &'a [Arc<dyn AgentTool>], name: &str) -> Option<&'a Arc<dyn AgentTool>> {
    tools.iter().find(|tool| tool.name() == name)
}

async fn prepare(
    call: &ToolCall,
    assistant: &AssistantMessage,
    tools: &[Arc<dyn AgentTool>],
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    schemas: &mut HashMap<String, CompiledToolSchema>,
) -> Result<Prepared, Outcome> {
    let Some(tool) = find_tool(tools, &call.name) else {
        return Err(Outcome::error(format!("Tool {} not found", call.name)));
    };
    // Before any code sees them (issue 17): arguments cut by the JSON depth limit must not
    // reach `prepare_arguments`, a hook or the tool as if the model had sent them.
    check_argument_depth(tool.name(), &call.arguments)
        .map_err(|error| Outcome::error(error.to_string()))?;
    let raw = call.arguments.clone();
    let arguments =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.prepare_arguments(raw)))
            .map_err(|panic| {
                Outcome::error(format!(
                    "prepare_arguments panicked: {}",
                    panic_text(&*panic)
                ))
            })?
            .map_err(|ToolError(message)| Outcome::error(message))?;
    let schema = schemas
        .entry(tool.name().to_owned())
        .or_insert_with(|| CompiledToolSchema::new(tool.name(), tool.parameters()));
    let mut arguments = schema
        .validate_and_coerce(&arguments)
        .map_err(|error| Outcome::error(error.to_string()))?;
    if let Some(hook) = &config.hooks.before_tool_call {
        let hook_context = BeforeToolCallContext {
            assistant_message: assistant.clone(),
            tool_call: call.clone(),
            args: arguments.clone(),
        };
        // Like the tool itself: an abort or the tool watchdog ends the wait, and the late
        // answer is dropped. The hook gets a signal of its own, which the watchdog fires as it
        // fires a late tool's: work the hook does outside its future (a binding's worker
        // thread) learns that nobody waits for it any more.
        let hook_signal = signal.child_token();
        let future = hook(hook_context, hook_signal.clone());
        let decision = match guarded(future, signal, config.settings.tool_timeout()).await {
            Guarded::Done(Ok(decision)) => decision,
            Guarded::Done(Err(HookError(message))) => return Err(Outcome::error(message)),
            Guarded::Panicked(panic) => {
                return Err(Outcome::error(format!(
                    "before_tool_call panicked: {panic}"
                )));
            }
            Guarded::Aborted => return Err(Outcome::error(TOOL_ABORTED)),
            Guarded::TimedOut(limit) => {
                hook_signal.cancel();
                return Err(Outcome::error(format!(
                    "before_tool_call timed out after {} ms",
                    limit.as_millis()
                )));
            }
        };
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

/// Applies `after_tool_call` to an executed call's outcome (cut short by an abort and by the
/// tool watchdog, like the tool).
async fn finalize(
    outcome: Outcome,
    hook: Option<AfterToolCall>,
    hook_context: Option<(AssistantMessage, ToolCall, Value)>,
    signal: CancellationToken,
    timeout: Option<std::time::Duration>,
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
    // Its own signal, fired by the watchdog (see `before_tool_call`'s).
    let hook_signal = signal.child_token();
    match guarded(hook(context, hook_signal.clone()), &signal, timeout).await {
        Guarded::Panicked(panic) => Outcome::error(format!("after_tool_call panicked: {panic}")),
        Guarded::Aborted => Outcome::error(TOOL_ABORTED),
        Guarded::TimedOut(limit) => {
            hook_signal.cancel();
            Outcome::error(format!(
                "after_tool_call timed out after {} ms",
                limit.as_millis()
            ))
        }
        Guarded::Done(Err(HookError(message))) => Outcome::error(message),
        Guarded::Done(Ok(None)) => outcome,
        Guarded::Done(Ok(Some(change))) => {
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

/// The result message of `call`, moving the outcome's content (a big tool result is not
/// copied once more here).
fn to_message(call: &ToolCall, outcome: Outcome) -> ToolResultMessage {
    result_message(call.id.clone(), call.name.clone(), outcome)
}

/// The end of a call that a run cut off by its runtime's shutdown never finished: its
/// `tool_execution_end` and its result message, the aborted ones an abort gives it.
pub(crate) fn aborted_call_end(
    tool_call_id: String,
    tool_name: String,
) -> (AgentEvent, AgentMessage) {
    let outcome = Outcome::error(TOOL_ABORTED);
    let end = AgentEvent::ToolExecutionEnd {
        tool_call_id: tool_call_id.clone(),
        tool_name: tool_name.clone(),
        result: outcome.result.clone(),
        is_error: outcome.is_error,
    };
    (end, result_message(tool_call_id, tool_name, outcome).into())
}

fn result_message(tool_call_id: String, tool_name: String, outcome: Outcome) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id,
        tool_name,
        content: outcome.result.content,
        details: (!outcome.result.details.is_null()).then_some(outcome.result.details),
        is_error: outcome.is_error,
        timestamp: now_ms(),
        timing: outcome.duration.map(|duration| ToolTiming {
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        }),
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
    updates: &Arc<UpdateQueue>,
) -> futures::future::BoxFuture<'static, (usize, Outcome)> {
    let hook = config.hooks.after_tool_call.clone();
    let hook_context = hook
        .as_ref()
        .map(|_| (assistant.clone(), call.clone(), prepared.arguments.clone()));
    let timeout = config.settings.tool_timeout();
    // The call's own signal: the run's abort fires it, and so does the batch's future going
    // away first (see `EndCall`).
    let call_signal = signal.child_token();
    let context = ToolCallContext {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: prepared.arguments,
        signal: call_signal.clone(),
        updates: ToolUpdates::new(index, Arc::clone(updates)),
    };
    let tool = prepared.tool;
    let name = call.name.clone();
    // `execute` is called here, in call order (pi starts the executions in order); it may
    // panic before returning a future.
    let span = crate::observability::tool_span(&call.name, &call.id);
    let started = span.in_scope(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.execute(context)))
    });
    // pi runs each tool's synchronous start as it launches it, so progress a tool reports
    // before its first await precedes any sibling's end: poll once here, in call order, too.
    // The waker is a no-op: the spawned task polls a pending future again at once, which
    // registers its own (a future may be polled again at any time).
    // Not when the batch is already aborted (an abort, or a durable session that could not
    // journal the call's start): then the tool's work must not begin at all. Its future is
    // dropped unpolled here, not handed to a task that another worker might poll before the
    // abort reaches it.
    let started = started.map(|mut future| {
        if signal.is_cancelled() {
            drop(future);
            return Ok(Ok(Err(ToolError::new(TOOL_ABORTED))));
        }
        let first = span.in_scope(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                future
                    .as_mut()
                    .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
            }))
        });
        match first {
            Ok(std::task::Poll::Ready(result)) => Ok(Ok(result)),
            Ok(std::task::Poll::Pending) => Err(future),
            Err(panic) => Ok(Err(panic)),
        }
    });
    let handle = tokio::spawn(tracing::Instrument::instrument(
        async move {
            match started {
                Ok(Ok(done)) => done,
                Ok(Err(pending)) => std::panic::AssertUnwindSafe(pending).catch_unwind().await,
                Err(panic) => Err(panic),
            }
        },
        span.clone(),
    ));
    let signal = signal.clone();
    let started = std::time::Instant::now();
    let mut end_call = EndCall {
        task: Some(handle.abort_handle()),
        signal: call_signal,
    };
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
                let mut outcome = Outcome::error(TOOL_ABORTED);
                outcome.duration = Some(started.elapsed());
                return (index, outcome);
            }
            joined = handle => match joined {
                Ok(Ok(Ok(result))) => Outcome { result, is_error: false, duration: None },
                Ok(Ok(Err(ToolError(message)))) => Outcome::error(message),
                Ok(Err(panic)) => Outcome::error(format!("Tool {name} panicked: {}", panic_text(&*panic))),
                Err(join) if join.is_panic() => Outcome::error(format!("Tool {name} panicked")),
                Err(_) => Outcome::error(TOOL_ABORTED),
            },
            () = deadline => {
                abort.abort();
                // A tool that runs on outside its future (a thread of its own) is told too.
                end_call.signal.cancel();
                let limit = timeout.unwrap_or_default();
                Outcome::error(format!("Tool {name} timed out after {} ms", limit.as_millis()))
            }
        };
        end_call.finished();
        let mut outcome = finalize(outcome, hook, hook_context, signal, timeout)
            .instrument(span.clone())
            .await;
        outcome.duration = Some(started.elapsed());
        if outcome.is_error {
            span.record("error.type", "tool_error");
        }
        (index, outcome)
    }
    .boxed()
}

/// Emits the updates waiting in `updates` for calls of this batch (those waiting now).
async fn drain_updates<S: EventSink>(updates: &UpdateQueue, calls: &[ToolCall], sink: &mut S) {
    for (index, partial_result) in updates.take_waiting() {
        emit_update(index, partial_result, calls, sink).await;
    }
}

async fn emit_update<S: EventSink>(
    index: usize,
    partial_result: AgentToolResult,
    calls: &[ToolCall],
    sink: &mut S,
) {
    if let Some(call) = calls.get(index) {
        sink.emit(AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            partial_result,
        })
        .await;
    }
}

async fn emit_start<S: EventSink>(call: &ToolCall, sink: &mut S) {
    sink.emit(AgentEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: call.arguments.clone(),
    })
    .await;
}

async fn emit_end<S: EventSink>(call: &ToolCall, outcome: &Outcome, sink: &mut S) {
    sink.emit(AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: outcome.result.clone(),
        is_error: outcome.is_error,
    })
    .await;
}

/// Waits for every running call, reporting updates and ends in the order they happen.
async fn collect<S: EventSink>(
    mut running: Running,
    updates: &UpdateQueue,
    calls: &[ToolCall],
    outcomes: &mut [Option<Outcome>],
    sink: &mut S,
) {
    while !running.is_empty() {
        // The calls first: polling them is what notices an abort or a watchdog, and a tool
        // that reports without pause must not keep them from being polled. A call's reports
        // still come before its end: they are drained first.
        tokio::select! {
            biased;
            Some((index, outcome)) = running.next() => {
                drain_updates(updates, calls, sink).await;
                emit_end(&calls[index], &outcome, sink).await;
                outcomes[index] = Some(outcome);
            }
            (index, partial) = updates.next() => {
                emit_update(index, partial, calls, sink).await;
            }
        }
    }
}

/// Performs a [`StepAction::ExecuteTools`](super::StepAction::ExecuteTools) as the agent does:
/// runs `calls` of `assistant` in `mode` (the stepper asks for sequential calls one at a time)
/// with validation, `prepare_arguments`, the before/after hooks, the tool watchdog and the
/// abort, and returns one outcome per call, in call order. Emits `tool_execution_*`; the result
/// messages are the stepper's to emit.
///
/// Parallel mode is pi's: every call is prepared first, in order (`tool_execution_start`,
/// validation, `before_tool_call`; a call that cannot run ends at once), and only then do the
/// prepared calls start, in call order, and run concurrently — so an approval hook asking about
/// the second call never sees the first one running.
pub async fn execute_tool_calls<S: EventSink>(
    assistant: &AssistantMessage,
    calls: Vec<ToolCall>,
    mode: ToolExecutionMode,
    tools: &[Arc<dyn AgentTool>],
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    sink: &mut S,
) -> Vec<ToolOutcome> {
    let mut schemas = HashMap::new();
    let updates = Arc::new(UpdateQueue::default());
    // However this ends (even by being dropped on abort), later reports are dropped.
    let _close_updates = CloseOnDrop(Arc::clone(&updates));
    let mut outcomes: Vec<Option<Outcome>> = calls.iter().map(|_| None).collect();

    if mode == ToolExecutionMode::Sequential {
        for (index, call) in calls.iter().enumerate() {
            emit_start(call, sink).await;
            match prepare(call, assistant, tools, config, signal, &mut schemas).await {
                Err(outcome) => {
                    emit_end(call, &outcome, sink).await;
                    outcomes[index] = Some(outcome);
                }
                Ok(prepared) => {
                    let running: Running = FuturesUnordered::new();
                    running.push(spawn_call(
                        index, call, assistant, prepared, config, signal, &updates,
                    ));
                    collect(running, &updates, &calls, &mut outcomes, sink).await;
                }
            }
        }
    } else {
        let mut ready = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            emit_start(call, sink).await;
            match prepare(call, assistant, tools, config, signal, &mut schemas).await {
                Err(outcome) => {
                    emit_end(call, &outcome, sink).await;
                    outcomes[index] = Some(outcome);
                }
                Ok(prepared) => ready.push((index, prepared)),
            }
        }
        let running: Running = ready
            .into_iter()
            .map(|(index, prepared)| {
                spawn_call(
                    index,
                    &calls[index],
                    assistant,
                    prepared,
                    config,
                    signal,
                    &updates,
                )
            })
            .collect();
        collect(running, &updates, &calls, &mut outcomes, sink).await;
    }
    calls
        .iter()
        .zip(outcomes)
        .map(|(call, outcome)| {
            // Every call has an outcome by now; the fallback only guards the invariant.
            let outcome = outcome.unwrap_or_else(|| Outcome::error(TOOL_ABORTED));
            let terminate = outcome.result.terminate == Some(true);
            ToolOutcome {
                message: to_message(call, outcome),
                terminate,
            }
        })
        .collect()
}

/// Closes a batch's update queue when the batch is over.
struct CloseOnDrop(Arc<UpdateQueue>);

/// A running call's task and signal while its outcome is awaited. Dropped before the outcome
/// came (the caller of [`execute_tool_calls`] or of the loop gave up on it: a timeout, a
/// `select!`), it fires the call's signal and aborts its task: a tool must not run on, unseen,
/// after its batch is gone.
struct EndCall {
    /// `None` once the outcome is in (or the task was aborted by the abort or the watchdog).
    task: Option<tokio::task::AbortHandle>,
    signal: CancellationToken,
}

impl EndCall {
    /// The outcome is in: dropping this now leaves the tool's task and signal alone.
    fn finished(&mut self) {
        self.task = None;
    }
}

impl Drop for EndCall {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            self.signal.cancel();
            task.abort();
        }
    }
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}
