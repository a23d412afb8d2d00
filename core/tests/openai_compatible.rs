//! The OpenAI-compatible population (llama.cpp, vLLM, Ollama, LM Studio, LiteLLM, OpenRouter,
//! DeepSeek, Groq, Together, Fireworks and the shapes any of them may send) through
//! `openai-completions`: every fixture of `tests/fixtures/openai-compatible` served by the mock
//! server with any chunk boundaries gives its expected message, no call is merged or lost, no
//! call has an empty or a duplicate id, and the transcript replays with every
//! `tool_call_id` matching its call.

#[path = "support/openai_compatible.rs"]
mod openai_compatible;

use futures::StreamExt;
use openai_compatible::{Case, cases, check_invariants, reply, shapings, summarise};
use pi_agent::ai::{
    self, AssistantMessage, Context, Message, Model, StopReason, StreamOptions, TextContent, Tool,
    ToolResultMessage, UserContent, UserMessage,
};
use pi_mock_server::{MockServer, reply as mock_reply};
use serde_json::{Value, json};

fn model_for(server: &MockServer) -> Model {
    Model::new("openai-completions", "mock", "m", server.base_url())
}

fn context() -> Context {
    let tool = |name: &str| Tool {
        name: name.into(),
        description: format!("{name} of a place"),
        parameters: json!({"type": "object"}),
    };
    Context {
        system_prompt: None,
        messages: vec![Message::User(UserMessage::text(
            "Weather in Paris and Tokyo?",
        ))],
        tools: Some(vec![tool("get_weather"), tool("get_time")]),
    }
}

/// Streams `case` once with `shaping`; returns the `*_end` events and the final message (both
/// as JSON, the timestamp zeroed and the measured timing removed) and the message.
async fn replay(case: &Case, shaping: &Value) -> (Vec<Value>, AssistantMessage) {
    let server = MockServer::start().await.unwrap();
    server.push(reply(case, shaping));
    let mut stream = ai::stream(&model_for(&server), &context(), &StreamOptions::default());
    let mut ends = Vec::new();
    while let Some(event) = stream.next().await {
        if event.kind().ends_with("_end") {
            ends.push(serde_json::to_value(&event).unwrap());
        }
    }
    (ends, stream.final_message().expect("the stream ended"))
}

fn comparable(message: &AssistantMessage) -> Value {
    let mut value = serde_json::to_value(message).unwrap();
    value["timestamp"] = json!(0);
    value.as_object_mut().unwrap().shift_remove("timing");
    value
}

#[tokio::test]
async fn every_family_shape_gives_its_expected_message_with_any_chunk_boundaries() {
    for case in cases() {
        let mut reference: Option<(Vec<Value>, Value)> = None;
        for shaping in shapings() {
            let (ends, message) = replay(&case, &shaping).await;
            let json = serde_json::to_value(&message).unwrap();
            check_invariants(&case.name, &json);
            assert_eq!(
                summarise(&json, &case.expected),
                case.expected,
                "{} with {shaping}: {json:#}",
                case.name
            );
            let observed = (ends, comparable(&message));
            match &reference {
                None => reference = Some(observed),
                Some(reference) => {
                    assert_eq!(&observed, reference, "{} with {shaping}", case.name)
                }
            }
        }
    }
}

/// The next request after a tool-call turn: every call replayed with its (unique, non-empty)
/// id, every tool result pointing at one of them.
#[tokio::test]
async fn every_call_replays_with_a_unique_id_its_result_points_at() {
    let mut replayed = 0;
    for case in cases() {
        let (_, message) = replay(&case, &json!({})).await;
        let calls: Vec<_> = message.tool_calls().cloned().collect();
        if calls.is_empty() || message.stop_reason == StopReason::Error {
            continue;
        }
        replayed += 1;
        let server = MockServer::start().await.unwrap();
        server.push(mock_reply::text("done"));
        let mut context = context();
        context.messages.push(Message::Assistant(message));
        for call in &calls {
            context
                .messages
                .push(Message::ToolResult(ToolResultMessage {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    content: vec![UserContent::Text(TextContent::new("sunny"))],
                    ..ToolResultMessage::default()
                }));
        }
        let answer = ai::complete(&model_for(&server), &context, &StreamOptions::default()).await;
        assert_eq!(
            answer.stop_reason,
            StopReason::Stop,
            "{}: {answer:?}",
            case.name
        );
        let body = &server.requests()[0].body;
        let messages = body["messages"].as_array().unwrap();
        let sent_ids: Vec<&str> = messages
            .iter()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .map(|call| call["id"].as_str().unwrap())
            .collect();
        let result_ids: Vec<&str> = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["tool_call_id"].as_str().unwrap())
            .collect();
        assert_eq!(sent_ids.len(), calls.len(), "{}: {body}", case.name);
        assert_eq!(sent_ids, result_ids, "{}: {body}", case.name);
        assert!(sent_ids.iter().all(|id| !id.is_empty()), "{}", case.name);
        let unique: std::collections::HashSet<_> = sent_ids.iter().collect();
        assert_eq!(unique.len(), sent_ids.len(), "{}: {body}", case.name);
    }
    assert!(replayed >= 12, "only {replayed} cases had calls");
}

/// A call's generated id depends only on the stream: the same bytes give the same ids, and
/// another response id gives others (two turns of a transcript never share one).
#[tokio::test]
async fn generated_ids_are_stable_and_differ_between_responses() {
    let case = cases()
        .into_iter()
        .find(|case| case.name == "shapes/no_ids_at_all")
        .unwrap();
    let (_, first) = replay(&case, &json!({})).await;
    let (_, again) = replay(&case, &json!({"split": 7})).await;
    let ids = |m: &AssistantMessage| m.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), ids(&again));
    let other = Case {
        name: "other response id".into(),
        sse: case.sse.replace("chatcmpl-shape", "chatcmpl-other"),
        expected: Value::Null,
    };
    let (_, second_turn) = replay(&other, &json!({})).await;
    let (a, b) = (ids(&first), ids(&second_turn));
    assert_eq!(a.len(), 2);
    assert!(a.iter().all(|id| !b.contains(id)), "{a:?} {b:?}");
}
