//! What every C hook and tool callback shares: the registered callback with its `user_data`,
//! the context handle it gets, and the answer it writes there. Each context handle holds core's
//! context type, handed to C as that type's JSON ([`lazy_json`]), and an [`Answer`] that its
//! setters fill while the callback runs and [`call_with`] hands back once it returned.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use crate::args::arg_json;
use crate::boundary::lock;
use crate::error::pi_error;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::string::pi_str;
use crate::user_data::UserData;

/// A registered C hook: the callback and its `user_data`.
pub(crate) struct Hook<F> {
    pub(crate) callback: F,
    pub(crate) user_data: Arc<UserData>,
}

impl<F> Hook<F> {
    pub(crate) fn new(callback: F, user_data: Arc<UserData>) -> Self {
        Self {
            callback,
            user_data,
        }
    }
}

/// What a C callback answers through its context handle: set while it runs (the last call
/// wins; setters may run on any thread), taken once it returned.
#[derive(Debug, Default)]
pub(crate) struct Answer<T>(Mutex<T>);

impl<T> Answer<T> {
    /// The answer so far, to change in place.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        lock(&self.0)
    }

    pub(crate) fn set(&self, value: T) {
        *self.lock() = value;
    }

    pub(crate) fn take(self) -> T {
        self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: DeserializeOwned> Answer<Option<T>> {
    /// The body of a setter that answers with a JSON argument (core's `T`): the last call wins;
    /// bad JSON leaves the answer as it was.
    pub(crate) fn set_json(&self, json: *const c_char, name: &str) -> Result<(), pi_error> {
        self.set(Some(arg_json(json, name)?));
        Ok(())
    }
}

/// Calls a C callback with `user_data` and a pointer to `context`, and hands the context back
/// (with the answer the callback wrote into it) together with what the callback returned.
pub(crate) fn call_with<C, R>(
    callback: unsafe extern "C" fn(*mut c_void, *mut C) -> R,
    user_data: *mut c_void,
    context: C,
) -> (C, R) {
    // SAFETY: the callback and `user_data` were registered together by the C caller; `context`
    // outlives the call, and C uses it only through this library's functions, which take shared
    // references (what they write is behind an `Answer`'s mutex).
    let returned = unsafe { callback(user_data, std::ptr::from_ref(&context).cast_mut()) };
    (context, returned)
}

/// `value` as JSON, made on first use and kept in `cell` (so views of it stay valid while the
/// context lives).
pub(crate) fn lazy_json<T: Serialize>(
    cell: &OnceLock<String>,
    value: impl FnOnce() -> T,
) -> pi_str {
    pi_str::new(cell.get_or_init(|| serde_json::to_string(&value()).unwrap_or_default()))
}

/// A signal for one callback that also fires when the run stops waiting for it: the guard, held
/// by the future the run awaits, cancels it when that future is dropped (an abort, or the tool
/// watchdog). A C callback, which cannot be pre-empted, sees either through its context.
pub(crate) fn stop_on_drop(signal: &CancellationToken) -> (CancellationToken, DropGuard) {
    let signal = signal.child_token();
    let guard = signal.clone().drop_guard();
    (signal, guard)
}
