//! Reading a transcript from JSON, as the C and Python bindings and a session's replay do: a
//! context of 100 messages (user text, assistant text and a tool call, tool result blocks), and
//! the same 100 as an agent's transcript; and that context prepared for the model that wrote it
//! (`transform_messages_borrowed`, which every provider runs on every request, and
//! `transform_messages`, its copying form).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_agent::agent::AgentMessage;
use pi_agent::ai::{Context, Model, transform_messages, transform_messages_borrowed};
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
    // Every request of an agent's turn prepares the whole transcript for its model.
    let context = serde_json::from_str::<Context>(&text).unwrap();
    let model = Model::new(
        "openai-completions",
        "openai",
        "gpt-4o",
        "https://api.openai.com/v1",
    );
    group.bench_function("transform_messages_100_same_model", |b| {
        b.iter(|| transform_messages(&context.messages, &model, None));
    });
    // What the providers run: only what changes is copied.
    group.bench_function("transform_messages_borrowed_100_same_model", |b| {
        b.iter(|| transform_messages_borrowed(&context.messages, &model, None));
    });
    group.finish();
}

criterion_group!(benches, transcript);
criterion_main!(benches);
