//! End-to-end streaming cost: the `openai-completions` provider reading from the project's mock
//! server on 127.0.0.1 (HTTP, SSE decoding, chunk parsing, event channel, consumer-side
//! accumulation). The 1 MB / 4 MB tool-argument pair shows the whole pipeline stays linear.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use pi_agent::ai::{self, Context, Message, Model, StreamOptions, UserMessage};
use pi_mock_server::{MockServer, reply};
use serde_json::json;

fn context() -> Context {
    Context {
        system_prompt: None,
        messages: vec![Message::User(UserMessage::text("go"))],
        tools: None,
    }
}

/// Streams one scripted reply and returns how many events arrived.
async fn stream_once(server: &MockServer, model: &Model, script: serde_json::Value) -> usize {
    stream_with(server, model, script, &StreamOptions::default()).await
}

/// [`stream_once`] with `options`.
async fn stream_with(
    server: &MockServer,
    model: &Model,
    script: serde_json::Value,
    options: &StreamOptions,
) -> usize {
    server.push(script);
    let mut stream = ai::stream(model, &context(), options);
    let mut events = 0;
    while stream.next().await.is_some() {
        events += 1;
    }
    let message = stream.final_message().expect("ended");
    assert!(
        !message.stop_reason.is_failure(),
        "{:?}",
        message.error_message
    );
    events
}

fn pipeline(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(MockServer::start()).expect("mock server");
    let model = Model::new("openai-completions", "mock", "bench", server.base_url());

    let mut group = c.benchmark_group("pipeline");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(1));

    // 20,000 text deltas of 5 characters.
    let text = "word ".repeat(20_000);
    let mut script = reply::text(text.clone());
    script["delta_size"] = json!(5);
    group.throughput(Throughput::Elements(20_000));
    group.bench_function("text_20k_deltas", |b| {
        b.iter(|| runtime.block_on(stream_once(&server, &model, script.clone())));
    });

    // The same 20,000 deltas as a typed answer (a JSON array of strings): each delta is fed
    // to the answer's parser, `object_delta` snapshots are spaced out beyond 4 KiB, and the
    // whole answer is validated once at the end.
    let answer = serde_json::to_string(&vec!["word"; 14_300]).unwrap();
    let mut script = reply::text(answer);
    script["delta_size"] = json!(5);
    let options = StreamOptions {
        output_schema: Some(ai::OutputSchema::new(
            "words",
            json!({"type": "array", "items": {"type": "string"}}),
        )),
        ..StreamOptions::default()
    };
    group.throughput(Throughput::Elements(20_000));
    group.bench_function("structured_20k_deltas", |b| {
        b.iter(|| runtime.block_on(stream_with(&server, &model, script.clone(), &options)));
    });

    for (name, megabytes) in [
        ("tool_args_1mb_10k_deltas", 1usize),
        ("tool_args_4mb_10k_deltas", 4),
    ] {
        let content = "let x = \"héllo\\n\"; ".repeat(megabytes * 1024 * 1024 / 20);
        let arguments =
            serde_json::to_string(&json!({"path": "src/main.rs", "content": content})).unwrap();
        let mut script = reply::tool_call("call_1", "write", json!(arguments));
        script["delta_size"] = json!(arguments.chars().count().div_ceil(10_000));
        group.throughput(Throughput::Bytes(arguments.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| runtime.block_on(stream_once(&server, &model, script.clone())));
        });
    }
    group.finish();
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
