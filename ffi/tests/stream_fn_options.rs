//! A C stream function that reads the call's options (`pi_stream_fn_call_options_json`),
//! changes them and opens the stream with them (`pi_stream_fn_call_open`): the view leaves the
//! credential headers out, and the request must still carry them (it went out without them,
//! a 401 from a provider that takes its key in a header).

use std::ffi::{CString, c_void};
use std::ptr;
use std::sync::{Arc, Mutex};

use pi_agent::ai::providers::faux::{
    FauxProvider, FauxResponse, faux_assistant_message, faux_text,
};
use pi_agent_ffi::agent::{pi_agent_free, pi_agent_new, pi_agent_prompt};
use pi_agent_ffi::agent_hooks::pi_agent_set_stream_fn;
use pi_agent_ffi::error::{pi_error, pi_error_free, pi_error_message};
use pi_agent_ffi::model::{pi_model_free, pi_model_from_json};
use pi_agent_ffi::model_hooks::{
    pi_stream_fn_call, pi_stream_fn_call_open, pi_stream_fn_call_options_json,
};
use pi_agent_ffi::string::pi_str;
use serde_json::Value;

fn text(s: pi_str) -> String {
    if s.len == 0 {
        return String::new();
    }
    // SAFETY: the library passes a view of `len` valid UTF-8 bytes, valid during the call.
    let bytes = unsafe { std::slice::from_raw_parts(s.data.cast::<u8>(), s.len) };
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn ok(error: *mut pi_error) {
    if !error.is_null() {
        let message = text(pi_error_message(error));
        pi_error_free(error);
        panic!("{message}");
    }
}

/// Reopens with the options it was shown, one field changed.
unsafe extern "C" fn reopen_with_edited_options(
    _user_data: *mut c_void,
    call: *mut pi_stream_fn_call,
) -> i32 {
    let shown = text(pi_stream_fn_call_options_json(call));
    assert!(!shown.contains("hdr-secret"), "{shown}");
    let mut options: Value = serde_json::from_str(&shown).unwrap();
    options["sessionId"] = "edited".into();
    let edited = CString::new(options.to_string()).unwrap();
    ok(pi_stream_fn_call_open(
        call,
        ptr::null(),
        ptr::null(),
        edited.as_ptr(),
    ));
    0
}

#[test]
fn options_changed_by_a_stream_fn_keep_the_calls_credential_headers() {
    let faux = FauxProvider::register();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    faux.set_responses([FauxResponse::Factory(Arc::new(move |_, options, _, _| {
        record
            .lock()
            .unwrap()
            .push((options.session_id.clone(), options.headers.clone()));
        faux_assistant_message(vec![faux_text("ok")])
    }))]);
    let model_json = CString::new(serde_json::to_string(&faux.model()).unwrap()).unwrap();
    let mut model = ptr::null_mut();
    ok(pi_model_from_json(model_json.as_ptr(), &mut model));
    let settings = CString::new(
        r#"{"streamOptions":{"headers":{"x-api-key":"hdr-secret-0123","x-trace":"t1"}}}"#,
    )
    .unwrap();
    let mut agent = ptr::null_mut();
    ok(pi_agent_new(
        model,
        c"".as_ptr(),
        settings.as_ptr(),
        &mut agent,
    ));
    ok(pi_agent_set_stream_fn(
        agent,
        Some(reopen_with_edited_options),
        ptr::null_mut(),
        None,
    ));
    ok(pi_agent_prompt(agent, c"go".as_ptr()));
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        let (session, headers) = &seen[0];
        assert_eq!(session.as_deref(), Some("edited"));
        assert_eq!(
            headers.get("x-api-key").map(String::as_str),
            Some("hdr-secret-0123")
        );
        assert_eq!(headers.get("x-trace").map(String::as_str), Some("t1"));
    }
    pi_agent_free(agent);
    pi_model_free(model);
}
