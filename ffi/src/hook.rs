//! Agent hooks implemented in C (core's `BeforeToolCall`, `AfterToolCall`,
//! `ShouldStopAfterTurn` and `TransformContext`): the callback types, the context handles the
//! callbacks receive, and the core hooks that run them on the runtime's blocking pool.
//!
//! Installing and removing hooks is in `agent.rs` (`pi_agent_set_before_tool_call`, ...).

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use ::pi_agent::agent::HookError;
use futures::FutureExt;
use pi_agent::agent::{
    AfterToolCall, AfterToolCallContext, AfterToolCallResult, AgentMessage, BeforeToolCall,
    BeforeToolCallContext, BeforeToolCallResult, ShouldStopAfterTurn, ShouldStopAfterTurnContext,
    TransformContext,
};
use pi_agent::ai::Message;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::boundary::{arg_opt_str, arg_ref, arg_str, opt_ref};
use crate::callback::{CallbackSite, run_callback};
use crate::error::{parse_json, parse_object, pi_error, pi_error_kind};
use crate::string::pi_str;
use crate::user_data::UserData;

/// Runs before each tool call, after its arguments were validated and before the tool runs
/// (pi's `beforeToolCall`). Read the call with `pi_before_tool_call_id` / `_name` /
/// `_arguments_json` / `_assistant_message_json`; stop it with `pi_before_tool_call_block`
/// (the model gets an error result with the reason), or change its arguments with
/// `pi_before_tool_call_set_arguments_json`. Return 0, or non-zero for a hook failure: the
/// call then does not run and gets the error result "before_tool_call hook returned error
/// code N". `context` is valid until the callback returns.
///
/// It runs on a thread of the runtime's blocking pool, like a tool callback, and the same
/// rules apply (see `pi_tool_callback`): calls for several tool calls of one assistant message
/// may run concurrently (parallel tool execution), and the callback may call non-blocking
/// functions of its agent but not `pi_agent_wait_for_idle`.
pub type pi_before_tool_call_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, context: *mut pi_before_tool_call) -> i32>;

/// Runs after each tool call that ran (not for calls that were blocked, named an unknown tool
/// or had invalid arguments) and before its result is reported (pi's `afterToolCall`). Read
/// the result with `pi_after_tool_call_result_json` / `_is_error`; replace parts of it with
/// `pi_after_tool_call_set_result_json`. Return 0, or non-zero for a hook failure: the call then
/// gets the error result "after_tool_call hook returned error code N". `context` is valid until
/// the callback returns. Threads and concurrency as for `pi_before_tool_call_callback`.
pub type pi_after_tool_call_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, context: *mut pi_after_tool_call) -> i32>;

/// Asked after every turn (one model call and its tool calls) whether the run should stop
/// there, without polling the steering and follow-up queues (pi's `shouldStopAfterTurn`). Set
/// `*stop_out` (initially `false`) to `true` to stop. `context` and `stop_out` are valid until
/// the callback returns. It runs on a thread of the runtime's blocking pool, one turn at a
/// time; the rules of `pi_tool_callback` apply.
pub type pi_should_stop_after_turn_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        context: *const pi_should_stop_after_turn,
        stop_out: *mut bool,
    ),
>;

/// Rewrites the transcript before each model call, e.g. to prune or summarise it (pi's
/// `transformContext`). Read it with `pi_transform_context_messages_json`; set what the model
/// gets instead with `pi_transform_context_set_messages_json` (else it gets the transcript
/// unchanged). The result is sent, never stored: the transcript itself does not change.
/// `context` is valid until the callback returns. It runs on a thread of the runtime's
/// blocking pool, one model call at a time; the rules of `pi_tool_callback` apply.
pub type pi_transform_context_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, context: *mut pi_transform_context)>;

type BeforeFn = unsafe extern "C" fn(*mut c_void, *mut pi_before_tool_call) -> i32;
type AfterFn = unsafe extern "C" fn(*mut c_void, *mut pi_after_tool_call) -> i32;
type ShouldStopFn = unsafe extern "C" fn(*mut c_void, *const pi_should_stop_after_turn, *mut bool);
type TransformFn = unsafe extern "C" fn(*mut c_void, *mut pi_transform_context);

/// A registered C hook: the callback and its `user_data`.
pub(crate) struct Hook<F> {
    pub(crate) callback: F,
    pub(crate) user_data: Arc<UserData>,
}

/// A signal for one hook call that also fires when the run stops waiting for it (the guard,
/// held by the awaited future, cancels it when the future is dropped: an abort or the tool
/// watchdog), so a C hook that cannot be pre-empted can see either.
fn stop_on_drop(signal: &CancellationToken) -> (CancellationToken, DropGuard) {
    let signal = signal.child_token();
    let guard = signal.clone().drop_guard();
    (signal, guard)
}

/// `value` as JSON, made on first use and kept in `cell` (so views of it stay valid).
pub(crate) fn lazy_json<T: Serialize>(
    cell: &OnceLock<String>,
    value: impl FnOnce() -> T,
) -> pi_str {
    pi_str::new(cell.get_or_init(|| serde_json::to_string(&value()).unwrap_or_default()))
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

// ------------------------------------------------------------------------ before_tool_call

/// One tool call about to run, passed to a `pi_before_tool_call_callback`. Valid until the
/// callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_before_tool_call {
    context: BeforeToolCallContext,
    signal: CancellationToken,
    context_json: OnceLock<String>,
    arguments_json: OnceLock<String>,
    assistant_message_json: OnceLock<String>,
    decision: Mutex<BeforeToolCallResult>,
}

/// The whole context as core's `BeforeToolCallContext` JSON (pi's, without the agent context):
/// `{"assistantMessage":{...},"toolCall":{...},"args":{...}}` (empty when `context` is NULL).
/// Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_context_json(context: *const pi_before_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| lazy_json(&c.context_json, || &c.context))
    }
}

/// The call id the model gave (empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_id(context: *const pi_before_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| pi_str::new(&c.context.tool_call.id))
    }
}

/// The tool name (empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_name(context: *const pi_before_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| pi_str::new(&c.context.tool_call.name))
    }
}

/// The arguments as a JSON object, validated against the tool's schema (empty when `context`
/// is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_arguments_json(
    context: *const pi_before_tool_call,
) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| {
            lazy_json(&c.arguments_json, || &c.context.args)
        })
    }
}

/// The assistant message that made the call, as pi-shaped JSON (empty when `context` is
/// NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_assistant_message_json(
    context: *const pi_before_tool_call,
) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| {
            lazy_json(&c.assistant_message_json, || {
                Message::Assistant(c.context.assistant_message.clone())
            })
        })
    }
}

/// Whether the run no longer waits for this hook: it was aborted, or the tool watchdog fired
/// (`false` when `context` is NULL). A hook that waits for something should poll it.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_is_aborted(context: *const pi_before_tool_call) -> bool {
    ffi_boundary! {
        opt_ref(context).is_some_and(|c| c.signal.is_cancelled())
    }
}

/// Blocks the call: the tool does not run, and the model gets an error result whose text is
/// `reason` (NULL: "Tool execution was blocked").
///
/// Errors: `NULL_ARGUMENT` (for `context`), `INVALID_UTF8`.
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_block(
    context: *mut pi_before_tool_call,
    reason: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let context = arg_ref(context, "context")?;
        let reason = arg_opt_str(reason, "reason")?;
        let mut decision = lock(&context.decision);
        decision.block = true;
        decision.reason = reason.map(str::to_owned);
        Ok(())
    }
}

/// Sets the hook's whole decision from pi's `BeforeToolCallResult` JSON (core's type):
/// `{"block":true,"reason":"..."}`, or `{"args":{...}}` to replace the arguments (not
/// validated again). Unknown keys are refused. Replaces what `pi_before_tool_call_block` and
/// `pi_before_tool_call_set_arguments_json` set; the last call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (the decision is then unchanged).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_set_result_json(
    context: *mut pi_before_tool_call,
    before_tool_call_result_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let context = arg_ref(context, "context")?;
        let name = "before_tool_call_result_json";
        let decision: BeforeToolCallResult =
            parse_object(arg_str(before_tool_call_result_json, name)?, name)?;
        *lock(&context.decision) = decision;
        Ok(())
    }
}

/// Replaces the arguments the tool runs with by a JSON object. They are not validated again.
/// The last call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (also for JSON that is not an
/// object; the arguments are then unchanged).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_set_arguments_json(
    context: *mut pi_before_tool_call,
    arguments_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let context = arg_ref(context, "context")?;
        let json = arg_str(arguments_json, "arguments_json")?;
        let arguments: Value = parse_json(json, "arguments_json")?;
        if !arguments.is_object() {
            return Err(pi_error::new(
                pi_error_kind::InvalidJson,
                "`arguments_json` is not valid: expected a JSON object",
            ));
        }
        lock(&context.decision).args = Some(arguments);
        Ok(())
    }
}

impl Hook<BeforeFn> {
    fn invoke(
        &self,
        context: BeforeToolCallContext,
        signal: CancellationToken,
    ) -> Result<Option<BeforeToolCallResult>, String> {
        let Some(user_data) = self.user_data.get() else {
            return Ok(None);
        };
        let c_context = pi_before_tool_call {
            context,
            signal,
            context_json: OnceLock::new(),
            arguments_json: OnceLock::new(),
            assistant_message_json: OnceLock::new(),
            decision: Mutex::default(),
        };
        // SAFETY: the callback and `user_data` were registered together by the C caller;
        // `c_context` outlives the call and is only used through this library's functions,
        // which take shared references (its mutable part is behind a mutex).
        let code = unsafe { (self.callback)(user_data, std::ptr::from_ref(&c_context).cast_mut()) };
        if code != 0 {
            return Err(format!("before_tool_call hook returned error code {code}"));
        }
        let decision = c_context
            .decision
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        Ok((decision != BeforeToolCallResult::default()).then_some(decision))
    }
}

/// The core hook that runs a C `before_tool_call` callback.
pub(crate) fn before_tool_call(
    callback: BeforeFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> BeforeToolCall {
    let hook = Arc::new(Hook {
        callback,
        user_data,
    });
    Arc::new(move |context, signal| {
        let hook = Arc::clone(&hook);
        let site = site.clone();
        let (signal, stopped) = stop_on_drop(&signal);
        async move {
            let _stopped = stopped;
            run_callback(&site, move || hook.invoke(context, signal))
                .await
                .unwrap_or_else(|error| Err(format!("before_tool_call hook failed: {error}")))
                .map_err(HookError::from)
        }
        .boxed()
    })
}

// ------------------------------------------------------------------------- after_tool_call

/// One tool call that ran, passed to a `pi_after_tool_call_callback`. Valid until the callback
/// returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_after_tool_call {
    context: AfterToolCallContext,
    signal: CancellationToken,
    context_json: OnceLock<String>,
    arguments_json: OnceLock<String>,
    assistant_message_json: OnceLock<String>,
    result_json: OnceLock<String>,
    change: Mutex<Option<AfterToolCallResult>>,
}

/// The whole context as core's `AfterToolCallContext` JSON (pi's, without the agent context):
/// `{"assistantMessage":{...},"toolCall":{...},"args":{...},"result":{...},"isError":false}`
/// (empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_context_json(context: *const pi_after_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| lazy_json(&c.context_json, || &c.context))
    }
}

/// The call id the model gave (empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_id(context: *const pi_after_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| pi_str::new(&c.context.tool_call.id))
    }
}

/// The tool name (empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_name(context: *const pi_after_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| pi_str::new(&c.context.tool_call.name))
    }
}

/// The arguments the tool ran with, as a JSON object (empty when `context` is NULL). Valid
/// while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_arguments_json(context: *const pi_after_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| {
            lazy_json(&c.arguments_json, || &c.context.args)
        })
    }
}

/// The assistant message that made the call, as pi-shaped JSON (empty when `context` is
/// NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_assistant_message_json(
    context: *const pi_after_tool_call,
) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| {
            lazy_json(&c.assistant_message_json, || {
                Message::Assistant(c.context.assistant_message.clone())
            })
        })
    }
}

/// The tool's result as a pi-shaped `AgentToolResult`:
/// `{"content":[...],"details":...}` (empty when `context` is NULL). Valid while the callback
/// runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_result_json(context: *const pi_after_tool_call) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| lazy_json(&c.result_json, || &c.context.result))
    }
}

/// Whether the tool failed (`false` when `context` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_is_error(context: *const pi_after_tool_call) -> bool {
    ffi_boundary! {
        opt_ref(context).is_some_and(|c| c.context.is_error)
    }
}

/// Whether the run no longer waits for this hook: it was aborted, or the tool watchdog fired
/// (`false` when `context` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_is_aborted(context: *const pi_after_tool_call) -> bool {
    ffi_boundary! {
        opt_ref(context).is_some_and(|c| c.signal.is_cancelled())
    }
}

/// Replaces parts of the result with pi's `AfterToolCallResult` (core's type): a JSON object
/// with any of `content` (content blocks, what the model sees), `details` (any JSON; an explicit
/// `null` replaces them with `null`), `isError` (bool) and `terminate` (bool); each field
/// present replaces the original whole (no deep merge), absent fields keep it. E.g.
/// `{"content":[{"type":"text","text":"redacted"}]}`. The last call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (also for unknown keys; the
/// result is then unchanged).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_set_result_json(
    context: *mut pi_after_tool_call,
    after_tool_call_result_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let context = arg_ref(context, "context")?;
        let name = "after_tool_call_result_json";
        let json = arg_str(after_tool_call_result_json, name)?;
        let change: AfterToolCallResult = parse_json(json, name)?;
        *lock(&context.change) = Some(change);
        Ok(())
    }
}

impl Hook<AfterFn> {
    fn invoke(
        &self,
        context: AfterToolCallContext,
        signal: CancellationToken,
    ) -> Result<Option<AfterToolCallResult>, String> {
        let Some(user_data) = self.user_data.get() else {
            return Ok(None);
        };
        let c_context = pi_after_tool_call {
            context,
            signal,
            context_json: OnceLock::new(),
            arguments_json: OnceLock::new(),
            assistant_message_json: OnceLock::new(),
            result_json: OnceLock::new(),
            change: Mutex::new(None),
        };
        // SAFETY: as in `Hook<BeforeFn>::invoke`.
        let code = unsafe { (self.callback)(user_data, std::ptr::from_ref(&c_context).cast_mut()) };
        if code != 0 {
            return Err(format!("after_tool_call hook returned error code {code}"));
        }
        Ok(c_context
            .change
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner))
    }
}

/// The core hook that runs a C `after_tool_call` callback.
pub(crate) fn after_tool_call(
    callback: AfterFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> AfterToolCall {
    let hook = Arc::new(Hook {
        callback,
        user_data,
    });
    Arc::new(move |context, signal| {
        let hook = Arc::clone(&hook);
        let site = site.clone();
        let (signal, stopped) = stop_on_drop(&signal);
        async move {
            let _stopped = stopped;
            run_callback(&site, move || hook.invoke(context, signal))
                .await
                .unwrap_or_else(|error| Err(format!("after_tool_call hook failed: {error}")))
                .map_err(HookError::from)
        }
        .boxed()
    })
}

// ------------------------------------------------------------------ should_stop_after_turn

/// The turn that just ended, passed to a `pi_should_stop_after_turn_callback`. Valid until the
/// callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_should_stop_after_turn {
    context: ShouldStopAfterTurnContext,
    context_json: OnceLock<String>,
    message_json: OnceLock<String>,
    tool_results_json: OnceLock<String>,
    new_messages_json: OnceLock<String>,
}

/// The whole context as core's `ShouldStopAfterTurnContext` JSON (pi's, without the agent
/// context): `{"message":{...},"toolResults":[...],"newMessages":[...]}` (empty when `context`
/// is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_should_stop_after_turn_context_json(
    context: *const pi_should_stop_after_turn,
) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| lazy_json(&c.context_json, || &c.context))
    }
}

/// The turn's assistant message as pi-shaped JSON (empty when `context` is NULL). Valid while
/// the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_should_stop_after_turn_message_json(
    context: *const pi_should_stop_after_turn,
) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| {
            lazy_json(&c.message_json, || Message::Assistant(c.context.message.clone()))
        })
    }
}

/// The turn's tool-result messages as a pi-shaped JSON array, in the assistant's call order
/// (empty string when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_should_stop_after_turn_tool_results_json(
    context: *const pi_should_stop_after_turn,
) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| {
            lazy_json(&c.tool_results_json, || {
                c.context
                    .tool_results
                    .iter()
                    .cloned()
                    .map(Message::ToolResult)
                    .collect::<Vec<_>>()
            })
        })
    }
}

/// Every message this run added so far, as a pi-shaped JSON array (empty string when `context`
/// is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_should_stop_after_turn_new_messages_json(
    context: *const pi_should_stop_after_turn,
) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| {
            lazy_json(&c.new_messages_json, || &c.context.new_messages)
        })
    }
}

impl Hook<ShouldStopFn> {
    fn invoke(&self, context: ShouldStopAfterTurnContext) -> bool {
        let Some(user_data) = self.user_data.get() else {
            return false;
        };
        let c_context = pi_should_stop_after_turn {
            context,
            context_json: OnceLock::new(),
            message_json: OnceLock::new(),
            tool_results_json: OnceLock::new(),
            new_messages_json: OnceLock::new(),
        };
        let mut stop = false;
        // SAFETY: the callback and `user_data` were registered together by the C caller;
        // `c_context` and `stop` outlive the call.
        unsafe { (self.callback)(user_data, &c_context, &mut stop) };
        stop
    }
}

/// The core hook that runs a C `should_stop_after_turn` callback. A failed task (which would
/// be a bug here) does not stop the run.
pub(crate) fn should_stop_after_turn(
    callback: ShouldStopFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> ShouldStopAfterTurn {
    let hook = Arc::new(Hook {
        callback,
        user_data,
    });
    Arc::new(move |context, _signal| {
        let hook = Arc::clone(&hook);
        let site = site.clone();
        async move {
            Ok(run_callback(&site, move || hook.invoke(context))
                .await
                .unwrap_or(false))
        }
        .boxed()
    })
}

// ------------------------------------------------------------------------ transform_context

/// The transcript about to be sent to the model, passed to a `pi_transform_context_callback`.
/// Valid until the callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_transform_context {
    messages: Vec<AgentMessage>,
    signal: CancellationToken,
    messages_json: OnceLock<String>,
    replacement: Mutex<Option<Vec<AgentMessage>>>,
}

/// The transcript as a pi-shaped JSON array of messages, custom messages included (empty
/// string when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_transform_context_messages_json(
    context: *const pi_transform_context,
) -> pi_str {
    ffi_boundary! {
        opt_ref(context).map_or(pi_str::EMPTY, |c| lazy_json(&c.messages_json, || &c.messages))
    }
}

/// Whether the run was aborted (`false` when `context` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_transform_context_is_aborted(context: *const pi_transform_context) -> bool {
    ffi_boundary! {
        opt_ref(context).is_some_and(|c| c.signal.is_cancelled())
    }
}

/// Sets the messages to send instead, as a pi-shaped JSON array (custom messages are then
/// dropped as usual before the request). The last call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (the replacement is then
/// unchanged).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_transform_context_set_messages_json(
    context: *mut pi_transform_context,
    messages_json: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let context = arg_ref(context, "context")?;
        let json = arg_str(messages_json, "messages_json")?;
        let messages: Vec<AgentMessage> = parse_json(json, "messages_json")?;
        *lock(&context.replacement) = Some(messages);
        Ok(())
    }
}

impl Hook<TransformFn> {
    fn invoke(&self, messages: Vec<AgentMessage>, signal: CancellationToken) -> Vec<AgentMessage> {
        let Some(user_data) = self.user_data.get() else {
            return messages;
        };
        let c_context = pi_transform_context {
            messages,
            signal,
            messages_json: OnceLock::new(),
            replacement: Mutex::new(None),
        };
        // SAFETY: as in `Hook<BeforeFn>::invoke`.
        unsafe { (self.callback)(user_data, std::ptr::from_ref(&c_context).cast_mut()) };
        let replacement = c_context
            .replacement
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        replacement.unwrap_or(c_context.messages)
    }
}

/// The core hook that runs a C `transform_context` callback. A panic in the task is passed on,
/// which fails the run (core's contract for this hook).
pub(crate) fn transform_context(
    callback: TransformFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> TransformContext {
    let hook = Arc::new(Hook {
        callback,
        user_data,
    });
    Arc::new(move |messages, signal| {
        let hook = Arc::clone(&hook);
        let site = site.clone();
        async move {
            match run_callback(&site, move || hook.invoke(messages, signal)).await {
                Ok(messages) => Ok(messages),
                Err(error) => Err(HookError::new(format!(
                    "transform_context hook failed: {error}"
                ))),
            }
        }
        .boxed()
    })
}
