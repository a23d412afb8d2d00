//! The OTLP export (cargo feature `otlp`): the spans reach a collector (a small HTTP server on
//! 127.0.0.1 in this test) as OTLP/protobuf with their GenAI names, kinds, statuses, attributes
//! and parents, and no secret is in anything sent.
//!
//! Run with `cargo test -p pi-agent --features otlp --test otlp`.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use pi_agent::agent::{Agent, AgentOptions, AgentToolResult, FnTool};
use pi_agent::ai::providers::faux::{
    FauxProvider, faux_assistant_message, faux_text, faux_tool_call_with_id,
};
use pi_agent::ai::{self, ApiKey, Context, Model, StopReason, StreamOptions, UserMessage};
use pi_agent::observability::otlp::{self, OtlpError};
use pi_mock_server::{MockServer, reply};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

const SECRET: &str = "sk-secret-otlp-7f3a";

/// The requests a collector received: head and body.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP collector: records every request (head and body) and answers 200.
#[derive(Clone, Default)]
struct Collector {
    requests: Received,
}

impl Collector {
    /// Starts listening on 127.0.0.1 and returns the collector and its base URL.
    fn start() -> (Self, String) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let collector = Self::default();
        let requests = Arc::clone(&collector.requests);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let requests = Arc::clone(&requests);
                std::thread::spawn(move || serve(stream, &requests));
            }
        });
        (collector, url)
    }

    fn requests(&self) -> Vec<(String, Vec<u8>)> {
        self.requests.lock().unwrap().clone()
    }
}

/// Serves the requests of one keep-alive connection until the client closes it.
fn serve(stream: TcpStream, requests: &Mutex<Vec<(String, Vec<u8>)>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut head = String::new();
        let mut content_length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    content_length = value.trim().parse().unwrap();
                }
            }
            head.push_str(&line);
        }
        let mut body = vec![0; content_length];
        reader.read_exact(&mut body).unwrap();
        requests.lock().unwrap().push((head, body));
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// One protobuf field's value (the wire types OTLP uses).
#[derive(Clone, Copy, Debug)]
enum Wire<'a> {
    Varint(u64),
    Fixed(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &mut &[u8]) -> u64 {
    let mut value = 0;
    for shift in (0..64).step_by(7) {
        let byte = buf[0];
        *buf = &buf[1..];
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            break;
        }
    }
    value
}

/// The fields of one protobuf message, in order.
fn fields(mut buf: &[u8]) -> Vec<(u64, Wire<'_>)> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = varint(&mut buf);
        let value = match key & 7 {
            0 => Wire::Varint(varint(&mut buf)),
            1 => {
                let (bytes, rest) = buf.split_at(8);
                buf = rest;
                Wire::Fixed(u64::from_le_bytes(bytes.try_into().unwrap()))
            }
            2 => {
                let len = usize::try_from(varint(&mut buf)).unwrap();
                let (bytes, rest) = buf.split_at(len);
                buf = rest;
                Wire::Bytes(bytes)
            }
            5 => {
                let (bytes, rest) = buf.split_at(4);
                buf = rest;
                Wire::Fixed(u64::from(u32::from_le_bytes(bytes.try_into().unwrap())))
            }
            other => panic!("unexpected wire type {other}"),
        };
        out.push((key >> 3, value));
    }
    out
}

fn messages(buf: &[u8], number: u64) -> Vec<&[u8]> {
    fields(buf)
        .into_iter()
        .filter_map(|(n, value)| match value {
            Wire::Bytes(bytes) if n == number => Some(bytes),
            _ => None,
        })
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// `KeyValue` list → key → value as text (`AnyValue`: string, bool, int or double).
fn attributes(buf: &[u8], number: u64) -> BTreeMap<String, String> {
    messages(buf, number)
        .into_iter()
        .map(|pair| {
            let key = text(messages(pair, 1)[0]);
            let value = messages(pair, 2)
                .first()
                .and_then(|any| fields(any).into_iter().next())
                .map(|(kind, value)| match (kind, value) {
                    (1, Wire::Bytes(s)) => text(s),
                    (2, Wire::Varint(b)) => (b != 0).to_string(),
                    (3, Wire::Varint(i)) => i64::from_ne_bytes(i.to_ne_bytes()).to_string(),
                    (4, Wire::Fixed(d)) => f64::from_bits(d).to_string(),
                    other => format!("{other:?}"),
                })
                .unwrap_or_default();
            (key, value)
        })
        .collect()
}

/// One exported span.
#[derive(Debug, Clone)]
struct Exported {
    service: String,
    scope: String,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent_id: Vec<u8>,
    name: String,
    /// OTLP's `SpanKind`: 1 internal, 3 client.
    kind: u64,
    attributes: BTreeMap<String, String>,
    /// OTLP's `StatusCode`: 0 unset, 1 ok, 2 error.
    status: u64,
}

/// Every span of every `ExportTraceServiceRequest` received.
fn exported(collector: &Collector) -> Vec<Exported> {
    let mut spans = Vec::new();
    for (head, body) in collector.requests() {
        assert!(head.starts_with("POST /v1/traces "), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/x-protobuf"),
            "{head}"
        );
        for resource_spans in messages(&body, 1) {
            let resource = attributes(messages(resource_spans, 1)[0], 1);
            for scope_spans in messages(resource_spans, 2) {
                let scope = text(messages(messages(scope_spans, 1)[0], 1)[0]);
                for span in messages(scope_spans, 2) {
                    let one = |n| messages(span, n).first().map(|b| b.to_vec());
                    let varint_field = |n| {
                        fields(span).iter().find_map(|(k, v)| match v {
                            Wire::Varint(x) if *k == n => Some(*x),
                            _ => None,
                        })
                    };
                    let status = messages(span, 15).first().map_or(0, |status| {
                        fields(status)
                            .iter()
                            .find_map(|(k, v)| match v {
                                Wire::Varint(x) if *k == 3 => Some(*x),
                                _ => None,
                            })
                            .unwrap_or(0)
                    });
                    spans.push(Exported {
                        service: resource["service.name"].clone(),
                        scope: scope.clone(),
                        trace_id: one(1).unwrap(),
                        span_id: one(2).unwrap(),
                        parent_id: one(4).unwrap_or_default(),
                        name: text(&one(5).unwrap()),
                        kind: varint_field(6).unwrap_or(0),
                        attributes: attributes(span, 9),
                        status,
                    });
                }
            }
        }
    }
    spans
}

fn named<'a>(spans: &'a [Exported], name: &str) -> Vec<&'a Exported> {
    spans.iter().filter(|span| span.name == name).collect()
}

fn everything_sent(collector: &Collector) -> String {
    collector
        .requests()
        .iter()
        .map(|(head, body)| format!("{head}{}", String::from_utf8_lossy(body)))
        .collect()
}

fn mock_model(server: &MockServer) -> Model {
    Model::new(
        "openai-completions",
        "openai",
        "gpt-4o-mini",
        server.base_url(),
    )
}

fn secret_options() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new(SECRET)),
        max_retry_delay_ms: Some(10),
        ..StreamOptions::default()
    }
}

fn hi() -> Context {
    Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Context::default()
    }
}

#[tokio::test]
async fn requests_and_agent_runs_reach_the_collector_as_genai_spans_without_secrets() {
    let (collector, url) = Collector::start();
    let (layer, guard) = otlp::layer(Some(&url), Some("pi-otlp-test")).unwrap();
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    // A model request against the mock server: a retried 500 whose text echoes the key, then
    // an answer.
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 500, "body": {"error": {"message": format!("echo {SECRET}")}}}));
    server.push(reply::text("Hello"));
    let message = ai::complete(&mock_model(&server), &hi(), &secret_options()).await;
    assert_eq!(message.text(), "Hello");

    // A request that fails (401, not retried).
    server
        .push(json!({"status": 401, "body": {"error": {"message": format!("bad key {SECRET}")}}}));
    let failed = ai::complete(&mock_model(&server), &hi(), &secret_options()).await;
    assert_eq!(failed.stop_reason, StopReason::Error);

    // An agent run with a tool call: invoke_agent > turn > chat / execute_tool.
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_tool_call_with_id(
        "call-1",
        "echo",
        json!({"text": "hi"}),
    )]));
    faux.push(faux_assistant_message(vec![faux_text("done")]));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![Arc::new(FnTool::new(
            "echo",
            "Echoes",
            json!({"type": "object"}),
            |_| async { Ok(AgentToolResult::text("hi")) },
        ))],
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();

    // The host's own spans are not the exporter's business.
    tracing::info_span!(target: "host_app", "host_work").in_scope(|| {});

    // Shutting down flushes what the batch processor still holds.
    guard.shutdown().unwrap();
    let spans = exported(&collector);
    assert!(!spans.is_empty(), "nothing was exported");
    for span in &spans {
        assert_eq!(span.service, "pi-otlp-test");
        assert_eq!(span.scope, "pi_agent");
        assert!(
            !span.attributes.keys().any(|key| key.starts_with("otel.")),
            "{span:?}"
        );
    }
    assert!(named(&spans, "host_work").is_empty(), "{spans:#?}");

    let chats = named(&spans, "chat gpt-4o-mini");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    let ok = chats
        .iter()
        .find(|span| span.status != 2)
        .expect("the successful request");
    assert_eq!(ok.kind, 3, "client");
    let attributes = &ok.attributes;
    assert_eq!(attributes["gen_ai.operation.name"], "chat");
    assert_eq!(attributes["gen_ai.provider.name"], "openai");
    assert_eq!(attributes["gen_ai.request.model"], "gpt-4o-mini");
    assert_eq!(attributes["server.address"], "127.0.0.1");
    assert_eq!(attributes["http.response.status_code"], "200");
    assert!(attributes["gen_ai.response.id"].starts_with("chatcmpl-mock-"));
    assert_eq!(attributes["gen_ai.response.finish_reasons"], "stop");
    assert!(
        attributes["gen_ai.usage.output_tokens"]
            .parse::<i64>()
            .unwrap()
            > 0
    );
    assert!(!attributes.contains_key("gen_ai.output.messages"), "opt-in");
    assert!(!attributes.contains_key("error.type"));

    let bad = chats
        .iter()
        .find(|span| span.status == 2)
        .expect("the failed request has status error");
    assert_eq!(bad.attributes["error.type"], "error");
    assert_eq!(bad.attributes["http.response.status_code"], "401");

    let runs = named(&spans, "invoke_agent");
    assert_eq!(runs.len(), 1);
    let run = runs[0];
    assert_eq!(run.attributes["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(run.attributes["gen_ai.request.model"], "faux-1");
    let turns = named(&spans, "turn");
    assert_eq!(turns.len(), 2);
    for turn in &turns {
        assert_eq!(turn.parent_id, run.span_id);
        assert_eq!(turn.trace_id, run.trace_id);
    }
    let faux_chats = named(&spans, "chat faux-1");
    assert_eq!(faux_chats.len(), 2);
    for chat in &faux_chats {
        assert!(turns.iter().any(|turn| turn.span_id == chat.parent_id));
        assert_eq!(chat.attributes["gen_ai.provider.name"], "faux");
    }
    let tools = named(&spans, "execute_tool echo");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].attributes["gen_ai.tool.name"], "echo");
    assert_eq!(tools[0].attributes["gen_ai.tool.call.id"], "call-1");
    assert_eq!(tools[0].trace_id, run.trace_id);

    let sent = everything_sent(&collector);
    assert!(!sent.contains(SECRET), "{sent}");
    assert!(!sent.contains("sk-secret"), "{sent}");
}

#[tokio::test]
async fn install_sets_the_global_subscriber_once() {
    let (collector, url) = Collector::start();
    let guard = otlp::install(Some(&url), Some("pi-otlp-install")).unwrap();
    assert_eq!(
        otlp::install(Some(&url), None).unwrap_err(),
        OtlpError::SubscriberAlreadySet
    );
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("hello")]));
    let message = ai::complete(&faux.model(), &hi(), &StreamOptions::default()).await;
    assert_eq!(message.text(), "hello");
    guard.flush().unwrap();
    let spans = exported(&collector);
    let chat = spans
        .iter()
        .find(|span| span.name == "chat faux-1")
        .unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(chat.service, "pi-otlp-install");
    guard.shutdown().unwrap();
}

#[test]
fn a_bad_endpoint_is_an_error_that_does_not_repeat_it() {
    // (`layer`, not `install`: another test of this binary installs the global subscriber.)
    let error = otlp::layer::<tracing_subscriber::Registry>(Some("collector:4318"), None)
        .err()
        .unwrap();
    assert!(matches!(error, OtlpError::InvalidEndpoint(_)), "{error}");
    let error = otlp::layer::<tracing_subscriber::Registry>(Some("ftp://u:pw@host/"), None)
        .err()
        .unwrap();
    assert!(!error.to_string().contains("pw"), "{error}");
}
