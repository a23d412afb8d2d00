//! Tools implemented in C: `pi_tool_callback`, the `pi_tool_call` handle it receives, and the
//! `AgentTool` that runs it on the runtime's blocking pool.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use pi_agent::agent::{AgentTool, AgentToolResult, ToolCallContext, ToolError, ToolUpdates};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::boundary::{arg_ref, arg_str, opt_ref};
use crate::error::{parse_json, pi_error};
use crate::runtime::{Scope, ScopeGuard};
use crate::string::pi_str;
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
/// agent, `pi_agent_wait_for_idle` fails with `CALLED_FROM_CALLBACK`. At an abort the run
/// stops waiting for a callback that is still running and records the error result "Tool
/// execution was aborted" (unless the callback returned at that same moment); the callback
/// keeps running until it returns, so long-running tools should poll
/// `pi_tool_call_is_aborted`.
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
    outcome: Mutex<Outcome>,
}

/// What the callback set.
#[derive(Debug, Default)]
enum Outcome {
    #[default]
    Unset,
    Result(AgentToolResult),
    Error(String),
}

impl pi_tool_call {
    fn set(&self, outcome: Outcome) {
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = outcome;
    }
}

/// The call id the model gave (empty when `call` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_id(call: *const pi_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(call).map_or(pi_str::EMPTY, |call| pi_str::new(&call.id))
    }
}

/// The tool name (empty when `call` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_name(call: *const pi_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(call).map_or(pi_str::EMPTY, |call| pi_str::new(&call.name))
    }
}

/// The arguments as a JSON object, already validated against the tool's parameter schema
/// (empty when `call` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_arguments_json(call: *const pi_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(call).map_or(pi_str::EMPTY, |call| pi_str::new(&call.arguments_json))
    }
}

/// Whether the run was aborted (`false` when `call` is NULL). A long-running tool should poll
/// this and return early: the run no longer waits for it.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_tool_call_is_aborted(call: *const pi_tool_call) -> bool {
    ffi_boundary! {
        opt_ref(call).is_some_and(|call| call.signal.is_cancelled())
    }
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
    ffi_fallible! {
        let call = arg_ref(call, "call")?;
        let text = arg_str(text, "text")?;
        call.set(Outcome::Result(AgentToolResult::text(text)));
        Ok(())
    }
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
    ffi_fallible! {
        let call = arg_ref(call, "call")?;
        let json = arg_str(agent_tool_result_json, "agent_tool_result_json")?;
        let result: AgentToolResult = parse_json(json, "agent_tool_result_json")?;
        call.set(Outcome::Result(result));
        Ok(())
    }
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
    ffi_fallible! {
        let call = arg_ref(call, "call")?;
        let message = arg_str(message, "message")?;
        call.set(Outcome::Error(message.to_owned()));
        Ok(())
    }
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
    ffi_fallible! {
        let call = arg_ref(call, "call")?;
        let text = arg_str(text, "text")?;
        call.updates.send(AgentToolResult::text(text));
        Ok(())
    }
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
    ffi_fallible! {
        let call = arg_ref(call, "call")?;
        let json = arg_str(agent_tool_result_json, "agent_tool_result_json")?;
        let partial: AgentToolResult = parse_json(json, "agent_tool_result_json")?;
        call.updates.send(partial);
        Ok(())
    }
}

/// Counts the tool and hook callbacks of one agent that are running, so that `pi_agent_free`
/// can wait for them before it frees their `user_data`.
#[derive(Debug, Default)]
pub(crate) struct CallsInFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

impl CallsInFlight {
    fn lock(&self) -> MutexGuard<'_, usize> {
        self.count.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until no callback runs.
    pub(crate) fn wait_until_idle(&self) {
        let mut count = self.lock();
        while *count > 0 {
            count = self
                .idle
                .wait(count)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// One running callback; decrements the count when dropped.
struct InFlight(Arc<CallsInFlight>);

impl InFlight {
    fn enter(calls: &Arc<CallsInFlight>) -> Self {
        *calls.lock() += 1;
        Self(Arc::clone(calls))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut count = self.0.lock();
        *count -= 1;
        if *count == 0 {
            self.0.idle.notify_all();
        }
    }
}

/// Runs `invoke` (which calls C) on the runtime's blocking pool, counted in `calls` and marked
/// as a callback of the agent identified by `agent_key`. Everything `invoke` holds (the
/// registration's `user_data` among it) is dropped before the count goes down. `Err` when the
/// task failed (a panic in `invoke`, or a runtime shutting down).
pub(crate) async fn run_callback<T: Send + 'static>(
    calls: &Arc<CallsInFlight>,
    agent_key: usize,
    invoke: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    let in_flight = InFlight::enter(calls);
    tokio::task::spawn_blocking(move || {
        let _in_flight = in_flight;
        let _scope = ScopeGuard::enter(Scope::Callback(agent_key));
        invoke()
    })
    .await
}

/// A C callback and its `user_data`, shared by every call of one registered tool.
pub(crate) struct ToolCallback {
    callback: unsafe extern "C" fn(*mut c_void, *mut pi_tool_call) -> i32,
    user_data: Arc<UserData>,
}

/// The `AgentTool` behind `pi_agent_add_tool`.
pub(crate) struct CTool {
    name: String,
    description: String,
    parameters: Value,
    callback: Arc<ToolCallback>,
    calls: Arc<CallsInFlight>,
    /// Identifies the agent, for the callback scope.
    agent_key: usize,
}

impl CTool {
    pub(crate) fn new(
        name: String,
        description: String,
        parameters: Value,
        callback: unsafe extern "C" fn(*mut c_void, *mut pi_tool_call) -> i32,
        user_data: Arc<UserData>,
        calls: Arc<CallsInFlight>,
        agent_key: usize,
    ) -> Self {
        Self {
            name,
            description,
            parameters,
            callback: Arc::new(ToolCallback {
                callback,
                user_data,
            }),
            calls,
            agent_key,
        }
    }
}

impl ToolCallback {
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
            outcome: Mutex::new(Outcome::Unset),
        };
        // SAFETY: the callback and `user_data` were registered together by the C caller;
        // `call` outlives the call. C only reads `call` through this library's functions,
        // which take shared references (its mutable part is behind a mutex).
        let code = unsafe { (self.callback)(user_data, std::ptr::from_ref(&call).cast_mut()) };
        match call
            .outcome
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
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
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn execute(
        &self,
        context: ToolCallContext,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let callback = Arc::clone(&self.callback);
        let calls = Arc::clone(&self.calls);
        let agent_key = self.agent_key;
        Box::pin(async move {
            run_callback(&calls, agent_key, move || callback.invoke(context))
                .await
                .unwrap_or_else(|error| {
                    Err(ToolError::new(format!("tool callback failed: {error}")))
                })
        })
    }
}
