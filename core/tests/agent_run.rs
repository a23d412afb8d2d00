//! A run as a value (`Agent::start` → `AgentRun`), cancellation by dropping it, hooks that obey
//! abort like tools, hook failures as data, async subscribers, pi's parallel preparation order,
//! and transcript changes refused during a run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use pi_agent::agent::{
    Agent, AgentError, AgentEvent, AgentHooks, AgentMessage, AgentOptions, AgentTool,
    AgentToolResult, FnTool, HookError, RunInput, TOOL_ABORTED, ToolCallContext, ToolError,
    ToolSpec,
};
use pi_agent::ai::providers::faux::{
    FauxOptions, FauxProvider, faux_assistant_message, faux_text, faux_tool_call_with_id,
};
use pi_agent::ai::{StopReason, UserContent, UserMessage};
use serde_json::json;

/// Generous: only a guard against a hang, never a measurement.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// A tool that logs when its `execute` is called (the start of an execution).
struct LogTool {
    spec: ToolSpec,
    log: Arc<Mutex<Vec<String>>>,
}

impl AgentTool for LogTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn execute(
        &self,
        call: ToolCallContext,
    ) -> futures::future::BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        self.log
            .lock()
            .unwrap()
            .push(format!("execute {}", call.tool_call_id));
        async { Ok(AgentToolResult::text("ok")) }.boxed()
    }
}

fn log_tool(name: &'static str, log: Arc<Mutex<Vec<String>>>) -> Arc<dyn AgentTool> {
    Arc::new(LogTool {
        spec: ToolSpec::new(
            name,
            "Logs its call",
            json!({"type": "object", "properties": {"n": {"type": "number"}}}),
        ),
        log,
    })
}

fn first_text(message: &AgentMessage) -> String {
    match message.as_tool_result().map(|r| &r.content[0]) {
        Some(UserContent::Text(text)) => text.text.to_string(),
        _ => String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_mode_prepares_every_call_before_any_runs() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![
        faux_tool_call_with_id("a", "log", json!({"n": 1})),
        faux_tool_call_with_id("b", "log", json!({"n": 2})),
        faux_tool_call_with_id("c", "log", json!({"n": 3})),
    ]));
    faux.push(faux_assistant_message(vec![faux_text("done")]));
    let log = Arc::new(Mutex::new(Vec::new()));
    let hook_log = Arc::clone(&log);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![log_tool("log", Arc::clone(&log))],
        hooks: AgentHooks {
            before_tool_call: Some(Arc::new(move |ctx, _| {
                hook_log
                    .lock()
                    .unwrap()
                    .push(format!("before {}", ctx.tool_call.id));
                // A slow approval: a call started early would run meanwhile (it must not).
                async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok(None)
                }
                .boxed()
            })),
            ..AgentHooks::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();
    let log = log.lock().unwrap().clone();
    // pi: every before_tool_call of the batch runs before any tool executes, and the
    // executions start in call order.
    assert_eq!(
        log,
        [
            "before a",
            "before b",
            "before c",
            "execute a",
            "execute b",
            "execute c"
        ]
    );
}

#[tokio::test]
async fn a_run_is_a_stream_of_its_events_with_a_result() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("hello")]));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    let mut run = agent.start(RunInput::text("hi")).unwrap();
    // Busy is checked at once, with pi's message.
    assert_eq!(
        agent.start(RunInput::text("again")).unwrap_err(),
        AgentError::AlreadyProcessingPrompt
    );
    let mut kinds = Vec::new();
    while let Some(event) = run.next().await {
        kinds.push(event.kind());
    }
    assert_eq!(kinds.first(), Some(&"agent_start"));
    assert_eq!(kinds.last(), Some(&"agent_end"));
    let outcome = run.result().await;
    assert_eq!(outcome.new_messages.len(), 2);
    assert!(!agent.is_streaming());
}

/// A stream function whose stream never sends anything: only an abort ends it.
fn stalled_model(agent_options: &mut AgentOptions) {
    let faux = FauxProvider::register_with(FauxOptions {
        tokens_per_second: Some(0.001),
        ..FauxOptions::default()
    });
    faux.push(faux_assistant_message(vec![faux_text(
        "a long answer that never comes",
    )]));
    agent_options.model = Some(faux.model());
    // Keep the provider registered for the test's lifetime.
    std::mem::forget(faux);
}

#[tokio::test]
async fn cancelling_the_awaited_prompt_aborts_the_run_and_wait_for_idle_suffices() {
    let mut options = AgentOptions::default();
    stalled_model(&mut options);
    let agent = Agent::new(options);
    let started = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&started);
    let _subscription = agent.subscribe(move |event| {
        if event.kind() == "message_update" || event.kind() == "message_start" {
            notify.notify_one();
        }
    });
    let prompt = agent.prompt("hi");
    let cancelled = tokio::select! {
        _ = prompt => false,
        () = started.notified() => true,
    };
    assert!(cancelled, "the run started and was cancelled");
    // The dropped prompt aborted the run: waiting for idle is enough before the next prompt.
    tokio::time::timeout(HANG_GUARD, agent.wait_for_idle())
        .await
        .expect("the abort completes");
    assert!(!agent.is_streaming());
    let last = agent.messages().last().cloned().unwrap();
    assert_eq!(
        last.as_assistant().unwrap().stop_reason,
        StopReason::Aborted
    );
}

#[tokio::test]
async fn dropping_a_run_aborts_it() {
    let mut options = AgentOptions::default();
    stalled_model(&mut options);
    let agent = Agent::new(options);
    let mut run = agent.start(RunInput::text("hi")).unwrap();
    // Read until the assistant message has started, then drop the run.
    while let Some(event) = run.next().await {
        if event.kind() == "message_start" && event_role(&event) == Some("assistant") {
            break;
        }
    }
    drop(run);
    tokio::time::timeout(HANG_GUARD, agent.wait_for_idle())
        .await
        .expect("the abort completes");
    assert!(!agent.is_streaming());
}

fn event_role(event: &AgentEvent) -> Option<&str> {
    match event {
        AgentEvent::MessageStart { message } => Some(message.role()),
        _ => None,
    }
}

#[tokio::test]
async fn a_hook_that_never_answers_is_cut_short_by_abort_like_a_tool() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_tool_call_with_id(
        "a",
        "log",
        json!({}),
    )]));
    let log = Arc::new(Mutex::new(Vec::new()));
    let entered = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&entered);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![log_tool("log", Arc::clone(&log))],
        hooks: AgentHooks {
            before_tool_call: Some(Arc::new(move |_, _| {
                notify.notify_one();
                // An approval that never comes.
                std::future::pending().boxed()
            })),
            ..AgentHooks::default()
        },
        ..AgentOptions::default()
    });
    let run = agent.start(RunInput::text("go")).unwrap();
    entered.notified().await;
    agent.abort();
    let outcome = tokio::time::timeout(HANG_GUARD, run.result())
        .await
        .expect("the abort ends the run");
    let result = outcome
        .new_messages
        .iter()
        .find_map(AgentMessage::as_tool_result)
        .expect("the call still gets its result");
    assert!(result.is_error);
    assert_eq!(first_text(&result.clone().into()), TOOL_ABORTED);
    assert!(log.lock().unwrap().is_empty(), "the tool never ran");
}

#[tokio::test]
async fn the_tool_watchdog_bounds_an_after_hook_too() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_tool_call_with_id(
        "a",
        "log",
        json!({}),
    )]));
    faux.push(faux_assistant_message(vec![faux_text("done")]));
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![log_tool("log", Arc::clone(&log))],
        settings: pi_agent::agent::AgentSettings {
            tool_timeout_ms: Some(50),
            ..Default::default()
        },
        hooks: AgentHooks {
            after_tool_call: Some(Arc::new(|_, _| std::future::pending().boxed())),
            ..AgentHooks::default()
        },
        ..AgentOptions::default()
    });
    tokio::time::timeout(HANG_GUARD, agent.prompt("go"))
        .await
        .expect("the watchdog ends the hook")
        .unwrap();
    let result = agent
        .messages()
        .into_iter()
        .find(|m| m.as_tool_result().is_some())
        .unwrap();
    assert!(first_text(&result).contains("after_tool_call timed out"));
}

#[tokio::test]
async fn hook_failures_are_data_not_panics() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("never sent")]));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        hooks: AgentHooks {
            transform_context: Some(Arc::new(|_, _| {
                async { Err(HookError::new("summary service down")) }.boxed()
            })),
            ..AgentHooks::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("hi").await.unwrap();
    let last = agent.messages().last().cloned().unwrap();
    let failure = last.as_assistant().unwrap();
    assert_eq!(failure.stop_reason, StopReason::Error);
    assert_eq!(
        failure.error_message.as_deref(),
        Some("summary service down")
    );
    assert_eq!(
        agent.error_message().as_deref(),
        Some("summary service down")
    );

    // should_stop_after_turn failing ends the run with a failure message.
    faux.push(faux_assistant_message(vec![faux_text("answer")]));
    agent.update_hooks(|hooks| {
        hooks.transform_context = None;
        hooks.should_stop_after_turn = Some(Arc::new(|_, _| {
            async { Err(HookError::new("policy check failed")) }.boxed()
        }));
    });
    agent.prompt("again").await.unwrap();
    let last = agent.messages().last().cloned().unwrap();
    assert_eq!(
        last.as_assistant().unwrap().error_message.as_deref(),
        Some("policy check failed")
    );
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn async_subscribers_are_awaited_in_order_and_see_the_signal() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("hi")]));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    let log = Arc::new(Mutex::new(Vec::new()));
    let first = Arc::clone(&log);
    let _a = agent.subscribe_async(move |event, signal| {
        let first = Arc::clone(&first);
        async move {
            // Yield before recording: a later subscriber must still come after.
            tokio::task::yield_now().await;
            assert!(!signal.is_cancelled());
            first
                .lock()
                .unwrap()
                .push(format!("async {}", event.kind()));
        }
    });
    let second = Arc::clone(&log);
    let _b = agent.subscribe(move |event| {
        second
            .lock()
            .unwrap()
            .push(format!("sync {}", event.kind()));
    });
    agent.prompt("x").await.unwrap();
    let log = log.lock().unwrap().clone();
    assert_eq!(log[0], "async agent_start");
    assert_eq!(log[1], "sync agent_start");
    assert_eq!(log.last().unwrap(), "sync agent_end");
    // prompt() returns only after every agent_end listener settled.
    assert!(log.iter().filter(|e| e.ends_with("agent_end")).count() == 2);
}

#[tokio::test]
async fn the_transcript_cannot_change_under_a_running_loop() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_tool_call_with_id(
        "a",
        "reset",
        json!({}),
    )]));
    faux.push(faux_assistant_message(vec![faux_text("done")]));
    let slot: Arc<Mutex<Option<Agent>>> = Arc::new(Mutex::new(None));
    let inside = Arc::clone(&slot);
    let reset = FnTool::new("reset", "Resets", json!({"type": "object"}), move |_| {
        let agent = inside.lock().unwrap().clone();
        async move {
            let agent = agent.expect("set");
            let refused = agent.reset().unwrap_err();
            assert_eq!(refused, AgentError::TranscriptBusy);
            assert!(agent.set_messages(Vec::new()).is_err());
            assert!(agent.append_message(UserMessage::text("x")).is_err());
            Ok(AgentToolResult::text(refused.to_string()))
        }
    });
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![Arc::new(reset)],
        ..AgentOptions::default()
    });
    *slot.lock().unwrap() = Some(agent.clone());
    agent.prompt("go").await.unwrap();
    // The transcript stayed valid: user, assistant (call), tool result, assistant.
    let roles: Vec<String> = agent
        .messages()
        .iter()
        .map(|m| m.role().to_owned())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    *slot.lock().unwrap() = None;
    agent.reset().unwrap();
    assert!(agent.messages().is_empty());
}

#[tokio::test]
async fn dropping_the_last_agent_handle_aborts_its_run() {
    let mut options = AgentOptions::default();
    stalled_model(&mut options);
    let agent = Agent::new(options);
    let mut run = agent.start(RunInput::text("hi")).unwrap();
    while let Some(event) = run.next().await {
        if event_role(&event) == Some("assistant") {
            break;
        }
    }
    // Keep reading the run (its events do not keep the agent alive), drop every handle.
    drop(agent);
    let rest: Vec<AgentEvent> = tokio::time::timeout(HANG_GUARD, run.collect())
        .await
        .expect("the run ends once the agent is gone");
    let Some(AgentEvent::AgentEnd { messages }) = rest.last() else {
        panic!("ends with agent_end")
    };
    let last = messages
        .last()
        .and_then(AgentMessage::as_assistant)
        .unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
}

#[tokio::test]
async fn messages_carry_their_measured_timing() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_tool_call_with_id(
        "a",
        "log",
        json!({}),
    )]));
    faux.push(faux_assistant_message(vec![faux_text("done")]));
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![log_tool("log", log)],
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();
    let messages = agent.messages();
    for assistant in messages.iter().filter_map(AgentMessage::as_assistant) {
        let timing = assistant.timing.expect("every response is timed");
        let ttft = timing.ttft_ms.expect("content arrived");
        assert!(ttft <= timing.duration_ms, "{timing:?}");
        assert_eq!(timing.retry_wait_ms, 0);
    }
    let result = messages
        .iter()
        .find_map(AgentMessage::as_tool_result)
        .unwrap();
    assert!(result.timing.is_some());
    // The JSON field is pi-compatible: optional, camelCase, and ignored by pi.
    let json = serde_json::to_value(messages.last().unwrap()).unwrap();
    assert!(json["timing"]["durationMs"].is_u64(), "{json}");
}

#[tokio::test]
async fn finish_can_stop_waiting_abort_and_wait_again_for_the_same_outcome() {
    let mut options = AgentOptions::default();
    stalled_model(&mut options);
    let agent = Agent::new(options);
    let mut run = agent.start(RunInput::text("hi")).unwrap();
    // A binding's caller is cancelled while it waits: the wait is dropped, the run goes on.
    assert!(run.finish().now_or_never().is_none());
    assert!(!run.is_finished());
    assert!(agent.is_streaming());
    run.abort();
    let outcome = tokio::time::timeout(HANG_GUARD, run.finish())
        .await
        .expect("the abort completes");
    assert!(run.is_finished());
    assert!(!agent.is_streaming());
    let last = outcome.new_messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    // Done: the same outcome again, and a new run starts at once.
    assert_eq!(run.finish().await, outcome);
    drop(agent.start(RunInput::text("again")).unwrap());
}

/// A run longer than the run's event buffer: a consumer that reads a few events and then only
/// wants the result gets it (the run does not wait for the unread events), and a consumer that
/// reads everything sees every delta in order, with the subscriber seeing the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_run_reads_in_order_or_gives_its_result_without_the_events() {
    let faux = FauxProvider::register();
    let text: String = (0..6000).map(|n| format!("w{n} ")).collect();
    faux.push(faux_assistant_message(vec![faux_text(&text)]));
    faux.push(faux_assistant_message(vec![faux_text(&text)]));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    let seen = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&seen);
    let _subscription = agent.subscribe(move |event| {
        if let AgentEvent::MessageUpdate {
            assistant_message_event,
            ..
        } = event
            && let Some(delta) = assistant_message_event.delta()
        {
            sink.lock().unwrap().push_str(delta);
        }
    });

    // Read everything: every delta, in order, then the end.
    let mut run = agent.start(RunInput::text("one")).expect("start");
    let mut streamed = String::new();
    let mut updates = 0;
    let mut last = None;
    while let Some(event) = tokio::time::timeout(HANG_GUARD, run.next())
        .await
        .expect("no hang")
    {
        if let AgentEvent::MessageUpdate {
            assistant_message_event,
            ..
        } = &event
            && let Some(delta) = assistant_message_event.delta()
        {
            streamed.push_str(delta);
            updates += 1;
        }
        last = Some(event.kind());
    }
    assert!(updates > 1024, "longer than the run's buffer: {updates}");
    assert_eq!(streamed, text);
    assert_eq!(
        *seen.lock().unwrap(),
        text,
        "the subscriber saw the same deltas"
    );
    assert_eq!(last, Some("agent_end"));
    // The stream ends before the agent reports idle; `finish` waits for that too.
    let outcome = tokio::time::timeout(HANG_GUARD, run.finish())
        .await
        .expect("no hang");
    assert_eq!(outcome.new_messages.len(), 2, "prompt and reply");
    assert!(run.is_finished());

    // Read a few, then ask for the result.
    let mut run = agent.start(RunInput::text("two")).expect("start");
    for _ in 0..3 {
        run.next().await.expect("an event");
    }
    let outcome = tokio::time::timeout(HANG_GUARD, run.result())
        .await
        .expect("no hang");
    assert_eq!(outcome.new_messages.len(), 2, "prompt and reply");
    assert_eq!(agent.messages().len(), 4);
}

/// The text of a tool result's first block.
fn result_text(result: &AgentToolResult) -> String {
    match result.content.first() {
        Some(UserContent::Text(text)) => text.text.to_string(),
        _ => String::new(),
    }
}

/// A tool that reports progress faster than the events are delivered cannot grow memory
/// without bound: waiting reports are coalesced to the latest, in order, and the final one is
/// always delivered. A tool that reports a little gets every report, as in pi.
#[tokio::test]
async fn a_flood_of_tool_progress_reports_is_bounded_and_keeps_the_latest() {
    const REPORTS: usize = 20_000;
    let faux = FauxProvider::register();
    for (id, n) in [("flood", REPORTS), ("few", 5)] {
        faux.push(faux_assistant_message(vec![faux_tool_call_with_id(
            id,
            "report",
            json!({"n": n}),
        )]));
        faux.push(faux_assistant_message(vec![faux_text("done")]));
    }
    let tool = FnTool::new(
        "report",
        "Reports progress n times",
        json!({"type": "object", "properties": {"n": {"type": "number"}}}),
        |call: ToolCallContext| async move {
            let n = call.arguments["n"].as_u64().unwrap_or(0);
            // No await between reports: on this current-thread runtime the loop cannot emit
            // any of them before the tool returns.
            for i in 0..n {
                call.updates.send(AgentToolResult::text(i.to_string()));
            }
            Ok(AgentToolResult::text("reported"))
        },
    );
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![Arc::new(tool)],
        ..AgentOptions::default()
    });
    for (prompt, sent) in [("flood", REPORTS), ("few", 5)] {
        let mut run = agent.start(RunInput::text(prompt)).expect("start");
        let mut reports = Vec::new();
        while let Some(event) = tokio::time::timeout(HANG_GUARD, run.next())
            .await
            .expect("no hang")
        {
            if let AgentEvent::ToolExecutionUpdate { partial_result, .. } = &event {
                reports.push(result_text(partial_result).parse::<usize>().expect("n"));
            }
        }
        assert!(reports.windows(2).all(|pair| pair[0] < pair[1]), "in order");
        assert_eq!(
            reports.last(),
            Some(&(sent - 1)),
            "the latest report arrives"
        );
        if sent == 5 {
            assert_eq!(reports, vec![0, 1, 2, 3, 4], "every report of a calm tool");
        } else {
            assert!(reports.len() <= 257, "bounded: {} reports", reports.len());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_ends_a_turn_whose_stream_ignores_its_signal() {
    // A stream function's own stream that never looks at its signal (written by hand, never
    // ended): the abort still ends the turn, with the partial text, once the stream's grace
    // is over (the run used to wait for it for ever).
    let stream_fn: pi_agent::agent::StreamFn = Arc::new(|model, _, _| {
        let (mut writer, stream) = pi_agent::ai::channel(model, None);
        tokio::spawn(async move {
            writer.start().await;
            let index = writer.text_start().await;
            writer.text_delta(index, "partial").await;
            std::future::pending::<()>().await;
            drop(writer);
        });
        stream
    });
    let agent = Agent::new(AgentOptions {
        model: Some(pi_agent::ai::Model::new("mock", "mock", "mock-1", "")),
        hooks: AgentHooks {
            stream_fn: Some(stream_fn),
            ..AgentHooks::default()
        },
        ..AgentOptions::default()
    });
    let mut run = agent.start(RunInput::text("hi")).unwrap();
    let ended = tokio::time::timeout(HANG_GUARD, async {
        let mut kinds = Vec::new();
        while let Some(event) = run.next().await {
            if event.kind() == "message_update" && !kinds.contains(&"message_update") {
                agent.abort();
            }
            kinds.push(event.kind());
        }
        kinds
    })
    .await
    .expect("the aborted run ended");
    assert_eq!(ended.last(), Some(&"agent_end"));
    let outcome = run.result().await;
    let answer = outcome.new_messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(answer.stop_reason, StopReason::Aborted);
    assert_eq!(answer.text(), "partial");
    assert_eq!(answer.error_message.as_deref(), Some("Request was aborted"));
    assert!(!agent.is_streaming());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_subscriber_that_never_returns_does_not_hold_an_aborted_run() {
    // pi awaits its listeners; one that never returns held the run for ever, abort or not.
    // Once aborted, a subscriber's call has two seconds, then it is dropped and reported, and
    // the run ends (every later event still delivered, agent_end included).
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("hi")]));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let _stuck = agent.subscribe_async(move |event, _signal| {
        let log = Arc::clone(&log);
        async move {
            log.lock().unwrap().push(event.kind());
            if event.kind() == "turn_start" {
                std::future::pending::<()>().await;
            }
        }
    });
    let run = agent.start(RunInput::text("x")).unwrap();
    for _ in 0..3000 {
        if seen.lock().unwrap().contains(&"turn_start") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    agent.abort();
    let outcome = tokio::time::timeout(HANG_GUARD, run.result())
        .await
        .expect("the aborted run ended");
    assert!(!agent.is_streaming());
    assert_eq!(seen.lock().unwrap().last(), Some(&"agent_end"));
    assert!(
        agent
            .listener_errors()
            .iter()
            .any(|error| error.contains("did not return") && error.contains("turn_start")),
        "{:?}",
        agent.listener_errors()
    );
    assert!(!outcome.new_messages.is_empty());
}

/// Spawns a task that records `name` once `signal` fires.
fn tell_when_fired(
    name: &'static str,
    told: &Arc<Mutex<Vec<&'static str>>>,
    signal: tokio_util::sync::CancellationToken,
) {
    let told = Arc::clone(told);
    tokio::spawn(async move {
        signal.cancelled().await;
        told.lock().unwrap().push(name);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_watchdog_fires_a_late_hooks_signal() {
    // A hook past the watchdog is dropped; its signal now fires too, as a late tool's does, so
    // work it does outside its future (a binding's worker thread) learns that nobody waits.
    // The run itself ends normally: its own signal never fires.
    for which in ["before_tool_call", "after_tool_call"] {
        let faux = FauxProvider::register();
        faux.push(faux_assistant_message(vec![faux_tool_call_with_id(
            "a",
            "log",
            json!({}),
        )]));
        faux.push(faux_assistant_message(vec![faux_text("done")]));
        let log = Arc::new(Mutex::new(Vec::new()));
        let told = Arc::new(Mutex::new(Vec::new()));
        let mut hooks = AgentHooks::default();
        let seen = Arc::clone(&told);
        if which == "before_tool_call" {
            hooks.before_tool_call = Some(Arc::new(move |_, signal| {
                tell_when_fired("before_tool_call", &seen, signal);
                std::future::pending().boxed()
            }));
        } else {
            hooks.after_tool_call = Some(Arc::new(move |_, signal| {
                tell_when_fired("after_tool_call", &seen, signal);
                std::future::pending().boxed()
            }));
        }
        let agent = Agent::new(AgentOptions {
            model: Some(faux.model()),
            tools: vec![log_tool("log", Arc::clone(&log))],
            settings: pi_agent::agent::AgentSettings {
                tool_timeout_ms: Some(50),
                ..Default::default()
            },
            hooks,
            ..AgentOptions::default()
        });
        tokio::time::timeout(HANG_GUARD, agent.prompt("go"))
            .await
            .expect("the watchdog ends the hook")
            .unwrap();
        let result = agent
            .messages()
            .into_iter()
            .find(|m| m.as_tool_result().is_some())
            .unwrap();
        assert!(
            first_text(&result).contains(&format!("{which} timed out")),
            "{result:?}"
        );
        for _ in 0..3000 {
            if !told.lock().unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(told.lock().unwrap().clone(), [which]);
    }
}
