//! `pi_session`: a durable agent session in a SQLite file (core's `pi_agent::session`).

use std::ffi::c_char;
use std::sync::Arc;

use pi_agent::agent::{AgentSettings, AgentTool};
use pi_agent::ai::UserMessage;
use pi_agent::session::{
    CompactionSettings, Receipt, Session, SessionError, SessionOptions, SessionStore, SqliteStore,
    StoreError,
};

use crate::args::{Out, arg_opt_str, arg_ref, arg_str, method};
use crate::boundary::{into_handle, take_handle};
use crate::callback::{CallbackSite, CallsInFlight};
use crate::error::{parse_object, pi_error, pi_error_kind, to_json};
use crate::model::pi_model;
use crate::runtime::{Scope, block_on, current_scope};
use crate::string::into_c_string;
use crate::tool_object::{pi_tool, pi_tool_free};
use crate::user_data::Registrations;

/// A durable session: every event, message, request and step is written to its SQLite file
/// before it is shown, so the session survives the process. Made by `pi_session_open`, freed
/// by `pi_session_free`.
///
/// Thread-safe: its functions may be called from any thread (not from its tool callbacks,
/// for the blocking ones).
pub struct pi_session {
    pub(crate) session: Session,
    calls: Arc<CallsInFlight>,
    registrations: Registrations,
}

/// The error of a session call.
pub(crate) fn session_error(error: SessionError) -> pi_error {
    let kind = match &error {
        SessionError::EmptyRequestId
        | SessionError::EmptySessionId
        | SessionError::UnreadableMessage(_) => pi_error_kind::InvalidArgument,
        SessionError::Closed => pi_error_kind::Cancelled,
        SessionError::Store(StoreError::InUse { .. }) => pi_error_kind::SessionInUse,
        _ => pi_error_kind::Session,
    };
    pi_error::new(kind, error.to_string())
}

/// Opens the SQLite store at `store_path` (created if needed; WAL mode; one file holds many
/// sessions).
pub(crate) fn open_store(store_path: *const c_char) -> Result<Arc<dyn SessionStore>, pi_error> {
    let path = arg_str(store_path, "store_path")?;
    let store = SqliteStore::open(path).map_err(|error| session_error(error.into()))?;
    Ok(Arc::new(store))
}

/// Opens the SQLite store at `store_path`, which must exist.
fn open_existing_store(store_path: *const c_char) -> Result<SqliteStore, pi_error> {
    // Checked first by the callers' other arguments: a refused call leaves the file as it was.
    let path = arg_str(store_path, "store_path")?;
    SqliteStore::open_existing(path).map_err(|error| session_error(error.into()))
}

/// The ids of the sessions in the SQLite file at `store_path` (which must exist), as a sorted
/// JSON array of strings. On success `*json_out` receives it; free it with `pi_string_free`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `SESSION` (the file does not exist or cannot be
/// read).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_list_json(
    store_path: *const c_char,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let out = Out::new(json_out, "json_out")?;
        let store = open_existing_store(store_path)?;
        let ids = store.sessions().map_err(|error| session_error(error.into()))?;
        out.write_json(&ids, "session ids")
    }
}

/// Deletes session `session_id` from the SQLite file at `store_path` (which must exist): its
/// journal goes, and the id opens as a new, empty session afterwards. `*deleted_out` receives
/// whether the session had a journal. The file keeps its size (SQLite reuses the pages).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_ARGUMENT` (an empty `session_id`),
/// `SESSION_IN_USE` (a `pi_session` in this process or another has the session open: free it
/// first), `SESSION` (the file does not exist or cannot be written).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_delete(
    store_path: *const c_char,
    session_id: *const c_char,
    deleted_out: *mut bool,
) -> *mut pi_error {
    ffi_fallible! {
        let id = arg_str(session_id, "session_id")?;
        let out = Out::new(deleted_out, "deleted_out")?;
        if id.is_empty() {
            return Err(session_error(SessionError::EmptySessionId));
        }
        let store = open_existing_store(store_path)?;
        let deleted = store.delete(id).map_err(|error| session_error(error.into()))?;
        out.write(deleted);
        Ok(())
    }
}

/// Opens session `session_id` in the SQLite file at `store_path` (created if needed) with
/// `model` (copied), `system_prompt` (may be empty, not NULL), `settings_json` (NULL or core's
/// `AgentSettings`, as `pi_agent_new` takes), `compaction_json` (NULL or
/// `{"enabled":true,"reserveTokens":16384,"keepRecentTokens":20000}`, any subset) and the
/// `tools_len` tools of `tools` (made by `pi_tool_new`; ownership of every one is taken in
/// every case, success or error, so do not use them afterwards; `tools` may be NULL when
/// `tools_len` is 0).
///
/// A session that exists resumes from its journal: a run left unfinished goes on at once. A
/// model call that was in flight is made again (its records carry the next `attempt`); a tool
/// call that was in flight runs again only if its tool is replay-safe
/// (`pi_tool_set_replay_safe`), else it ends with an `interrupted` error result.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `INVALID_ARGUMENT` (an empty
/// `session_id`), `SESSION_IN_USE` (another `pi_session`, in this process or another, has the
/// session open), `SESSION` (the file cannot be opened, or its journal is damaged).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_open(
    store_path: *const c_char,
    session_id: *const c_char,
    model: *const pi_model,
    system_prompt: *const c_char,
    settings_json: *const c_char,
    compaction_json: *const c_char,
    tools: *const *mut pi_tool,
    tools_len: usize,
    session_out: *mut *mut pi_session,
) -> *mut pi_error {
    // Take the tools first, so that every exit frees them.
    let taken = take_tools(tools, tools_len);
    ffi_fallible! {
        let mut taken = taken;
        if tools.is_null() && tools_len > 0 {
            return Err(pi_error::null_argument("tools"));
        }
        let release = |taken: &mut Vec<pi_tool>| {
            for tool in taken.drain(..) {
                pi_tool_free(into_handle(tool));
            }
        };
        let parsed = (|| {
            let store = open_store(store_path)?;
            let id = arg_str(session_id, "session_id")?;
            let model = arg_ref(model, "model")?;
            let system_prompt = arg_str(system_prompt, "system_prompt")?;
            let settings: AgentSettings = match arg_opt_str(settings_json, "settings_json")? {
                Some(json) => parse_object(json, "settings_json")?,
                None => AgentSettings::default(),
            };
            let compaction: CompactionSettings =
                match arg_opt_str(compaction_json, "compaction_json")? {
                    Some(json) => parse_object(json, "compaction_json")?,
                    None => CompactionSettings::default(),
                };
            let out = Out::new(session_out, "session_out")?;
            Ok((store, id, model, system_prompt, settings, compaction, out))
        })();
        let (store, id, model, system_prompt, settings, compaction, out) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => {
                release(&mut taken);
                return Err(error);
            }
        };
        let calls = Arc::new(CallsInFlight::default());
        let registrations = Registrations::default();
        let site = CallbackSite {
            calls: Some(Arc::clone(&calls)),
            agent_key: Arc::as_ptr(&calls) as usize,
        };
        let tools: Vec<Arc<dyn AgentTool>> = taken
            .into_iter()
            .map(|tool| Arc::new(tool.into_agent_tool(&registrations, site.clone())) as _)
            .collect();
        let mut options = SessionOptions::new(model.model.clone());
        options.system_prompt = system_prompt.to_owned();
        options.settings = settings;
        options.compaction = compaction;
        options.tools = tools;
        let session = match block_on("pi_session_open", Session::open(store, id, options))? {
            Ok(session) => session,
            Err(error) => {
                registrations.release_all();
                return Err(session_error(error));
            }
        };
        out.write(into_handle(pi_session {
            session,
            calls,
            registrations,
        }));
        Ok(())
    }
}

/// Takes ownership of the `tools_len` tool handles at `tools` (none when `tools` is NULL).
fn take_tools(tools: *const *mut pi_tool, tools_len: usize) -> Vec<pi_tool> {
    if tools.is_null() {
        return Vec::new();
    }
    // SAFETY: per the contract, `tools` points to `tools_len` handles from `pi_tool_new`.
    unsafe { std::slice::from_raw_parts(tools, tools_len) }
        .iter()
        .filter_map(|&tool| take_handle(tool).map(|tool| *tool))
        .collect()
}

fn request(
    session: *mut pi_session,
    request_id: *const c_char,
    text: *const c_char,
    receipt_json_out: *mut *mut c_char,
    send: fn(&Session, &str, UserMessage) -> Result<Receipt, SessionError>,
) -> Result<(), pi_error> {
    let session = arg_ref(session, "session")?;
    let request_id = arg_str(request_id, "request_id")?;
    let text = arg_str(text, "text")?;
    let receipt =
        send(&session.session, request_id, UserMessage::text(text)).map_err(session_error)?;
    if !receipt_json_out.is_null() {
        let json = to_json(&receipt, "receipt")?;
        // SAFETY: a non-NULL out-param points to writable storage (the API contract).
        unsafe { receipt_json_out.write(into_c_string(json)) };
    }
    Ok(())
}

/// Asks for a run with the user message `text` (while a run goes on, it waits as a
/// follow-up). `request_id` (not empty) makes it idempotent: the same id again does nothing
/// and gives the same receipt, also after a restart. Returns at once; the run goes on in the
/// background (`pi_session_wait_idle`, `pi_session_subscribe`). `receipt_json_out` (nullable)
/// receives `{"requestId":"r1","kind":"prompt","seq":41}` (free with `pi_string_free`): `seq`
/// is the journal's last record when it was accepted.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_ARGUMENT` (empty id), `SESSION` (the
/// session stopped, or the id was used for another kind of request).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_prompt(
    session: *mut pi_session,
    request_id: *const c_char,
    text: *const c_char,
    receipt_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        request(session, request_id, text, receipt_json_out, |s, id, m| s.prompt(id, m))
    }
}

/// Injects the user message `text` after the current turn's tool calls (starts a run when
/// idle). As `pi_session_prompt` otherwise.
///
/// Errors and thread-safety: as `pi_session_prompt`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_steer(
    session: *mut pi_session,
    request_id: *const c_char,
    text: *const c_char,
    receipt_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        request(session, request_id, text, receipt_json_out, |s, id, m| s.steer(id, m))
    }
}

/// Runs the user message `text` when the agent would otherwise stop (starts a run when idle).
/// As `pi_session_prompt` otherwise.
///
/// Errors and thread-safety: as `pi_session_prompt`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_follow_up(
    session: *mut pi_session,
    request_id: *const c_char,
    text: *const c_char,
    receipt_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        request(session, request_id, text, receipt_json_out, |s, id, m| s.follow_up(id, m))
    }
}

/// Aborts the current run (the partial answer is kept in an `aborted` message; running tools
/// get `aborted` results). No-op when idle or when `session` is NULL.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_abort(session: *mut pi_session) {
    ffi_boundary! {
        if let Ok(session) = arg_ref(session, "session") {
            session.session.abort();
        }
    }
}

/// Blocks until no run goes on and no request waits.
///
/// Errors: `NULL_ARGUMENT`, `SESSION` (the session stopped: its store failed),
/// `CALLED_FROM_CALLBACK` (from one of the session's tool callbacks: it would wait for itself).
/// Thread-safety: may be called from any thread, not from the session's tool callbacks.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_wait_idle(session: *mut pi_session) -> *mut pi_error {
    method(session, "session", |session| {
        refuse_own_callback(session, "pi_session_wait_idle")?;
        block_on("pi_session_wait_idle", session.session.wait_idle())?.map_err(session_error)
    })
}

/// The transcript as a JSON array of messages (every message whose `message_end` was
/// journalled). On success `*json_out` receives it; free it with `pi_string_free`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_transcript_json(
    session: *const pi_session,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(session, "session", |session| {
        let out = Out::new(json_out, "json_out")?;
        out.write_json(&session.session.transcript(), "transcript")
    })
}

/// The seq of the last journalled record (0 when none, or when `session` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_last_seq(session: *const pi_session) -> u64 {
    ffi_boundary! {
        arg_ref(session, "session").map_or(0, |session| session.session.last_seq())
    }
}

/// Summarises the older turns now (before the next model call when a run goes on) and blocks
/// until done. `*compaction_json_out` receives `{"summary":"...","covers":N,"tokensBefore":N}`,
/// or `null` when there was nothing new to compact; free it with `pi_string_free`.
///
/// Errors: `NULL_ARGUMENT`, `SESSION` (the summary call failed: the session goes on
/// uncompacted, and this cut point is not tried again), `CALLED_FROM_CALLBACK` (from one of
/// the session's tool callbacks).
/// Thread-safety: may be called from any thread, not from the session's tool callbacks.
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_compact(
    session: *mut pi_session,
    compaction_json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(session, "session", |session| {
        let out = Out::new(compaction_json_out, "compaction_json_out")?;
        refuse_own_callback(session, "pi_session_compact")?;
        let compaction =
            block_on("pi_session_compact", session.session.compact())?.map_err(session_error)?;
        out.write_json(&compaction, "compaction")
    })
}

/// Whether the current thread runs one of `session`'s tool callbacks.
fn inside_own_callback(session: &pi_session) -> bool {
    let key = Arc::as_ptr(&session.calls) as usize;
    matches!(current_scope(), Scope::Callback(current) if current == key)
}

/// `what` waits for the session's run, which waits for its tool callbacks: refused from one.
fn refuse_own_callback(session: &pi_session, what: &str) -> Result<(), pi_error> {
    if inside_own_callback(session) {
        return Err(pi_error::new(
            pi_error_kind::CalledFromCallback,
            format!(
                "`{what}` cannot be called from a tool callback of the same session: it would wait for itself"
            ),
        ));
    }
    Ok(())
}

/// Frees a session: it stops where it is, as a killed process would (a step in flight is
/// resumed when the session is opened again), waits for its tool callbacks to return and
/// calls their `free_user_data`. NULL is a no-op.
///
/// From one of the session's own tool callbacks it cannot wait for that callback: the session
/// stops at once, and each `free_user_data` is called when its last running callback has
/// returned (possibly on a runtime thread).
///
/// Thread-safety: call once, when no other call on the session is in progress (except its own
/// tool callbacks).
#[unsafe(no_mangle)]
pub extern "C" fn pi_session_free(session: *mut pi_session) {
    ffi_boundary! {
        let Some(session) = take_handle(session) else {
            return;
        };
        let inside_own_callback = inside_own_callback(&session);
        session.session.close();
        let pi_session { session: inner, registrations, calls, .. } = *session;
        if inside_own_callback {
            drop(inner);
            registrations.forget_all();
        } else {
            calls.wait_until_idle();
            drop(inner);
            registrations.release_all();
        }
    }
}
