//! Installing the agent's hooks implemented in C (`pi_agent_set_before_tool_call`, ...). The
//! hooks themselves are in `hook.rs` (around tool calls and turns) and `model_hooks.rs`
//! (around model calls).

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use ::pi_agent::agent::{AgentHooks, ProxyOptions, proxy_stream_fn};
use ::pi_agent::ai::ApiKey;

use crate::agent::{pi_agent, shared};
use crate::args::arg_opt_str;
use crate::callback::CallbackSite;
use crate::error::pi_error;
use crate::hook::{
    self, pi_after_tool_call_callback, pi_before_tool_call_callback,
    pi_should_stop_after_turn_callback, pi_transform_context_callback,
};
use crate::model_hooks::{
    self, pi_convert_to_llm_callback, pi_get_api_key_callback, pi_stream_fn_callback,
};
use crate::user_data::{UserData, pi_free_callback};

/// Installs (or, for `None`, removes) one hook made by `make` from the C callback.
fn install<F, H>(
    agent: *mut pi_agent,
    callback: Option<F>,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
    make: impl FnOnce(F, Arc<UserData>, CallbackSite) -> H,
    set: impl FnOnce(&mut AgentHooks, Option<H>),
) -> Result<(), pi_error> {
    let shared = shared(agent)?;
    let hook = callback.map(|callback| {
        let user_data = shared.registrations.register(user_data, free_user_data);
        make(callback, user_data, shared.site())
    });
    shared.agent.update_hooks(|hooks| set(hooks, hook));
    shared.registrations.prune();
    Ok(())
}

/// Sets the `before_tool_call` hook (see `pi_before_tool_call_callback`), replacing
/// the one set before; a NULL `callback` removes it (`user_data` and `free_user_data` are then
/// ignored). The change applies from the next run: a run keeps the hooks it started with.
/// `free_user_data` (nullable) is called with `user_data` exactly once, when no run uses the
/// hook any more after it was replaced or removed, or by `pi_agent_free` (on the threads
/// described at `pi_agent_add_tool`).
///
/// Errors: `NULL_ARGUMENT` (for `agent`; then `free_user_data` is not called).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_before_tool_call(
    agent: *mut pi_agent,
    callback: pi_before_tool_call_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        install(agent, callback, user_data, free_user_data, hook::before_tool_call, |hooks, hook| {
            hooks.before_tool_call = hook;
        })
    }
}

/// Sets the `after_tool_call` hook (see `pi_after_tool_call_callback`), replacing
/// the one set before; a NULL `callback` removes it. Applies from the next run; `user_data` and
/// `free_user_data` as for `pi_agent_set_before_tool_call`.
///
/// Errors: `NULL_ARGUMENT` (for `agent`).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_after_tool_call(
    agent: *mut pi_agent,
    callback: pi_after_tool_call_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        install(agent, callback, user_data, free_user_data, hook::after_tool_call, |hooks, hook| {
            hooks.after_tool_call = hook;
        })
    }
}

/// Sets the `should_stop_after_turn` hook (see `pi_should_stop_after_turn_callback`), replacing
/// the one set before; a NULL `callback` removes it. Applies from the next run; `user_data` and
/// `free_user_data` as for `pi_agent_set_before_tool_call`.
///
/// Errors: `NULL_ARGUMENT` (for `agent`).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_should_stop_after_turn(
    agent: *mut pi_agent,
    callback: pi_should_stop_after_turn_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        install(agent, callback, user_data, free_user_data, hook::should_stop_after_turn, |hooks, hook| {
            hooks.should_stop_after_turn = hook;
        })
    }
}

/// Sets the `transform_context` hook (see `pi_transform_context_callback`), replacing
/// the one set before; a NULL `callback` removes it. Applies from the next run; `user_data` and
/// `free_user_data` as for `pi_agent_set_before_tool_call`.
///
/// Errors: `NULL_ARGUMENT` (for `agent`).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_transform_context(
    agent: *mut pi_agent,
    callback: pi_transform_context_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        install(agent, callback, user_data, free_user_data, hook::transform_context, |hooks, hook| {
            hooks.transform_context = hook;
        })
    }
}

/// Sets the `get_api_key` hook (see `pi_get_api_key_callback`), replacing
/// the one set before; a NULL `callback` removes it. Applies from the next run; `user_data` and
/// `free_user_data` as for `pi_agent_set_before_tool_call`.
///
/// Errors: `NULL_ARGUMENT` (for `agent`).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_get_api_key(
    agent: *mut pi_agent,
    callback: pi_get_api_key_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        install(agent, callback, user_data, free_user_data, model_hooks::get_api_key, |hooks, hook| {
            hooks.get_api_key = hook;
        })
    }
}

/// Sets the `convert_to_llm` hook (see `pi_convert_to_llm_callback`), replacing
/// the one set before; a NULL `callback` removes it. Applies from the next run; `user_data` and
/// `free_user_data` as for `pi_agent_set_before_tool_call`.
///
/// Errors: `NULL_ARGUMENT` (for `agent`).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_convert_to_llm(
    agent: *mut pi_agent,
    callback: pi_convert_to_llm_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        install(agent, callback, user_data, free_user_data, model_hooks::convert_to_llm, |hooks, hook| {
            hooks.convert_to_llm = hook;
        })
    }
}

/// Sets the stream function (see `pi_stream_fn_callback`; default: pi's `streamSimple`), replacing
/// the one set before; a NULL `callback` removes it. Applies from the next run; `user_data` and
/// `free_user_data` as for `pi_agent_set_before_tool_call`.
///
/// Errors: `NULL_ARGUMENT` (for `agent`).
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_stream_fn(
    agent: *mut pi_agent,
    callback: pi_stream_fn_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        install(agent, callback, user_data, free_user_data, model_hooks::stream_fn, |hooks, hook| {
            hooks.stream_fn = hook;
        })
    }
}

/// Sends every model call of the agent through a pi proxy server (core's `proxy_stream_fn`,
/// pi's `streamProxy`): `POST {proxy_url}/api/stream` with `Authorization: Bearer
/// <auth_token>` (nullable: none), the server holding the provider keys. It replaces the
/// stream function (also one set with `pi_agent_set_stream_fn`); a NULL `proxy_url` goes back
/// to pi's `streamSimple`. Applies from the next run.
///
/// Errors: `NULL_ARGUMENT` (for `agent`), `INVALID_UTF8`.
/// Thread-safety: may be called from any thread, also during a run and from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_proxy_stream_fn(
    agent: *mut pi_agent,
    proxy_url: *const c_char,
    auth_token: *const c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let shared = shared(agent)?;
        let stream_fn = match arg_opt_str(proxy_url, "proxy_url")? {
            Some(proxy_url) => Some(proxy_stream_fn(ProxyOptions {
                proxy_url: proxy_url.to_owned(),
                auth_token: arg_opt_str(auth_token, "auth_token")?.map(ApiKey::new),
            })),
            None => None,
        };
        shared.agent.update_hooks(|hooks| hooks.stream_fn = stream_fn);
        shared.registrations.prune();
        Ok(())
    }
}
