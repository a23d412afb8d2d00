//! The checks exported functions run on their arguments: handles that must not be NULL,
//! `const char *` strings that must be UTF-8, JSON in core's shapes, and out-params.

use std::ffi::{CStr, c_char};

use pi_agent::ai::AssistantMessage;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{into_c_result, parse_json, pi_error, pi_error_kind, to_json};
use crate::string::into_c_string;

/// Borrows the object behind a handle, or fails with `PI_ERROR_KIND_NULL_ARGUMENT`.
///
/// The C caller guarantees what [`crate::boundary::opt_ref`] says.
pub(crate) fn arg_ref<'a, T>(ptr: *const T, name: &str) -> Result<&'a T, pi_error> {
    crate::boundary::opt_ref(ptr).ok_or_else(|| pi_error::null_argument(name))
}

/// The body of a fallible function on an object (a method): `body` runs on the object behind
/// `handle` (`PI_ERROR_KIND_NULL_ARGUMENT` when it is NULL) inside the panic boundary, and its
/// outcome is the `pi_error *` the C caller gets, as with `ffi_fallible!`.
pub(crate) fn method<T>(
    handle: *const T,
    name: &str,
    body: impl FnOnce(&T) -> Result<(), pi_error>,
) -> *mut pi_error {
    into_c_result(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || body(arg_ref(handle, name)?),
    )))
}

/// Borrows the object behind a handle for a change, or fails with
/// `PI_ERROR_KIND_NULL_ARGUMENT`: for objects documented as used by one thread at a time.
pub(crate) fn arg_mut<'a, T>(ptr: *mut T, name: &str) -> Result<&'a mut T, pi_error> {
    // SAFETY: per the API contract, a non-NULL handle points to a live object this library
    // allocated, and no other call uses it at the same time; `as_mut` handles NULL.
    unsafe { ptr.as_mut() }.ok_or_else(|| pi_error::null_argument(name))
}

/// Reads a `const char *` argument as UTF-8, rejecting NULL and invalid UTF-8.
pub(crate) fn arg_str<'a>(ptr: *const c_char, name: &str) -> Result<&'a str, pi_error> {
    arg_opt_str(ptr, name)?.ok_or_else(|| pi_error::null_argument(name))
}

/// Reads a `const char *` argument as JSON of core's type `T`, naming the argument in errors.
pub(crate) fn arg_json<T: DeserializeOwned>(ptr: *const c_char, name: &str) -> Result<T, pi_error> {
    parse_json(arg_str(ptr, name)?, name)
}

/// Reads a `const char *` argument as a pi-shaped assistant message (core's
/// `AssistantMessage`); a message with another `role` is refused by name.
pub(crate) fn arg_assistant_message(
    ptr: *const c_char,
    name: &str,
) -> Result<AssistantMessage, pi_error> {
    let value: Value = arg_json(ptr, name)?;
    if let Some(role) = value.get("role").filter(|role| *role != "assistant") {
        return Err(pi_error::new(
            pi_error_kind::InvalidJson,
            format!("`{name}` is not valid: expected role `assistant`, found {role}"),
        ));
    }
    serde_json::from_value(value).map_err(|error| pi_error::invalid_json(name, &error))
}

/// Reads a nullable `const char *` argument as UTF-8 (`None` for NULL).
pub(crate) fn arg_opt_str<'a>(ptr: *const c_char, name: &str) -> Result<Option<&'a str>, pi_error> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: per the API contract, a non-NULL string argument is NUL-terminated and stays
    // valid and unchanged for the duration of the call.
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes.to_str().map(Some).map_err(|error| {
        pi_error::new(
            pi_error_kind::InvalidUtf8,
            format!("`{name}` is not valid UTF-8: {error}"),
        )
    })
}

/// An out-param checked to be non-NULL; written only on success.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks `ptr`, failing with `PI_ERROR_KIND_NULL_ARGUMENT`.
    pub(crate) fn new(ptr: *mut T, name: &str) -> Result<Self, pi_error> {
        if ptr.is_null() {
            Err(pi_error::null_argument(name))
        } else {
            Ok(Self(ptr))
        }
    }

    /// Writes the value (without reading or dropping what was there).
    pub(crate) fn write(self, value: T) {
        // SAFETY: checked non-NULL in `new`; per the API contract it points to writable memory
        // for a `T`.
        unsafe { self.0.write(value) }
    }
}

/// Writes `value` as JSON (a new string, freed with `pi_string_free`) to the out-param
/// `json_out`; `what` names the value should it not serialize.
pub(crate) fn write_json<T: Serialize + ?Sized>(
    json_out: *mut *mut c_char,
    value: &T,
    what: &str,
) -> Result<(), pi_error> {
    Out::new(json_out, "json_out")?.write_json(value, what)
}

impl Out<*mut c_char> {
    /// Writes `value` as JSON (a new string, freed with `pi_string_free`); `what` names the
    /// value should it not serialize (then nothing is written).
    pub(crate) fn write_json<T: Serialize + ?Sized>(
        self,
        value: &T,
        what: &str,
    ) -> Result<(), pi_error> {
        self.write(into_c_string(to_json(value, what)?));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::ptr;

    use super::*;
    use crate::error::message_of;

    #[test]
    fn arguments_are_checked() {
        let error = arg_str(ptr::null(), "text").unwrap_err();
        assert_eq!(message_of(&error), "`text` must not be NULL");

        let bad = c"\xff";
        let error = arg_str(bad.as_ptr(), "text").unwrap_err();
        assert!(message_of(&error).contains("is not valid UTF-8"));

        assert_eq!(arg_opt_str(ptr::null(), "x").unwrap(), None);
        assert_eq!(arg_opt_str(c"hé".as_ptr(), "x").unwrap(), Some("hé"));
        assert!(Out::<u64>::new(ptr::null_mut(), "out").is_err());
        assert!(arg_json::<Vec<u8>>(c"[1,".as_ptr(), "json").is_err());
    }
}
