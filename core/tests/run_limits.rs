//! Run limits (issue 18): a faux model that calls a tool forever is stopped by every limit,
//! cleanly — a valid transcript, `agent_end`, and a last message naming the limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_agent::agent::{
    Agent, AgentEvent, AgentMessage, AgentOptions, AgentSettings, AgentTool, AgentToolResult,
    DEFAULT_MAX_TURNS, FnTool, RunLimits,
};
use pi_agent::ai::providers::faux::{
    FauxProvider, FauxResponse, faux_assistant_message, faux_text, faux_tool_call_with_id,
};
use pi_agent::ai::{AssistantMessage, ErrorKind, RunLimit, StopReason};
use serde_json::json;

/// A tool that counts its calls.
fn counter(calls: Arc<AtomicUsize>) -> Arc<dyn AgentTool> {
    Arc::new(FnTool::new(
        "tick",
        "Counts",
        json!({"type": "object"}),
        move |_| {
            let calls = Arc::clone(&calls);
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(AgentToolResult::text("tick"))
            }
        },
    ))
}

/// A model that answers every request with `per_turn` tool calls, forever.
fn forever(faux: &FauxProvider, per_turn: usize) {
    let factory: pi_agent::ai::providers::faux::FauxFactory = Arc::new(move |_, _, call, _| {
        faux_assistant_message(
            (0..per_turn)
                .map(|i| faux_tool_call_with_id(format!("c{call}-{i}"), "tick", json!({})))
                .collect(),
        )
    });
    // One factory per call; far more than any limit lets through.
    faux.set_responses((0..2000).map(|_| FauxResponse::Factory(Arc::clone(&factory))));
}

struct Run {
    messages: Vec<AgentMessage>,
    events: Vec<AgentEvent>,
    tool_calls: usize,
    model_calls: usize,
}

impl Run {
    fn last(&self) -> &AssistantMessage {
        self.messages.last().unwrap().as_assistant().unwrap()
    }

    fn assert_ended_by(&self, limit: RunLimit) {
        let last = self.last();
        assert_eq!(last.stop_reason, StopReason::Error);
        assert_eq!(last.error_kind, Some(ErrorKind::RunLimit));
        assert_eq!(last.run_limit, Some(limit), "{:?}", last.error_message);
        let text = last.error_message.as_deref().unwrap();
        assert!(text.contains(limit.as_str()), "{text}");
        let kinds: Vec<&str> = self.events.iter().map(AgentEvent::kind).collect();
        assert_eq!(
            kinds[kinds.len() - 3..],
            ["message_end", "turn_end", "agent_end"]
        );
        assert_eq!(kinds.iter().filter(|k| **k == "agent_end").count(), 1);
        // Every tool call has exactly one result.
        for call in self
            .messages
            .iter()
            .filter_map(AgentMessage::as_assistant)
            .flat_map(|m| m.tool_calls())
        {
            let results = self
                .messages
                .iter()
                .filter_map(AgentMessage::as_tool_result)
                .filter(|r| r.tool_call_id == call.id)
                .count();
            assert_eq!(results, 1, "{}", call.id);
        }
        // The JSON names the kind and the limit.
        let json = serde_json::to_value(last).unwrap();
        assert_eq!(json["errorKind"], "run_limit");
        assert_eq!(json["runLimit"], limit.as_str());
    }
}

async fn run(per_turn: usize, limits: RunLimits, adjust: impl FnOnce(&mut AgentOptions)) -> Run {
    let faux = FauxProvider::register();
    forever(&faux, per_turn);
    let calls = Arc::new(AtomicUsize::new(0));
    let mut options = AgentOptions {
        model: Some(faux.model()),
        tools: vec![counter(Arc::clone(&calls))],
        settings: AgentSettings {
            limits,
            ..AgentSettings::default()
        },
        ..AgentOptions::default()
    };
    adjust(&mut options);
    let agent = Agent::new(options);
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    agent.subscribe(move |event| sink.lock().unwrap().push(event.clone()));
    agent.prompt("go").await.unwrap();
    let events = events.lock().unwrap().clone();
    let run = Run {
        messages: agent.messages(),
        events,
        tool_calls: calls.load(Ordering::SeqCst),
        model_calls: faux.call_count(),
    };
    faux.unregister();
    run
}

#[tokio::test]
async fn the_default_turn_guard_stops_a_tool_loop() {
    let run = run(1, RunLimits::default(), |_| {}).await;
    run.assert_ended_by(RunLimit::MaxTurns);
    assert_eq!(run.model_calls, DEFAULT_MAX_TURNS as usize);
    assert_eq!(run.tool_calls, DEFAULT_MAX_TURNS as usize);
    assert_eq!(
        run.last().error_message.as_deref(),
        Some("The run reached its limit of 100 turns (maxTurns)")
    );
    // The failure message names the model the run used.
    assert!(run.last().api.starts_with("faux:"), "{}", run.last().api);
}

#[tokio::test]
async fn max_turns_counts_model_calls() {
    let limits = RunLimits {
        max_turns: Some(3),
        ..RunLimits::none()
    };
    let run = run(1, limits, |_| {}).await;
    run.assert_ended_by(RunLimit::MaxTurns);
    assert_eq!(run.model_calls, 3);
    assert_eq!(run.tool_calls, 3);
}

#[tokio::test]
async fn calls_beyond_max_tool_calls_do_not_run_and_get_an_error_result() {
    let limits = RunLimits {
        max_tool_calls: Some(5),
        ..RunLimits::none()
    };
    // Two calls a turn: turns 1 and 2 run 4, turn 3 runs one and refuses one.
    let run = run(2, limits, |_| {}).await;
    run.assert_ended_by(RunLimit::MaxToolCalls);
    assert_eq!(run.tool_calls, 5);
    assert_eq!(run.model_calls, 3);
    let refused: Vec<_> = run
        .messages
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .filter(|r| r.is_error)
        .collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].tool_call_id, "c3-1");
    let text = serde_json::to_value(&refused[0].content).unwrap()[0]["text"].clone();
    assert_eq!(
        text,
        "Tool call not run: the run reached its limit of 5 tool calls (maxToolCalls)"
    );
}

#[tokio::test]
async fn sequential_tools_honour_the_tool_call_limit_too() {
    let limits = RunLimits {
        max_tool_calls: Some(1),
        ..RunLimits::none()
    };
    let run = run(3, limits, |options| {
        options.settings.tool_execution = pi_agent::agent::ToolExecutionMode::Sequential;
    })
    .await;
    run.assert_ended_by(RunLimit::MaxToolCalls);
    assert_eq!(run.tool_calls, 1);
    assert_eq!(run.model_calls, 1);
}

#[tokio::test]
async fn a_model_that_stops_within_the_tool_budget_is_not_cut_off() {
    let faux = FauxProvider::register();
    faux.set_responses([
        faux_assistant_message(vec![faux_tool_call_with_id("a", "tick", json!({}))]).into(),
        faux_assistant_message(vec![faux_text("done")]).into(),
    ]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![counter(Arc::new(AtomicUsize::new(0)))],
        settings: AgentSettings {
            limits: RunLimits {
                max_tool_calls: Some(1),
                max_turns: Some(2),
                ..RunLimits::none()
            },
            ..AgentSettings::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();
    let messages = agent.messages();
    let last = messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(last.text(), "done");
    faux.unregister();
}

#[tokio::test]
async fn token_budgets_stop_the_run_after_the_call_that_crosses_them() {
    for (limits, limit) in [
        (
            RunLimits {
                max_input_tokens: Some(1),
                ..RunLimits::none()
            },
            RunLimit::MaxInputTokens,
        ),
        (
            RunLimits {
                max_output_tokens: Some(1),
                ..RunLimits::none()
            },
            RunLimit::MaxOutputTokens,
        ),
        (
            RunLimits {
                max_total_tokens: Some(1),
                ..RunLimits::none()
            },
            RunLimit::MaxTotalTokens,
        ),
    ] {
        let run = run(1, limits, |_| {}).await;
        run.assert_ended_by(limit);
        assert_eq!(run.model_calls, 1, "{limit}");
        assert_eq!(run.tool_calls, 1, "{limit}");
    }
}

#[tokio::test]
async fn the_cost_budget_stops_the_run() {
    let limits = RunLimits {
        max_cost_usd: Some(1e-12),
        ..RunLimits::none()
    };
    let run = run(1, limits, |options| {
        let model = options.model.as_mut().unwrap();
        model.cost.input = 1.0;
        model.cost.output = 1.0;
    })
    .await;
    run.assert_ended_by(RunLimit::MaxCostUsd);
    assert_eq!(run.model_calls, 1);
    assert!(run.last().error_message.as_deref().unwrap().contains("$"));
}

#[tokio::test]
async fn limits_are_per_run_and_the_transcript_can_go_on() {
    let faux = FauxProvider::register();
    forever(&faux, 1);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![counter(Arc::new(AtomicUsize::new(0)))],
        settings: AgentSettings::from_json(r#"{"limits":{"maxTurns":2}}"#).unwrap(),
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();
    assert_eq!(faux.call_count(), 2);
    agent.prompt("again").await.unwrap();
    assert_eq!(faux.call_count(), 4);
    let messages = agent.messages();
    let last = messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.run_limit, Some(RunLimit::MaxTurns));
    faux.unregister();
}

#[tokio::test]
async fn a_run_limit_is_a_typed_error_on_the_outcome_and_the_agent() {
    let faux = FauxProvider::register();
    forever(&faux, 1);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![counter(Arc::new(AtomicUsize::new(0)))],
        settings: AgentSettings::from_json(r#"{"limits":{"maxTurns":1}}"#).unwrap(),
        ..AgentOptions::default()
    });
    let outcome = agent.prompt("go").await.unwrap();
    let error = outcome.clone().into_result().unwrap_err();
    assert_eq!(error.kind, Some(ErrorKind::RunLimit));
    assert_eq!(error.run_limit, Some(RunLimit::MaxTurns));
    assert!(!error.aborted && !error.is_transient());
    assert_eq!(
        error.to_string(),
        "The run reached its limit of 1 turn (maxTurns)"
    );
    assert_eq!(agent.last_error(), Some(error));
    faux.set_responses([faux_assistant_message(vec![faux_text("fine")]).into()]);
    let outcome = agent.prompt("again").await.unwrap();
    assert!(outcome.error().is_none());
    assert!(outcome.into_result().is_ok());
    assert_eq!(agent.last_error(), None);
    faux.unregister();
}

#[tokio::test]
async fn a_queued_message_is_not_taken_into_a_turn_the_limits_refuse() {
    // The run's one turn answered; a follow-up was queued. Taken in, it only got the limit's
    // failure as its answer (and the successful run reported the limit): it now waits for
    // the next run, and the run ends as it would with nothing queued.
    let faux = FauxProvider::register();
    faux.set_responses([
        FauxResponse::from(faux_assistant_message(vec![faux_text("first")])),
        FauxResponse::from(faux_assistant_message(vec![faux_text("second")])),
    ]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        settings: AgentSettings {
            limits: RunLimits {
                max_turns: Some(1),
                ..RunLimits::none()
            },
            ..AgentSettings::default()
        },
        ..AgentOptions::default()
    });
    agent.follow_up(pi_agent::ai::UserMessage::text("and then"));
    let outcome = agent
        .start(pi_agent::agent::RunInput::text("go"))
        .unwrap()
        .result()
        .await;
    assert!(outcome.error().is_none(), "{:?}", outcome.error());
    let messages = agent.messages();
    let roles: Vec<&str> = messages.iter().map(|m| m.role()).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(agent.queued_messages().1.len(), 1);
    // The next run takes it.
    agent.continue_run().await.unwrap();
    let last = agent
        .messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .text();
    assert_eq!(last, "second");
}
