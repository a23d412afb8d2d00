//! Agent hooks implemented in C (core's `BeforeToolCall`, `AfterToolCall`,
//! `ShouldStopAfterTurn` and `TransformContext`): the callback types, the context handles the
//! callbacks receive, and the core hooks that run them on the runtime's blocking pool.
//!
//! Each context handle hands C core's context type whole, as its JSON (`pi_*_context_json`);
//! the few accessors beside it read what a C hook needs without a JSON parser (the call's id
//! and name, flags) or what it most often rewrites (the arguments).
//!
//! Installing and removing hooks is in `agent_hooks.rs` (`pi_agent_set_before_tool_call`, ...).

use std::ffi::{c_char, c_void};
use std::sync::{Arc, OnceLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use pi_agent::agent::{
    AfterToolCall, AfterToolCallContext, AfterToolCallResult, AgentMessage, BeforeToolCall,
    BeforeToolCallContext, BeforeToolCallResult, HookError, ShouldStopAfterTurn,
    ShouldStopAfterTurnContext, TransformContext,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::{arg_json, arg_opt_str, arg_str, method};
use crate::boundary::flag;
use crate::callback::{CallbackSite, run_callback};
use crate::error::{parse_object, pi_error, pi_error_kind};
use crate::hook_context::{Answer, Hook, call_with, lazy_json, stop_on_drop};
use crate::string::{pi_str, view};
use crate::user_data::UserData;

/// Runs before each tool call, after its arguments were validated and before the tool runs
/// (pi's `beforeToolCall`). Read the call with `pi_before_tool_call_id` / `_name` /
/// `_arguments_json`, or all of it with `_context_json`; stop it with `pi_before_tool_call_block`
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
/// the result with `pi_after_tool_call_context_json` (its `result`) / `_is_error`; replace parts
/// of it with `pi_after_tool_call_set_result_json`. Return 0, or non-zero for a hook failure:
/// the call then gets the error result "after_tool_call hook returned error code N". `context`
/// is valid until the callback returns. Threads and concurrency as for
/// `pi_before_tool_call_callback`.
pub type pi_after_tool_call_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, context: *mut pi_after_tool_call) -> i32>;

/// Asked after every turn (one model call and its tool calls) whether the run should stop
/// there, without polling the steering and follow-up queues (pi's `shouldStopAfterTurn`). Read
/// the turn with `pi_should_stop_after_turn_context_json`. Set `*stop_out` (initially `false`)
/// to `true` to stop. `context` and `stop_out` are valid until the callback returns. It runs on a thread of the runtime's blocking pool, one turn at a
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

/// A core hook around a tool call: it gets the call's context and the run's signal.
type ToolCallHook<C, R> =
    Arc<dyn Fn(C, CancellationToken) -> BoxFuture<'static, Result<R, HookError>> + Send + Sync>;

/// The core hook around a tool call that runs `invoke` (which calls C, and fails with the
/// message the model reads) on the runtime's blocking pool; the run stops waiting for it at an
/// abort or when the tool watchdog fires, and the C side sees that in its context.
fn tool_call_hook<F, C, R>(
    hook: Hook<F>,
    site: CallbackSite,
    name: &'static str,
    invoke: fn(&Hook<F>, C, CancellationToken) -> Result<R, String>,
) -> ToolCallHook<C, R>
where
    F: Send + Sync + 'static,
    C: Send + 'static,
    R: Send + 'static,
{
    let hook = Arc::new(hook);
    Arc::new(move |context, signal| {
        let hook = Arc::clone(&hook);
        let site = site.clone();
        let (signal, stopped) = stop_on_drop(&signal);
        async move {
            let _stopped = stopped;
            run_callback(&site, move || invoke(&hook, context, signal))
                .await
                .unwrap_or_else(|error| Err(format!("{name} hook failed: {error}")))
                .map_err(HookError::from)
        }
        .boxed()
    })
}

/// The failure of a hook that returned a non-zero `code`.
fn returned_error(name: &str, code: i32) -> Result<(), String> {
    match code {
        0 => Ok(()),
        code => Err(format!("{name} hook returned error code {code}")),
    }
}

// -------------------------------------------------------------- before and after a tool call

/// One tool call about to run, passed to a `pi_before_tool_call_callback`. Valid until the
/// callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_before_tool_call {
    context: BeforeToolCallContext,
    views: ToolCallViews,
    decision: Answer<BeforeToolCallResult>,
}

/// One tool call that ran, passed to a `pi_after_tool_call_callback`. Valid until the callback
/// returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_after_tool_call {
    context: AfterToolCallContext,
    views: ToolCallViews,
    change: Answer<Option<AfterToolCallResult>>,
}

/// What the accessors of both tool-call contexts read, made on first use.
struct ToolCallViews {
    signal: CancellationToken,
    context_json: OnceLock<String>,
    arguments_json: OnceLock<String>,
}

impl ToolCallViews {
    fn new(signal: CancellationToken) -> Self {
        Self {
            signal,
            context_json: OnceLock::new(),
            arguments_json: OnceLock::new(),
        }
    }
}

/// The whole context as core's `BeforeToolCallContext` JSON (pi's, without the agent context):
/// `{"assistantMessage":{"role":"assistant",...},"toolCall":{...},"args":{...}}` (empty when
/// `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_context_json(context: *const pi_before_tool_call) -> pi_str {
    view(context, |c| lazy_json(&c.views.context_json, || &c.context))
}

/// The call id the model gave (empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_id(context: *const pi_before_tool_call) -> pi_str {
    view(context, |c| pi_str::new(&c.context.tool_call.id))
}

/// The tool name (empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_name(context: *const pi_before_tool_call) -> pi_str {
    view(context, |c| pi_str::new(&c.context.tool_call.name))
}

/// The arguments as a JSON object, validated against the tool's schema (the context's `args`;
/// empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_arguments_json(
    context: *const pi_before_tool_call,
) -> pi_str {
    view(context, |c| {
        lazy_json(&c.views.arguments_json, || &c.context.args)
    })
}

/// Whether the run no longer waits for this hook: it was aborted, or the tool watchdog fired
/// (`false` when `context` is NULL). A hook that waits for something should poll it.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_before_tool_call_is_aborted(context: *const pi_before_tool_call) -> bool {
    flag(context, |c| c.views.signal.is_cancelled())
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
    method(context, "context", |context| {
        let reason = arg_opt_str(reason, "reason")?.map(str::to_owned);
        let mut decision = context.decision.lock();
        decision.block = true;
        decision.reason = reason;
        Ok(())
    })
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
    method(context, "context", |context| {
        let name = "before_tool_call_result_json";
        context.decision.set(parse_object(
            arg_str(before_tool_call_result_json, name)?,
            name,
        )?);
        Ok(())
    })
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
    method(context, "context", |context| {
        let arguments: Value = arg_json(arguments_json, "arguments_json")?;
        if !arguments.is_object() {
            return Err(pi_error::new(
                pi_error_kind::InvalidJson,
                "`arguments_json` is not valid: expected a JSON object",
            ));
        }
        context.decision.lock().args = Some(arguments);
        Ok(())
    })
}

fn invoke_before(
    hook: &Hook<BeforeFn>,
    context: BeforeToolCallContext,
    signal: CancellationToken,
) -> Result<Option<BeforeToolCallResult>, String> {
    let Some(user_data) = hook.user_data.get() else {
        return Ok(None);
    };
    let context = pi_before_tool_call {
        context,
        views: ToolCallViews::new(signal),
        decision: Answer::default(),
    };
    let (context, code) = call_with(hook.callback, user_data, context);
    returned_error("before_tool_call", code)?;
    let decision = context.decision.take();
    Ok((decision != BeforeToolCallResult::default()).then_some(decision))
}

/// The core hook that runs a C `before_tool_call` callback.
pub(crate) fn before_tool_call(
    callback: BeforeFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> BeforeToolCall {
    tool_call_hook(
        Hook::new(callback, user_data),
        site,
        "before_tool_call",
        invoke_before,
    )
}

/// The whole context as core's `AfterToolCallContext` JSON (pi's, without the agent context):
/// `{"assistantMessage":{"role":"assistant",...},"toolCall":{...},"args":{...},
/// "result":{"content":[...],"details":...},"isError":false}` (empty when `context` is NULL).
/// Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_context_json(context: *const pi_after_tool_call) -> pi_str {
    view(context, |c| lazy_json(&c.views.context_json, || &c.context))
}

/// The call id the model gave (empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_id(context: *const pi_after_tool_call) -> pi_str {
    view(context, |c| pi_str::new(&c.context.tool_call.id))
}

/// The tool name (empty when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_name(context: *const pi_after_tool_call) -> pi_str {
    view(context, |c| pi_str::new(&c.context.tool_call.name))
}

/// The arguments the tool ran with, as a JSON object (the context's `args`; empty when
/// `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_arguments_json(context: *const pi_after_tool_call) -> pi_str {
    view(context, |c| {
        lazy_json(&c.views.arguments_json, || &c.context.args)
    })
}

/// Whether the tool failed (the context's `isError`; `false` when `context` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_is_error(context: *const pi_after_tool_call) -> bool {
    flag(context, |c| c.context.is_error)
}

/// Whether the run no longer waits for this hook: it was aborted, or the tool watchdog fired
/// (`false` when `context` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_after_tool_call_is_aborted(context: *const pi_after_tool_call) -> bool {
    flag(context, |c| c.views.signal.is_cancelled())
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
    method(context, "context", |context| {
        let name = "after_tool_call_result_json";
        context.change.set_json(after_tool_call_result_json, name)
    })
}

fn invoke_after(
    hook: &Hook<AfterFn>,
    context: AfterToolCallContext,
    signal: CancellationToken,
) -> Result<Option<AfterToolCallResult>, String> {
    let Some(user_data) = hook.user_data.get() else {
        return Ok(None);
    };
    let context = pi_after_tool_call {
        context,
        views: ToolCallViews::new(signal),
        change: Answer::default(),
    };
    let (context, code) = call_with(hook.callback, user_data, context);
    returned_error("after_tool_call", code)?;
    Ok(context.change.take())
}

/// The core hook that runs a C `after_tool_call` callback.
pub(crate) fn after_tool_call(
    callback: AfterFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> AfterToolCall {
    tool_call_hook(
        Hook::new(callback, user_data),
        site,
        "after_tool_call",
        invoke_after,
    )
}

// ------------------------------------------------------------------ should_stop_after_turn

/// The turn that just ended, passed to a `pi_should_stop_after_turn_callback`. Valid until the
/// callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_should_stop_after_turn {
    context: ShouldStopAfterTurnContext,
    context_json: OnceLock<String>,
}

/// The whole context as core's `ShouldStopAfterTurnContext` JSON (pi's, without the agent
/// context): `{"message":{"role":"assistant",...},"toolResults":[{"role":"toolResult",...}],
/// "newMessages":[...]}`: the turn's assistant message, its tool results in the assistant's
/// call order, and every message this run added so far (empty when `context` is NULL). Valid
/// while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_should_stop_after_turn_context_json(
    context: *const pi_should_stop_after_turn,
) -> pi_str {
    view(context, |c| lazy_json(&c.context_json, || &c.context))
}

impl Hook<ShouldStopFn> {
    fn invoke(&self, context: ShouldStopAfterTurnContext) -> bool {
        let Some(user_data) = self.user_data.get() else {
            return false;
        };
        let c_context = pi_should_stop_after_turn {
            context,
            context_json: OnceLock::new(),
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
    let hook = Arc::new(Hook::new(callback, user_data));
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
    replacement: Answer<Option<Vec<AgentMessage>>>,
}

/// The transcript as a pi-shaped JSON array of messages, custom messages included (empty
/// string when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_transform_context_messages_json(
    context: *const pi_transform_context,
) -> pi_str {
    view(context, |c| lazy_json(&c.messages_json, || &c.messages))
}

/// Whether the run was aborted (`false` when `context` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_transform_context_is_aborted(context: *const pi_transform_context) -> bool {
    flag(context, |c| c.signal.is_cancelled())
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
    method(context, "context", |context| {
        context.replacement.set_json(messages_json, "messages_json")
    })
}

impl Hook<TransformFn> {
    fn invoke(&self, messages: Vec<AgentMessage>, signal: CancellationToken) -> Vec<AgentMessage> {
        let Some(user_data) = self.user_data.get() else {
            return messages;
        };
        let context = pi_transform_context {
            messages,
            signal,
            messages_json: OnceLock::new(),
            replacement: Answer::default(),
        };
        let (context, ()) = call_with(self.callback, user_data, context);
        let pi_transform_context {
            messages,
            replacement,
            ..
        } = context;
        replacement.take().unwrap_or(messages)
    }
}

/// The core hook that runs a C `transform_context` callback. A panic in the task is passed on,
/// which fails the run (core's contract for this hook).
pub(crate) fn transform_context(
    callback: TransformFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> TransformContext {
    let hook = Arc::new(Hook::new(callback, user_data));
    Arc::new(move |messages, signal| {
        let hook = Arc::clone(&hook);
        let site = site.clone();
        async move {
            run_callback(&site, move || hook.invoke(messages, signal))
                .await
                .map_err(|error| HookError::new(format!("transform_context hook failed: {error}")))
        }
        .boxed()
    })
}
