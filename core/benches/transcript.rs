//! Reading a transcript from JSON, as the C and Python bindings and a session's replay do: a
//! context of 100 messages (user text, assistant text and a tool call, tool result blocks), and
//! the same 100 as an agent's transcript.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_agent::agent::AgentMessage;
use pi_agent::ai::Context;
use serde_json::json;

fn transcript_json() -> String {
    let mut messages = Vec::new();
    for turn in 0..34 {
        messages.push(
            json!({"role": "user", "content": format!("question {turn}"), "timestamp": turn}),
        );
        messages.push(json!({
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look that up."},
                {"type": "toolCall", "id": format!("call_{turn}"), "name": "search",
                 "arguments": {"query": "weather", "limit": 5}}
            ],
            "api": "openai-completions", "provider": "openai", "model": "gpt-4o",
            "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0,
                      "totalTokens": 120, "cost": {"input": 0.0, "output": 0.0,
                      "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": "toolUse", "timestamp": turn
        }));
        messages.push(json!({
            "role": "toolResult", "toolCallId": format!("call_{turn}"), "toolName": "search",
            "content": [{"type": "text", "text": "sunny, 21 degrees"}],
            "isError": false, "timestamp": turn
        }));
    }
    messages.truncate(100);
    json!({"systemPrompt": "You are helpful.", "messages": messages}).to_string()
}

fn transcript(c: &mut Criterion) {
    let text = transcript_json();
    let mut group = c.benchmark_group("transcript");
    group.throughput(Throughput::Elements(100));
    group.bench_function("context_from_json_100_messages", |b| {
        b.iter(|| serde_json::from_str::<Context>(&text).unwrap());
    });
    // An agent's transcript (what `Agent` snapshots, the bindings and a session's replay read).
    let messages =
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["messages"].to_string();
    group.bench_function("agent_messages_from_json_100", |b| {
        b.iter(|| serde_json::from_str::<Vec<AgentMessage>>(&messages).unwrap());
    });
    group.finish();
}

criterion_group!(benches, transcript);
criterion_main!(benches);
