//! Tools implemented in C: `pi_tool_callback`, the `pi_tool_call` handle it receives, and the
//! `AgentTool` that runs it on the runtime's blocking pool. Building a tool with a label, an
//! execution mode or a `prepare_arguments` callback is in `tool_object.rs`.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use futures::future::BoxFuture;
use pi_agent::agent::{
    AgentTool, AgentToolResult, ToolCallContext, ToolError, ToolSpec, ToolUpdates,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::{arg_json, arg_str, method};
use crate::boundary::flag;
use crate::callback::{CallbackSite, run_callback, run_inline};
use crate::error::pi_error;
use crate::hook_context::{Answer, call_with, stop_on_drop};
use crate::prepare_arguments::{PrepareFn, prepare_arguments};
use crate::string::{pi_str, view};
use crate::user_data::UserData;

/// Runs one call of a C tool. It runs on a thread of the runtime's blocking pool, and calls of
/// the same tool may run concurrently on several threads (parallel tool execution, the
/// default). Read the call with `pi_tool_call_id` / `_name` / `_arguments_json`, report
/// progress with `pi_tool_call_send_update_text` / `_json` if you like, set the result with
/// `pi_tool_call_set_text` or `pi_tool_call_set_result_json` (or `pi_tool_call_set_error`), and
/// return 0 for success or non-zero for failure. A failure becomes an `isError` tool result the
/// model reads, with the message given to `pi_tool_call_set_error` or else "tool callback
/// returned error code N". `call` is valid until the callback returns.
///
/// The callback may call non-blocking functions of its agent (`pi_agent_abort`,
/// `pi_agent_steer_text`, ...) and blocking functions of other agents and streams; on its own
/// agent, `pi_agent_wait_for_idle` fails with `CALLED_FROM_CALLBACK`, and `pi_agent_free` is
/// deferred (see there). At an abort the run stops waiting for a callback that is still running
/// and records the error result "Tool execution was aborted" (unless the callback returned at
/// that same moment); the tool watchdog (`toolTimeoutMs`) does the same with "Tool <name> timed
/// out after N ms". The callback keeps running until it returns, so long-running tools should
/// poll `pi_tool_call_is_aborted`.
pub type pi_tool_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, call: *mut pi_tool_call) -> i32>;

/// One call of a C tool, passed to its `pi_tool_callback`. Valid until the callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
#[derive(Debug)]
pub struct pi_tool_call {
    id: String,
    name: String,
    arguments_json: String,
    signal: CancellationToken,
    updates: ToolUpdates,
    outcome: Answer<Outcome>,
}

/// What the callback set.
#[derive(Debug, Default)]
enum Outcome {
    #[default]
    Unset,
    Result(AgentToolResult),
    Error(String),
}

/// The call id the model gave (empty when `call` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_id(call: *const pi_tool_call) -> pi_str {
    view(call, |call| pi_str::new(&call.id))
}

/// The tool name (empty when `call` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_name(call: *const pi_tool_call) -> pi_str {
    view(call, |call| pi_str::new(&call.name))
}

/// The arguments as a JSON object, already validated against the tool's parameter schema
/// (empty when `call` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_arguments_json(call: *const pi_tool_call) -> pi_str {
    view(call, |call| pi_str::new(&call.arguments_json))
}

/// Whether the run no longer waits for this call: it was aborted, or the tool watchdog
/// (`toolTimeoutMs`) fired (`false` when `call` is NULL). A long-running tool should poll this
/// and return early.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_is_aborted(call: *const pi_tool_call) -> bool {
    flag(call, |call| call.signal.is_cancelled())
}

/// Sets the result to one text block (what the model sees). The last `pi_tool_call_set_*`
/// call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_set_text(
    call: *mut pi_tool_call,
    text: *const c_char,
) -> *mut pi_error {
    method(call, "call", |call| {
        let text = arg_str(text, "text")?;
        call.outcome
            .set(Outcome::Result(AgentToolResult::text(text)));
        Ok(())
    })
}

/// Sets the result from a pi-shaped `AgentToolResult`:
/// `{"content":[{"type":"text","text":"..."}],"details":{...},"terminate":false}` (`content`
/// is what the model sees; `details` is kept in the transcript for the application). The last
/// `pi_tool_call_set_*` call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (the result is then unchanged).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_set_result_json(
    call: *mut pi_tool_call,
    agent_tool_result_json: *const c_char,
) -> *mut pi_error {
    method(call, "call", |call| {
        let result = arg_json(agent_tool_result_json, "agent_tool_result_json")?;
        call.outcome.set(Outcome::Result(result));
        Ok(())
    })
}

/// Marks the call as failed with `message` (the text of the `isError` result the model sees),
/// whatever the callback returns. The last `pi_tool_call_set_*` call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_set_error(
    call: *mut pi_tool_call,
    message: *const c_char,
) -> *mut pi_error {
    method(call, "call", |call| {
        let message = arg_str(message, "message")?;
        call.outcome.set(Outcome::Error(message.to_owned()));
        Ok(())
    })
}

/// Reports progress: a `tool_execution_update` event whose `partialResult` has one text block
/// (`{"content":[{"type":"text","text":...}]}`), delivered to subscribers in order while the
/// callback keeps running (never blocks). Updates that arrive after the run stopped waiting for
/// the call (an abort) are dropped. Progress is for the application only: the model sees the
/// final result.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_send_update_text(
    call: *const pi_tool_call,
    text: *const c_char,
) -> *mut pi_error {
    method(call, "call", |call| {
        let text = arg_str(text, "text")?;
        call.updates.send(AgentToolResult::text(text));
        Ok(())
    })
}

/// Reports progress as a pi-shaped `AgentToolResult` (the `partialResult` of the
/// `tool_execution_update` event), e.g.
/// `{"content":[{"type":"text","text":"50%"}],"details":{"done":5,"total":10}}`. See
/// `pi_tool_call_send_update_text`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (nothing is sent).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_send_update_json(
    call: *const pi_tool_call,
    agent_tool_result_json: *const c_char,
) -> *mut pi_error {
    method(call, "call", |call| {
        call.updates
            .send(arg_json(agent_tool_result_json, "agent_tool_result_json")?);
        Ok(())
    })
}

/// The C side of one registered tool: its callbacks and their `user_data`, shared by every
/// call.
pub(crate) struct ToolCallbacks {
    pub(crate) execute: ToolFn,
    pub(crate) prepare_arguments: Option<PrepareFn>,
    pub(crate) user_data: Arc<UserData>,
}

pub(crate) type ToolFn = unsafe extern "C" fn(*mut c_void, *mut pi_tool_call) -> i32;

/// The `AgentTool` behind `pi_agent_add_tool` and `pi_agent_add_tool_object` (core's `FnTool`
/// with C callbacks).
pub(crate) struct CTool {
    pub(crate) spec: ToolSpec,
    pub(crate) callbacks: Arc<ToolCallbacks>,
    pub(crate) site: CallbackSite,
}

impl ToolCallbacks {
    /// Runs the C callback for one call (on a blocking-pool thread) and reads its outcome.
    fn invoke(&self, context: ToolCallContext) -> Result<AgentToolResult, ToolError> {
        let Some(user_data) = self.user_data.get() else {
            return Err(ToolError::new("the tool was released"));
        };
        let call = pi_tool_call {
            id: context.tool_call_id,
            name: context.tool_name,
            arguments_json: context.arguments.to_string(),
            signal: context.signal,
            updates: context.updates,
            outcome: Answer::default(),
        };
        let (call, code) = call_with(self.execute, user_data, call);
        match call.outcome.take() {
            Outcome::Error(message) => Err(ToolError::new(message)),
            _ if code != 0 => Err(ToolError::new(format!(
                "tool callback returned error code {code}"
            ))),
            Outcome::Result(result) => Ok(result),
            Outcome::Unset => Ok(AgentToolResult::default()),
        }
    }
}

impl AgentTool for CTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        match self.callbacks.prepare_arguments {
            Some(prepare) => run_inline(&self.site, || {
                prepare_arguments(prepare, &self.callbacks.user_data, arguments)
            }),
            None => Ok(arguments),
        }
    }

    fn execute(
        &self,
        context: ToolCallContext,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let callbacks = Arc::clone(&self.callbacks);
        let site = self.site.clone();
        let (signal, stopped) = stop_on_drop(&context.signal);
        let context = ToolCallContext { signal, ..context };
        Box::pin(async move {
            let _stopped = stopped;
            run_callback(&site, move || callbacks.invoke(context))
                .await
                .unwrap_or_else(|error| {
                    Err(ToolError::new(format!("tool callback failed: {error}")))
                })
        })
    }
}
