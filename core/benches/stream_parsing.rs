//! Benchmarks for the streaming decoders: SSE framing and incremental
//! tool-call argument JSON. The 1 MB / 4 MB pairs exist to show the cost is
//! linear in input size even when it arrives in many small pieces.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_agent::ai::PartialJsonParser;
use pi_agent::ai::sse::{SseDecoder, SseEvent};
use serde_json::{Value, json};

const CHUNKS: usize = 10_000;

/// Splits `s` into about `n` pieces at char boundaries, as a network stream
/// would deliver a body.
fn split_str(s: &str, n: usize) -> Vec<&str> {
    let step = s.len().div_ceil(n).max(1);
    let mut pieces = Vec::with_capacity(n + 1);
    let mut start = 0;
    while start < s.len() {
        // The next character boundary at or after `start + step`.
        let end = (start + step..=s.len())
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(s.len());
        pieces.push(&s[start..end]);
        start = end;
    }
    pieces
}

fn openai_stream(chunks: usize) -> Vec<u8> {
    let line = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word \"},\"finish_reason\":null}]}\n\n";
    let mut body = line.repeat(chunks);
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

fn decode_and_parse(pieces: &[&[u8]]) -> usize {
    let mut decoder = SseDecoder::new();
    let mut events: Vec<SseEvent> = Vec::new();
    let mut parsed = 0;
    for piece in pieces {
        decoder.feed(piece, &mut events).expect("no limit");
        for event in events.drain(..) {
            if let Ok(v) = serde_json::from_str::<Value>(&event.data) {
                parsed += usize::from(v.is_object());
            }
        }
    }
    decoder.finish(&mut events);
    parsed
}

fn sse_text_deltas(c: &mut Criterion) {
    let body = openai_stream(20_000);
    let pieces: Vec<&[u8]> = body.chunks(1_400).collect();
    assert_eq!(decode_and_parse(&pieces), 20_000);
    let mut group = c.benchmark_group("sse_text_deltas");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("20k_chunks_1400B_pieces", |b| {
        b.iter(|| decode_and_parse(black_box(&pieces)))
    });
    group.finish();
}

/// A tool-call argument object of at least `target` bytes, shaped like a
/// multi-file write, with escapes and non-ASCII text in the contents.
fn tool_args(target: usize) -> String {
    let block = "fn main() {\n\tlet s = \"héllo wörld 😀 中文\";\n\tprintln!(\"{s} \\\\ {}\", 1);\n}\n// end of block\r\n";
    let content = block.repeat(10_000 / block.len() + 1);
    let mut files = Vec::new();
    let mut size = 0;
    while size < target {
        let file = json!({
            "path": format!("src/module_{}.rs", files.len()),
            "content": content,
            "bytes": content.len(),
        });
        size += serde_json::to_string(&file).map_or(0, |s| s.len());
        files.push(file);
    }
    json!({ "files": files, "overwrite": true }).to_string()
}

fn push_all(pieces: &[&str]) -> Value {
    let mut parser = PartialJsonParser::new();
    for piece in pieces {
        parser.push(piece);
    }
    parser.into_value()
}

fn bench_tool_args(c: &mut Criterion, group_name: &str, target: usize) {
    let doc = tool_args(target);
    let pieces = split_str(&doc, CHUNKS);
    let expected: Value = serde_json::from_str(&doc).unwrap_or_default();
    assert_eq!(push_all(&pieces), expected);
    let mut group = c.benchmark_group(group_name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(doc.len() as u64));
    group.bench_function("partial_json_10k_pushes", |b| {
        b.iter(|| push_all(black_box(&pieces)))
    });
    // Reference point: one-shot parse of the complete text.
    group.bench_function("serde_json_from_str_whole", |b| {
        b.iter(|| serde_json::from_str::<Value>(black_box(&doc)).ok())
    });
    group.finish();
}

fn tool_args_1mb(c: &mut Criterion) {
    bench_tool_args(c, "tool_args_1mb", 1 << 20);
}

fn tool_args_4mb(c: &mut Criterion) {
    bench_tool_args(c, "tool_args_4mb", 4 << 20);
}

fn sse_line(size: usize) -> Vec<u8> {
    let mut body = b"data: ".to_vec();
    body.resize(body.len() + size, b'x');
    body.extend_from_slice(b"\n\n");
    body
}

fn decode_line(pieces: &[&[u8]]) -> usize {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for piece in pieces {
        decoder.feed(piece, &mut events).expect("no limit");
    }
    decoder.finish(&mut events);
    events.iter().map(|e| e.data.len()).sum()
}

fn sse_4mb_line(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse_4mb_line");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, size) in [("1mb_10k_pieces", 1 << 20), ("4mb_10k_pieces", 4 << 20)] {
        let body = sse_line(size);
        let pieces: Vec<&[u8]> = body.chunks(body.len().div_ceil(CHUNKS)).collect();
        assert_eq!(decode_line(&pieces), size);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(name, |b| b.iter(|| decode_line(black_box(&pieces))));
    }
    group.finish();
}

criterion_group!(
    benches,
    sse_text_deltas,
    tool_args_1mb,
    tool_args_4mb,
    sse_4mb_line
);
criterion_main!(benches);
