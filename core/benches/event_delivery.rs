//! Cost per event as a program consumes a stream the way the README shows: a 20,000-delta
//! `openai-completions` body arrives at once from a plain TCP server (a std thread, so the
//! server takes no runtime time), and the stream is read from `block_on` on a multi-thread
//! runtime (as under `#[tokio::main]`: the provider runs on a worker, the consumer on the main
//! thread) and on a current-thread runtime; and through an `Agent` whose subscriber sees every
//! `message_update`. Reported per element = per text delta. The same is measured for a
//! 20,000-`text_delta` `anthropic-messages` body on the multi-thread runtime.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use pi_agent::agent::{Agent, AgentEvent, AgentOptions, AgentSettings, RunInput};
use pi_agent::ai::{self, ApiKey, Context, Model, StreamOptions, UserMessage};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const DELTAS: usize = 20_000;

/// The whole openai-completions response: `DELTAS` text chunks, then the finish chunk.
fn openai_body() -> String {
    let mut body = String::new();
    for _ in 0..DELTAS {
        body.push_str(
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word \"},\"finish_reason\":null}]}\n\n",
        );
    }
    body.push_str("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    body
}

/// The whole anthropic-messages response: one text block of `DELTAS` `text_delta`s.
fn anthropic_body() -> String {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"bench\",\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    for _ in 0..DELTAS {
        body.push_str(
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word \"}}\n\n",
        );
    }
    body.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20000}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    body
}

/// An SSE HTTP response around `body`.
fn response(body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Serves `response` to every request on a keep-alive connection; returns the port.
fn serve(response: Vec<u8>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let response = response.clone();
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().expect("clone");
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(value) = lower.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut request = vec![0; length];
                    if reader.read_exact(&mut request).is_err()
                        || writer.write_all(&response).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    port
}

async fn consume(model: &Model, context: &Context, options: &StreamOptions) -> usize {
    let mut stream = ai::stream(model, context, options);
    let mut events = 0;
    while stream.next().await.is_some() {
        events += 1;
    }
    assert!(events > DELTAS, "{:?}", stream.final_message());
    events
}

fn delivery(c: &mut Criterion) {
    let port = serve(response(&openai_body()));
    let model = Model::new(
        "openai-completions",
        "openai",
        "bench",
        format!("http://127.0.0.1:{port}/v1"),
    );
    let context = Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Context::default()
    };
    let options = StreamOptions {
        api_key: Some(ApiKey::new("k")),
        ..StreamOptions::default()
    };
    let mut group = c.benchmark_group("event_delivery");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(1))
        .throughput(Throughput::Elements(DELTAS as u64));
    let multi = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    group.bench_function("multi_thread_20k", |b| {
        b.iter(|| multi.block_on(consume(&model, &context, &options)));
    });
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    group.bench_function("current_thread_20k", |b| {
        b.iter(|| current.block_on(consume(&model, &context, &options)));
    });
    // An agent turn: the same body, every delta a `message_update` to one subscriber.
    let agent = Agent::new(AgentOptions {
        model: Some(model.clone()),
        settings: AgentSettings {
            stream_options: options.clone(),
            ..AgentSettings::default()
        },
        ..AgentOptions::default()
    });
    let updates = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&updates);
    agent.subscribe(move |event| {
        if let AgentEvent::MessageUpdate { .. } = event {
            seen.fetch_add(1, Ordering::Relaxed);
        }
    });
    group.bench_function("agent_multi_thread_20k", |b| {
        b.iter(|| {
            multi.block_on(async {
                agent.reset().expect("idle");
                agent.prompt("hi").await.expect("run");
            })
        });
        // Checked here, not after the group: a name filter may skip this case.
        assert!(
            updates.load(Ordering::Relaxed) >= DELTAS,
            "the subscriber saw the deltas"
        );
    });
    // The same turn read from the run's own event stream as well.
    group.bench_function("agent_run_events_multi_thread_20k", |b| {
        b.iter(|| {
            multi.block_on(async {
                agent.reset().expect("idle");
                let mut run = agent.start(RunInput::text("hi")).expect("run");
                let mut events = 0usize;
                while futures::StreamExt::next(&mut run).await.is_some() {
                    events += 1;
                }
                assert!(events >= DELTAS, "the run delivered the deltas");
            })
        });
    });
    // The same deltas from an anthropic-messages server.
    let anthropic_port = serve(response(&anthropic_body()));
    let anthropic = Model::new(
        "anthropic-messages",
        "anthropic",
        "bench",
        format!("http://127.0.0.1:{anthropic_port}"),
    );
    group.bench_function("anthropic_multi_thread_20k", |b| {
        b.iter(|| multi.block_on(consume(&anthropic, &context, &options)));
    });
    group.finish();
}

criterion_group!(benches, delivery);
criterion_main!(benches);
