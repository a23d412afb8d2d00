//! Spawns the `pi-mock-server` binary the way the C and Python suites do.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn http(port: u16, method: &str, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn binary_serves_until_stdin_closes() {
    let dir = std::env::temp_dir().join(format!("pi-mock-server-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("script.json");
    std::fs::write(&script, r#"[{"text": "preloaded"}]"#).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_pi-mock-server"))
        .arg("--script")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let info: Value = serde_json::from_str(&line).unwrap();
    let port = u16::try_from(info["port"].as_u64().unwrap()).unwrap();
    assert_eq!(
        line,
        format!("{{\"url\":\"http://127.0.0.1:{port}/v1\",\"port\":{port}}}\n")
    );

    let r = http(port, "POST", "/v1/chat/completions", r#"{"model":"m"}"#);
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(r.contains(r#""content":"prel""#));
    assert!(r.ends_with("data: [DONE]\n\n\r\n0\r\n\r\n"));

    let r = http(
        port,
        "POST",
        "/_mock/replies",
        r#"[{"status":401,"body":{"e":1}}]"#,
    );
    assert!(r.ends_with(r#"{"queued":1}"#), "{r}");
    let r = http(port, "POST", "/v1/chat/completions", "{}");
    assert!(r.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{r}");
    let r = http(port, "GET", "/_mock/requests", "");
    let body = &r[r.find("\r\n\r\n").unwrap() + 4..];
    let log: Value = serde_json::from_str(body).unwrap();
    assert_eq!(log.as_array().unwrap().len(), 2);

    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "server did not exit on stdin EOF"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn binary_rejects_bad_script() {
    let dir = std::env::temp_dir().join(format!("pi-mock-server-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("script.json");
    std::fs::write(&script, r#"[{"texte": "typo"}]"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pi-mock-server"))
        .arg("--script")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("texte"));
    let _ = std::fs::remove_dir_all(&dir);
}
