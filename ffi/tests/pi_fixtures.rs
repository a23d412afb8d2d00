//! Replays every AI-level pi transcript (`tests/fixtures/pi`, see
//! `scripts/pi-fixtures/README.md`) through the C ABI, the way a C program does: the cdylib
//! cargo built for this test run is loaded with `dlopen`, and its exported functions are called
//! with the types `include/pi_agent.h` declares: `pi_model_from_json`, `pi_stream_open` (or
//! `pi_stream_open_simple` for fixtures of pi's `streamSimple`) with the fixture's context and
//! options JSON, `pi_stream_next` until it returns false with each event's JSON from
//! `pi_stream_event_json` (calling `pi_stream_abort` where the fixture aborts),
//! `pi_stream_result_json`, the `_free`s. Options
//! `pi_stream_open` refuses are one mismatch at `/options`. The event
//! JSON bytes C receives, the final message and the requests we sent are compared with pi's
//! after the shared normalisation (`core/tests/support/pi_fixtures.rs`); every remaining
//! difference must be listed in `tests/fixtures/pi/known_gaps.json` for layer `c`.
//!
//! (The crate's Rust items cannot be imported here: its lib is named `pi_agent`, like the core
//! crate it depends on, so the name is ambiguous in this test crate.)

#[path = "../../core/tests/support/pi_fixtures.rs"]
mod pi_fixtures;

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::PathBuf;
use std::ptr;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use pi_fixtures::Fixture;
use pi_mock_server::MockServer;
use serde_json::{Value, json};

/// `pi_str` of `include/pi_agent.h`.
#[repr(C)]
#[derive(Clone, Copy)]
struct PiStr {
    data: *const c_char,
    len: usize,
}

/// `pi_event` of `include/pi_agent.h`.
#[repr(C)]
struct PiEvent {
    kind: u32,
    content_index: usize,
    delta: PiStr,
    json: PiStr,
}

type Handle = *mut c_void;
type Error = *mut c_void;

#[link(name = "dl")]
unsafe extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}

const RTLD_NOW: c_int = 2;

type ModelFromJson = unsafe extern "C" fn(*const c_char, *mut Handle) -> Error;
type Free = unsafe extern "C" fn(Handle);
type StreamOpen = unsafe extern "C" fn(Handle, *const c_char, *const c_char, *mut Handle) -> Error;
type StreamNext = unsafe extern "C" fn(Handle, *mut PiEvent) -> bool;
type EventJson = unsafe extern "C" fn(Handle) -> PiStr;
type ResultJson = unsafe extern "C" fn(Handle, *mut *mut c_char) -> Error;
type StringFree = unsafe extern "C" fn(*mut c_char);
type ErrorMessage = unsafe extern "C" fn(Error) -> PiStr;

/// The functions of `include/pi_agent.h` this test calls.
struct Api {
    model_from_json: ModelFromJson,
    model_free: Free,
    stream_open: StreamOpen,
    stream_open_simple: StreamOpen,
    stream_next: StreamNext,
    stream_event_json: EventJson,
    stream_result_json: ResultJson,
    stream_abort: Free,
    stream_free: Free,
    string_free: StringFree,
    error_message: ErrorMessage,
    error_free: Free,
}

/// `target/<profile>/deps/libpi_agent_ffi.so` (the C library before installation renames it
/// `libpi_agent`), next to this test executable (see `c_programs.rs`: the lib's `rlib` crate
/// type makes cargo build the cdylib for the tests).
fn library_path() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let path = exe.parent().expect("test directory").join(format!(
        "{}pi_agent_ffi{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(path.exists(), "{} is missing", path.display());
    path
}

impl Api {
    fn load() -> Api {
        let path = CString::new(library_path().to_string_lossy().into_owned()).expect("path");
        // SAFETY: dlopen/dlsym/dlerror are called as documented; the library stays loaded for
        // the whole process (never dlclosed), so the function pointers stay valid.
        unsafe {
            let handle = dlopen(path.as_ptr(), RTLD_NOW);
            if handle.is_null() {
                panic!("dlopen: {:?}", CStr::from_ptr(dlerror()));
            }
            let symbol = |name: &CStr| {
                let f = dlsym(handle, name.as_ptr());
                assert!(!f.is_null(), "{name:?} is not exported");
                f
            };
            macro_rules! function {
                ($name:literal, $type:ty) => {
                    std::mem::transmute::<*mut c_void, $type>(symbol($name))
                };
            }
            Api {
                model_from_json: function!(c"pi_model_from_json", ModelFromJson),
                model_free: function!(c"pi_model_free", Free),
                stream_open: function!(c"pi_stream_open", StreamOpen),
                stream_open_simple: function!(c"pi_stream_open_simple", StreamOpen),
                stream_next: function!(c"pi_stream_next", StreamNext),
                stream_event_json: function!(c"pi_stream_event_json", EventJson),
                stream_result_json: function!(c"pi_stream_result_json", ResultJson),
                stream_abort: function!(c"pi_stream_abort", Free),
                stream_free: function!(c"pi_stream_free", Free),
                string_free: function!(c"pi_string_free", StringFree),
                error_message: function!(c"pi_error_message", ErrorMessage),
                error_free: function!(c"pi_error_free", Free),
            }
        }
    }

    /// Panics with the error's message if `error` is not NULL (and frees it).
    fn check(&self, error: Error, what: &str) {
        if !error.is_null() {
            // SAFETY: a non-NULL error from the library, read then freed once.
            let message = unsafe {
                let message = text((self.error_message)(error));
                (self.error_free)(error);
                message
            };
            panic!("{what}: {message}");
        }
    }
}

/// Copies a borrowed `pi_str`.
///
/// # Safety
///
/// `s` must be a view the library returned and that is still valid.
unsafe fn text(s: PiStr) -> String {
    if s.len == 0 {
        return String::new();
    }
    // SAFETY: the library guarantees `data` points to `len` valid bytes while the view lives.
    let bytes = unsafe { std::slice::from_raw_parts(s.data.cast::<u8>(), s.len) };
    String::from_utf8(bytes.to_vec()).expect("UTF-8 from the C ABI")
}

fn c_string(value: &Value) -> CString {
    CString::new(value.to_string()).expect("JSON has no NUL")
}

/// The event kind names of `PI_STREAM_EVENT_KIND_*`, by value.
const KINDS: [&str; 13] = [
    "none",
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
];

/// Streams one fixture through the C ABI; returns `{events, result}`, or the message of the
/// error `pi_stream_open` gave for the fixture's options.
fn stream_through_c(api: &Api, fixture: &Fixture, origin: &str) -> Result<Value, String> {
    let model_json = c_string(&fixture.model(origin));
    let context_json = c_string(&fixture.json["context"]);
    let options_json = c_string(&fixture.json["options"]);
    // Abort where pi stopped: after its last event that is not a consequence of the abort
    // (the `*_end`s and the terminal event).
    let abort_at = fixture.json.get("abortAfter").and_then(|_| {
        fixture.json["events"]
            .as_array()?
            .iter()
            .rposition(|event| {
                !matches!(
                    event["type"].as_str().unwrap_or(""),
                    "text_end" | "thinking_end" | "toolcall_end" | "error" | "done"
                )
            })
            .map(|index| index + 1)
    });
    let empty = PiStr {
        data: c"".as_ptr(),
        len: 0,
    };
    let mut events = Vec::new();
    // SAFETY: every call follows include/pi_agent.h: valid NUL-terminated inputs, out-params
    // read only after success, views read before the next call on the stream, each handle
    // freed once.
    let result = unsafe {
        let mut model: Handle = ptr::null_mut();
        api.check(
            (api.model_from_json)(model_json.as_ptr(), &mut model),
            "pi_model_from_json",
        );
        let mut stream: Handle = ptr::null_mut();
        let open = match fixture.json["call"].as_str() {
            Some("streamSimple") => api.stream_open_simple,
            _ => api.stream_open,
        };
        let error = open(
            model,
            context_json.as_ptr(),
            options_json.as_ptr(),
            &mut stream,
        );
        if !error.is_null() {
            let message = text((api.error_message)(error));
            (api.error_free)(error);
            (api.model_free)(model);
            return Err(message);
        }
        let mut event = PiEvent {
            kind: 0,
            content_index: 0,
            delta: empty,
            json: empty,
        };
        while (api.stream_next)(stream, &mut event) {
            // JSON only on demand: the event itself carries none.
            assert_eq!(event.json.len, 0, "{}: eager JSON", fixture.name);
            let json: Value = serde_json::from_str(&text((api.stream_event_json)(stream)))
                .expect("event JSON from C");
            let kind = KINDS.get(event.kind as usize).copied().unwrap_or("?");
            assert_eq!(json["type"], kind, "{}: kind", fixture.name);
            if let Some(delta) = json["delta"].as_str() {
                assert_eq!(text(event.delta), delta, "{}: delta view", fixture.name);
            }
            if let Some(index) = json["contentIndex"].as_u64() {
                assert_eq!(event.content_index as u64, index, "{}: index", fixture.name);
            }
            events.push(json);
            if abort_at == Some(events.len()) {
                (api.stream_abort)(stream);
            }
        }
        let mut result: *mut c_char = ptr::null_mut();
        api.check(
            (api.stream_result_json)(stream, &mut result),
            "pi_stream_result_json",
        );
        let result_text = CStr::from_ptr(result).to_str().expect("UTF-8").to_owned();
        (api.string_free)(result);
        (api.stream_free)(stream);
        (api.model_free)(model);
        result_text
    };
    Ok(
        json!({"events": events, "result": serde_json::from_str::<Value>(&result).expect("message JSON")}),
    )
}

/// Hang guard for the whole replay (a healthy one takes well under a second).
const TIMEOUT: Duration = Duration::from_secs(300);

#[test]
fn pi_fixtures_replay_through_the_c_abi() {
    // `pi_stream_next` blocks: the replay runs on a thread of its own so that a hang fails the
    // test instead of stalling it.
    let (done, finished) = mpsc::channel();
    let replay = std::thread::spawn(move || {
        replay_all();
        let _ = done.send(());
    });
    match finished.recv_timeout(TIMEOUT) {
        Ok(()) => replay.join().expect("replay thread"),
        // The thread panicked (its assertion message is the failure): re-raise it here.
        Err(RecvTimeoutError::Disconnected) => {
            if let Err(panic) = replay.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(RecvTimeoutError::Timeout) => panic!("the C ABI replay hung for {TIMEOUT:?}"),
    }
}

fn replay_all() {
    let api = Api::load();
    // The mock server runs on a runtime of its own; the C calls block this (plain) thread.
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mut outcomes = Vec::new();
    for fixture in pi_fixtures::load_all()
        .into_iter()
        .filter(|f| f.kind() == "stream")
    {
        let server = runtime.block_on(MockServer::start()).expect("mock server");
        let origin = format!("http://{}", server.addr());
        server.push_all(fixture.replies());
        match stream_through_c(&api, &fixture, &origin) {
            Ok(mut observed) => {
                let log = server.requests();
                observed["requests"] = pi_fixtures::requests_json(
                    log.iter().map(|r| {
                        (
                            r.method.as_str(),
                            r.path.as_str(),
                            r.headers.as_slice(),
                            &r.body,
                        )
                    }),
                    &origin,
                );
                let observed = pi_fixtures::unmock(observed, &origin);
                outcomes.push(pi_fixtures::compare(&fixture, &observed));
            }
            Err(message) => outcomes.push(pi_fixtures::refused_options(&fixture, message)),
        }
        runtime.block_on(async move { drop(server) });
    }
    assert!(!outcomes.is_empty());
    pi_fixtures::check_against_known_gaps("c", &outcomes);
}
