//! `pi_session_subscription`: a session's journal records from a cursor, then live.

use std::ffi::c_char;
use std::sync::Arc;
use std::time::Duration;

use pi_agent::session::{SessionStore, SqliteStore, Subscription};

use crate::args::{Out, arg_mut, arg_ref, arg_str, method};
use crate::boundary::{free, into_handle};
use crate::error::pi_error;
use crate::runtime::block_on;
use crate::session::{pi_session, session_error};
use crate::string::into_c_string;

/// Journal records after a cursor, in order, then live ones: nothing skipped, nothing twice.
/// Each record is core's `JournalRecord` JSON, the same in every binding:
/// `{"seq":12,"attempt":0,"event":{"type":"message_update",...}}`. `seq` counts from 1 per
/// session; when a record's `attempt` is higher than that of the message being shown, the
/// message was restarted after a crash: drop what the lower attempt showed.
///
/// Not thread-safe: use it from one thread at a time.
pub struct pi_session_subscription {
    subscription: Subscription,
}

/// Subscribes to `session`'s journal after `after` (0: from the start). On success
/// `*subscription_out` receives the subscription; free it with
/// `pi_session_subscription_free`. It ends (`pi_session_subscription_next` gives NULL at once)
/// once the session is freed and every record was read.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_subscribe(
    session: *const pi_session,
    after: u64,
    subscription_out: *mut *mut pi_session_subscription,
) -> *mut pi_error {
    method(session, "session", |session| {
        let out = Out::new(subscription_out, "subscription_out")?;
        out.write(into_handle(pi_session_subscription {
            subscription: session.session.subscribe(after),
        }));
        Ok(())
    })
}

/// Follows session `session_id` in the SQLite file at `store_path` after `after`, without
/// running it: for another process (a UI, a log shipper) reading what a session writes. It
/// polls the file every 20 ms and never ends. On success `*subscription_out` receives it.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `SESSION` (the file does not exist or cannot be
/// opened).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_follow(
    store_path: *const c_char,
    session_id: *const c_char,
    after: u64,
    subscription_out: *mut *mut pi_session_subscription,
) -> *mut pi_error {
    ffi_fallible! {
        let path = arg_str(store_path, "store_path")?;
        let store = SqliteStore::open_existing(path)
            .map_err(|error| session_error(error.into()))?;
        let store: Arc<dyn SessionStore> = Arc::new(store);
        let id = arg_str(session_id, "session_id")?;
        let out = Out::new(subscription_out, "subscription_out")?;
        out.write(into_handle(pi_session_subscription {
            subscription: Subscription::follow(store, id, after),
        }));
        Ok(())
    }
}

/// Waits up to `timeout_ms` for the next record. `*record_json_out` receives its JSON (free
/// it with `pi_string_free`), or NULL when none came in time (or the subscription ended).
///
/// Errors: `NULL_ARGUMENT`, `SESSION` (the store failed, or a record is damaged).
/// Thread-safety: not concurrently with other calls on `subscription`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_subscription_next(
    subscription: *mut pi_session_subscription,
    timeout_ms: u32,
    record_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let subscription = arg_mut(subscription, "subscription")?;
        let out = Out::new(record_json_out, "record_json_out")?;
        let timeout = Duration::from_millis(u64::from(timeout_ms));
        let record = block_on(
            "pi_session_subscription_next",
            subscription.subscription.next_timeout(timeout),
        )?
        .map_err(session_error)?;
        out.write(record.map_or(std::ptr::null_mut(), |record| into_c_string(record.to_json())));
        Ok(())
    }
}

/// The seq of the last record handed out: the cursor to resume from (e.g. after a restart).
/// 0 when `subscription` is NULL.
///
/// Thread-safety: not concurrently with other calls on `subscription`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_subscription_cursor(
    subscription: *const pi_session_subscription,
) -> u64 {
    ffi_boundary! {
        arg_ref(subscription, "subscription").map_or(0, |s| s.subscription.cursor())
    }
}

/// Frees a subscription. NULL is a no-op.
///
/// Thread-safety: call once, when no other call on it is in progress.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_subscription_free(subscription: *mut pi_session_subscription) {
    free(subscription, drop)
}
