//! A real llama.cpp `llama-server` for the tests, serving SmolLM2-135M-Instruct on 127.0.0.1
//! with greedy sampling (shared by `core/tests/llama_server.rs` and `ffi/tests/llama_server.rs`;
//! `tests/python/test_llama_server.py` starts it the same way).
//!
//! The binary and the model come from `PI_LLAMA_SERVER` / `PI_LLAMA_MODEL`, else from
//! `scripts/llama-server/build.sh` (which builds and caches them on first use, outside the work
//! tree). The tests skip only when `PI_LLAMA_SERVER_TESTS=0` says so.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Context per slot: `-c 2048` over `--parallel 4`.
pub(crate) const SLOT_CONTEXT: usize = 512;

/// The chat template the tool-call tests serve, from the repository root.
pub(crate) const TOOL_CALL_TEMPLATE: &str = "scripts/llama-server/tool-call.jinja";

/// A running `llama-server`, killed on drop.
pub(crate) struct LlamaServer {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    log: PathBuf,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("a crate directory has a parent")
        .to_path_buf()
}

/// `(binary, model)`: from the environment, else from the build script.
fn locate() -> (PathBuf, PathBuf) {
    if let (Ok(server), Ok(model)) = (
        std::env::var("PI_LLAMA_SERVER"),
        std::env::var("PI_LLAMA_MODEL"),
    ) {
        return (server.into(), model.into());
    }
    let script = repo_root().join("scripts/llama-server/build.sh");
    let output = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(output.status.success(), "{} failed", script.display());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value = |key: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("{} printed no {key}: {stdout}", script.display()))
    };
    (value("PI_LLAMA_SERVER="), value("PI_LLAMA_MODEL="))
}

/// `false` only when `PI_LLAMA_SERVER_TESTS=0` (the tests then print why they did nothing).
pub(crate) fn enabled() -> bool {
    let on = std::env::var("PI_LLAMA_SERVER_TESTS").map_or(true, |v| v != "0");
    if !on {
        println!("note: PI_LLAMA_SERVER_TESTS=0: the real-server tests are disabled");
    }
    on
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port on 127.0.0.1")
}

/// One blocking HTTP/1.1 GET on 127.0.0.1 (the harness needs no client library for its
/// probes): `(status, body)`.
pub(crate) fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b)?;
    Some((status, body.to_owned()))
}

impl LlamaServer {
    /// Starts the server (`extra` appended to its arguments) and waits for `/health`.
    pub(crate) fn start(extra: &[&str]) -> Self {
        let (binary, model) = locate();
        let port = free_port();
        let log = std::env::temp_dir().join(format!("pi-llama-server-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("a log file");
        let child = Command::new(&binary)
            .args(["-m"])
            .arg(&model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            // Greedy and small: one answer per prompt, four slots of 512 tokens.
            .args([
                "-c",
                "2048",
                "--parallel",
                "4",
                "--temp",
                "0",
                "--top-k",
                "1",
            ])
            .args(["--seed", "42", "--threads", "2", "--threads-http", "24"])
            .args(["--metrics", "--slots", "--no-warmup"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut server = Self { child, port, log };
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            if let Some((200, _)) = get(port, "/health") {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("llama-server exited ({status}):\n{}", server.log_tail());
            }
            assert!(
                Instant::now() < deadline,
                "llama-server not healthy after 300 s:\n{}",
                server.log_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Starts the server with `scripts/llama-server/tool-call.jinja` as its chat template, whose
    /// call format lets `tool_choice: "required"` force a call (see the template's comment).
    pub(crate) fn start_with_tool_template() -> Self {
        let template = repo_root().join(TOOL_CALL_TEMPLATE);
        let template = template.to_str().expect("a UTF-8 path");
        Self::start(&["--jinja", "--chat-template-file", template])
    }

    /// The last lines of the server's log (for failure messages).
    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// `http://127.0.0.1:PORT`.
    pub(crate) fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The base URL a model of `api` takes (`/v1` but for Anthropic, which adds it itself).
    pub(crate) fn base_url(&self, api: &str) -> String {
        if api == "anthropic-messages" {
            self.origin()
        } else {
            format!("{}/v1", self.origin())
        }
    }

    /// A counter of `/metrics` (e.g. `llamacpp:tokens_predicted_total`).
    pub(crate) fn metric(&self, name: &str) -> f64 {
        let (_, body) = get(self.port, "/metrics").expect("/metrics");
        body.lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /metrics:\n{body}"))
    }

    /// How many slots are generating now (`/slots`).
    pub(crate) fn busy_slots(&self) -> usize {
        let (_, body) = get(self.port, "/slots").expect("/slots");
        let slots: Value = serde_json::from_str(&body).expect("/slots is JSON");
        slots
            .as_array()
            .map(|slots| slots.iter().filter(|s| s["is_processing"] == true).count())
            .unwrap_or(0)
    }

    /// Waits until no slot is generating; `false` after `limit`.
    pub(crate) fn wait_idle(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.busy_slots() == 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// A prompt far longer than a slot's context (about 4 tokens a repetition).
pub(crate) fn overlong_prompt() -> String {
    "the quick brown fox ".repeat(SLOT_CONTEXT)
}
