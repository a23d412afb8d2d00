//! API keys from the environment (pi's `getEnvApiKey`): which variables a provider reads,
//! which of them are set, and, only when asked for explicitly, the key itself.

use std::ffi::c_char;

use pi_agent::ai::{env_key_names, find_env_keys, get_env_api_key};

use crate::args::{Out, arg_str, write_json};
use crate::error::pi_error;
use crate::string::into_c_string;

/// Writes the environment variables `provider` reads its API key from, in the order they are
/// tried, as a JSON array of strings to `*json_out` (free it with `pi_string_free`), e.g.
/// `["ANTHROPIC_OAUTH_TOKEN","ANTHROPIC_API_KEY"]`; `[]` for a provider without one. Reads no
/// variable.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_env_key_names_json(
    provider: *const c_char,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let provider = arg_str(provider, "provider")?;
        write_json(json_out, env_key_names(provider), "names")
    }
}

/// Writes the names (never the values) of the variables of `pi_env_key_names_json` that
/// are set and not empty, as a JSON array to `*json_out` (free it with `pi_string_free`). `[]`
/// means no key for `provider` in the environment; use it to check for a key without handling
/// the secret.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_find_env_keys_json(
    provider: *const c_char,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let provider = arg_str(provider, "provider")?;
        write_json(json_out, &find_env_keys(provider), "names")
    }
}

/// Writes the API key for `provider` from the environment (pi's `getEnvApiKey`: the first
/// variable of `pi_env_key_names_json` that is set and not empty) to `*api_key_out`, or
/// NULL when there is none. This returns a secret: only call it to pass the key on (the
/// library finds it by itself for requests), and free it with `pi_string_free` soon.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_get_env_api_key(
    provider: *const c_char,
    api_key_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let provider = arg_str(provider, "provider")?;
        let out = Out::new(api_key_out, "api_key_out")?;
        let key = get_env_api_key(provider);
        out.write(key.map_or(std::ptr::null_mut(), |key| into_c_string(key.expose().to_owned())));
        Ok(())
    }
}
