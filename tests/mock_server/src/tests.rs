//! In-process tests with a raw TCP client.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{MockServer, reply};

/// A parsed HTTP response.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    /// De-chunked (or Content-Length) body.
    body: Vec<u8>,
    /// HTTP chunks as framed by the server (chunked responses only).
    chunks: Vec<Vec<u8>>,
    /// Whether the body ended properly (zero chunk / full Content-Length).
    complete: bool,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("utf-8 body")
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("json body")
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

fn parse_response(raw: &[u8]) -> Response {
    let end = find(raw, b"\r\n\r\n").expect("complete head");
    let head = std::str::from_utf8(&raw[..end]).expect("ascii head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
    let status = status_line[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(": ").expect("header line");
            (n.to_string(), v.to_string())
        })
        .collect();
    let mut rest = &raw[end + 4..];
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
        chunks: Vec::new(),
        complete: false,
    };
    if response.header("transfer-encoding") == Some("chunked") {
        while let Some(eol) = find(rest, b"\r\n") {
            let size = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap(), 16)
                .expect("hex chunk size");
            rest = &rest[eol + 2..];
            if size == 0 {
                assert_eq!(rest, b"\r\n", "nothing after the zero chunk");
                response.complete = true;
                break;
            }
            assert!(rest.len() >= size + 2, "truncated chunk");
            assert_eq!(&rest[size..size + 2], b"\r\n");
            response.chunks.push(rest[..size].to_vec());
            response.body.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        assert!(rest.is_empty() || response.complete, "garbage after chunks");
    } else {
        let len: usize = response
            .header("content-length")
            .expect("content-length")
            .parse()
            .unwrap();
        response.complete = rest.len() == len;
        response.body = rest.to_vec();
    }
    response
}

async fn send_raw(addr: SocketAddr, raw: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(raw).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .expect("response within 5 s")
        .unwrap();
    out
}

fn request(method: &str, path: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer sk-test\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn call(addr: SocketAddr, method: &str, path: &str, body: &str) -> Response {
    parse_response(&send_raw(addr, &request(method, path, body)).await)
}

async fn chat(server: &MockServer) -> Response {
    call(
        server.addr(),
        "POST",
        "/v1/chat/completions",
        r#"{"model":"gpt-test","stream":true,"messages":[]}"#,
    )
    .await
}

const PREFIX: &str = r#"data: {"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test""#;

fn delta(d: &str) -> String {
    format!("{PREFIX},\"choices\":[{{\"index\":0,\"delta\":{d},\"finish_reason\":null}}]}}\n\n")
}

fn tail(finish: &str, usage: &str) -> String {
    format!(
        "{PREFIX},\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish}\"}}]}}\n\n{PREFIX},\"choices\":[],\"usage\":{usage}}}\n\ndata: [DONE]\n\n"
    )
}

#[tokio::test]
async fn text_stream_exact_bytes() {
    let server = MockServer::start().await.unwrap();
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
    assert!(server.base_url().ends_with("/v1"));
    server.push(reply::text("Hello world"));
    assert_eq!(server.pending(), 1);
    let r = chat(&server).await;
    assert_eq!(server.pending(), 0);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers,
        [
            ("Content-Type", "text/event-stream"),
            ("Cache-Control", "no-cache"),
            ("Transfer-Encoding", "chunked"),
            ("Connection", "close"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert!(r.complete);
    let expected = [
        delta(r#"{"role":"assistant","content":""}"#),
        delta(r#"{"content":"Hell"}"#),
        delta(r#"{"content":"o wo"}"#),
        delta(r#"{"content":"rld"}"#),
        tail(
            "stop",
            r#"{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}"#,
        ),
    ]
    .concat();
    assert_eq!(r.text(), expected);
    // One HTTP chunk per SSE event.
    assert_eq!(r.chunks.len(), 7);
    assert!(r.chunks.iter().all(|c| c.ends_with(b"\n\n")));
}

#[tokio::test]
async fn reasoning_and_options() {
    let server = MockServer::start().await.unwrap();
    let mut rep = reply::reasoning_then_text("héllo", "ok");
    rep["reasoning_field"] = json!("reasoning");
    rep["delta_size"] = json!(2);
    rep["usage"] = json!(false);
    rep["done"] = json!(false);
    rep["finish_reason"] = json!("length");
    rep["headers"] =
        json!({"x-request-id": "abc", "Content-Type": "text/event-stream; charset=utf-8"});
    server.push(rep);
    let r = chat(&server).await;
    assert_eq!(r.header("x-request-id"), Some("abc"));
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    let expected = [
        delta(r#"{"role":"assistant","content":""}"#),
        delta(r#"{"reasoning":"hé"}"#),
        delta(r#"{"reasoning":"ll"}"#),
        delta(r#"{"reasoning":"o"}"#),
        delta(r#"{"content":"ok"}"#),
        format!(
            "{PREFIX},\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"length\"}}]}}\n\n"
        ),
    ]
    .concat();
    assert_eq!(r.text(), expected);

    // id/model overrides, null finish reason, custom usage.
    server.push(
        json!({"text": "", "id": "x", "model": "m", "finish_reason": null,
        "usage": {"prompt_tokens": 1}}),
    );
    let r = chat(&server).await;
    let p = r#"data: {"id":"x","object":"chat.completion.chunk","created":1700000000,"model":"m""#;
    assert_eq!(
        r.text(),
        format!(
            "{p},\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"finish_reason\":null}}]}}\n\n{p},\"choices\":[],\"usage\":{{\"prompt_tokens\":1}}}}\n\ndata: [DONE]\n\n"
        )
    );
}

#[tokio::test]
async fn tool_calls_format() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::tool_calls([
        reply::tool_call("call_1", "calc", json!({"a": 1})),
        json!({"id": "call_2", "name": "echo", "arguments": "{\"x\":"}),
    ]));
    let r = chat(&server).await;
    assert!(r.complete);
    let expected = [
        delta(r#"{"role":"assistant","content":""}"#),
        delta(
            r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"calc","arguments":""}}]}"#,
        ),
        delta(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}"#),
        delta(r#"{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}"#),
        delta(
            r#"{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"echo","arguments":""}}]}"#,
        ),
        delta(r#"{"tool_calls":[{"index":1,"function":{"arguments":"{\"x\""}}]}"#),
        delta(r#"{"tool_calls":[{"index":1,"function":{"arguments":":"}}]}"#),
        tail(
            "tool_calls",
            r#"{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}"#,
        ),
    ]
    .concat();
    assert_eq!(r.text(), expected);
    // Every data line is valid JSON.
    for line in r.text().lines().filter(|l| l.starts_with("data: {")) {
        let _: Value = serde_json::from_str(&line[6..]).unwrap();
    }
}

#[tokio::test]
async fn http_error_status_and_body() {
    let server = MockServer::start().await.unwrap();
    let mut rep = reply::http_error(429, json!({"error": {"message": "slow down"}}));
    rep["headers"] = json!({"retry-after": "2"});
    server.push(rep);
    server.push(json!({"status": 502, "body": "<html>bad gateway</html>",
        "headers": {"content-type": "text/html"}}));
    server.push(json!({"status": 503}));

    let r = chat(&server).await;
    assert_eq!(r.status, 429);
    assert!(r.complete);
    assert_eq!(r.header("retry-after"), Some("2"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.text(), r#"{"error":{"message":"slow down"}}"#);

    let r = chat(&server).await;
    assert_eq!(r.status, 502);
    assert_eq!(r.header("content-type"), Some("text/html"));
    assert_eq!(r.text(), "<html>bad gateway</html>");

    let r = chat(&server).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["error"]["type"], "mock_error");
}

#[tokio::test]
async fn split_modes_preserve_body() {
    let server = MockServer::start().await.unwrap();
    let base = json!({"text": "Grüße, 世界! A longer text to split up.", "reasoning": "hmm"});
    let with = |k: &str, v: Value| {
        let mut r = base.clone();
        r[k] = v;
        r
    };
    server.push_all([
        base.clone(),
        with("split", json!(7)),
        with("split_random", json!(42)),
        with("split_random", json!(42)),
        with("split_random", json!(-3)),
    ]);
    let mut responses = Vec::new();
    for _ in 0..5 {
        responses.push(chat(&server).await);
    }
    // Ids differ per request; compare bodies with the id normalised.
    let norm = |r: &Response| {
        assert!(r.complete);
        let t = r.text();
        let start = t.find("chatcmpl-mock-").unwrap() + "chatcmpl-mock-".len();
        let id = &t[start..start + 1];
        t.replace(&format!("chatcmpl-mock-{id}"), "ID")
    };
    let reference = norm(&responses[0]);
    for r in &responses[1..] {
        assert_eq!(norm(r), reference);
    }
    let split = &responses[1].chunks;
    assert!(split[..split.len() - 1].iter().all(|c| c.len() == 7));
    assert!(split.last().unwrap().len() <= 7);
    let sizes = |r: &Response| r.chunks.iter().map(Vec::len).collect::<Vec<_>>();
    assert!(sizes(&responses[2]).iter().all(|&n| (1..=16).contains(&n)));
    assert_eq!(sizes(&responses[2]), sizes(&responses[3]));
    assert_ne!(sizes(&responses[2]), sizes(&responses[4]));
}

#[tokio::test]
async fn drop_after_bytes_truncates() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::text("Hello world"));
    let full = chat(&server).await.body;
    server.push(json!({"text": "Hello world", "drop_after_bytes": 150}));
    let r = chat(&server).await;
    assert_eq!(r.status, 200);
    assert!(!r.complete);
    assert_eq!(r.body.len(), 150);
    // Only the id differs (mock-1 vs mock-2).
    let fixed = String::from_utf8_lossy(&r.body).replace("mock-2", "mock-1");
    assert_eq!(fixed.as_bytes(), &full[..150]);

    // Dropping past the end still omits the terminating chunk.
    server.push(json!({"sse": "data: x\n\n", "drop_after_bytes": 1000}));
    let r = chat(&server).await;
    assert_eq!(r.text(), "data: x\n\n");
    assert!(!r.complete);
}

#[tokio::test]
async fn stall_pauses_then_continues() {
    let server = MockServer::start().await.unwrap();
    server.push(
        json!({"sse": ["data: a\n\n", "data: b\n\n"], "stall_after_bytes": 5, "stall_ms": 500}),
    );
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    s.write_all(&request("POST", "/v1/chat/completions", "{}"))
        .await
        .unwrap();
    let started = Instant::now();
    let mut raw = Vec::new();
    let mut buf = [0u8; 1024];
    // Read until the first 5 body bytes ("data:") have arrived.
    while find(&raw, b"5\r\ndata:\r\n").is_none() {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0);
        raw.extend_from_slice(&buf[..n]);
    }
    let first = started.elapsed();
    s.read_to_end(&mut raw).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(490));
    assert!(first < Duration::from_millis(400));
    let r = parse_response(&raw);
    assert!(r.complete);
    assert_eq!(r.text(), "data: a\n\ndata: b\n\n");
    assert_eq!(r.chunks[0], b"data:");

    // Default stall (60 s): a client that gives up does not block the server.
    server.push(json!({"text": "hi", "stall_after_bytes": 0}));
    server.push(reply::text("next"));
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    s.write_all(&request("POST", "/v1/chat/completions", "{}"))
        .await
        .unwrap();
    let n = tokio::time::timeout(Duration::from_millis(300), s.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(
        std::str::from_utf8(&buf[..n])
            .unwrap()
            .starts_with("HTTP/1.1 200 OK")
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(100), s.read(&mut buf))
            .await
            .is_err(),
        "stalled"
    );
    drop(s);
    let r = chat(&server).await;
    assert!(r.text().contains(r#""content":"next""#));
}

#[tokio::test]
async fn delay_between_pieces() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": ["a", "b", "c"], "delay_ms": 60}));
    let started = Instant::now();
    let r = chat(&server).await;
    assert!(started.elapsed() >= Duration::from_millis(110));
    assert_eq!(r.chunks, [b"a", b"b", b"c"]);
}

#[tokio::test]
async fn raw_chunks_and_sse() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"chunks": [{"a": 1}, "not json"]}));
    server.push(json!({"chunks": [{"b": [1, 2]}], "done": false}));
    server.push(json!({"sse": [": comment\r\n", "", "data: {\"x\"\r\n\r\n"], "status": 201}));
    let r = chat(&server).await;
    assert_eq!(
        r.text(),
        "data: {\"a\":1}\n\ndata: not json\n\ndata: [DONE]\n\n"
    );
    let r = chat(&server).await;
    assert_eq!(r.text(), "data: {\"b\":[1,2]}\n\n");
    let r = chat(&server).await;
    assert_eq!(r.status, 201);
    assert!(r.complete);
    // Empty elements are skipped (a zero-size chunk would end the body).
    assert_eq!(
        r.chunks,
        [&b": comment\r\n"[..], &b"data: {\"x\"\r\n\r\n"[..]]
    );
}

#[tokio::test]
async fn request_log() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::text("a"));
    server.push(reply::text("b"));
    chat(&server).await;
    call(
        server.addr(),
        "POST",
        "/api/chat/completions?api-version=1",
        "not json",
    )
    .await;
    let r = call(server.addr(), "GET", "/v1/models", "").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["type"], "not_found");
    let log = server.requests();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].method, "POST");
    assert_eq!(log[0].path, "/v1/chat/completions");
    assert_eq!(log[0].body["model"], "gpt-test");
    assert_eq!(log[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(log[0].header("Content-Type"), Some("application/json"));
    assert_eq!(
        log[0].headers[0],
        ("host".to_string(), "127.0.0.1".to_string())
    );
    assert_eq!(log[1].path, "/api/chat/completions?api-version=1");
    assert_eq!(log[1].body, json!("not json"));
    assert_eq!(log[2].method, "GET");
    assert_eq!(log[2].body, Value::Null);
}

#[tokio::test]
async fn chunked_request_body_and_expect_continue() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::text("x"));
    server.push(reply::text("y"));
    let raw = b"POST /v1/chat/completions HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"mod\r\na;ext=1\r\nel\":\"abc\"}\r\n0\r\n\r\n";
    let r = parse_response(&send_raw(server.addr(), raw).await);
    assert!(r.text().contains(r#""model":"abc""#));

    let body = r#"{"model":"m2"}"#;
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = [0u8; 25];
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    assert!(parse_response(&raw).text().contains(r#""model":"m2""#));
    assert_eq!(server.requests()[1].body, json!({"model": "m2"}));
}

#[tokio::test]
async fn control_routes() {
    let server = MockServer::start().await.unwrap();
    let addr = server.addr();
    let r = call(
        addr,
        "POST",
        "/_mock/replies",
        r#"[{"text":"one"},{"status":401}]"#,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), r#"{"queued":2}"#);
    let r = call(addr, "POST", "/_mock/replies", r#"{"text":"three"}"#).await;
    assert_eq!(r.json(), json!({"queued": 1}));
    assert_eq!(server.pending(), 3);
    let r = call(addr, "GET", "/_mock/pending", "").await;
    assert_eq!(r.json(), json!({"pending": 3}));

    // Invalid replies are rejected as a whole.
    let r = call(
        addr,
        "POST",
        "/_mock/replies",
        r#"[{"text":"ok"},{"txt":"typo"}]"#,
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("txt")
    );
    assert_eq!(server.pending(), 3);

    assert!(chat(&server).await.text().contains(r#""content":"one""#));
    assert_eq!(chat(&server).await.status, 401);
    let r = call(addr, "GET", "/_mock/requests", "").await;
    let log = r.json();
    assert_eq!(log.as_array().unwrap().len(), 2);
    assert_eq!(log[0]["path"], "/v1/chat/completions");
    assert_eq!(log[0]["method"], "POST");
    assert_eq!(log[0]["body"]["model"], "gpt-test");
    assert_eq!(log[0]["headers"][0], json!(["host", "127.0.0.1"]));

    let r = call(addr, "POST", "/_mock/reset", "").await;
    assert_eq!(r.status, 200);
    assert_eq!(server.pending(), 0);
    assert!(server.requests().is_empty());
    assert_eq!(call(addr, "GET", "/_mock/nope", "").await.status, 404);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn empty_queue_is_500() {
    let server = MockServer::start().await.unwrap();
    let r = chat(&server).await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.text(),
        r#"{"error":{"message":"mock server: no scripted reply left","type":"server_error"}}"#
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
#[should_panic(expected = "unknown key `delay`")]
async fn push_rejects_typos() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"text": "x", "delay": 5}));
}

#[test]
fn validation() {
    use crate::validate_reply;
    for bad in [
        json!("text"),
        json!({"text": 1}),
        json!({"sse": "x", "text": "y"}),
        json!({"body": {}, "tool_calls": []}),
        json!({"split": 0}),
        json!({"split": 1, "split_random": 1}),
        json!({"headers": {"content-length": "1"}}),
        json!({"status": 42}),
        json!({"tool_calls": [{"id": "a", "fn": "x"}]}),
    ] {
        assert!(validate_reply(&bad).is_err(), "{bad}");
    }
    for good in [
        json!({}),
        json!({"_comment": "x", "text": "y"}),
        json!({"status": 200, "body": {"ok": true}}),
        json!({"tool_calls": [{"id": "a", "name": "f", "arguments": "{"}]}),
    ] {
        assert!(validate_reply(&good).is_ok(), "{good}");
    }
}

#[tokio::test]
async fn drop_stops_server_and_connections() {
    let server = MockServer::start().await.unwrap();
    let addr = server.addr();
    server.push(json!({"text": "hi", "stall_after_bytes": 0}));
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&request("POST", "/v1/chat/completions", "{}"))
        .await
        .unwrap();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).await.unwrap();
    assert!(n > 0);
    drop(server);
    // The stalled connection is closed without the terminating chunk…
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut rest))
        .await
        .expect("connection closed after drop")
        .unwrap();
    assert!(!rest.ends_with(b"0\r\n\r\n"));
    // …and the listener is gone.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn generated_and_hex_pieces() {
    let server = MockServer::start().await.unwrap();
    server
        .push(json!({"sse": ["data: ", {"repeat": "ab", "bytes": 200_001}, {"hex": "0a 0A ff"}]}));
    let r = chat(&server).await;
    assert!(r.complete);
    assert_eq!(r.body.len(), 6 + 200_001 + 3);
    assert!(r.body.starts_with(b"data: abab"));
    assert!(r.body.ends_with(b"ba\n\n\xff"));
    // Generated bytes go out in bounded writes.
    assert!(r.chunks.iter().all(|c| c.len() <= 64 * 1024));

    // An error body too large to spell out, with the status and type a test wants.
    server.push(
        json!({"status": 500, "sse": [{"repeat": "x", "bytes": 100}],
                       "headers": {"content-type": "application/json"}}),
    );
    let r = chat(&server).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.text(), "x".repeat(100));

    // A client that stops reading ends a huge body without the server holding it.
    server.push(json!({"sse": [{"repeat": "y", "bytes": 1u64 << 40}]}));
    server.push(reply::text("next"));
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    s.write_all(&request("POST", "/v1/chat/completions", "{}"))
        .await
        .unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let mut seen = 0;
    while seen < 1 << 20 {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0);
        seen += n;
    }
    drop(s);
    let r = chat(&server).await;
    assert!(r.text().contains(r#""content":"next""#));
}

#[tokio::test]
async fn head_stall_waits_before_the_status_line() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"text": "hi", "head_stall_ms": 400}));
    let started = Instant::now();
    let r = chat(&server).await;
    assert!(started.elapsed() >= Duration::from_millis(390));
    assert_eq!(r.status, 200);
    assert!(r.complete);

    // A client that gives up does not block the server.
    server.push(json!({"text": "hi", "head_stall_ms": 60_000}));
    server.push(reply::text("next"));
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    s.write_all(&request("POST", "/v1/chat/completions", "{}"))
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    assert!(
        tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf))
            .await
            .is_err(),
        "nothing before the head"
    );
    drop(s);
    let r = chat(&server).await;
    assert!(r.text().contains(r#""content":"next""#));
}

#[tokio::test]
async fn redirect_to_a_second_server_records_what_followed() {
    let first = MockServer::start().await.unwrap();
    let second = MockServer::start().await.unwrap();
    first.push(reply::redirect(
        307,
        format!("{}/chat/completions", second.base_url()),
    ));
    let r = chat(&first).await;
    assert_eq!(r.status, 307);
    assert_eq!(
        r.header("location"),
        Some(format!("{}/chat/completions", second.base_url()).as_str())
    );
    assert!(r.body.is_empty());
    assert_eq!(second.requests().len(), 0);
}

#[test]
fn piece_validation() {
    use crate::validate_reply;
    for bad in [
        json!({"sse": [{"repeat": "x", "bytes": 10}], "split": 2}),
        json!({"sse": [{"repeat": "x", "bytes": 10}], "split_random": 2}),
        json!({"sse": [{"hex": "0"}]}),
        json!({"sse": [1]}),
        json!({"head_stall_ms": -1}),
    ] {
        assert!(validate_reply(&bad).is_err(), "{bad}");
    }
    for good in [
        json!({"sse": [{"hex": "00"}], "split": 1}),
        json!({"sse": [{"repeat": "x", "bytes": 10}], "stall_after_bytes": 3}),
        json!({"text": "x", "head_stall_ms": 5}),
        json!({"text": "x", "end_delay_ms": 5}),
    ] {
        assert!(validate_reply(&good).is_ok(), "{good}");
    }
}
