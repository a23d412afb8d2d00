//! `pi_stream_options`: core's `StreamOptions` as a handle, for what JSON cannot carry: the
//! `on_payload` and `on_response` callbacks (pi's `onPayload`, `onResponse`).

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, OnceLock};

use pi_agent::ai::{Callback, Model, StreamOptions};
use serde_json::Value;

use crate::args::{Out, arg_mut, arg_opt_str, method};
use crate::boundary::{free, into_handle, opt_ref};
use crate::callback::{CallbackSite, run_inline};
use crate::error::pi_error;
use crate::hook_context::{Answer, call_with, lazy_json};
use crate::model::pi_model;
use crate::options::stream_options;
use crate::string::{pi_str, view};
use crate::user_data::{UserData, pi_free_callback};

/// The options of a request (core's `StreamOptions`): the JSON data of `pi_stream_open` plus
/// callbacks. Pass it to `pi_stream_open_with_options` or `pi_agent_set_stream_options`, which
/// copy it (callbacks included): it may be freed right after.
///
/// Not thread-safe: use it from one thread at a time.
pub struct pi_stream_options {
    pub(crate) options: StreamOptions,
    /// The C callbacks as registered, to install them again for an agent (which counts them
    /// as its own callbacks: see [`pi_stream_options::for_site`]).
    payload: Option<(PayloadFn, Arc<UserData>)>,
    response: Option<(ResponseFn, Arc<UserData>)>,
}

impl pi_stream_options {
    /// The options with the callbacks run as `site`'s (an agent's: its free and its waits then
    /// know a callback of its own runs, as for its tools and hooks).
    pub(crate) fn for_site(&self, site: &CallbackSite) -> StreamOptions {
        let mut options = self.options.clone();
        if let Some((callback, user_data)) = &self.payload {
            options.on_payload = Some(payload_callback(*callback, user_data, site));
        }
        if let Some((callback, user_data)) = &self.response {
            options.on_response = Some(response_callback(*callback, user_data, site));
        }
        options
    }
}

/// Core's `on_payload` calling the C `callback` as `site`'s.
fn payload_callback(
    callback: PayloadFn,
    user_data: &Arc<UserData>,
    site: &CallbackSite,
) -> Callback<pi_agent::ai::OnPayload> {
    let (user_data, site) = (Arc::clone(user_data), site.clone());
    // A C callback cannot fail: it replaces the body or leaves it.
    Callback(Arc::new(move |body: &Value, model: &Model| {
        Ok(on_payload(callback, &user_data, &site, body, model))
    }) as Arc<pi_agent::ai::OnPayload>)
}

/// Core's `on_response` calling the C `callback` as `site`'s.
fn response_callback(
    callback: ResponseFn,
    user_data: &Arc<UserData>,
    site: &CallbackSite,
) -> Callback<pi_agent::ai::OnResponse> {
    let (user_data, site) = (Arc::clone(user_data), site.clone());
    Callback(Arc::new(
        move |status: u16, headers: &BTreeMap<String, String>, model: &Model| {
            on_response(callback, &user_data, &site, status, headers, model);
        },
    ) as Arc<pi_agent::ai::OnResponse>)
}

/// Sees a request body before it is sent and may replace it (pi's `onPayload`): read it with
/// `pi_on_payload_json` (and the model with `pi_on_payload_model`), replace it with
/// `pi_on_payload_set_json`. `payload` is valid until the callback returns. It runs
/// synchronously on a runtime thread, once per request (not per retry): keep it quick. Not every
/// wire API calls it (those of the OpenAI and Google families do).
pub type pi_on_payload_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, payload: *mut pi_on_payload)>;

/// Sees the HTTP status and headers of a response before its body is read (pi's
/// `onResponse`): `headers_json` is a JSON object of lowercase names to values. The strings and
/// `model` are valid until the callback returns. It runs synchronously on a runtime thread:
/// keep it quick.
pub type pi_on_response_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: u16,
        headers_json: pi_str,
        model: *const pi_model,
    ),
>;

type PayloadFn = unsafe extern "C" fn(*mut c_void, *mut pi_on_payload);
type ResponseFn = unsafe extern "C" fn(*mut c_void, u16, pi_str, *const pi_model);

/// Parses core's `StreamOptions` JSON (see `pi_stream_open`; NULL: the defaults) into a new
/// handle at `*options_out` (free it with `pi_stream_options_free`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (core's message, e.g. for an
/// unknown key).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_options_from_json(
    options_json: *const c_char,
    options_out: *mut *mut pi_stream_options,
) -> *mut pi_error {
    ffi_fallible! {
        let options = stream_options(arg_opt_str(options_json, "options_json")?)?;
        let out = Out::new(options_out, "options_out")?;
        out.write(into_handle(pi_stream_options {
            options,
            payload: None,
            response: None,
        }));
        Ok(())
    }
}

/// Sets the `on_payload` callback (see `pi_on_payload_callback`), replacing the one set
/// before; NULL removes it. `free_user_data` (nullable) is called with `user_data` exactly
/// once, when neither this handle nor any stream or agent that copied it uses the callback any
/// more (possibly on a runtime thread). On error nothing is set and `free_user_data` is not
/// called.
///
/// Errors: `NULL_ARGUMENT` (for `options`).
/// Thread-safety: not concurrently with other calls on `options`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_options_set_on_payload(
    options: *mut pi_stream_options,
    callback: pi_on_payload_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        let options = arg_mut(options, "options")?;
        options.payload = callback
            .map(|callback| (callback, Arc::new(UserData::new(user_data, free_user_data))));
        options.options.on_payload = options.payload.as_ref().map(|(callback, user_data)| {
            payload_callback(*callback, user_data, &CallbackSite::default())
        });
        Ok(())
    }
}

/// Sets the `on_response` callback (see `pi_on_response_callback`), replacing the one set
/// before; NULL removes it. `user_data` and `free_user_data` as for
/// `pi_stream_options_set_on_payload`.
///
/// Errors: `NULL_ARGUMENT` (for `options`).
/// Thread-safety: not concurrently with other calls on `options`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_options_set_on_response(
    options: *mut pi_stream_options,
    callback: pi_on_response_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        let options = arg_mut(options, "options")?;
        options.response = callback
            .map(|callback| (callback, Arc::new(UserData::new(user_data, free_user_data))));
        options.options.on_response = options.response.as_ref().map(|(callback, user_data)| {
            response_callback(*callback, user_data, &CallbackSite::default())
        });
        Ok(())
    }
}

/// Frees the handle. Callbacks that streams or agents copied stay with them. NULL is a no-op.
///
/// Thread-safety: call once, when no other thread uses `options`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_options_free(options: *mut pi_stream_options) {
    free(options, drop)
}

// ------------------------------------------------------------------------------ on_payload

/// A request body about to be sent, passed to a `pi_on_payload_callback`. Valid until the
/// callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_on_payload {
    body: *const Value,
    model: pi_model,
    body_json: OnceLock<String>,
    replacement: Answer<Option<Value>>,
}

// SAFETY: `body` is only read (through a shared reference) while the callback runs, and
// `Value` is `Sync`.
unsafe impl Sync for pi_on_payload {}

/// The body as JSON, in the wire API's own shape (empty when `payload` is NULL). Valid while
/// the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_on_payload_json(payload: *const pi_on_payload) -> pi_str {
    view(payload, |payload| {
        lazy_json(&payload.body_json, || {
            // SAFETY: points to the body of the running callback, which outlives `payload`.
            unsafe { &*payload.body }
        })
    })
}

/// The model of the request (NULL when `payload` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_on_payload_model(payload: *const pi_on_payload) -> *const pi_model {
    ffi_boundary! {
        opt_ref(payload).map_or(std::ptr::null(), |payload| std::ptr::from_ref(&payload.model))
    }
}

/// Sends `body_json` instead of the body (any JSON). The last call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (nothing changes).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_on_payload_set_json(
    payload: *mut pi_on_payload,
    body_json: *const c_char,
) -> *mut pi_error {
    method(payload, "payload", |payload| {
        payload.replacement.set_json(body_json, "body_json")
    })
}

fn on_payload(
    callback: PayloadFn,
    user_data: &UserData,
    site: &CallbackSite,
    body: &Value,
    model: &Model,
) -> Option<Value> {
    let user_data = user_data.get()?;
    let payload = pi_on_payload {
        body,
        model: pi_model {
            model: model.clone(),
        },
        body_json: OnceLock::new(),
        replacement: Answer::default(),
    };
    // The body `payload` borrows outlives it.
    let (payload, ()) = run_inline(site, || call_with(callback, user_data, payload));
    payload.replacement.take()
}

fn on_response(
    callback: ResponseFn,
    user_data: &UserData,
    site: &CallbackSite,
    status: u16,
    headers: &BTreeMap<String, String>,
    model: &Model,
) {
    let Some(user_data) = user_data.get() else {
        return;
    };
    let headers = serde_json::to_string(headers).unwrap_or_default();
    let model = pi_model {
        model: model.clone(),
    };
    run_inline(site, || {
        // SAFETY: the callback and `user_data` were registered together by the C caller; the
        // strings and `model` outlive the call.
        unsafe { callback(user_data, status, pi_str::new(&headers), &model) }
    });
}
