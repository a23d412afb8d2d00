//! `pi_mcp_server`: a Model Context Protocol server whose tools an agent can call (core's
//! `pi_agent::mcp`). Connect over stdio (a child process) or Streamable HTTP, read what the
//! server says about itself and its tools as JSON, and add its tools to an agent.

use std::ffi::c_char;

use ::pi_agent::mcp::{McpError, McpServer, McpServerConfig};

use crate::agent::{pi_agent, shared};
use crate::args::{Out, arg_opt_str, arg_ref, arg_str, method, write_json};
use crate::boundary::{free, into_handle};
use crate::error::{parse_object, pi_error, pi_error_kind};
use crate::runtime::{block_on, runtime};

/// A connected MCP server (its session, restarted after failures).
///
/// Thread-safe: every function may be called from any thread, concurrently, except
/// `pi_mcp_server_free`. Its tools, once added to an agent, keep the session alive until they
/// are removed from it or the agent is freed, even after `pi_mcp_server_free`.
pub struct pi_mcp_server {
    server: McpServer,
}

fn mcp_error(error: McpError) -> pi_error {
    pi_error::new(pi_error_kind::Mcp, error.to_string())
}

/// Connects to the server described by `config_json` (core's `McpServerConfig`) and completes
/// `initialize`, blocking until done or until `connectTimeoutMs` (default 30 000) has passed:
/// `{"name":"everything","transport":"stdio","command":"npx","args":["-y",
/// "@modelcontextprotocol/server-everything"],"env":{"K":"V"},"cwd":"/tmp"}` (the server
/// inherits only `PATH`, `HOME`, the locale and a few more of the host's variables, plus
/// `env`; `"inheritEnv":true` passes the whole environment) or
/// `{"name":"remote","transport":"http","url":"http://127.0.0.1:3001/mcp",
/// "headers":{"Authorization":"Bearer ..."}}`, plus any of `"toolPrefix":"ev_"`,
/// `"includeTools":["echo"]`, `"callTimeoutMs":60000`, `"connectTimeoutMs":30000`. A stdio
/// server runs in its own process group with its stderr captured (its end is quoted in error
/// messages); it is ended (stdin closed, then SIGTERM, then SIGKILL) when the server and its
/// tools are freed. On success `*server_out` receives the server; free it with
/// `pi_mcp_server_free`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `MCP` (it did not start or
/// initialize; the message names it and quotes its stderr), `CALLED_FROM_CALLBACK`.
/// Thread-safety: may be called from any thread, not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_mcp_server_connect(
    config_json: *const c_char,
    server_out: *mut *mut pi_mcp_server,
) -> *mut pi_error {
    ffi_fallible! {
        // Without quoting values in its errors: headers and env hold credentials.
        let config: McpServerConfig =
            parse_object(arg_str(config_json, "config_json")?, "config_json")?;
        let out = Out::new(server_out, "server_out")?;
        connect(config, out)
    }
}

fn connect(config: McpServerConfig, out: Out<*mut pi_mcp_server>) -> Result<(), pi_error> {
    let runtime = runtime()?;
    let server = block_on("pi_mcp_server_connect", async move {
        // Spawned, so the session's tasks and child watchers belong to the runtime, not to
        // this thread's `block_on`.
        runtime
            .spawn(McpServer::connect(config))
            .await
            .map_err(|error| pi_error::runtime(error.to_string()))
    })??
    .map_err(mcp_error)?;
    out.write(into_handle(pi_mcp_server { server }));
    Ok(())
}

/// Connects to a stdio server: the short form of `pi_mcp_server_connect` for `command` with
/// `args_len` arguments `args` (`args` may be NULL when `args_len` is 0), named `name`.
///
/// Errors: as `pi_mcp_server_connect`.
/// Thread-safety: may be called from any thread, not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_mcp_server_connect_stdio(
    name: *const c_char,
    command: *const c_char,
    args: *const *const c_char,
    args_len: usize,
    server_out: *mut *mut pi_mcp_server,
) -> *mut pi_error {
    ffi_fallible! {
        let name = arg_str(name, "name")?;
        let command = arg_str(command, "command")?;
        let arguments = arg_strings(args, args_len)?;
        let out = Out::new(server_out, "server_out")?;
        connect(McpServerConfig::stdio(name, command, arguments), out)
    }
}

/// Reads `len` strings from `args` (which may be NULL when `len` is 0).
fn arg_strings(args: *const *const c_char, len: usize) -> Result<Vec<String>, pi_error> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if args.is_null() {
        return Err(pi_error::null_argument("args"));
    }
    // SAFETY: per the contract, a non-NULL `args` points to `len` string pointers.
    let slice = unsafe { std::slice::from_raw_parts(args, len) };
    slice
        .iter()
        .map(|arg| arg_str(*arg, "args[i]").map(str::to_owned))
        .collect()
}

/// Connects to a Streamable HTTP server at `url`, named `name`, sending the headers in
/// `headers_json` (NULL, or a JSON object of strings such as
/// `{"Authorization":"Bearer ..."}`; their values never appear in errors or logs) with every
/// request: the short form of `pi_mcp_server_connect`.
///
/// Errors: as `pi_mcp_server_connect`.
/// Thread-safety: may be called from any thread, not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_mcp_server_connect_http(
    name: *const c_char,
    url: *const c_char,
    headers_json: *const c_char,
    server_out: *mut *mut pi_mcp_server,
) -> *mut pi_error {
    ffi_fallible! {
        let mut config = McpServerConfig::http(arg_str(name, "name")?, arg_str(url, "url")?);
        if let Some(headers) = arg_opt_str(headers_json, "headers_json")? {
            let headers: std::collections::BTreeMap<String, String> =
                parse_object(headers, "headers_json")?;
            for (name, value) in headers {
                config = config.with_env(name, value);
            }
        }
        let out = Out::new(server_out, "server_out")?;
        connect(config, out)
    }
}

/// Writes what the server said about itself in `initialize` to `*json_out` (free it with
/// `pi_string_free`): `{"name","version","protocolVersion","capabilities",
/// "instructions"?}`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_mcp_server_info_json(
    server: *const pi_mcp_server,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(server, "server", |server| {
        write_json(json_out, &server.server.info(), "info")
    })
}

/// Lists the server's tools (every page) and writes them to `*json_out` as MCP's JSON array
/// (`[{"name","description","inputSchema","outputSchema"?,"annotations"?,...}]`, all of
/// them, before the prefix and filter); free it with `pi_string_free`. Blocks until answered
/// or `callTimeoutMs` has passed.
///
/// Errors: `NULL_ARGUMENT`, `MCP`, `CALLED_FROM_CALLBACK`.
/// Thread-safety: may be called from any thread, not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_mcp_server_list_tools_json(
    server: *const pi_mcp_server,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let server = arg_ref(server, "server")?.server.clone();
        let out = Out::new(json_out, "json_out")?;
        let runtime = runtime()?;
        let tools = block_on("pi_mcp_server_list_tools_json", async move {
            runtime
                .spawn(async move { server.list_tools().await })
                .await
                .map_err(|error| pi_error::runtime(error.to_string()))
        })??
        .map_err(mcp_error)?;
        out.write_json(&tools, "tools")
    }
}

/// Adds the server's tools (prefixed and filtered as configured) to `agent`, replacing tools
/// of the same names, and keeps them current: when the server sends
/// `notifications/tools/list_changed`, the agent's tools are updated for its next run (a run
/// keeps the tools it started with). A call's failure (the server exited, hung past
/// `callTimeoutMs`, answered with an error) is an error tool result naming the server; the
/// next call restarts it. Aborting the agent sends the server `notifications/cancelled`;
/// progress notifications are `tool_execution_update` events. Blocks while listing.
///
/// Errors: `NULL_ARGUMENT`, `MCP`, `CALLED_FROM_CALLBACK`.
/// Thread-safety: may be called from any thread, also during a run; not from an event
/// callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_mcp_server_add_tools_to_agent(
    server: *const pi_mcp_server,
    agent: *mut pi_agent,
) -> *mut pi_error {
    ffi_fallible! {
        let server = arg_ref(server, "server")?.server.clone();
        let agent = shared(agent)?.agent.clone();
        let runtime = runtime()?;
        block_on("pi_mcp_server_add_tools_to_agent", async move {
            runtime
                .spawn(async move { server.attach(&agent).await })
                .await
                .map_err(|error| pi_error::runtime(error.to_string()))
        })??
        .map_err(mcp_error)
    }
}

/// Frees the handle. The session closes (a stdio server's stdin is closed, then it is
/// terminated) once no agent holds its tools any more. NULL is a no-op.
///
/// Thread-safety: call once, when no other call on the server is in progress.
#[unsafe(no_mangle)]
pub extern "C" fn pi_mcp_server_free(server: *mut pi_mcp_server) {
    free(server, |server| {
        // Dropped inside the runtime, where the graceful close is spawned.
        if let Ok(runtime) = runtime() {
            let _guard = runtime.enter();
            drop(server);
        }
    })
}
