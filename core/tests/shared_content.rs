//! Issue 17 item 4: a tool result's text is held once however many owners the message has —
//! the events that carry it (`tool_execution_end`, `message_start`, `message_end`,
//! `turn_end`, `agent_end`), the transcript and a snapshot share one allocation
//! ([`SharedString::ptr_eq`]), and the JSON is what it was.

use std::sync::{Arc, Mutex};

use pi_agent::agent::{Agent, AgentEvent, AgentMessage, AgentOptions, AgentToolResult, FnTool};
use pi_agent::ai::providers::faux::{
    FauxProvider, faux_assistant_message, faux_text, faux_tool_call_with_id,
};
use pi_agent::ai::{SharedString, UserContent};
use serde_json::json;

fn text_of(content: &[UserContent]) -> SharedString {
    match content.first() {
        Some(UserContent::Text(text)) => text.text.clone(),
        other => panic!("not a text block: {other:?}"),
    }
}

fn tool_result_text(message: &AgentMessage) -> Option<SharedString> {
    message
        .as_tool_result()
        .map(|result| text_of(&result.content))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_result_is_shared_by_its_events_the_transcript_and_snapshots() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_tool_call_with_id(
        "c1",
        "big",
        json!({}),
    )]));
    faux.push(faux_assistant_message(vec![faux_text("done")]));
    let big = "abcdefghijklmnopqrstuvwxyz".repeat(4096);
    let result = big.clone();
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![Arc::new(FnTool::new(
            "big",
            "Returns a big text",
            json!({"type": "object"}),
            move |_| {
                let result = result.clone();
                async move { Ok(AgentToolResult::text(result)) }
            },
        ))],
        ..AgentOptions::default()
    });
    let seen: Arc<Mutex<Vec<(&'static str, SharedString)>>> = Arc::default();
    let log = Arc::clone(&seen);
    let _subscription = agent.subscribe(move |event| {
        let mut log = log.lock().unwrap();
        match event {
            AgentEvent::ToolExecutionEnd { result, .. } => {
                log.push(("tool_execution_end", text_of(&result.content)));
            }
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                if let Some(text) = tool_result_text(message) {
                    log.push((event.kind(), text));
                }
            }
            AgentEvent::TurnEnd { tool_results, .. } => {
                for result in tool_results {
                    log.push(("turn_end", text_of(&result.content)));
                }
            }
            AgentEvent::AgentEnd { messages } => {
                log.extend(
                    messages
                        .iter()
                        .filter_map(tool_result_text)
                        .map(|t| ("agent_end", t)),
                );
            }
            _ => {}
        }
    });
    agent.prompt("go").await.unwrap();

    let transcript = agent.messages();
    let held = transcript
        .iter()
        .find_map(tool_result_text)
        .expect("the transcript has the tool result");
    assert_eq!(held, big);
    let seen = seen.lock().unwrap();
    let kinds: Vec<&str> = seen.iter().map(|(kind, _)| *kind).collect();
    assert_eq!(
        kinds,
        [
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    for (kind, text) in seen.iter() {
        assert!(
            SharedString::ptr_eq(text, &held),
            "{kind} carries a copy of the result, not the transcript's text"
        );
    }
    let snapshot = agent.snapshot();
    let saved = snapshot.messages.iter().find_map(tool_result_text).unwrap();
    assert!(SharedString::ptr_eq(&saved, &held), "the snapshot copies");

    // The JSON is the plain string it always was.
    let json = serde_json::to_value(&transcript).unwrap();
    assert_eq!(json[2]["content"][0], json!({"type": "text", "text": big}));
}
