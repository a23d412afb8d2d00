//! Round trip of one MCP tool call (`echo` of the reference server,
//! `@modelcontextprotocol/server-everything`) over stdio and over Streamable HTTP, through
//! `pi_agent::mcp`'s agent tool (validation not included: the agent does that), next to the
//! TypeScript SDK's own client doing the same calls (`benches/mcp/ts_client.mjs`); and the
//! memory one connected server costs: the client's resident set per session, and the server
//! process's own. Prints the figures (no timing assertions).
//!
//! `cargo bench -p pi-agent --bench mcp_roundtrip` (needs node/npm; the server is installed
//! into the cache by `tests/mcp/install-everything.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pi_agent::agent::{AgentTool, ToolCallContext, ToolUpdates};
use pi_agent::mcp::{McpServer, McpServerConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const CALLS: usize = 500;
const SERVERS: usize = 5;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn mean_call(tool: &dyn AgentTool) -> Duration {
    let run = || {
        tool.execute(ToolCallContext {
            tool_call_id: "bench".into(),
            tool_name: tool.name().into(),
            arguments: json!({"message": "hello"}),
            signal: CancellationToken::new(),
            updates: ToolUpdates::disconnected(),
        })
    };
    for _ in 0..20 {
        run().await.expect("echo answers");
    }
    let start = Instant::now();
    for _ in 0..CALLS {
        run().await.expect("echo answers");
    }
    start.elapsed() / CALLS as u32
}

async fn echo_of(server: &McpServer) -> std::sync::Arc<dyn AgentTool> {
    server
        .tools()
        .await
        .unwrap()
        .into_iter()
        .find(|tool| tool.name() == "echo")
        .unwrap()
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    let output = Command::new("bash")
        .arg(repo().join("tests/mcp/install-everything.sh"))
        .output()
        .expect("bash runs");
    if !output.status.success() {
        println!("mcp_roundtrip: skipped (node/npm or the reference server unavailable)");
        return;
    }
    let entry = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let modules = entry.ancestors().nth(4).unwrap().to_path_buf();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _http = Killed(
        Command::new("node")
            .arg(&entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let stdio_config = McpServerConfig::stdio(
        "everything",
        "node",
        [entry.display().to_string(), "stdio".into()],
    );
    runtime.block_on(async {
        let stdio = McpServer::connect(stdio_config.clone()).await.unwrap();
        let stdio_mean = mean_call(echo_of(&stdio).await.as_ref()).await;
        let http = McpServer::connect(McpServerConfig::http("everything-http", url.clone()))
            .await
            .unwrap();
        let http_mean = mean_call(echo_of(&http).await.as_ref()).await;
        println!(
            "mcp_roundtrip pi-agent: stdio {:.1} µs/call, streamable HTTP {:.1} µs/call ({CALLS} calls of echo)",
            stdio_mean.as_secs_f64() * 1e6,
            http_mean.as_secs_f64() * 1e6
        );
        let child = stdio.process_id().await.unwrap_or(0);
        println!("mcp_roundtrip server process (node) RSS: {} KiB", rss_kib(child));
        stdio.close().await;
        http.close().await;

        let me = std::process::id();
        let before = rss_kib(me);
        let mut servers = Vec::new();
        for _ in 0..SERVERS {
            let server = McpServer::connect(stdio_config.clone()).await.unwrap();
            let tools = server.tools().await.unwrap();
            servers.push((server, tools));
        }
        let after = rss_kib(me);
        println!(
            "mcp_roundtrip client memory: {} KiB RSS per connected stdio server with its tools listed ({SERVERS} servers)",
            after.saturating_sub(before) / SERVERS as u64
        );
        for (server, _) in &servers {
            server.close().await;
        }
    });
    let ts = Command::new("node")
        .arg(repo().join("benches/mcp/ts_client.mjs"))
        .arg(&modules)
        .arg(&entry)
        .arg(&url)
        .arg(CALLS.to_string())
        .output()
        .expect("node runs");
    println!(
        "mcp_roundtrip TypeScript SDK client: {}",
        String::from_utf8_lossy(&ts.stdout).trim()
    );
}
