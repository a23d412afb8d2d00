//! Tool-argument validation through the agent (faux provider): schemas with `$ref`s validate
//! and coerce like any other, and a schema that cannot be used becomes an error tool result
//! while the run goes on. Regression test for issue 7: a union branch `{"$ref": "#/$defs/P"}`
//! used to panic inside validation, failing the whole run and leaving the call without a result.

use std::sync::{Arc, Mutex};

use pi_agent::agent::{Agent, AgentMessage, AgentOptions, AgentTool, AgentToolResult, FnTool};
use pi_agent::ai::StopReason;
use pi_agent::ai::providers::faux::{
    FauxProvider, FauxResponse, faux_assistant_message, faux_text, faux_tool_call_with_id,
};
use serde_json::{Value, json};

fn reply(content: Vec<pi_agent::ai::AssistantContent>) -> FauxResponse {
    faux_assistant_message(content).into()
}

/// A tool that records the arguments it receives.
fn recording(name: &str, schema: Value, seen: &Arc<Mutex<Vec<Value>>>) -> Arc<dyn AgentTool> {
    let seen = Arc::clone(seen);
    Arc::new(FnTool::new(
        name,
        "Records its arguments",
        schema,
        move |call| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push(call.arguments.clone());
                Ok(AgentToolResult::text("recorded"))
            }
        },
    ))
}

fn result(messages: &[AgentMessage], id: &str) -> (String, bool) {
    let result = messages
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .find(|r| r.tool_call_id == id)
        .unwrap_or_else(|| panic!("no result for {id}"));
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (text, result.is_error)
}

/// The shape pydantic gives an optional nested model: `anyOf: [{$ref}, {type: null}]`.
fn person_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "person": {"anyOf": [{"$ref": "#/$defs/Person"}, {"type": "null"}], "default": null},
            "people": {"type": "array", "items": {"$ref": "#/$defs/Person"}},
            "count": {"type": "integer"}
        },
        "required": ["people"],
        "$defs": {
            "Person": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
                "required": ["name"]
            }
        }
    })
}

#[tokio::test]
async fn ref_schemas_validate_and_bad_schemas_become_error_results() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tools = vec![
        recording("people", person_schema(), &seen),
        recording(
            "broken",
            json!({"type": "object", "properties": {"q": {"pattern": "("}}}),
            &seen,
        ),
        recording("looping", json!({"$ref": "#"}), &seen),
    ];
    let faux = FauxProvider::register();
    faux.set_responses(vec![
        reply(vec![
            faux_tool_call_with_id(
                "ok",
                "people",
                json!({"person": {"name": "Ann", "age": 3}, "people": [{"name": "Bo"}], "count": "2"}),
            ),
            faux_tool_call_with_id("null", "people", json!({"person": null, "people": []})),
            faux_tool_call_with_id("bad-args", "people", json!({"people": [{"age": -1}]})),
            faux_tool_call_with_id("broken", "broken", json!({"q": "x"})),
            faux_tool_call_with_id("looping", "looping", json!({})),
        ]),
        reply(vec![faux_text("done")]),
    ]);
    let agent = Agent::new(AgentOptions {
        system_prompt: "Test.".into(),
        model: Some(faux.model()),
        tools,
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();
    let messages = agent.messages();

    // The valid calls ran, with coerced arguments ("2" became 2).
    assert_eq!(result(&messages, "ok"), ("recorded".to_owned(), false));
    assert_eq!(result(&messages, "null"), ("recorded".to_owned(), false));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            json!({"person": {"name": "Ann", "age": 3}, "people": [{"name": "Bo"}], "count": 2}),
            json!({"person": null, "people": []}),
        ]
    );

    // Invalid arguments get pi's report, with paths through the `$ref`.
    let (text, is_error) = result(&messages, "bad-args");
    assert!(is_error);
    assert_eq!(
        text,
        "Validation failed for tool \"people\":\n  - people.0.name: must have required properties name\n  - people.0.age: must be >= 0\n\nReceived arguments:\n{\n  \"people\": [\n    {\n      \"age\": -1\n    }\n  ]\n}"
    );

    // Schemas that cannot be used are error results, not crashes.
    let (text, is_error) = result(&messages, "broken");
    assert!(is_error);
    assert!(
        text.starts_with("Invalid JSON Schema for tool \"broken\": "),
        "{text}"
    );
    let (text, is_error) = result(&messages, "looping");
    assert!(is_error);
    assert!(text.contains("leads back to itself"), "{text}");

    // And the run went on to the model's next turn.
    let last = messages
        .last()
        .and_then(AgentMessage::as_assistant)
        .expect("final reply");
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(faux.pending_count(), 0);
}
