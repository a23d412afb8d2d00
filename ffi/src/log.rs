//! The library's log: a C log callback (`pi_set_log_callback`) and `PI_AGENT_LOG`'s stderr log,
//! both fed by core's `ForwardLogs` (which does the filtering), installed once per process.

use std::ffi::{CString, c_char, c_void};
use std::sync::OnceLock;

use pi_agent::observability::{self, ForwardLogs, LogEvent, LogLevel};

use crate::error::{pi_error, pi_error_kind};
use crate::user_data::{UserData, pi_free_callback};

/// The severity of a log line. The values are stable.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pi_log_level {
    /// Failures.
    Error = 1,
    /// Retries and other recovered trouble.
    Warn = 2,
    /// Milestones.
    Info = 3,
    /// Requests and responses, summarised (never headers, bodies or keys).
    Debug = 4,
    /// Everything.
    Trace = 5,
}

impl From<LogLevel> for pi_log_level {
    fn from(level: LogLevel) -> Self {
        match level {
            LogLevel::Error => Self::Error,
            LogLevel::Warn => Self::Warn,
            LogLevel::Info => Self::Info,
            LogLevel::Debug => Self::Debug,
            LogLevel::Trace => Self::Trace,
        }
    }
}

/// Receives one log line: its `level`, its `target` (where from, e.g. `"pi_agent::http"`) and
/// its `message` (`text key=value ...`, one line). Both strings are NUL-terminated UTF-8,
/// borrowed for the duration of the call only. Called from whichever thread logs (the
/// caller's or the library's runtime threads), possibly from several at once; keep it quick,
/// and do not call blocking `pi_*` functions from it. Lines the callback itself causes are
/// not passed to it again.
pub type pi_log_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        level: pi_log_level,
        target: *const c_char,
        message: *const c_char,
    ),
>;

/// The layer installed in the process's `tracing` subscriber, whose handler the C callback
/// is; `None` when another subscriber was installed first.
fn forward_logs() -> Option<&'static ForwardLogs> {
    static LOGS: OnceLock<Option<ForwardLogs>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = ForwardLogs::none();
        observability::install_global_with_env_log(logs.clone()).then_some(logs)
    })
    .as_ref()
}

/// Installs the library's log on first use of the runtime when `PI_AGENT_LOG` is set, so the
/// variable works without any call. Otherwise nothing is installed until a callback is set: a
/// process that never logs keeps `tracing`'s no-op path.
pub(crate) fn init() {
    if observability::log_level_from_env().is_some() {
        forward_logs();
    }
}

/// A C string of `text`, without the NULs C cannot carry.
fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "")).unwrap_or_default()
}

/// Sets the log callback: from now on every library log line at `max_level` or more severe
/// (a `pi_log_level` value: `PI_LOG_LEVEL_ERROR` ... `PI_LOG_LEVEL_TRACE`) is passed to
/// `callback` (see `pi_log_callback`), replacing the callback and level set before. A NULL
/// `callback` removes it (`max_level`, `user_data` and `free_user_data` are then ignored).
/// `free_user_data` (nullable) is called with `user_data` exactly once, when the callback has
/// been replaced or removed and no call of it is still running (on the thread of that
/// `pi_set_log_callback`, or of the last running call).
///
/// Works beside `PI_AGENT_LOG` (e.g. `PI_AGENT_LOG=debug`), which writes the same lines to
/// stderr at its own level. No line ever holds an API key, token or credential header.
///
/// Errors: `INVALID_ARGUMENT` for a `max_level` that is not a `pi_log_level`, `RUNTIME` when
/// another `tracing` subscriber owns this process (a Rust host); `free_user_data` is then not
/// called.
/// Thread-safety: may be called from any thread, also from the log callback itself.
#[unsafe(no_mangle)]
pub extern "C" fn pi_set_log_callback(
    max_level: u32,
    callback: pi_log_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    ffi_fallible! {
        let Some(callback) = callback else {
            if let Some(logs) = forward_logs() {
                logs.remove_handler();
            }
            return Ok(());
        };
        let level = u8::try_from(max_level)
            .ok()
            .and_then(LogLevel::from_u8)
            .ok_or_else(|| {
                pi_error::new(
                    pi_error_kind::InvalidArgument,
                    format!("max_level must be a pi_log_level (1 to 5), not {max_level}"),
                )
            })?;
        let logs = forward_logs().ok_or_else(|| {
            pi_error::new(
                pi_error_kind::Runtime,
                "another tracing subscriber is installed in this process: add \
                 pi_agent::observability::ForwardLogs to it instead",
            )
        })?;
        // Owned by the handler: dropping the last handler reference calls `free_user_data`.
        let user_data = UserData::new(user_data, free_user_data);
        logs.set_handler(level, move |event: &LogEvent| {
            let Some(user_data) = user_data.get() else {
                return;
            };
            let target = c_string(&event.target);
            let message = c_string(&event.to_string());
            // SAFETY: `callback` is the C caller's log callback with its `user_data`; the
            // strings live until it returns.
            unsafe {
                callback(
                    user_data,
                    event.level.into(),
                    target.as_ptr(),
                    message.as_ptr(),
                );
            }
        });
        Ok(())
    }
}
