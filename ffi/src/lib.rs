//! # pi-agent C API
//!
//! A thin C ABI over the `pi-agent` crate: it translates between C and Rust and holds no logic
//! of its own. The header `include/pi_agent.h` is generated from this crate by cbindgen (see
//! `ffi/cbindgen.toml`) and committed; `ffi/tests/header.rs` fails when it drifts.
//!
//! ## Conventions
//!
//! - Every name is `pi_<type>_<verb>`. Objects are opaque handles made by `pi_<type>_new` (or
//!   another constructor) and destroyed by `pi_<type>_free`, exactly once. Every `_free`
//!   function accepts NULL and then does nothing.
//! - Fallible functions return `pi_error *`: NULL on success, otherwise an error object the
//!   caller frees with `pi_error_free`. `pi_error_get_kind` gives a stable `pi_error_kind`
//!   and `pi_error_message` a readable message. Out-params (named `*_out`) are written only on
//!   success and left untouched on failure.
//! - Methods take the object first, then inputs, then out-params. A `const` object pointer
//!   means the call does not change the object.
//! - String inputs are `const char *`: NUL-terminated UTF-8. NULL (where not documented as
//!   allowed) is rejected with `PI_ERROR_KIND_NULL_ARGUMENT`, invalid UTF-8 with
//!   `PI_ERROR_KIND_INVALID_UTF8`. Structured inputs (models, contexts, options, messages, tool
//!   schemas) are JSON in pi's shapes; bad JSON gives `PI_ERROR_KIND_INVALID_JSON`.
//! - Borrowed string outputs are `pi_str { data, len }`: UTF-8, not necessarily NUL-terminated
//!   (always use `len`), never NULL `data`. How long one stays valid is stated by the function
//!   that returns it. Owned string outputs are `char *` (NUL-terminated) and are freed with
//!   `pi_string_free`.
//! - A Rust panic never crosses the boundary: it becomes `PI_ERROR_KIND_PANIC` (or NULL, false
//!   or 0 for functions that return no error).
//! - Callbacks take `void *user_data` first. Each registration also takes a nullable
//!   `free_user_data`, called exactly once when the library no longer needs `user_data`.
//!   `user_data` is used from the library's runtime threads, so it must be safe to use there.
//!   Event callbacks run on the runtime's worker threads, one event at a time. Tools and the
//!   callbacks a run awaits (`pi_agent_set_before_tool_call`, `_transform_context`,
//!   `_get_api_key`, faux factories, OAuth prompts, ...) run on its blocking pool, several at
//!   once when tool calls run in parallel, so an abort or a watchdog stops waiting for one that
//!   blocks (see `callback.rs`). Synchronous ones (`prepare_arguments`, `convert_to_llm`,
//!   `stream_fn`, `on_payload`, `on_response`) run on the runtime thread that calls them, which
//!   leaves the worker pool meanwhile.
//! - Shapes are core's: every JSON input and output is the serde form of a `pi-agent` type
//!   (`StreamOptions`, `AgentSettings`, messages, events, hook contexts and results, ...), so
//!   this crate declares no shapes of its own and core's messages name unknown keys.
//! - All asynchronous work runs on one process-wide tokio runtime (2 worker threads plus a
//!   blocking pool), started on first use. Blocking calls (`pi_agent_prompt`,
//!   `pi_agent_continue`, `pi_agent_wait_for_idle`, `pi_stream_next`, ...) park the calling
//!   thread until they are done; they must not be called from an event callback (they then
//!   fail with `PI_ERROR_KIND_CALLED_FROM_CALLBACK`).
//! - Thread-safety is stated in every function's documentation.

#![allow(non_camel_case_types)]

// The boundary macros first (`macro_rules!` are visible only below their module): the panic
// boundary, then the errors and their `ffi_fallible!`.
#[macro_use]
mod boundary;
#[macro_use]
pub mod error;

pub mod agent;
pub mod agent_hooks;
pub mod agent_run;
pub mod agent_settings;
pub mod agent_state;
mod args;
mod callback;
pub mod env_keys;
pub mod event;
pub mod faux;
pub mod hook;
mod hook_context;
pub mod log;
pub mod mcp;
pub mod memory;
pub mod message_error;
pub mod messages;
pub mod model;
pub mod model_hooks;
pub mod oauth;
mod options;
pub mod overflow;
pub mod prepare_arguments;
mod runtime;
pub mod session;
pub mod session_subscription;
pub mod shutdown;
pub mod stepper;
pub mod stream;
pub mod stream_options;
pub mod string;
pub mod structured;
pub mod tool;
pub mod tool_object;
pub mod user_data;
pub mod version;
pub mod wake;
