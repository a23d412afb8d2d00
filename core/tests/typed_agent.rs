//! Agent runs that end in a value, against the mock server (openai-completions): the schema goes
//! with every model call, tools still run, the final answer is validated and parsed into
//! `RunOutcome::output`, and an invalid answer is re-asked with the report up to the limit.

use std::sync::Arc;

use pi_agent::agent::{Agent, AgentMessage, AgentOptions, AgentSettings, AgentToolResult, FnTool};
use pi_agent::ai::{ApiKey, ErrorKind, Message, Model, OutputSchema, StopReason, StreamOptions};
use pi_mock_server::{MockServer, reply};
use serde_json::{Value, json};

fn schema() -> OutputSchema {
    OutputSchema::new(
        "weather",
        json!({"type": "object",
               "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
               "required": ["city", "celsius"]}),
    )
}

fn agent(server: &MockServer, retries: Option<u32>) -> Agent {
    let lookup = FnTool::new(
        "lookup",
        "Looks the temperature up",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        |_call| async { Ok(AgentToolResult::text("21.5")) },
    );
    Agent::new(AgentOptions {
        model: Some(Model::new(
            "openai-completions",
            "mock",
            "mock-gpt",
            server.base_url(),
        )),
        tools: vec![Arc::new(lookup)],
        settings: AgentSettings {
            stream_options: StreamOptions {
                api_key: Some(ApiKey::new("sk-test")),
                max_retries: Some(0),
                ..StreamOptions::default()
            },
            output_schema: Some(schema()),
            output_retries: retries,
            ..AgentSettings::default()
        },
        ..AgentOptions::default()
    })
}

fn last_assistant(messages: &[AgentMessage]) -> &pi_agent::ai::AssistantMessage {
    match messages.last() {
        Some(AgentMessage::Llm(Message::Assistant(message))) => message,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_run_uses_its_tools_then_ends_in_the_validated_value() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::tool_call(
        "call_1",
        "lookup",
        json!({"city": "Paris"}),
    ));
    server.push(reply::text(r#"{"city": "Paris", "celsius": 21.5}"#));
    let outcome = agent(&server, None)
        .prompt("Weather in Paris?")
        .await
        .unwrap();
    assert_eq!(
        outcome.output,
        Some(json!({"city": "Paris", "celsius": 21.5}))
    );
    #[derive(serde::Deserialize, PartialEq, Debug)]
    struct Weather {
        city: String,
        celsius: f64,
    }
    let typed: Weather = outcome.output_as().unwrap().unwrap();
    assert_eq!(typed.city, "Paris");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        // Every call asks for the shape; the tools stay on offer.
        assert_eq!(
            request.body["response_format"]["json_schema"]["name"],
            "weather"
        );
        assert_eq!(request.body["tools"][0]["function"]["name"], "lookup");
    }
}

#[tokio::test]
async fn an_invalid_answer_is_re_asked_with_the_report() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::text(r#"{"city": "Paris"}"#));
    server.push(reply::text(r#"{"city": "Paris", "celsius": 20}"#));
    let outcome = agent(&server, None).prompt("Weather?").await.unwrap();
    assert_eq!(
        outcome.output,
        Some(json!({"city": "Paris", "celsius": 20}))
    );
    // prompt, the invalid answer, the re-ask, the answer.
    assert_eq!(outcome.new_messages.len(), 4);
    let AgentMessage::Llm(Message::Assistant(failed)) = &outcome.new_messages[1] else {
        panic!("{:?}", outcome.new_messages[1])
    };
    assert_eq!(failed.error_kind, Some(ErrorKind::InvalidOutput));
    let second = &server.requests()[1].body["messages"];
    let retry = second
        .as_array()
        .unwrap()
        .last()
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .or_else(|| {
            second.as_array().unwrap().last().map(|m| {
                m["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
        })
        .unwrap();
    assert!(
        retry.starts_with(
            "Validation failed for output \"weather\":\n  - celsius: must have required properties celsius"
        ),
        "{retry}"
    );
    assert!(
        retry.contains("answer again with only the JSON value"),
        "{retry}"
    );
}

#[tokio::test]
async fn the_run_fails_once_the_re_asks_are_used_up() {
    for (retries, requests) in [(None, 2), (Some(0), 1), (Some(2), 3)] {
        let server = MockServer::start().await.unwrap();
        for _ in 0..4 {
            server.push(reply::text("not json"));
        }
        let outcome = agent(&server, retries).prompt("Weather?").await.unwrap();
        assert_eq!(outcome.output, None);
        let last = last_assistant(&outcome.new_messages);
        assert_eq!(last.stop_reason, StopReason::Error);
        assert_eq!(last.error_kind, Some(ErrorKind::InvalidOutput));
        assert_eq!(server.requests().len(), requests, "retries {retries:?}");
    }
}

#[tokio::test]
async fn settings_read_the_schema_and_retries_from_json() {
    let settings = AgentSettings::from_json(
        r#"{"outputSchema": {"name": "w", "schema": {"type": "object"}}, "outputRetries": 3}"#,
    )
    .unwrap();
    assert_eq!(settings.output_retries, Some(3));
    assert_eq!(settings.output().unwrap().schema, json!({"type": "object"}));
    let value: Value = serde_json::to_value(&settings).unwrap();
    assert_eq!(value["outputSchema"]["name"], "w");
}

#[tokio::test]
async fn an_answer_from_the_agents_own_stream_function_is_validated_and_re_asked() {
    // A stream function of the agent's own (a proxy, a binding's) does not go through
    // `ai::stream`: the agent checks the answer itself.
    let answers = Arc::new(std::sync::Mutex::new(vec![
        r#"{"city": "Paris", "celsius": 21.5}"#,
        r#"{"city": 5}"#,
    ]));
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (counted, script) = (Arc::clone(&calls), Arc::clone(&answers));
    let agent = agent(&MockServer::start().await.unwrap(), Some(1));
    agent.update_hooks(|hooks| {
        hooks.stream_fn = Some(Arc::new(move |model, _context, _options| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let text = script.lock().unwrap().pop().unwrap_or("still not it");
            let (mut writer, stream) = pi_agent::ai::channel(model, None);
            tokio::spawn(async move {
                let index = writer.text_start().await;
                writer.text_delta(index, text).await;
                writer.text_end(index).await;
                writer.done().await;
            });
            stream
        }));
    });
    let outcome = agent.prompt("Weather?").await.unwrap();
    // The first answer was rejected and re-asked; the second validated.
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(
        outcome.output,
        Some(json!({"city": "Paris", "celsius": 21.5}))
    );
    let rejected = outcome
        .new_messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Llm(Message::Assistant(message)) => Some(message),
            _ => None,
        })
        .next()
        .unwrap();
    assert_eq!(rejected.error_kind, Some(ErrorKind::InvalidOutput));
    // With the re-asks used up, the run ends in the invalid_output message.
    answers.lock().unwrap().clear();
    let outcome = agent.prompt("Again?").await.unwrap();
    assert_eq!(outcome.output, None);
    assert_eq!(
        last_assistant(&outcome.new_messages).error_kind,
        Some(ErrorKind::InvalidOutput)
    );
}

#[tokio::test]
async fn a_re_ask_is_a_turn_end_the_stop_hook_and_steering_see() {
    use futures::FutureExt;

    // A stop hook that ends the run after any turn: the invalid answer's turn ends the run,
    // with no re-ask.
    let server = MockServer::start().await.unwrap();
    server.push(reply::text("not json"));
    server.push(reply::text(r#"{"city": "Paris", "celsius": 21.5}"#));
    let stopping = agent(&server, Some(1));
    stopping.update_hooks(|hooks| {
        hooks.should_stop_after_turn = Some(Arc::new(|_, _| async { Ok(true) }.boxed()));
    });
    let outcome = stopping.prompt("Weather?").await.unwrap();
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        last_assistant(&outcome.new_messages).error_kind,
        Some(ErrorKind::InvalidOutput)
    );

    // Steering queued while the invalid answer streamed goes with the re-ask, after the report.
    let server = MockServer::start().await.unwrap();
    server.push(reply::text("not json"));
    server.push(reply::text(r#"{"city": "Rome", "celsius": 30}"#));
    let steered = agent(&server, Some(1));
    let steering = steered.clone();
    let _subscription = steered.subscribe(move |event| {
        if let pi_agent::agent::AgentEvent::MessageEnd { message } = event
            && let AgentMessage::Llm(Message::Assistant(answer)) = message
            && answer.error_kind == Some(ErrorKind::InvalidOutput)
        {
            steering.steer(pi_agent::ai::UserMessage::text("Rome, not Paris."));
        }
    });
    let outcome = steered.prompt("Weather in Paris?").await.unwrap();
    assert_eq!(outcome.output, Some(json!({"city": "Rome", "celsius": 30})));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body["messages"].as_array().unwrap();
    let last_two: Vec<String> = sent[sent.len() - 2..]
        .iter()
        .map(|message| message["content"].to_string())
        .collect();
    assert!(
        last_two[0].contains("does not match the required output schema"),
        "{last_two:?}"
    );
    assert!(last_two[1].contains("Rome, not Paris."), "{last_two:?}");
}
