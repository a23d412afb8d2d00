//! The spans the library reports to `tracing`, with OpenTelemetry's GenAI attribute names, and
//! that no secret is ever among their fields.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use pi_agent::agent::{Agent, AgentOptions, AgentToolResult, FnTool};
use pi_agent::ai::providers::faux::{
    FauxProvider, faux_assistant_message, faux_text, faux_tool_call_with_id,
};
use pi_agent::ai::{self, ApiKey, Context, Model, StreamOptions, UserMessage};
use pi_mock_server::{MockServer, reply};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as recorded: its name and every field given or recorded.
#[derive(Clone, Debug, Default)]
struct Recorded {
    name: String,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(u64, Recorded)>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: LayerContext<'_, S>) {
        let mut recorded = Recorded {
            name: attrs.metadata().name().to_owned(),
            ..Recorded::default()
        };
        attrs.record(&mut Fields(&mut recorded.fields));
        self.0.lock().unwrap().push((id.into_u64(), recorded));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: LayerContext<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, recorded)) = spans.iter_mut().rev().find(|(i, _)| *i == id.into_u64()) {
            values.record(&mut Fields(&mut recorded.fields));
        }
    }
}

impl Recorder {
    fn spans(&self, name: &str) -> Vec<Recorded> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, span)| span.name == name)
            .map(|(_, span)| span.clone())
            .collect()
    }
}

#[tokio::test]
async fn an_agent_run_reports_agent_turn_chat_and_tool_spans() {
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
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

    let runs = recorder.spans("invoke_agent");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].fields["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(runs[0].fields["gen_ai.request.model"], "faux-1");
    assert_eq!(recorder.spans("turn").len(), 2);
    let chats = recorder.spans("chat");
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[0].fields["gen_ai.operation.name"], "chat");
    assert_eq!(chats[0].fields["gen_ai.provider.name"], "faux");
    assert_eq!(chats[0].fields["gen_ai.response.finish_reasons"], "toolUse");
    assert!(
        chats[1].fields["gen_ai.usage.output_tokens"]
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert!(
        !chats[0].fields.contains_key("gen_ai.output.messages"),
        "content is opt-in"
    );
    let tools = recorder.spans("execute_tool");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].fields["gen_ai.tool.name"], "echo");
    assert_eq!(tools[0].fields["gen_ai.tool.call.id"], "call-1");
}

#[tokio::test]
async fn a_request_span_names_the_server_and_never_holds_the_key() {
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 500, "body": {"error": {"message": "echo sk-secret-123"}}}));
    server.push(reply::text("Hello"));
    let model = Model::new(
        "openai-completions",
        "openai",
        "gpt-4o-mini",
        server.base_url(),
    );
    let context = Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Context::default()
    };
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-secret-123")),
        max_retry_delay_ms: Some(10),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model, &context, &options).await;
    assert_eq!(message.text(), "Hello");
    let chats = recorder.spans("chat");
    assert_eq!(chats.len(), 1);
    let chat = &chats[0];
    assert_eq!(chat.fields["server.address"], "127.0.0.1");
    assert_eq!(chat.fields["http.response.status_code"], "200");
    assert!(chat.fields["gen_ai.response.id"].starts_with("chatcmpl-mock-"));
    assert_eq!(chat.fields["gen_ai.request.model"], "gpt-4o-mini");
    let everything = format!("{:?}", recorder.0.lock().unwrap());
    assert!(!everything.contains("sk-secret-123"), "{everything}");
}

#[tokio::test]
async fn forwarded_logs_carry_requests_and_retries_without_secrets() {
    use pi_agent::observability::{ForwardLogs, LogEvent, LogLevel};
    let seen: Arc<Mutex<Vec<LogEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(
        ForwardLogs::new(LogLevel::Debug, move |event| {
            sink.lock().unwrap().push(event.clone());
        }),
    ));
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 503, "body": {"error": {"message": "busy sk-secret-456"}}}));
    server.push(reply::text("ok"));
    let model = Model::new(
        "openai-completions",
        "openai",
        "gpt-4o-mini",
        server.base_url(),
    );
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-secret-456")),
        max_retry_delay_ms: Some(10),
        ..StreamOptions::default()
    };
    let context = Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Context::default()
    };
    assert_eq!(ai::complete(&model, &context, &options).await.text(), "ok");
    let seen = seen.lock().unwrap().clone();
    let retry = seen
        .iter()
        .find(|event| event.target == "pi_agent::retry")
        .expect("the retry is logged");
    assert_eq!(retry.level, LogLevel::Info);
    assert!(retry.to_string().contains("503"), "{retry}");
    assert!(
        seen.iter()
            .any(|e| e.target == "pi_agent::http" && e.level == LogLevel::Debug)
    );
    let all: String = seen.iter().map(ToString::to_string).collect();
    assert!(!all.contains("sk-secret-456"), "{all}");
    assert_eq!(LogLevel::parse("WARNING"), Some(LogLevel::Warn));
}

#[tokio::test]
async fn forwarded_logs_switch_handlers_and_levels_and_never_recurse() {
    use pi_agent::observability::{ForwardLogs, LogEvent, LogLevel};
    let layer = ForwardLogs::none();
    assert_eq!(layer.max_level(), None);
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(layer.clone()));
    let log = || {
        tracing::debug!(target: "pi_agent::http", secret = "no", "debug line");
        tracing::warn!(target: "pi_agent::retry", "warn line");
        tracing::warn!(target: "other_crate", "not ours");
    };
    log(); // no handler: nothing to see, nothing to fail

    let first: Arc<Mutex<Vec<LogEvent>>> = Arc::default();
    let sink = Arc::clone(&first);
    layer.set_handler(LogLevel::Debug, move |event| {
        sink.lock().unwrap().push(event.clone());
        // A handler that logs is not called again for its own event.
        tracing::warn!(target: "pi_agent::retry", "from the handler");
    });
    assert_eq!(layer.max_level(), Some(LogLevel::Debug));
    log();
    let seen: Vec<String> = first
        .lock()
        .unwrap()
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(seen, ["debug line secret=no", "warn line"]);

    // Replaced, with a lower level: the first handler sees nothing more.
    let second: Arc<Mutex<Vec<LogEvent>>> = Arc::default();
    let sink = Arc::clone(&second);
    layer.set_handler(LogLevel::Warn, move |event| {
        sink.lock().unwrap().push(event.clone());
    });
    log();
    assert_eq!(first.lock().unwrap().len(), 2);
    let seen = second.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].level, LogLevel::Warn);
    assert_eq!(seen[0].target, "pi_agent::retry");

    // Removed: the handler is dropped (the sink's only other owner is this test).
    layer.remove_handler();
    assert_eq!(layer.max_level(), None);
    log();
    assert_eq!(second.lock().unwrap().len(), 1);
    assert_eq!(Arc::strong_count(&second), 1);
    assert_eq!(LogLevel::from_u8(4), Some(LogLevel::Debug));
    assert_eq!(LogLevel::from_u8(0), None);
    assert_eq!(LogLevel::from_u8(6), None);
}

/// A field that counts how often it is formatted.
struct Counted(Arc<std::sync::atomic::AtomicUsize>);

impl std::fmt::Debug for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        f.write_str("counted")
    }
}

#[test]
fn a_gated_layer_formats_only_the_events_its_host_wants() {
    use pi_agent::observability::{ForwardLogs, LogEvent, LogLevel};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let formatted = Arc::new(AtomicUsize::new(0));
    let open = Arc::new(AtomicBool::new(false));
    let asked: Arc<Mutex<Vec<(LogLevel, String)>>> = Arc::default();
    let seen: Arc<Mutex<Vec<LogEvent>>> = Arc::default();
    let layer = {
        let (open, asked, seen) = (Arc::clone(&open), Arc::clone(&asked), Arc::clone(&seen));
        ForwardLogs::gated(
            LogLevel::Debug,
            move |level, target| {
                asked.lock().unwrap().push((level, target.to_owned()));
                // A gate that logs is not asked again for its own event.
                tracing::warn!(target: "pi_agent::retry", "from the gate");
                open.load(Ordering::SeqCst)
            },
            move |event| seen.lock().unwrap().push(event.clone()),
        )
    };
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    let log = || {
        let field = Counted(Arc::clone(&formatted));
        tracing::debug!(target: "pi_agent::http", field = ?field, "debug line");
        tracing::trace!(target: "pi_agent::http", "above the level: the gate is not asked");
        tracing::warn!(target: "other_crate", "not ours: the gate is not asked");
    };

    log();
    assert_eq!(
        *asked.lock().unwrap(),
        [(LogLevel::Debug, "pi_agent::http".to_owned())]
    );
    assert_eq!(
        formatted.load(Ordering::SeqCst),
        0,
        "refused, yet formatted"
    );
    assert!(seen.lock().unwrap().is_empty());

    open.store(true, Ordering::SeqCst);
    log();
    assert_eq!(asked.lock().unwrap().len(), 2);
    assert_eq!(formatted.load(Ordering::SeqCst), 1);
    let seen: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(seen, ["debug line field=counted"]);
}
