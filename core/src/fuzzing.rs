//! Entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`, off by default). Not
//! a public API: each function feeds arbitrary bytes through one decoder's real code path, with
//! no network, and panics when an invariant breaks, so that the fuzzer reports it.
//!
//! Stream inputs are `[seed, body...]`: `seed` picks where the body is cut into network chunks
//! (0: one chunk), so the fuzzer explores chunk boundaries as well as contents.

use std::sync::LazyLock;

use futures::StreamExt;

use crate::ai::event_stream::channel;
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::partial_json::PartialJsonParser;
use crate::ai::providers::bedrock::{self, eventstream::EventStreamDecoder};
use crate::ai::providers::http::BodyFrames;
use crate::ai::providers::http::SseEvents;
use crate::ai::providers::{
    anthropic, google, mistral, openai_codex, openai_completions, openai_responses,
};
use crate::ai::sse::SseDecoder;
use crate::ai::{AssistantMessageEvent, StopReason};

/// The wire APIs [`provider_stream`] decodes, plus `proxy` (the agent proxy protocol).
/// (`google-vertex` reads its body with `google-generative-ai`'s decoder.)
pub const APIS: &[&str] = &[
    openai_completions::API,
    openai_responses::API,
    anthropic::API,
    google::API,
    mistral::API,
    openai_codex::API,
    bedrock::API,
    "proxy",
];

/// Event limit for stream targets: small, so the fuzzer reaches the limit too.
const MAX_EVENT_BYTES: usize = 4096;

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
});

/// Splits `data` into the seed and the body cut into chunks of 1 to 64 bytes chosen by the
/// seed (splitmix64), or one chunk for seed 0.
fn chunks(data: &[u8]) -> Vec<&[u8]> {
    let Some((&seed, mut body)) = data.split_first() else {
        return Vec::new();
    };
    if seed == 0 {
        return vec![body];
    }
    let mut state = u64::from(seed);
    let mut out = Vec::new();
    while !body.is_empty() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let len = 1 + (z ^ (z >> 31)) as usize % 64;
        let (piece, rest) = body.split_at(len.min(body.len()));
        out.push(piece);
        body = rest;
    }
    out
}

/// The SSE decoder: the same events (and the same limit error) whatever the chunking, with
/// and without a limit.
pub fn sse(data: &[u8]) {
    let pieces = chunks(data);
    let body: Vec<u8> = pieces.concat();
    for limit in [None, Some(64)] {
        let decode = |pieces: &[&[u8]]| {
            let mut decoder = limit.map_or_else(SseDecoder::new, SseDecoder::with_limit);
            let mut events = Vec::new();
            let mut failed = false;
            for piece in pieces {
                if decoder.feed(piece, &mut events).is_err() {
                    failed = true;
                    break;
                }
            }
            if !failed {
                decoder.finish(&mut events);
            }
            (events, failed)
        };
        let whole = decode(&[&body]);
        let split = decode(&pieces);
        assert_eq!(
            whole, split,
            "chunking changed the events (limit {limit:?})"
        );
        if let Some(limit) = limit {
            for event in &whole.0 {
                assert!(event.data.len() <= limit, "an event beyond the limit");
            }
        }
    }
}

/// The partial-JSON parser: the same result whatever the chunking, a snapshot at every step,
/// and strict JSON parsed as `serde_json` parses it.
pub fn partial_json(data: &[u8]) {
    let pieces = chunks(data);
    let text = String::from_utf8_lossy(&pieces.concat()).into_owned();
    let mut whole = PartialJsonParser::new();
    whole.push(&text);

    // Cut the text at char boundaries near the byte cuts.
    let mut split = PartialJsonParser::new();
    let mut start = 0;
    let mut cut = 0;
    for piece in &pieces {
        cut = (cut + piece.len()).min(text.len());
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        split.push(&text[start..cut]);
        let _ = split.value();
        start = cut;
    }
    split.push(&text[start..]);
    assert_eq!(whole.value(), split.value(), "chunking changed the value");
    assert_eq!(whole.is_complete(), split.is_complete());
    assert_eq!(whole.has_error(), split.has_error());
    assert_eq!(whole.bytes_received(), text.len());

    if let Ok(strict) = serde_json::from_str::<serde_json::Value>(&text) {
        // A number at the very end may still grow, so only it may be left open.
        assert!(!whole.has_error(), "valid JSON refused");
        assert!(
            whole.is_complete() || strict.is_number(),
            "valid JSON left open"
        );
        assert_eq!(whole.into_value(), strict, "valid JSON parsed differently");
    }
}

/// One wire API's response decoder (`api` from [`APIS`]), fed `data` as a response body: ends
/// with exactly one terminal event, last, and a failure always has a message.
pub fn provider_stream(api: &str, data: &[u8]) {
    let body: Vec<Vec<u8>> = chunks(data).into_iter().map(<[u8]>::to_vec).collect();
    let options = StreamOptions {
        max_event_bytes: Some(MAX_EVENT_BYTES as u64),
        ..StreamOptions::default()
    };
    let model = Model::new(api, "fuzz", "fuzz-model", "http://127.0.0.1:9/v1");
    let (writer, mut stream) = channel(&model, None);
    let api = api.to_owned();
    let run = writer.drive(async move |writer| {
        if api == bedrock::API {
            // Binary AWS eventstream frames, not SSE.
            let frames =
                BodyFrames::from_chunks_with_decoder(body, EventStreamDecoder::new(), &options);
            return bedrock::read_stream(writer, &model, frames).await;
        }
        let events = SseEvents::from_chunks(body, &options);
        match api.as_str() {
            openai_completions::API => {
                openai_completions::read_stream(writer, &model, events).await
            }
            openai_responses::API => {
                openai_responses::read_stream(writer, &model, events, Default::default()).await
            }
            anthropic::API => anthropic::read_stream(writer, &model, events, None).await,
            google::API => google::read_stream(writer, &model, events).await,
            mistral::API => mistral::read_stream(writer, &model, events).await,
            openai_codex::API => {
                openai_codex::read_stream(writer, &model, events, Default::default()).await
            }
            "proxy" => crate::agent::proxy::read_stream(writer, events).await,
            other => panic!("unknown api {other}"),
        }
    });
    let collect = async {
        let mut seen = Vec::new();
        while let Some(event) = stream.next().await {
            seen.push(event);
        }
        seen
    };
    let ((), seen) = RUNTIME.block_on(async { futures::join!(run, collect) });

    let terminals = seen.iter().filter(|event| event.is_terminal()).count();
    assert_eq!(terminals, 1, "one terminal event");
    assert!(seen.last().is_some_and(AssistantMessageEvent::is_terminal));
    let message = stream.final_message().expect("a final message");
    match seen.last() {
        Some(AssistantMessageEvent::Done { reason, .. }) => {
            assert!(!reason.is_failure(), "done with a failure reason");
            assert_eq!(message.error_message, None);
        }
        Some(AssistantMessageEvent::Error { reason, .. }) => {
            assert_eq!(*reason, StopReason::Error);
            assert!(
                message.error_message.is_some(),
                "an error without a message"
            );
        }
        _ => unreachable!("checked above"),
    }
    if message.api == openai_completions::API {
        // Issue 17 item 7 and issue 24: a transcript never holds a call with an empty id or
        // two calls with one id, whatever the server sent.
        let mut ids = std::collections::HashSet::new();
        for call in message.tool_calls() {
            assert!(!call.id.is_empty(), "a tool call with an empty id");
            assert!(ids.insert(call.id.as_str()), "two tool calls with one id");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_points_take_any_bytes() {
        let inputs: [&[u8]; 5] = [
            b"",
            b"\x00",
            b"\x07data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
            b"\x03event: message_stop\ndata: {}\n\n",
            b"\x01\xff\xfe{\"a\":[1,2,{\"b\":\"\\u12",
        ];
        for input in inputs {
            sse(input);
            partial_json(input);
            for api in APIS {
                provider_stream(api, input);
            }
        }
    }
}
