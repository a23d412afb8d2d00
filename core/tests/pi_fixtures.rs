//! Replays every recorded pi transcript (`tests/fixtures/pi`, see
//! `scripts/pi-fixtures/README.md`) through our Rust API against the mock server, with the same
//! scripted replies, model, context and options, and compares the event JSON as emitted
//! (`serde_json::to_value(&event)`), the final message and the requests we sent with pi's.
//! Documented differences are normalised in one place (`support/pi_fixtures.rs`, `normalise`);
//! every other difference must be listed in `tests/fixtures/pi/known_gaps.json`.

#[path = "support/pi_fixtures.rs"]
mod pi_fixtures;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use pi_agent::agent::{Agent, AgentOptions, AgentTool, AgentToolResult, FnTool, ToolError};
use pi_agent::ai::{self, Context, Model, StreamOptions};
use pi_fixtures::{Fixture, Outcome};
use pi_mock_server::MockServer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Hang guard for one fixture (a healthy replay takes milliseconds).
const TIMEOUT: Duration = Duration::from_secs(60);

/// The fixture's `options` (exactly what pi got) as core's `StreamOptions`, which has pi's flat
/// option shape.
fn stream_options(json: &Value) -> StreamOptions {
    serde_json::from_value(json.clone()).expect("pi's options are StreamOptions JSON")
}

fn requests(server: &MockServer, origin: &str) -> Value {
    let log = server.requests();
    pi_fixtures::requests_json(
        log.iter().map(|r| {
            (
                r.method.as_str(),
                r.path.as_str(),
                r.headers.as_slice(),
                &r.body,
            )
        }),
        origin,
    )
}

/// Streams one AI-level fixture and returns `{events, result, requests}`.
async fn replay_stream(fixture: &Fixture) -> Value {
    let server = MockServer::start().await.expect("mock server");
    let origin = format!("http://{}", server.addr());
    server.push_all(fixture.replies());
    let model: Model = serde_json::from_value(fixture.model(&origin)).expect("model JSON");
    let context: Context =
        serde_json::from_value(fixture.json["context"].clone()).expect("context JSON");
    let mut options = stream_options(&fixture.json["options"]);
    let signal = CancellationToken::new();
    options.signal = Some(signal.clone());
    let abort_after = fixture.json["abortAfter"].as_str();
    let mut stream = match fixture.json["call"].as_str() {
        Some("streamSimple") => ai::stream_simple(&model, &context, &options),
        _ => ai::stream(&model, &context, &options),
    };
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let json = serde_json::to_value(&event).expect("event JSON");
        if abort_after == Some(event.kind()) {
            signal.cancel();
        }
        events.push(json);
    }
    let result = stream.final_message().map_or(Value::Null, |m| {
        serde_json::to_value(m).expect("message JSON")
    });
    let observed =
        json!({"events": events, "result": result, "requests": requests(&server, &origin)});
    pi_fixtures::unmock(observed, &origin)
}

/// A tool that returns the fixture's `results[toolCallId]`.
fn fixture_tool(spec: &Value) -> Arc<dyn AgentTool> {
    let results: HashMap<String, AgentToolResult> =
        serde_json::from_value(spec["results"].clone()).expect("tool results");
    let name = spec["name"].as_str().unwrap_or_default().to_owned();
    let tool_name = name.clone();
    let tool = FnTool::new(
        name,
        spec["description"].as_str().unwrap_or_default(),
        spec["parameters"].clone(),
        move |call| {
            let result = results.get(&call.tool_call_id).cloned().ok_or_else(|| {
                ToolError::new(format!(
                    "fixture: {tool_name} has no result for {}",
                    call.tool_call_id
                ))
            });
            async move { result }
        },
    )
    .with_label(spec["label"].as_str().unwrap_or_default());
    Arc::new(tool)
}

/// Runs one agent fixture and returns `{events, messages, requests}`.
async fn replay_agent(fixture: &Fixture) -> Value {
    let server = MockServer::start().await.expect("mock server");
    let origin = format!("http://{}", server.addr());
    server.push_all(fixture.replies());
    let model: Model = serde_json::from_value(fixture.model(&origin)).expect("model JSON");
    let spec = &fixture.json["agent"];
    let thinking_level = match spec["thinkingLevel"].as_str() {
        None | Some("off") => None,
        Some(level) => Some(serde_json::from_value(json!(level)).expect("thinking level")),
    };
    let agent = Agent::new(AgentOptions {
        system_prompt: spec["systemPrompt"].as_str().unwrap_or_default().to_owned(),
        model: Some(model),
        thinking_level,
        tools: fixture.json["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(fixture_tool)
            .collect(),
        tool_execution: serde_json::from_value(spec["toolExecution"].clone())
            .expect("tool execution mode"),
        stream_options: stream_options(&fixture.json["options"]),
        ..AgentOptions::default()
    });
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let _subscription =
        agent.subscribe(move |event| sink.lock().unwrap().push(event.to_json(false)));
    for prompt in fixture.json["prompts"].as_array().into_iter().flatten() {
        agent
            .prompt(prompt.as_str().unwrap_or_default())
            .await
            .expect("prompt accepted");
    }
    let messages = serde_json::to_value(agent.messages()).expect("messages JSON");
    let events = std::mem::take(&mut *events.lock().unwrap());
    let observed =
        json!({"events": events, "messages": messages, "requests": requests(&server, &origin)});
    pi_fixtures::unmock(observed, &origin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_fixtures_replay_through_rust() {
    let mut outcomes = Vec::new();
    let mut seen = HashMap::new();
    for fixture in pi_fixtures::load_all() {
        *seen.entry(fixture.kind().to_owned()).or_insert(0) += 1;
        let observed = tokio::time::timeout(TIMEOUT, async {
            if fixture.kind() == "agent" {
                replay_agent(&fixture).await
            } else {
                replay_stream(&fixture).await
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{}: replay hung", fixture.name));
        outcomes.push(pi_fixtures::compare(&fixture, &observed));
    }
    assert!(
        seen.get("stream").copied().unwrap_or(0) > 0 && seen.get("agent").copied().unwrap_or(0) > 0
    );
    pi_fixtures::check_against_known_gaps("rust", &outcomes);
}

/// The comparison itself must be able to fail: a changed delta, a missing event, a changed
/// request field, a reordered key are all reported, and normalised differences are not.
#[test]
fn the_comparison_detects_differences() {
    let fixture = pi_fixtures::load_all()
        .into_iter()
        .find(|f| f.name == "openai-completions/plain_text")
        .expect("plain_text fixture");
    let pi = fixture.pi_observation();
    let same: Outcome = pi_fixtures::compare(&fixture, &pi);
    assert!(same.mismatches.is_empty(), "{:?}", same.mismatches);

    let mut changed = pi.clone();
    changed["events"][2]["delta"] = json!("Hallo! ");
    changed["events"].as_array_mut().unwrap().remove(4);
    changed["requests"][0]["body"]["temperature"] = json!(0.7);
    let message = changed["result"].as_object_mut().unwrap();
    let usage = message.shift_remove("usage").unwrap();
    message.insert("usage".into(), usage);
    let paths: Vec<String> = pi_fixtures::compare(&fixture, &changed)
        .mismatches
        .into_iter()
        .map(|m| m.path)
        .collect();
    assert_eq!(
        paths,
        [
            "/events/length",
            "/events/2/delta",
            "/result/@order",
            "/requests/0/body/temperature"
        ]
    );

    let mut normalised = pi.clone();
    normalised["events"][0]["partial"] = json!({});
    normalised["result"]["timestamp"] = json!(1);
    normalised["result"]["usage"]["totalTokens"] = json!(999);
    let paths: Vec<String> = pi_fixtures::compare(&fixture, &normalised)
        .mismatches
        .into_iter()
        .map(|m| m.path)
        .collect();
    // totalTokens is normalised on pi's side only (ours must be the sum).
    assert_eq!(paths, ["/result/usage/totalTokens"]);
}
