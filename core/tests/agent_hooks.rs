//! Hooks and watchdogs: before/after tool call, transform_context, should_stop_after_turn, the
//! stream idle timeout and the tool timeout.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use pi_agent::agent::{
    AfterToolCallResult, Agent, AgentMessage, AgentOptions, AgentTool, AgentToolResult,
    BeforeToolCallResult, FnTool,
};
use pi_agent::ai::providers::faux::{
    FauxOptions, FauxProvider, faux_assistant_message, faux_text, faux_tool_call_with_id,
};
use pi_agent::ai::{StopReason, UserContent, UserMessage};
use serde_json::json;

fn echo() -> Arc<dyn AgentTool> {
    Arc::new(FnTool::new(
        "echo",
        "Echoes its text",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |call| async move {
            Ok(AgentToolResult::text(
                call.arguments["text"].as_str().unwrap_or_default(),
            ))
        },
    ))
}

fn result_texts(agent: &Agent) -> Vec<(String, bool)> {
    agent
        .messages()
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .map(|r| {
            let text = match &r.content[0] {
                UserContent::Text(t) => t.text.to_string(),
                _ => String::new(),
            };
            (text, r.is_error)
        })
        .collect()
}

fn faux_with_calls(ids: &[(&str, &str)]) -> FauxProvider {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(
        ids.iter()
            .map(|(id, text)| faux_tool_call_with_id(*id, "echo", json!({"text": text})))
            .collect(),
    ));
    faux.push(faux_assistant_message(vec![faux_text("done")]));
    faux
}

#[tokio::test]
async fn before_tool_call_blocks_or_rewrites_arguments() {
    let faux = faux_with_calls(&[("a", "keep"), ("b", "secret"), ("c", "rewrite me")]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![echo()],
        hooks: pi_agent::agent::AgentHooks {
            before_tool_call: Some(Arc::new(|ctx, _| {
                async move {
                    Ok(match ctx.args["text"].as_str() {
                        Some("secret") => Some(BeforeToolCallResult {
                            block: true,
                            reason: Some("not allowed".into()),
                            args: None,
                        }),
                        Some("rewrite me") => Some(BeforeToolCallResult {
                            args: Some(json!({"text": "rewritten"})),
                            ..BeforeToolCallResult::default()
                        }),
                        _ => None,
                    })
                }
                .boxed()
            })),
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();
    assert_eq!(
        result_texts(&agent),
        [
            ("keep".into(), false),
            ("not allowed".into(), true),
            ("rewritten".into(), false)
        ]
    );
}

#[tokio::test]
async fn after_tool_call_replaces_fields_and_its_failure_is_an_error_result() {
    let faux = faux_with_calls(&[("a", "one"), ("b", "two")]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![echo()],
        hooks: pi_agent::agent::AgentHooks {
            after_tool_call: Some(Arc::new(|ctx, _| {
                async move {
                    if ctx.tool_call.id == "b" {
                        return Err("audit log unavailable".into());
                    }
                    Ok(Some(AfterToolCallResult {
                        content: Some(vec![UserContent::text("[redacted]")]),
                        details: Some(json!({"audited": true})),
                        ..AfterToolCallResult::default()
                    }))
                }
                .boxed()
            })),
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("go").await.unwrap();
    assert_eq!(
        result_texts(&agent),
        [
            ("[redacted]".into(), false),
            ("audit log unavailable".into(), true)
        ]
    );
    let first = agent
        .messages()
        .into_iter()
        .find_map(|m| m.as_tool_result().cloned())
        .unwrap();
    assert_eq!(first.details, Some(json!({"audited": true})));
}

#[tokio::test]
async fn transform_context_shapes_what_the_model_sees_only() {
    let faux = FauxProvider::register();
    let seen = Arc::new(Mutex::new(0));
    let recorder = Arc::clone(&seen);
    faux.push(pi_agent::ai::providers::faux::FauxResponse::Factory(
        Arc::new(move |context, _, _, _| {
            *recorder.lock().unwrap() = context.messages.len();
            faux_assistant_message(vec![faux_text("ok")])
        }),
    ));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        messages: (0..5)
            .map(|i| UserMessage::text(format!("old {i}")).into())
            .collect(),
        hooks: pi_agent::agent::AgentHooks {
            transform_context: Some(Arc::new(|messages, _| {
                async move { Ok(messages.into_iter().rev().take(1).collect()) }.boxed()
            })),
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("newest").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), 1);
    assert_eq!(
        agent.messages().len(),
        7,
        "the transcript itself is untouched"
    );
}

#[tokio::test]
async fn should_stop_after_turn_skips_the_queues() {
    let faux = faux_with_calls(&[("a", "x")]);
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![echo()],
        hooks: pi_agent::agent::AgentHooks {
            should_stop_after_turn: Some(Arc::new(|ctx, _| {
                async move { Ok(!ctx.tool_results.is_empty()) }.boxed()
            })),
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    agent.follow_up(UserMessage::text("later"));
    agent.prompt("go").await.unwrap();
    assert_eq!(faux.pending_count(), 1, "no second model call");
    assert!(agent.has_queued_messages());
}

#[tokio::test]
async fn stream_idle_timeout_ends_a_stalled_turn() {
    let faux = FauxProvider::register_with(FauxOptions {
        tokens_per_second: Some(0.5),
        ..FauxOptions::default()
    });
    faux.push(faux_assistant_message(vec![faux_text(
        "this will stall for a long time",
    )]));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        settings: pi_agent::agent::AgentSettings {
            stream_idle_timeout_ms: Some(Duration::from_millis(200))
                .map(|d: std::time::Duration| d.as_millis() as u64),
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    tokio::time::timeout(Duration::from_secs(5), agent.prompt("go"))
        .await
        .unwrap()
        .unwrap();
    let last = agent
        .messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert!(
        last.error_message
            .unwrap()
            .starts_with("The model stream stalled")
    );
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn tool_timeout_gives_an_error_result() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_tool_call_with_id(
        "t",
        "hang",
        json!({}),
    )]));
    faux.push(faux_assistant_message(vec![faux_text("moving on")]));
    let hang: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "hang",
        "Never returns",
        json!({"type": "object"}),
        |_| std::future::pending(),
    ));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        tools: vec![hang],
        settings: pi_agent::agent::AgentSettings {
            tool_timeout_ms: Some(Duration::from_millis(100))
                .map(|d: std::time::Duration| d.as_millis() as u64),
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    tokio::time::timeout(Duration::from_secs(5), agent.prompt("go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        result_texts(&agent),
        [("Tool hang timed out after 100 ms".into(), true)]
    );
    assert_eq!(
        agent
            .messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .text(),
        "moving on"
    );
}
