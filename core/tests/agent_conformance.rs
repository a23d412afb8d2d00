//! pi's `agent-loop.test.ts`, `agent.test.ts` and `e2e.test.ts` cases not covered elsewhere
//! (see `agent.rs`, `agent_hooks.rs`, `agent_loop.rs`), ported to the faux provider.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use pi_agent::agent::{
    AfterToolCallResult, Agent, AgentContext, AgentEvent, AgentLoopConfig, AgentMessage,
    AgentOptions, AgentTool, AgentToolResult, BeforeToolCallResult, CustomMessage, FnTool,
    ToolCallContext, ToolError, ToolExecutionMode, ToolSpec, agent_loop_continue,
};
use pi_agent::ai::providers::faux::{
    FauxProvider, FauxResponse, faux_assistant_message, faux_text, faux_thinking,
    faux_tool_call_with_id,
};
use pi_agent::ai::{AssistantContent, Message, StopReason, StreamOptions, UserMessage};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn reply(content: Vec<AssistantContent>) -> FauxResponse {
    faux_assistant_message(content).into()
}

fn roles(agent: &Agent) -> Vec<String> {
    agent
        .messages()
        .iter()
        .map(|m| m.role().to_owned())
        .collect()
}

fn recorder(agent: &Agent) -> Arc<Mutex<Vec<AgentEvent>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    agent.subscribe(move |event| sink.lock().unwrap().push(event.clone()));
    events
}

/// A tool that records the arguments it ran with.
fn echo_args(seen: Arc<Mutex<Vec<Value>>>) -> Arc<dyn AgentTool> {
    struct Edit(Arc<Mutex<Vec<Value>>>, ToolSpec);
    impl AgentTool for Edit {
        fn spec(&self) -> &ToolSpec {
            &self.1
        }
        /// pi's legacy shim: `{oldText, newText}` becomes `{edits: [...]}`.
        fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
            Ok(match (arguments.get("oldText"), arguments.get("newText")) {
                (Some(old), Some(new)) => json!({"edits": [{"oldText": old, "newText": new}]}),
                _ => arguments,
            })
        }
        fn execute(
            &self,
            call: ToolCallContext,
        ) -> futures::future::BoxFuture<'static, Result<AgentToolResult, ToolError>> {
            self.0.lock().unwrap().push(call.arguments.clone());
            async { Ok(AgentToolResult::text("ok")) }.boxed()
        }
    }
    Arc::new(Edit(
        seen,
        ToolSpec::new(
            "edit",
            "Applies edits",
            json!({"type": "object", "properties": {"edits": {"type": "array"}, "count": {"type": "number"}},
                   "required": ["edits"]}),
        ),
    ))
}

#[tokio::test]
async fn prepare_arguments_reshapes_before_validation_and_hooks_replace_without_revalidation() {
    let faux = FauxProvider::register();
    faux.set_responses([
        reply(vec![
            faux_tool_call_with_id("a", "edit", json!({"oldText": "x", "newText": "y"})),
            faux_tool_call_with_id("b", "edit", json!({"edits": [], "count": 1})),
        ]),
        reply(vec![faux_text("done")]),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![echo_args(Arc::clone(&seen))],
        settings: pi_agent::agent::AgentSettings {
            tool_execution: ToolExecutionMode::Sequential,
            ..Default::default()
        },
        hooks: pi_agent::agent::AgentHooks {
            before_tool_call: Some(Arc::new(|ctx, _| {
                async move {
                    // pi's test: the hook changes a validated value to one the schema would
                    // reject; the tool gets it as is.
                    Ok((ctx.tool_call.id == "b").then(|| BeforeToolCallResult {
                        args: Some(json!({"edits": [], "count": "123"})),
                        ..BeforeToolCallResult::default()
                    }))
                }
                .boxed()
            })),
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen[0],
        json!({"edits": [{"oldText": "x", "newText": "y"}]})
    );
    assert_eq!(seen[1], json!({"edits": [], "count": "123"}));
}

#[tokio::test]
async fn steering_during_sequential_tools_waits_for_both_results() {
    let faux = FauxProvider::register();
    let contexts = Arc::new(Mutex::new(Vec::new()));
    let recorder_contexts = Arc::clone(&contexts);
    faux.set_responses([
        reply(vec![
            faux_tool_call_with_id("t1", "slow", json!({})),
            faux_tool_call_with_id("t2", "slow", json!({})),
        ]),
        FauxResponse::Factory(Arc::new(move |context, _, _, _| {
            recorder_contexts.lock().unwrap().push(
                context
                    .messages
                    .iter()
                    .map(Message::role)
                    .collect::<Vec<_>>(),
            );
            faux_assistant_message(vec![faux_text("ok")])
        })),
    ]);
    let slow: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "slow",
        "Sleeps",
        json!({"type": "object"}),
        |_| async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            Ok(AgentToolResult::text("slept"))
        },
    ));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![slow],
        settings: pi_agent::agent::AgentSettings {
            tool_execution: ToolExecutionMode::Sequential,
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    let events = recorder(&agent);
    let steerer = agent.clone();
    let steered = Arc::new(AtomicUsize::new(0));
    let once = Arc::clone(&steered);
    agent.subscribe(move |event| {
        if event.kind() == "tool_execution_start" && once.fetch_add(1, Ordering::SeqCst) == 0 {
            steerer.steer(UserMessage::text("interrupt"));
        }
    });
    agent.prompt("go").await.unwrap();
    assert_eq!(
        roles(&agent),
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "assistant"
        ]
    );
    let starts: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageStart { message } => Some(message.role().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "assistant"
        ]
    );
    assert_eq!(
        contexts.lock().unwrap()[0],
        ["user", "assistant", "toolResult", "toolResult", "user"]
    );
}

#[tokio::test]
async fn mixed_terminate_continues_and_after_hook_terminate_stops() {
    for (after_terminates, expected_calls) in [(false, 2), (true, 1)] {
        let faux = FauxProvider::register();
        faux.set_responses([
            reply(vec![
                faux_tool_call_with_id("t1", "finish", json!({})),
                faux_tool_call_with_id("t2", "keep", json!({})),
            ]),
            reply(vec![faux_text("after")]),
        ]);
        let finish: Arc<dyn AgentTool> = Arc::new(FnTool::new(
            "finish",
            "Ends",
            json!({"type": "object"}),
            |_| async {
                Ok(AgentToolResult {
                    terminate: Some(true),
                    ..AgentToolResult::text("done")
                })
            },
        ));
        let keep: Arc<dyn AgentTool> = Arc::new(FnTool::new(
            "keep",
            "Goes on",
            json!({"type": "object"}),
            |_| async { Ok(AgentToolResult::text("more")) },
        ));
        let agent = Agent::new(AgentOptions {
            model: Some(faux.model()),
            tools: vec![finish, keep],
            hooks: pi_agent::agent::AgentHooks {
                after_tool_call: after_terminates.then(|| -> pi_agent::agent::AfterToolCall {
                    Arc::new(|_, _| {
                        async {
                            Ok(Some(AfterToolCallResult {
                                terminate: Some(true),
                                ..AfterToolCallResult::default()
                            }))
                        }
                        .boxed()
                    })
                }),
                ..Default::default()
            },
            ..AgentOptions::default()
        });
        agent.prompt("go").await.unwrap();
        assert_eq!(
            faux.call_count(),
            expected_calls,
            "after hook terminates: {after_terminates}"
        );
        if !after_terminates {
            assert_eq!(
                roles(&agent),
                ["user", "assistant", "toolResult", "toolResult", "assistant"]
            );
        }
    }
}

#[tokio::test]
async fn should_stop_after_turn_polls_steering_once_and_follow_ups_never() {
    let faux = FauxProvider::register();
    faux.set_responses([
        reply(vec![faux_tool_call_with_id("tool-1", "keep", json!({}))]),
        reply(vec![faux_text("x")]),
    ]);
    let keep: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "keep",
        "k",
        json!({"type": "object"}),
        |_| async { Ok(AgentToolResult::text("r")) },
    ));
    let steering_polls = Arc::new(AtomicUsize::new(0));
    let follow_polls = Arc::new(AtomicUsize::new(0));
    let seen_results = Arc::new(Mutex::new(Vec::new()));
    let mut config = AgentLoopConfig::new(faux.model());
    let s = Arc::clone(&steering_polls);
    config.get_steering_messages = Some(Arc::new(move || {
        s.fetch_add(1, Ordering::SeqCst);
        Vec::new()
    }));
    let f = Arc::clone(&follow_polls);
    config.get_follow_up_messages = Some(Arc::new(move || {
        f.fetch_add(1, Ordering::SeqCst);
        Vec::new()
    }));
    let results = Arc::clone(&seen_results);
    config.hooks.should_stop_after_turn = Some(Arc::new(move |ctx, _| {
        results
            .lock()
            .unwrap()
            .extend(ctx.tool_results.iter().map(|r| r.tool_call_id.clone()));
        async { Ok(true) }.boxed()
    }));
    let context = AgentContext {
        tools: vec![keep],
        ..AgentContext::default()
    };
    let stream = pi_agent::agent::agent_loop(
        vec![UserMessage::text("go").into()],
        context,
        config,
        CancellationToken::new(),
    );
    let kinds: Vec<&'static str> = futures::StreamExt::collect::<Vec<_>>(stream)
        .await
        .iter()
        .map(AgentEvent::kind)
        .filter(|k| *k != "message_update")
        .collect();
    assert_eq!(
        kinds,
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(faux.call_count(), 1);
    assert_eq!(steering_polls.load(Ordering::SeqCst), 1);
    assert_eq!(follow_polls.load(Ordering::SeqCst), 0);
    assert_eq!(*seen_results.lock().unwrap(), ["tool-1"]);
}

#[tokio::test]
async fn continue_accepts_a_custom_tail_that_converts_to_user() {
    let faux = FauxProvider::register();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    faux.push(FauxResponse::Factory(Arc::new(move |context, _, _, _| {
        record
            .lock()
            .unwrap()
            .extend(context.messages.iter().map(|m| m.role().to_owned()));
        faux_assistant_message(vec![faux_text("seen")])
    })));
    let mut config = AgentLoopConfig::new(faux.model());
    config.hooks.convert_to_llm = Some(Arc::new(|messages: &[AgentMessage]| {
        Ok(messages
            .iter()
            .map(|m| match m {
                AgentMessage::Llm(message) => message.clone(),
                AgentMessage::Custom(custom) => Message::User(UserMessage::text(
                    custom.fields["text"].as_str().unwrap_or(""),
                )),
            })
            .collect())
    }));
    let custom: CustomMessage =
        serde_json::from_value(json!({"role": "notification", "text": "build done"})).unwrap();
    let context = AgentContext {
        messages: vec![custom.into()],
        ..AgentContext::default()
    };
    let new_messages = agent_loop_continue(context, config, CancellationToken::new())
        .unwrap()
        .result()
        .await;
    assert_eq!(new_messages.len(), 1);
    assert_eq!(*seen.lock().unwrap(), ["user"]);
}

#[tokio::test]
async fn default_state_and_slow_listeners_hold_prompt() {
    let agent = Agent::new(AgentOptions::default());
    assert_eq!(agent.system_prompt(), "");
    assert_eq!(agent.model().id, "unknown");
    assert_eq!(agent.thinking_level(), pi_agent::ai::ThinkingLevel::Off);
    assert!(agent.tools().is_empty() && agent.messages().is_empty());
    assert!(!agent.is_streaming() && agent.streaming_message().is_none());
    assert!(agent.pending_tool_calls().is_empty() && agent.error_message().is_none());
    agent.abort(); // no-op when idle

    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("hi")]));
    agent.set_model(faux.model());
    let finished = Arc::new(AtomicUsize::new(0));
    let flag = Arc::clone(&finished);
    let watcher = agent.clone();
    agent.subscribe(move |event| {
        if event.kind() == "agent_end" {
            assert!(
                watcher.is_streaming(),
                "still streaming while agent_end listeners run"
            );
            std::thread::sleep(Duration::from_millis(50));
            flag.store(1, Ordering::SeqCst);
        }
    });
    agent.prompt("hi").await.unwrap();
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "prompt resolved after the listener finished"
    );
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn continue_from_assistant_runs_queued_steering_one_at_a_time() {
    let faux = FauxProvider::register();
    faux.set_responses([
        reply(vec![faux_text("first")]),
        reply(vec![faux_text("s1")]),
        reply(vec![faux_text("s2")]),
    ]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        ..AgentOptions::default()
    });
    agent.prompt("hi").await.unwrap();
    agent.steer(UserMessage::text("one"));
    agent.steer(UserMessage::text("two"));
    assert_eq!(
        agent.messages().len(),
        2,
        "steer does not touch the transcript"
    );
    agent.continue_run().await.unwrap();
    let roles = roles(&agent);
    assert_eq!(
        roles[roles.len() - 4..],
        ["user", "assistant", "user", "assistant"]
    );
    assert_eq!(faux.call_count(), 3);
}

#[tokio::test]
async fn session_id_reaches_the_stream_function_and_can_change() {
    let faux = FauxProvider::register();
    faux.set_responses([reply(vec![faux_text("a")]), reply(vec![faux_text("b")])]);
    let sessions = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&sessions);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        settings: pi_agent::agent::AgentSettings {
            stream_options: StreamOptions {
                session_id: Some("s-1".into()),
                ..StreamOptions::default()
            },
            ..Default::default()
        },
        hooks: pi_agent::agent::AgentHooks {
            stream_fn: Some(Arc::new(move |model, context, options| {
                record.lock().unwrap().push(options.session_id.clone());
                pi_agent::ai::stream_simple(model, context, options)
            })),
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("1").await.unwrap();
    agent.set_stream_options(StreamOptions {
        session_id: Some("s-2".into()),
        ..agent.stream_options()
    });
    agent.prompt("2").await.unwrap();
    assert_eq!(
        *sessions.lock().unwrap(),
        [Some("s-1".to_owned()), Some("s-2".to_owned())]
    );
}

#[tokio::test]
async fn pending_tool_calls_thinking_and_continue_from_tool_result() {
    let faux = FauxProvider::register();
    faux.set_responses([
        reply(vec![
            faux_thinking("multiply"),
            faux_tool_call_with_id("calc-1", "calculate", json!({"a": 123, "b": 456})),
        ]),
        reply(vec![faux_text("123 * 456 = 56088")]),
        reply(vec![faux_text("continued after the result")]),
    ]);
    let calculate: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "calculate",
        "Multiplies",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        |call| async move {
            let product = call.arguments["a"].as_i64().unwrap_or(0)
                * call.arguments["b"].as_i64().unwrap_or(0);
            Ok(AgentToolResult::text(format!("123 * 456 = {product}")))
        },
    ));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![calculate],
        ..AgentOptions::default()
    });
    let snapshots = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&snapshots);
    let watcher = agent.clone();
    agent.subscribe(move |event| {
        if matches!(event.kind(), "tool_execution_start" | "tool_execution_end") {
            record
                .lock()
                .unwrap()
                .push(watcher.pending_tool_calls().into_iter().collect::<Vec<_>>());
        }
    });
    agent.prompt("123 * 456?").await.unwrap();
    assert_eq!(
        *snapshots.lock().unwrap(),
        [vec!["calc-1".to_owned()], vec![]]
    );
    let messages = agent.messages();
    let first = messages[1].as_assistant().unwrap();
    assert!(matches!(&first.content[0], AssistantContent::Thinking(t) if t.thinking == "multiply"));
    let result = messages[2].as_tool_result().unwrap();
    assert_eq!(
        serde_json::to_value(&result.content).unwrap()[0]["text"],
        "123 * 456 = 56088"
    );

    // Continue from a tool-result tail.
    let mut transcript = agent.messages();
    transcript.truncate(3);
    agent.set_messages(transcript).unwrap();
    agent.continue_run().await.unwrap();
    let last = agent
        .messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(last.text(), "continued after the result");
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(agent.messages().len(), 4);
}
