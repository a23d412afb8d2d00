//! The `Agent` and its loop against the faux provider: pi's event sequences, tool execution
//! modes, failures, aborts, queues and subscribers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_agent::agent::{
    Agent, AgentError, AgentEvent, AgentMessage, AgentOptions, AgentTool, AgentToolResult,
    CustomMessage, FnTool, QueueMode, ToolError, ToolExecutionMode,
};
use pi_agent::ai::providers::faux::{
    FauxOptions, FauxProvider, FauxResponse, faux_assistant_message, faux_error_message, faux_text,
    faux_tool_call_with_id,
};
use pi_agent::ai::{Message, StopReason, UserMessage};
use serde_json::{Value, json};

fn calculator() -> Arc<dyn AgentTool> {
    Arc::new(FnTool::new(
        "calculator",
        "Evaluates a*b",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
               "required": ["a", "b"]}),
        |call| async move {
            let a = call.arguments["a"].as_f64().unwrap_or(0.0);
            let b = call.arguments["b"].as_f64().unwrap_or(0.0);
            Ok(AgentToolResult::text(format!("{}", a * b)))
        },
    ))
}

fn sleeper(name: &'static str, millis: u64) -> Arc<dyn AgentTool> {
    Arc::new(FnTool::new(
        name,
        "Sleeps",
        json!({"type": "object"}),
        move |call| async move {
            call.updates.send(AgentToolResult::text("working"));
            tokio::time::sleep(Duration::from_millis(millis)).await;
            Ok(AgentToolResult::text(format!("{name} done")))
        },
    ))
}

struct Harness {
    agent: Agent,
    faux: FauxProvider,
    events: Arc<Mutex<Vec<AgentEvent>>>,
}

impl Harness {
    fn new(tools: Vec<Arc<dyn AgentTool>>, responses: Vec<FauxResponse>) -> Self {
        Self::with(tools, responses, |_| {})
    }

    fn with(
        tools: Vec<Arc<dyn AgentTool>>,
        responses: Vec<FauxResponse>,
        adjust: impl FnOnce(&mut AgentOptions),
    ) -> Self {
        let faux = FauxProvider::register();
        faux.set_responses(responses);
        let mut options = AgentOptions {
            system_prompt: "You are a test.".into(),
            model: Some(faux.model()),
            tools,
            ..AgentOptions::default()
        };
        adjust(&mut options);
        let agent = Agent::new(options);
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        agent.subscribe(move |event| sink.lock().unwrap().push(event.clone()));
        Self {
            agent,
            faux,
            events,
        }
    }

    /// Event kinds without `message_update` and `tool_execution_update` (their count depends
    /// on chunking).
    fn kinds(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| {
                !matches!(
                    e,
                    AgentEvent::MessageUpdate { .. } | AgentEvent::ToolExecutionUpdate { .. }
                )
            })
            .map(|e| match e {
                AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                    format!("{}({})", e.kind(), message.role())
                }
                _ => e.kind().to_owned(),
            })
            .collect()
    }

    fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap().clone()
    }
}

fn reply(content: Vec<pi_agent::ai::AssistantContent>) -> FauxResponse {
    faux_assistant_message(content).into()
}

/// Every tool call in the transcript has exactly one tool result.
fn assert_transcript_valid(messages: &[AgentMessage]) {
    let calls: Vec<String> = messages
        .iter()
        .filter_map(AgentMessage::as_assistant)
        .flat_map(|m| m.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>())
        .collect();
    for id in &calls {
        let results = messages
            .iter()
            .filter_map(AgentMessage::as_tool_result)
            .filter(|r| &r.tool_call_id == id)
            .count();
        assert_eq!(results, 1, "tool call {id} has {results} results");
    }
}

#[tokio::test]
async fn simple_prompt_has_pis_event_sequence() {
    let h = Harness::new(vec![], vec![reply(vec![faux_text("Hello!")])]);
    h.agent.prompt("hi").await.unwrap();
    assert_eq!(
        h.kinds(),
        [
            "agent_start",
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "message_start(assistant)",
            "message_end(assistant)",
            "turn_end",
            "agent_end"
        ]
    );
    let updates = h
        .events()
        .iter()
        .filter(|e| e.kind() == "message_update")
        .count();
    assert!(updates >= 3, "text_start, text_delta, text_end at least");
    let messages = h.agent.messages();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].as_assistant().unwrap().text(), "Hello!");
    assert!(!h.agent.is_streaming());
    let AgentEvent::AgentEnd { messages: new } = h.events().last().unwrap().clone() else {
        panic!("last event is agent_end")
    };
    assert_eq!(new.len(), 2);
}

#[tokio::test]
async fn tool_round_trip() {
    let h = Harness::new(
        vec![calculator()],
        vec![
            reply(vec![faux_tool_call_with_id(
                "c1",
                "calculator",
                json!({"a": 6, "b": 7}),
            )]),
            reply(vec![faux_text("The answer is 42.")]),
        ],
    );
    h.agent.prompt("What is 6*7?").await.unwrap();
    assert_eq!(
        h.kinds(),
        [
            "agent_start",
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "message_start(assistant)",
            "message_end(assistant)",
            "tool_execution_start",
            "tool_execution_end",
            "message_start(toolResult)",
            "message_end(toolResult)",
            "turn_end",
            "turn_start",
            "message_start(assistant)",
            "message_end(assistant)",
            "turn_end",
            "agent_end"
        ]
    );
    let messages = h.agent.messages();
    let result = messages[2].as_tool_result().unwrap();
    assert_eq!(result.tool_call_id, "c1");
    assert!(!result.is_error);
    assert_eq!(
        serde_json::to_value(&result.content).unwrap(),
        json!([{"type": "text", "text": "42"}])
    );
    assert_eq!(
        messages[3].as_assistant().unwrap().text(),
        "The answer is 42."
    );
    assert_eq!(h.faux.call_count(), 2);
}

fn end_ids(events: &[AgentEvent]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut execution_ends = Vec::new();
    let mut result_ends = Vec::new();
    let mut turn_results = Vec::new();
    for event in events {
        match event {
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                execution_ends.push(tool_call_id.clone())
            }
            AgentEvent::MessageEnd { message } => {
                if let Some(result) = message.as_tool_result() {
                    result_ends.push(result.tool_call_id.clone());
                }
            }
            AgentEvent::TurnEnd { tool_results, .. } if turn_results.is_empty() => {
                turn_results = tool_results
                    .iter()
                    .map(|r| r.tool_call_id.clone())
                    .collect();
            }
            _ => {}
        }
    }
    (execution_ends, result_ends, turn_results)
}

#[tokio::test]
async fn parallel_ends_in_completion_order_results_in_source_order() {
    let h = Harness::new(
        vec![sleeper("slow", 200), sleeper("fast", 10)],
        vec![
            reply(vec![
                faux_tool_call_with_id("tool-1", "slow", json!({})),
                faux_tool_call_with_id("tool-2", "fast", json!({})),
            ]),
            reply(vec![faux_text("done")]),
        ],
    );
    h.agent.prompt("go").await.unwrap();
    let (execution_ends, result_ends, turn_results) = end_ids(&h.events());
    assert_eq!(execution_ends, ["tool-2", "tool-1"]);
    assert_eq!(result_ends, ["tool-1", "tool-2"]);
    assert_eq!(turn_results, ["tool-1", "tool-2"]);
    // Both started before either ended (they ran concurrently).
    let kinds = h.kinds();
    let first_end = kinds
        .iter()
        .position(|k| k == "tool_execution_end")
        .unwrap();
    assert_eq!(
        kinds[first_end - 2..first_end],
        ["tool_execution_start", "tool_execution_start"]
    );
    // Updates come between a call's start and its end.
    let updates = h
        .events()
        .iter()
        .filter(|e| e.kind() == "tool_execution_update")
        .count();
    assert_eq!(updates, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_progress_report_precedes_a_siblings_end_as_in_pi() {
    // pi runs each tool's synchronous start as it launches it: the last call's first report
    // comes before the ends of the calls before it that finish without awaiting anything. On
    // a multi-threaded runtime the order would otherwise depend on which task runs first (it
    // did: the instant ends came first); a batch several times.
    for _ in 0..20 {
        first_report_before_sibling_end().await;
    }
}

async fn first_report_before_sibling_end() {
    let instant = Arc::new(FnTool::new(
        "instant",
        "Returns at once",
        json!({"type": "object"}),
        |_| async { Ok(AgentToolResult::text("instant done")) },
    ));
    let h = Harness::new(
        vec![instant, sleeper("reporter", 50)],
        vec![
            reply(vec![
                faux_tool_call_with_id("tool-1", "instant", json!({})),
                faux_tool_call_with_id("tool-a", "instant", json!({})),
                faux_tool_call_with_id("tool-b", "instant", json!({})),
                faux_tool_call_with_id("tool-c", "instant", json!({})),
                faux_tool_call_with_id("tool-2", "reporter", json!({})),
            ]),
            reply(vec![faux_text("done")]),
        ],
    );
    h.agent.prompt("go").await.unwrap();
    let tool_part: Vec<&str> = h
        .events()
        .iter()
        .map(AgentEvent::kind)
        .filter(|k| k.starts_with("tool_execution"))
        .collect();
    assert_eq!(
        tool_part,
        [
            "tool_execution_start",
            "tool_execution_start",
            "tool_execution_start",
            "tool_execution_start",
            "tool_execution_start",
            "tool_execution_update",
            "tool_execution_end",
            "tool_execution_end",
            "tool_execution_end",
            "tool_execution_end",
            "tool_execution_end"
        ]
    );
}

#[tokio::test]
async fn sequential_mode_runs_one_call_at_a_time() {
    let h = Harness::with(
        vec![sleeper("slow", 100), sleeper("fast", 10)],
        vec![
            reply(vec![
                faux_tool_call_with_id("tool-1", "slow", json!({})),
                faux_tool_call_with_id("tool-2", "fast", json!({})),
            ]),
            reply(vec![faux_text("done")]),
        ],
        |options| options.settings.tool_execution = ToolExecutionMode::Sequential,
    );
    h.agent.prompt("go").await.unwrap();
    let (execution_ends, result_ends, _) = end_ids(&h.events());
    assert_eq!(execution_ends, ["tool-1", "tool-2"]);
    assert_eq!(result_ends, ["tool-1", "tool-2"]);
    let kinds = h.kinds();
    let tool_part: Vec<_> = kinds
        .iter()
        .filter(|k| k.starts_with("tool_") || k.contains("toolResult"))
        .collect();
    assert_eq!(
        tool_part,
        [
            "tool_execution_start",
            "tool_execution_end",
            "message_start(toolResult)",
            "message_end(toolResult)",
            "tool_execution_start",
            "tool_execution_end",
            "message_start(toolResult)",
            "message_end(toolResult)"
        ]
    );
}

#[tokio::test]
async fn a_tool_can_force_sequential_mode() {
    let forced = Arc::new(
        FnTool::new("slow", "Sleeps", json!({"type": "object"}), |_| async {
            tokio::time::sleep(Duration::from_millis(80)).await;
            Ok(AgentToolResult::text("slow done"))
        })
        .with_execution_mode(ToolExecutionMode::Sequential),
    );
    let h = Harness::new(
        vec![forced, sleeper("fast", 1)],
        vec![
            reply(vec![
                faux_tool_call_with_id("tool-1", "slow", json!({})),
                faux_tool_call_with_id("tool-2", "fast", json!({})),
            ]),
            reply(vec![faux_text("done")]),
        ],
    );
    h.agent.prompt("go").await.unwrap();
    let (execution_ends, _, _) = end_ids(&h.events());
    assert_eq!(execution_ends, ["tool-1", "tool-2"]);
}

fn tool_result_text(messages: &[AgentMessage], id: &str) -> (String, bool) {
    let result = messages
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .find(|r| r.tool_call_id == id)
        .unwrap_or_else(|| panic!("no result for {id}"));
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    (text, result.is_error)
}

#[tokio::test]
async fn bad_calls_become_error_results_and_the_run_goes_on() {
    let failing: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "failing",
        "Fails",
        json!({"type": "object"}),
        |_| async { Err(ToolError::new("disk full")) },
    ));
    let panicking: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "panicking",
        "Panics",
        json!({"type": "object"}),
        |_| async {
            panic!("tool bug");
        },
    ));
    let h = Harness::new(
        vec![calculator(), failing, panicking],
        vec![
            reply(vec![
                faux_tool_call_with_id("bad-args", "calculator", json!({"a": "six"})),
                faux_tool_call_with_id("unknown", "nope", json!({})),
                faux_tool_call_with_id("fails", "failing", json!({})),
                faux_tool_call_with_id("panics", "panicking", json!({})),
            ]),
            reply(vec![faux_text("I see the errors.")]),
        ],
    );
    h.agent.prompt("go").await.unwrap();
    let messages = h.agent.messages();
    assert_transcript_valid(&messages);
    let (text, is_error) = tool_result_text(&messages, "bad-args");
    assert!(is_error);
    assert!(
        text.starts_with("Validation failed for tool \"calculator\":\n"),
        "{text}"
    );
    assert!(text.contains("  - a: "), "{text}");
    assert!(text.contains("  - b: "), "{text}");
    assert!(
        text.ends_with("Received arguments:\n{\n  \"a\": \"six\"\n}"),
        "{text}"
    );
    assert_eq!(
        tool_result_text(&messages, "unknown"),
        ("Tool nope not found".to_owned(), true)
    );
    assert_eq!(
        tool_result_text(&messages, "fails"),
        ("disk full".to_owned(), true)
    );
    let (text, is_error) = tool_result_text(&messages, "panics");
    assert!(
        is_error && text.contains("panicked") && text.contains("tool bug"),
        "{text}"
    );
    assert_eq!(
        messages.last().unwrap().as_assistant().unwrap().text(),
        "I see the errors."
    );
}

#[tokio::test]
async fn abort_during_a_tool_ends_the_run_without_an_extra_message() {
    let h = Harness::new(
        vec![sleeper("slow", 30_000)],
        vec![
            reply(vec![faux_tool_call_with_id("t1", "slow", json!({}))]),
            reply(vec![faux_text("never")]),
        ],
    );
    let agent = h.agent.clone();
    let started = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&started);
    h.agent.subscribe(move |event| {
        if event.kind() == "tool_execution_start" {
            notify.notify_one();
        }
    });
    let run = tokio::spawn(async move { agent.prompt("go").await });
    started.notified().await;
    h.agent.abort();
    tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("abort is prompt")
        .unwrap()
        .unwrap();
    let messages = h.agent.messages();
    assert_transcript_valid(&messages);
    let roles: Vec<_> = messages.iter().map(AgentMessage::role).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult"]);
    assert_eq!(
        tool_result_text(&messages, "t1"),
        ("Tool execution was aborted".to_owned(), true)
    );
    assert_eq!(h.kinds().last().map(String::as_str), Some("agent_end"));
    assert!(!h.agent.is_streaming());
    assert_eq!(h.faux.pending_count(), 1, "no model call after the abort");
}

#[tokio::test]
async fn abort_mid_stream_records_an_aborted_message() {
    let faux = FauxProvider::register_with(FauxOptions {
        tokens_per_second: Some(200.0),
        ..FauxOptions::default()
    });
    faux.push(faux_assistant_message(vec![faux_text("word ".repeat(400))]));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    let runner = agent.clone();
    let run = tokio::spawn(async move { runner.prompt("talk").await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(agent.is_streaming());
    let partial = agent.streaming_message().expect("a message is streaming");
    assert!(!partial.as_assistant().unwrap().text().is_empty());
    agent.abort();
    tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let last = agent
        .messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("Request was aborted"));
    assert!(!last.text().is_empty(), "partial text is kept");
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
}

#[tokio::test]
async fn prompt_while_busy_is_refused_with_pis_message() {
    let h = Harness::new(
        vec![sleeper("slow", 300)],
        vec![
            reply(vec![faux_tool_call_with_id("t1", "slow", json!({}))]),
            reply(vec![faux_text("done")]),
        ],
    );
    let agent = h.agent.clone();
    let run = tokio::spawn(async move { agent.prompt("go").await });
    while !h.agent.is_streaming() {
        tokio::task::yield_now().await;
    }
    let error = h.agent.prompt("again").await.unwrap_err();
    assert_eq!(error, AgentError::AlreadyProcessingPrompt);
    assert_eq!(
        error.to_string(),
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    );
    assert_eq!(
        h.agent.continue_run().await.unwrap_err().to_string(),
        "Agent is already processing. Wait for completion before continuing."
    );
    h.agent.wait_for_idle().await;
    run.await.unwrap().unwrap();
    assert!(!h.agent.is_streaming());
}

#[tokio::test]
async fn continue_rules() {
    let h = Harness::new(
        vec![],
        vec![
            reply(vec![faux_text("first")]),
            reply(vec![faux_text("second")]),
        ],
    );
    assert_eq!(
        h.agent.continue_run().await.unwrap_err().to_string(),
        "No messages to continue from"
    );
    h.agent.prompt("hi").await.unwrap();
    assert_eq!(
        h.agent.continue_run().await.unwrap_err().to_string(),
        "Cannot continue from message role: assistant"
    );
    // From a user tail, only the new assistant message is added.
    h.agent.append_message(UserMessage::text("more")).unwrap();
    h.events.lock().unwrap().clear();
    h.agent.continue_run().await.unwrap();
    let ends: Vec<_> = h
        .kinds()
        .into_iter()
        .filter(|k| k.starts_with("message_end"))
        .collect();
    assert_eq!(ends, ["message_end(assistant)"]);
    assert_eq!(h.agent.messages().len(), 4);
}

#[tokio::test]
async fn steering_is_injected_after_the_tool_batch() {
    let seen_contexts = Arc::new(Mutex::new(Vec::new()));
    let recorder = Arc::clone(&seen_contexts);
    let factory: FauxResponse = FauxResponse::Factory(Arc::new(move |context, _, _, _| {
        recorder.lock().unwrap().push(
            context
                .messages
                .iter()
                .map(Message::role)
                .collect::<Vec<_>>(),
        );
        faux_assistant_message(vec![faux_text("steered")])
    }));
    let h = Harness::new(
        vec![sleeper("slow", 100)],
        vec![
            reply(vec![faux_tool_call_with_id("t1", "slow", json!({}))]),
            factory,
        ],
    );
    let agent = h.agent.clone();
    h.agent.subscribe(move |event| {
        if event.kind() == "tool_execution_start" {
            agent.steer(UserMessage::text("actually, stop"));
        }
    });
    h.agent.prompt("go").await.unwrap();
    let roles: Vec<_> = h
        .agent
        .messages()
        .iter()
        .map(|m| m.role().to_owned())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "user", "assistant"]
    );
    assert_eq!(
        seen_contexts.lock().unwrap()[0],
        ["user", "assistant", "toolResult", "user"]
    );
    assert!(!h.agent.has_queued_messages());
}

#[tokio::test]
async fn follow_ups_run_when_the_agent_would_stop() {
    let h = Harness::new(
        vec![],
        vec![
            reply(vec![faux_text("one")]),
            reply(vec![faux_text("two")]),
            reply(vec![faux_text("three")]),
        ],
    );
    h.agent.set_follow_up_mode(QueueMode::OneAtATime);
    h.agent.follow_up(UserMessage::text("and then?"));
    h.agent.follow_up(UserMessage::text("and finally?"));
    h.agent.prompt("start").await.unwrap();
    let texts: Vec<_> = h
        .agent
        .messages()
        .iter()
        .filter_map(|m| m.as_assistant().map(|a| a.text()))
        .collect();
    assert_eq!(texts, ["one", "two", "three"]);
    let turn_starts = h.kinds().iter().filter(|k| *k == "turn_start").count();
    assert_eq!(turn_starts, 3);
}

#[tokio::test]
async fn provider_error_ends_the_run_and_keeps_follow_ups() {
    let h = Harness::new(
        vec![],
        vec![faux_error_message(vec![faux_text("par")], "upstream 503").into()],
    );
    h.agent.follow_up(UserMessage::text("later"));
    h.agent.prompt("hi").await.unwrap();
    let last = h
        .agent
        .messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(h.agent.error_message().as_deref(), Some("upstream 503"));
    assert!(
        h.agent.has_queued_messages(),
        "follow-ups are not consumed by a failed run"
    );
    assert_eq!(h.kinds().last().map(String::as_str), Some("agent_end"));
}

#[tokio::test]
async fn missing_provider_is_a_failed_message_not_a_crash() {
    let agent = Agent::new(AgentOptions::default());
    agent.prompt("hi").await.unwrap();
    let last = agent
        .messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        agent.error_message().as_deref(),
        Some(
            "No API provider registered for api: unknown (the agent has no model: give it one \
             when you create it, or set its model before prompting)"
        )
    );
}

#[tokio::test]
async fn terminate_stops_after_the_batch() {
    let finisher: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "finish",
        "Ends the task",
        json!({"type": "object"}),
        |_| async {
            Ok(AgentToolResult {
                terminate: Some(true),
                ..AgentToolResult::text("finished")
            })
        },
    ));
    let h = Harness::new(
        vec![finisher],
        vec![
            reply(vec![faux_tool_call_with_id("t1", "finish", json!({}))]),
            reply(vec![faux_text("unused")]),
        ],
    );
    h.agent.prompt("go").await.unwrap();
    assert_eq!(h.faux.pending_count(), 1);
    assert_eq!(h.agent.messages().last().unwrap().role(), "toolResult");
}

#[tokio::test]
async fn a_panicking_subscriber_starves_nobody() {
    let h = Harness::new(vec![], vec![reply(vec![faux_text("fine")])]);
    let subscription = h.agent.subscribe(|event| {
        if event.kind() != "agent_start" {
            panic!("subscriber bug on {}", event.kind());
        }
    });
    let late = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&late);
    h.agent.subscribe(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    h.agent.prompt("hi").await.unwrap();
    assert_eq!(
        late.load(Ordering::Relaxed),
        h.events().len(),
        "the later subscriber saw every event"
    );
    assert_eq!(h.kinds().last().map(String::as_str), Some("agent_end"));
    let errors = h.agent.listener_errors();
    assert!(
        !errors.is_empty() && errors[0].contains("subscriber bug"),
        "{errors:?}"
    );
    subscription.unsubscribe();
    h.faux
        .push(faux_assistant_message(vec![faux_text("again")]));
    let before = h.agent.listener_errors().len();
    h.agent.prompt("again").await.unwrap();
    assert_eq!(h.agent.listener_errors().len(), before, "unsubscribed");
}

#[tokio::test]
async fn custom_messages_never_reach_the_model() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorder = Arc::clone(&seen);
    let factory = FauxResponse::Factory(Arc::new(move |context, _, _, _| {
        recorder
            .lock()
            .unwrap()
            .extend(context.messages.iter().map(|m| m.role().to_owned()));
        faux_assistant_message(vec![faux_text("ok")])
    }));
    let h = Harness::new(vec![], vec![factory]);
    let custom: CustomMessage =
        serde_json::from_value(json!({"role": "notification", "text": "deployed"})).unwrap();
    h.agent.append_message(custom).unwrap();
    h.agent.prompt("hi").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), ["user"]);
    assert_eq!(h.agent.messages()[0].role(), "notification");
}

#[tokio::test]
async fn reset_and_transcript_round_trip() {
    let h = Harness::new(
        vec![calculator()],
        vec![
            reply(vec![faux_tool_call_with_id(
                "c1",
                "calculator",
                json!({"a": 2, "b": 3}),
            )]),
            reply(vec![faux_text("6")]),
        ],
    );
    h.agent.prompt("2*3?").await.unwrap();
    let saved: Value = serde_json::to_value(h.agent.messages()).unwrap();
    let restored: Vec<AgentMessage> = serde_json::from_value(saved.clone()).unwrap();
    assert_eq!(serde_json::to_value(&restored).unwrap(), saved);
    h.agent.reset().unwrap();
    assert!(h.agent.messages().is_empty());
    assert!(h.agent.error_message().is_none());
}

#[tokio::test]
async fn message_update_gives_the_partial_on_demand() {
    let h = Harness::new(
        vec![],
        vec![reply(vec![faux_text("abcdefghijklmnopqrstuvwxyz")])],
    );
    let lengths = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lengths);
    h.agent.subscribe(move |event| {
        if let AgentEvent::MessageUpdate { partial, .. } = event {
            sink.lock().unwrap().push(partial.with(|m| m.text().len()));
        }
    });
    h.agent.prompt("hi").await.unwrap();
    let lengths = lengths.lock().unwrap().clone();
    assert!(lengths.windows(2).all(|w| w[0] <= w[1]), "{lengths:?}");
    assert_eq!(*lengths.last().unwrap(), 26);
    let json = h
        .events()
        .iter()
        .find(|e| e.kind() == "message_update")
        .unwrap()
        .to_json(true);
    assert_eq!(json["message"]["role"], "assistant");
    assert!(json["assistantMessageEvent"]["type"].is_string());
}

#[test]
fn a_run_outside_a_runtime_or_cut_off_by_its_runtime_leaves_the_agent_idle() {
    use pi_agent::agent::RunInput;

    let (started_tx, started) = std::sync::mpsc::channel();
    let forever: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "forever",
        "Never ends",
        json!({"type": "object"}),
        move |_| {
            let _ = started_tx.send(());
            std::future::pending()
        },
    ));
    let h = Harness::new(
        vec![forever],
        vec![
            reply(vec![faux_tool_call_with_id("call-1", "forever", json!({}))]),
            reply(vec![faux_text("done")]),
        ],
    );
    // Outside any runtime: refused, and the agent stays usable.
    let refused = h.agent.start(RunInput::text("hi")).map(drop).unwrap_err();
    assert_eq!(refused, AgentError::NoRuntime);
    assert!(!h.agent.is_streaming());

    // A run whose runtime shuts down while its tool runs.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let run = runtime.block_on(async { h.agent.start(RunInput::text("go")).unwrap() });
    started
        .recv_timeout(Duration::from_secs(60))
        .expect("the tool starts");
    assert!(h.agent.is_streaming());
    drop(runtime);
    assert!(!h.agent.is_streaming());
    // The cut-off call has its aborted result, and an aborted message says why the run ended.
    let messages = h.agent.messages();
    assert_transcript_valid(&messages);
    let result = messages[messages.len() - 2].as_tool_result().unwrap();
    assert!(result.is_error, "{result:?}");
    assert_eq!(result.tool_call_id, "call-1");
    let failure = messages
        .last()
        .and_then(AgentMessage::as_assistant)
        .unwrap();
    assert_eq!(failure.stop_reason, StopReason::Aborted, "{failure:?}");
    assert!(
        failure
            .error_message
            .as_deref()
            .is_some_and(|error| error.contains("runtime it ran on shut down")),
        "{failure:?}"
    );
    // Every subscriber saw the run end, and so does its stream; its outcome is the failure.
    let kinds = h.kinds();
    assert_eq!(
        kinds[kinds.len() - 6..],
        [
            "tool_execution_end",
            "message_start(toolResult)",
            "message_end(toolResult)",
            "message_start(assistant)",
            "message_end(assistant)",
            "agent_end"
        ],
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|kind| *kind == "agent_start").count(),
        1
    );
    let streamed: Vec<&'static str> = futures::executor::block_on_stream(run)
        .map(|event| event.kind())
        .collect();
    assert_eq!(streamed.last(), Some(&"agent_end"), "{streamed:?}");

    // A run whose runtime shuts down before its task ever runs: it starts and ends.
    h.events.lock().unwrap().clear();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = runtime.block_on(async { h.agent.start(RunInput::text("never")).unwrap() });
    drop(runtime);
    assert!(!h.agent.is_streaming());
    assert_eq!(
        h.kinds(),
        [
            "agent_start",
            "message_start(assistant)",
            "message_end(assistant)",
            "agent_end"
        ]
    );
    let outcome = futures::executor::block_on(run.result());
    let error = outcome.error().expect("the cut-off run failed");
    assert!(error.to_string().contains("shut down"), "{error}");
    assert_transcript_valid(&h.agent.messages());

    // The next run, on another runtime, goes through.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { h.agent.prompt("again").await.unwrap() });
    let last = h.agent.messages().last().cloned().unwrap();
    assert!(last.as_assistant().is_some(), "{last:?}");
}

/// Cut off while the model streams: that message ends, aborted, and the run with it.
#[test]
fn a_run_cut_off_while_the_model_streams_ends_that_message() {
    use pi_agent::agent::RunInput;

    let faux = FauxProvider::register_with(FauxOptions {
        tokens_per_second: Some(50.0),
        ..FauxOptions::default()
    });
    faux.set_responses(vec![reply(vec![faux_text("word ".repeat(500))])]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    let events = Arc::new(Mutex::new(Vec::new()));
    let (streaming_tx, streaming) = std::sync::mpsc::channel();
    let streaming_tx = Mutex::new(streaming_tx);
    let seen = Arc::clone(&events);
    agent.subscribe(move |event| {
        if let AgentEvent::MessageUpdate {
            assistant_message_event: pi_agent::ai::AssistantMessageEvent::TextDelta { .. },
            ..
        } = event
        {
            let _ = streaming_tx.lock().unwrap().send(());
        }
        seen.lock().unwrap().push(event.clone());
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let run = runtime.block_on(async { agent.start(RunInput::text("go")).unwrap() });
    streaming
        .recv_timeout(Duration::from_secs(60))
        .expect("the model streams");
    drop(runtime);
    let kinds: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|event| !matches!(event, AgentEvent::MessageUpdate { .. }))
        .map(|event| event.kind().to_owned())
        .collect();
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["message_end", "agent_end"],
        "{kinds:?}"
    );
    let answer = agent
        .messages()
        .last()
        .and_then(AgentMessage::as_assistant)
        .cloned()
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::Aborted);
    assert!(answer.text().starts_with("word"), "{answer:?}");
    let outcome = futures::executor::block_on(run.result());
    assert_eq!(
        outcome.new_messages.len(),
        2,
        "the prompt and the cut answer"
    );
    assert!(outcome.error().is_some());
}

#[tokio::test]
async fn an_abort_between_turns_ends_the_run_and_leaves_the_queues_alone() {
    let h = Harness::new(
        vec![],
        vec![
            reply(vec![faux_text("first")]),
            reply(vec![faux_text("second")]),
        ],
    );
    // The abort comes while the last turn's events are delivered, before the queues are asked.
    let weak = h.agent.downgrade();
    h.agent.subscribe(move |event| {
        if matches!(event, AgentEvent::TurnEnd { .. })
            && let Some(agent) = weak.upgrade()
        {
            agent.abort();
        }
    });
    h.agent.follow_up(UserMessage::text("later"));
    h.agent.prompt("go").await.unwrap();
    let messages = h.agent.messages();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(h.kinds().last().map(String::as_str), Some("agent_end"));
    assert_eq!(h.agent.queued_messages().1.len(), 1, "the follow-up waits");

    // The next run takes it.
    h.agent.continue_run().await.unwrap();
    assert!(!h.agent.has_queued_messages());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_reporting_without_pause_cannot_hold_off_an_abort() {
    use std::sync::atomic::AtomicBool;

    // The tool reports from a thread of its own as fast as it can, and never ends.
    let stop = Arc::new(AtomicBool::new(false));
    let reporting = Arc::clone(&stop);
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let started_tx = Mutex::new(Some(started_tx));
    let chatty: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "chatty",
        "Reports forever",
        json!({"type": "object"}),
        move |context| {
            let stop = Arc::clone(&reporting);
            let updates = context.updates.clone();
            if let Some(tx) = started_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    updates.send(AgentToolResult::text("still going"));
                }
            });
            std::future::pending()
        },
    ));
    let h = Harness::new(
        vec![chatty],
        vec![reply(vec![faux_tool_call_with_id(
            "call-1",
            "chatty",
            json!({}),
        )])],
    );
    // Each report takes its listener a while: the reports always outrun their delivery.
    h.agent.subscribe_async(|event, _signal| async move {
        if matches!(event, AgentEvent::ToolExecutionUpdate { .. }) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let run = h
        .agent
        .start(pi_agent::agent::RunInput::text("go"))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), started)
        .await
        .expect("the tool starts")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    h.agent.abort();
    let waited = tokio::time::timeout(Duration::from_secs(60), run.result()).await;
    stop.store(true, Ordering::SeqCst);
    waited.expect("the abort ends the run");
    assert!(!h.agent.is_streaming());
    assert_transcript_valid(&h.agent.messages());
}

#[tokio::test]
async fn an_abort_ends_a_run_that_nobody_reads() {
    // Far more events than a run holds for its reader before it waits.
    let h = Harness::new(vec![], vec![reply(vec![faux_text("word ".repeat(20_000))])]);
    let mut run = h
        .agent
        .start(pi_agent::agent::RunInput::text("go"))
        .unwrap();
    // Until the run waits for its reader (every event reaches the subscribers first).
    tokio::time::timeout(Duration::from_secs(60), async {
        while h.events.lock().unwrap().len() < 1_000 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the run fills its queue");
    h.agent.abort();
    tokio::time::timeout(Duration::from_secs(60), h.agent.wait_for_idle())
        .await
        .expect("the aborted run ends unread");
    // Its reader still gets every event, the run's end last.
    let mut last = None;
    while let Some(event) = futures::StreamExt::next(&mut run).await {
        last = Some(event);
    }
    assert!(
        matches!(last, Some(AgentEvent::AgentEnd { .. })),
        "{last:?}"
    );
}
