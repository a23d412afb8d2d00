//! The MCP client against real servers started here: the official reference server
//! (`@modelcontextprotocol/server-everything`, npm, over stdio and Streamable HTTP) and a
//! misbehaving server written with the official Python SDK (`tests/mcp/failing_server.py`).
//!
//! The reference server is installed into a cache outside the work tree by
//! `tests/mcp/install-everything.sh` when absent; the tests skip (saying why) only when node
//! or npm is missing, or no Python with the `mcp` package is found (`PI_MCP_PYTHON`).
#![cfg(feature = "mcp")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use pi_agent::agent::{
    Agent, AgentEvent, AgentMessage, AgentOptions, AgentTool, ToolCallContext, ToolUpdates,
};
use pi_agent::ai::UserContent;
use pi_agent::ai::providers::faux::{
    FauxProvider, FauxResponse, faux_assistant_message, faux_text, faux_tool_call_with_id,
};
use pi_agent::mcp::{McpError, McpServer, McpServerConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The reference server's entry script, installed if needed; `None` (with a note) without
/// node/npm.
fn everything() -> Option<PathBuf> {
    static ENTRY: OnceLock<Option<PathBuf>> = OnceLock::new();
    ENTRY
        .get_or_init(|| {
            let output = Command::new("bash")
                .arg(repo().join("tests/mcp/install-everything.sh"))
                .output()
                .expect("bash runs");
            if output.status.code() == Some(2) {
                eprintln!("SKIP: node/npm not found: the MCP reference server tests are skipped");
                return None;
            }
            assert!(
                output.status.success(),
                "installing server-everything failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            Some(PathBuf::from(
                String::from_utf8_lossy(&output.stdout).trim(),
            ))
        })
        .clone()
}

/// A Python with the `mcp` package: `$PI_MCP_PYTHON`, else `python3` if it has it.
fn python() -> Option<String> {
    static PYTHON: OnceLock<Option<String>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let candidate = std::env::var("PI_MCP_PYTHON").unwrap_or_else(|_| "python3".into());
            let works = Command::new(&candidate)
                .args(["-c", "import mcp"])
                .output()
                .is_ok_and(|output| output.status.success());
            if !works {
                eprintln!(
                    "SKIP: no Python with the `mcp` package ({candidate}; set PI_MCP_PYTHON): \
                     the MCP failure tests are skipped"
                );
            }
            works.then_some(candidate)
        })
        .clone()
}

fn everything_stdio(entry: &Path) -> McpServerConfig {
    McpServerConfig::stdio(
        "everything",
        "node",
        [entry.display().to_string(), "stdio".into()],
    )
}

/// The failing server, with a fresh state directory.
fn failing(python: &str) -> (McpServerConfig, tempdir::Dir) {
    let dir = tempdir::Dir::new();
    let config = McpServerConfig::stdio(
        "failing",
        python,
        [repo()
            .join("tests/mcp/failing_server.py")
            .display()
            .to_string()],
    )
    .with_env("PI_MCP_STATE_DIR", dir.path().display().to_string())
    .with_call_timeout(Duration::from_secs(5));
    (config, dir)
}

mod tempdir {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A directory removed when dropped.
    pub(crate) struct Dir(PathBuf);

    impl Dir {
        pub(crate) fn new() -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "pi-mcp-test-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn find(tools: &[Arc<dyn AgentTool>], name: &str) -> Arc<dyn AgentTool> {
    tools
        .iter()
        .find(|tool| tool.name() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name}"))
}

async fn call(
    tool: &Arc<dyn AgentTool>,
    arguments: Value,
) -> Result<pi_agent::AgentToolResult, String> {
    tool.execute(ToolCallContext {
        tool_call_id: "call-1".into(),
        tool_name: tool.name().into(),
        arguments,
        signal: CancellationToken::new(),
        updates: ToolUpdates::disconnected(),
    })
    .await
    .map_err(|error| error.0)
}

fn text_of(content: &[UserContent]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            UserContent::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn stdio_reference_server_reports_itself_and_lists_its_tools() {
    let Some(entry) = everything() else { return };
    let server = McpServer::connect(everything_stdio(&entry)).await.unwrap();
    let info = server.info().unwrap();
    assert!(
        !info.name.is_empty() && !info.version.is_empty(),
        "{info:?}"
    );
    assert!(!info.protocol_version.is_empty());
    assert!(info.capabilities.get("tools").is_some(), "{info:?}");
    let tools = server.tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "trigger-long-running-operation",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let echo = find(&tools, "echo");
    assert!(!echo.description().is_empty());
    assert_eq!(echo.parameters()["type"], "object");
    assert!(echo.parameters()["properties"].get("message").is_some());
    server.close().await;
}

#[tokio::test]
async fn prefix_and_filter_shape_the_tool_table() {
    let Some(entry) = everything() else { return };
    let config = everything_stdio(&entry)
        .with_tool_prefix("ev_")
        .with_include_tools(["echo", "get-sum"]);
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["ev_echo", "ev_get-sum"]);
    let result = call(&find(&tools, "ev_get-sum"), json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(text_of(&result.content).contains("42"), "{result:?}");
    server.close().await;
}

#[tokio::test]
async fn content_blocks_map_onto_the_tool_result() {
    let Some(entry) = everything() else { return };
    let server = McpServer::connect(everything_stdio(&entry)).await.unwrap();
    let tools = server.tools().await.unwrap();

    let echo = call(&find(&tools, "echo"), json!({"message": "hi there"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echo.content), "Echo: hi there");
    assert_eq!(echo.details["mcpServer"], "everything");

    let image = call(&find(&tools, "get-tiny-image"), json!({}))
        .await
        .unwrap();
    let png = image
        .content
        .iter()
        .find_map(|block| match block {
            UserContent::Image(image) => Some(image),
            _ => None,
        })
        .expect("an image block");
    assert_eq!(png.mime_type, "image/png");
    assert!(
        png.data.starts_with("iVBOR"),
        "base64 PNG: {}",
        &png.data[..10]
    );

    let structured = call(
        &find(&tools, "get-structured-content"),
        json!({"location": "New York"}),
    )
    .await
    .unwrap();
    let weather = &structured.details["structuredContent"];
    assert!(weather.get("temperature").is_some(), "{structured:?}");

    let resource = call(
        &find(&tools, "get-resource-reference"),
        json!({"resourceType": "Text", "resourceId": 1}),
    )
    .await
    .unwrap();
    assert!(
        text_of(&resource.content).contains("[resource uri="),
        "{resource:?}"
    );

    let blob = call(
        &find(&tools, "get-resource-reference"),
        json!({"resourceType": "Blob", "resourceId": 2}),
    )
    .await
    .unwrap();
    assert!(
        text_of(&blob.content).contains("[resource uri="),
        "{blob:?}"
    );
    server.close().await;
}

/// Records every event of an agent.
fn record(agent: &Agent) -> Arc<Mutex<Vec<AgentEvent>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    agent.subscribe(move |event| sink.lock().unwrap().push(event.clone()));
    events
}

fn reply(content: Vec<pi_agent::ai::AssistantContent>) -> FauxResponse {
    faux_assistant_message(content).into()
}

fn tool_results(agent: &Agent) -> Vec<pi_agent::ai::ToolResultMessage> {
    agent
        .messages()
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .cloned()
        .collect()
}

#[tokio::test]
async fn an_agent_on_faux_calls_mcp_tools_end_to_end_with_progress() {
    let Some(entry) = everything() else { return };
    let server = McpServer::connect(everything_stdio(&entry)).await.unwrap();
    let faux = FauxProvider::register();
    faux.set_responses([
        reply(vec![
            faux_tool_call_with_id("c1", "echo", json!({"message": "from the model"})),
            faux_tool_call_with_id(
                "c2",
                "trigger-long-running-operation",
                json!({"duration": 1, "steps": 3}),
            ),
        ]),
        reply(vec![faux_text("done")]),
    ]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    server.attach(&agent).await.unwrap();
    let events = record(&agent);
    agent.prompt("go").await.unwrap();
    let results = tool_results(&agent);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(!results[0].is_error);
    assert_eq!(text_of(&results[0].content), "Echo: from the model");
    assert!(!results[1].is_error, "{:?}", results[1]);
    assert!(text_of(&results[1].content).contains("Long running operation completed"));
    let updates: Vec<AgentToolResult> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } if tool_call_id == "c2" => Some(partial_result.clone()),
            _ => None,
        })
        .collect();
    assert!(!updates.is_empty(), "progress notifications become updates");
    assert_eq!(updates[0].details["total"], 3.0, "{:?}", updates[0]);
    assert!(text_of(&updates[0].content).starts_with("progress 1/3"));
    server.close().await;
}

use pi_agent::AgentToolResult;

/// The reference server in Streamable HTTP mode on a free port, killed when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn everything_http(entry: &Path) -> HttpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("node")
        .arg(entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the HTTP server did not listen on {port}");
}

#[tokio::test]
async fn streamable_http_reference_server_with_headers_and_progress() {
    let Some(entry) = everything() else { return };
    let http = everything_http(&entry).await;
    let config = McpServerConfig::http("everything-http", http.url.clone())
        .with_env("Authorization", "Bearer not-checked-by-this-server");
    assert!(
        !format!("{config:?}").contains("not-checked"),
        "headers are secret"
    );
    let server = McpServer::connect(config).await.unwrap();
    assert!(!server.info().unwrap().name.is_empty());
    let tools = server.tools().await.unwrap();
    let echo = call(&find(&tools, "echo"), json!({"message": "over http"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echo.content), "Echo: over http");

    let faux = FauxProvider::register();
    faux.set_responses([
        reply(vec![faux_tool_call_with_id(
            "p1",
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 2}),
        )]),
        reply(vec![faux_text("done")]),
    ]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools,
        ..AgentOptions::default()
    });
    let events = record(&agent);
    agent.prompt("go").await.unwrap();
    let results = tool_results(&agent);
    assert!(!results[0].is_error, "{results:?}");
    let updates = events
        .lock()
        .unwrap()
        .iter()
        .filter(|event| matches!(event, AgentEvent::ToolExecutionUpdate { .. }))
        .count();
    assert!(updates >= 1, "progress arrives over the SSE stream");
    server.close().await;
}

#[tokio::test]
async fn a_jsonrpc_error_and_is_error_become_error_results_and_the_run_goes_on() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    let server = McpServer::connect(config).await.unwrap();
    let faux = FauxProvider::register();
    faux.set_responses([
        reply(vec![
            faux_tool_call_with_id("f1", "fail", json!({"reason": "no way"})),
            faux_tool_call_with_id("f2", "ok", json!({"text": "still here"})),
        ]),
        reply(vec![faux_text("done")]),
    ]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: server.tools().await.unwrap(),
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();
    let results = tool_results(&agent);
    assert!(results[0].is_error);
    // The server's own text (mcp 2 hides the exception's message, mcp 1 shows it).
    let text = text_of(&results[0].content);
    assert!(
        text.contains("refused: no way") || text.contains("Error executing tool fail"),
        "{text}"
    );
    assert!(!results[1].is_error);
    assert_eq!(text_of(&results[1].content), "ok: still here");
    // The model got its answer: the run ended normally.
    assert_eq!(faux.call_count(), 2);

    let tools = agent.tools();
    let error = call(&find(&tools, "rpc_error"), json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        "MCP server \"failing\" answered tools/call with error -32001: custom rpc failure"
    );

    // Arguments are validated like any tool's, before the server sees them.
    faux.set_responses([
        reply(vec![faux_tool_call_with_id(
            "f3",
            "ok",
            json!({"wrong": 1}),
        )]),
        reply(vec![faux_text("done")]),
    ]);
    agent.prompt("again").await.unwrap();
    let results = tool_results(&agent);
    let last = results.last().unwrap();
    assert!(
        last.is_error && text_of(&last.content).contains("Validation failed"),
        "{last:?}"
    );
    server.close().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_naming_the_server_and_the_next_call_respawns() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    assert_eq!(
        call(&find(&tools, "starts"), json!({}))
            .await
            .unwrap()
            .content
            .len(),
        1
    );
    let error = call(&find(&tools, "crash"), json!({})).await.unwrap_err();
    assert!(error.contains("MCP server \"failing\""), "{error}");
    assert!(error.contains("closed the connection"), "{error}");
    assert!(
        error.contains("crashing on purpose"),
        "the stderr tail says why: {error}"
    );
    let again = call(&find(&tools, "starts"), json!({})).await.unwrap();
    assert_eq!(text_of(&again.content), "2", "a new process answered");
    server.close().await;
}

#[tokio::test]
async fn a_hanging_call_times_out_and_the_server_gets_cancelled() {
    let Some(python) = python() else { return };
    let (config, dir) = failing(&python);
    let config = config.with_call_timeout(Duration::from_secs(2));
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    let error = call(&find(&tools, "hang"), json!({})).await.unwrap_err();
    assert!(
        error.contains("\"failing\" did not answer tools/call within 2000 ms"),
        "{error}"
    );
    wait_for_file(&dir.path().join("cancelled")).await;
    // The session is still good.
    let ok = call(&find(&tools, "ok"), json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(text_of(&ok.content), "ok: after");
    server.close().await;
}

async fn wait_for_file(path: &Path) {
    for _ in 0..200 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} never appeared", path.display());
}

#[tokio::test]
async fn aborting_the_agent_cancels_the_call_in_flight() {
    let Some(python) = python() else { return };
    let (config, dir) = failing(&python);
    let server = McpServer::connect(config.with_call_timeout(Duration::from_secs(60)))
        .await
        .unwrap();
    let faux = FauxProvider::register();
    faux.set_responses([
        reply(vec![faux_tool_call_with_id("h1", "hang", json!({}))]),
        reply(vec![faux_text("unreachable")]),
    ]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: server.tools().await.unwrap(),
        ..AgentOptions::default()
    });
    let started = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&started);
    agent.subscribe(move |event| {
        if matches!(event, AgentEvent::ToolExecutionStart { .. }) {
            notify.notify_one();
        }
    });
    let runner = agent.clone();
    let run = tokio::spawn(async move { runner.prompt("go").await });
    started.notified().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    agent.abort();
    run.await.unwrap().unwrap();
    wait_for_file(&dir.path().join("cancelled")).await;
    let results = tool_results(&agent);
    assert!(results[0].is_error, "{results:?}");
    server.close().await;
}

#[tokio::test]
async fn garbage_on_stdout_is_an_error_result_not_a_hang() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    let server = McpServer::connect(config.with_call_timeout(Duration::from_secs(3)))
        .await
        .unwrap();
    let tools = server.tools().await.unwrap();
    let error = call(&find(&tools, "garbage"), json!({})).await.unwrap_err();
    assert!(error.contains("MCP server \"failing\""), "{error}");
    // Whatever the garbage did to the session, the next call gets an answer.
    let ok = call(&find(&tools, "ok"), json!({"text": "after garbage"}))
        .await
        .unwrap();
    assert_eq!(text_of(&ok.content), "ok: after garbage");
    server.close().await;
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_an_error_with_its_stderr() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    let error = McpServer::connect(config.clone().with_env("PI_MCP_FAIL_START", "1"))
        .await
        .unwrap_err();
    assert!(matches!(error, McpError::Start { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("\"failing\" failed to start"), "{message}");
    assert!(message.contains("refusing to start"), "{message}");

    let missing =
        McpServerConfig::stdio("nothing", "/nonexistent/mcp-server", Vec::<String>::new());
    let error = McpServer::connect(missing).await.unwrap_err().to_string();
    assert!(
        error.contains("\"nothing\" failed to start") && error.contains("cannot run"),
        "{error}"
    );
}

#[tokio::test]
async fn tool_pages_that_never_end_are_an_error_not_a_listing_without_end() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    let server = McpServer::connect(config.with_env("PI_MCP_ENDLESS_PAGES", "1"))
        .await
        .unwrap();
    let error = tokio::time::timeout(Duration::from_secs(60), server.tools())
        .await
        .expect("the listing ends")
        .expect_err("an error");
    assert!(matches!(error, McpError::Protocol { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "MCP server \"failing\": tools/list: the server gave a cursor it gave before"
    );
    server.close().await;
}

#[tokio::test]
async fn a_listing_of_slow_pages_that_never_end_is_held_to_the_call_timeout() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    // Each page comes 200 ms after its request, with a new cursor: every page is in time, and
    // a thousand of them would take 200 s.
    let config = config
        .with_env("PI_MCP_ENDLESS_PAGES", "fresh")
        .with_env("PI_MCP_PAGE_DELAY_MS", "200")
        .with_call_timeout(Duration::from_secs(2));
    let server = McpServer::connect(config).await.unwrap();
    let error = tokio::time::timeout(Duration::from_secs(60), server.tools())
        .await
        .expect("the listing ends within its call timeout")
        .expect_err("an error");
    assert_eq!(
        error.to_string(),
        "MCP server \"failing\" did not answer tools/list within 2000 ms",
        "{error:?}"
    );
    server.close().await;
}

#[tokio::test]
async fn tools_list_changed_updates_an_attached_agent_for_its_next_run() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    let server = McpServer::connect(config).await.unwrap();
    let faux = FauxProvider::register();
    faux.set_responses([
        reply(vec![faux_tool_call_with_id(
            "a1",
            "add_tool",
            json!({"name": "fresh"}),
        )]),
        reply(vec![faux_text("added")]),
    ]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    server.attach(&agent).await.unwrap();
    assert!(agent.tools().iter().all(|tool| tool.name() != "fresh"));
    agent.prompt("add one").await.unwrap();
    let mut found = false;
    for _ in 0..200 {
        if agent.tools().iter().any(|tool| tool.name() == "fresh") {
            found = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(found, "the new tool reached the agent");
    // The old tools are still there, once each.
    let names: Vec<String> = agent
        .tools()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    assert_eq!(
        names.iter().filter(|name| *name == "ok").count(),
        1,
        "{names:?}"
    );
    faux.set_responses([
        reply(vec![faux_tool_call_with_id("a2", "fresh", json!({}))]),
        reply(vec![faux_text("done")]),
    ]);
    agent.prompt("use it").await.unwrap();
    let last = tool_results(&agent).pop().unwrap();
    assert_eq!(text_of(&last.content), "I am fresh", "{last:?}");
    server.close().await;
}

/// Waits until `agent`'s tool table does (or does not) hold `name`.
async fn wait_for_tool(agent: &Agent, name: &str, present: bool) {
    for _ in 0..300 {
        if agent.tools().iter().any(|tool| tool.name() == name) == present {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the agent's tool {name} never became present={present}");
}

/// A server that restarts offers its tools afresh: an attached agent's table follows (a tool
/// added at run time, which the new process does not have, goes).
#[tokio::test]
async fn an_attached_agent_gets_the_tools_of_a_restarted_server() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    let server = McpServer::connect(config).await.unwrap();
    let agent = Agent::new(AgentOptions::default());
    server.attach(&agent).await.unwrap();
    let tools = server.tools().await.unwrap();
    call(&find(&tools, "add_tool"), json!({"name": "fleeting"}))
        .await
        .unwrap();
    wait_for_tool(&agent, "fleeting", true).await;
    assert!(call(&find(&tools, "crash"), json!({})).await.is_err());
    // The next call starts a new process, whose tools have no `fleeting`.
    let ok = call(&find(&tools, "ok"), json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(text_of(&ok.content), "ok: again");
    wait_for_tool(&agent, "fleeting", false).await;
    assert!(agent.tools().iter().any(|tool| tool.name() == "ok"));
    server.close().await;
}

/// A stdio server gets `PATH`, `HOME` and what its configuration sets, not the host's other
/// variables (cargo sets `CARGO_MANIFEST_DIR` for this test), unless it inherits them all.
#[tokio::test]
async fn a_stdio_server_inherits_only_the_variables_every_program_needs() {
    let Some(python) = python() else { return };
    let host_only = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let (config, _dir) = failing(&python);
    let value = |tools: &[Arc<dyn AgentTool>], name: &str| {
        let tool = find(tools, "env");
        let name = name.to_owned();
        async move {
            let result = call(&tool, json!({ "name": name })).await.unwrap();
            text_of(&result.content)
        }
    };
    let server = McpServer::connect(config.clone().with_env("SET_FOR_IT", "given"))
        .await
        .unwrap();
    let tools = server.tools().await.unwrap();
    assert_eq!(value(&tools, "CARGO_MANIFEST_DIR").await, "<unset>");
    assert_eq!(value(&tools, "SET_FOR_IT").await, "given");
    // (A launcher such as a pyenv shim may add to it.)
    assert_ne!(value(&tools, "PATH").await, "<unset>");
    server.close().await;
    let server = McpServer::connect(config.with_inherited_env())
        .await
        .unwrap();
    let tools = server.tools().await.unwrap();
    assert_eq!(value(&tools, "CARGO_MANIFEST_DIR").await, host_only);
    server.close().await;
}

fn process_state(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the parenthesised command name.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .next()
        .map(str::to_owned)
}

#[tokio::test]
async fn dropping_the_server_reaps_the_child() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    let pid = server.process_id().await.expect("a child pid");
    assert!(process_state(pid).is_some());
    drop(tools);
    drop(server);
    for _ in 0..200 {
        match process_state(pid) {
            None => return,
            Some(state) if state != "Z" => {}
            Some(_zombie) => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the child {pid} is still there: {:?}", process_state(pid));
}

/// A server whose loop froze (it stopped reading its stdin): the timed-out call finds it deaf to
/// a `ping`, its session ends (the process with it), and the next call starts a new one.
#[tokio::test]
async fn a_frozen_server_is_ended_and_the_next_call_restarts_it() {
    let Some(python) = python() else { return };
    let (config, _dir) = failing(&python);
    let server = McpServer::connect(config.with_call_timeout(Duration::from_secs(1)))
        .await
        .unwrap();
    let tools = server.tools().await.unwrap();
    let frozen = server.process_id().await.expect("a child pid");
    let error = call(&find(&tools, "freeze"), json!({})).await.unwrap_err();
    assert!(
        error.contains("did not answer tools/call within 1000 ms"),
        "{error}"
    );
    let after = call(&find(&tools, "ok"), json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(text_of(&after.content), "ok: after");
    let restarted = server.process_id().await.expect("a child pid");
    assert_ne!(restarted, frozen);
    for _ in 0..200 {
        match process_state(frozen) {
            None => break,
            Some(state) if state == "Z" => break,
            Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert!(
        process_state(frozen).is_none_or(|state| state == "Z"),
        "the frozen server {frozen} is still there"
    );
    tokio::time::timeout(Duration::from_secs(120), server.close())
        .await
        .expect("close returns");
}

#[tokio::test]
async fn a_server_that_will_not_restart_backs_off_then_comes_back() {
    let Some(python) = python() else { return };
    let (config, dir) = failing(&python);
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    std::fs::write(dir.path().join("fail_start"), "").unwrap();
    let crash = call(&find(&tools, "crash"), json!({})).await.unwrap_err();
    assert!(crash.contains("closed the connection"), "{crash}");
    let restart = call(&find(&tools, "ok"), json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(restart.contains("\"failing\" failed to start"), "{restart}");
    assert!(restart.contains("refusing to start"), "{restart}");
    // Within the wait, a call fails at once instead of spawning again.
    let waiting = call(&find(&tools, "ok"), json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        waiting.contains("is unavailable (next reconnection in"),
        "{waiting}"
    );
    assert!(
        waiting.contains("refusing to start"),
        "the last failure is named: {waiting}"
    );
    std::fs::remove_file(dir.path().join("fail_start")).unwrap();
    let mut answer = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Ok(result) = call(&find(&tools, "ok"), json!({"text": "back"})).await {
            answer = Some(result);
            break;
        }
    }
    let answer = answer.expect("the server came back");
    assert_eq!(text_of(&answer.content), "ok: back");
    server.close().await;
}

#[tokio::test]
async fn an_http_server_that_restarts_is_an_error_then_a_new_session() {
    let Some(entry) = everything() else { return };
    let mut http = everything_http(&entry).await;
    let port: u16 = http
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let config = McpServerConfig::http("restarting", http.url.clone())
        .with_call_timeout(Duration::from_secs(5));
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    let echo = find(&tools, "echo");
    call(&echo, json!({"message": "one"})).await.unwrap();
    let _ = http.child.kill();
    let _ = http.child.wait();
    let error = call(&echo, json!({"message": "two"})).await.unwrap_err();
    assert!(error.contains("MCP server \"restarting\""), "{error}");
    http.child = Command::new("node")
        .arg(&entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut answer = Err(String::new());
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        answer = call(&echo, json!({"message": "three"})).await;
        if answer.is_ok() {
            break;
        }
    }
    let answer = answer.expect("a new session answers");
    assert_eq!(text_of(&answer.content), "Echo: three");
    server.close().await;
}

#[tokio::test]
async fn errors_hide_the_secrets_of_the_configuration() {
    // Nothing listens on a port just closed: connecting fails, and the HTTP library's error
    // quotes the URL.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp?api_key=query-secret-0123456789&page=2");
    let config = McpServerConfig::http("remote", url)
        .with_env("Authorization", "Bearer header-secret-0123456789");
    let error = McpServer::connect(config).await.unwrap_err();
    let message = format!("{error} / {error:?}");
    assert!(matches!(error, McpError::Start { .. }), "{message}");
    assert!(!message.contains("query-secret"), "{message}");
    assert!(!message.contains("header-secret"), "{message}");
    // The URL is quoted, without its query (which the MCP library would log as it is).
    assert!(
        message.contains(&format!("127.0.0.1:{port}/mcp)")),
        "{message}"
    );
}

/// An `McpServer` still alive when its runtime shuts down (the end of `#[tokio::main]`): the
/// graceful close never finishes, and what the server started must go too, not only the
/// server itself.
#[test]
fn a_runtime_that_shuts_down_takes_the_servers_process_group_with_it() {
    let Some(python) = python() else { return };
    let (config, dir) = failing(&python);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(McpServer::connect(config.with_env("PI_MCP_SLEEPER", "1")))
        .unwrap();
    let sleeper_file = dir.path().join("sleeper");
    let sleeper: u32 = runtime.block_on(async {
        wait_for_file(&sleeper_file).await;
        std::fs::read_to_string(&sleeper_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    });
    assert!(process_state(sleeper).is_some_and(|state| state != "Z"));
    // Dropped on the runtime (its graceful close spawned there), then the runtime goes.
    runtime.block_on(async move { drop(server) });
    drop(runtime);
    for _ in 0..600 {
        match process_state(sleeper) {
            None => return,
            Some(state) if state == "Z" => return,
            Some(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    panic!("the server's child {sleeper} outlived its runtime");
}
