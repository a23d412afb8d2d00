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
        cut = crate::text::ceil_boundary(&text, cut + piece.len());
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

/// A Chat Completions chunk (`data` as UTF-8, lossily): when the cursor reads it
/// ([`json_cursor`](crate::ai::providers::json_cursor)), serde's reading gives the same chunk.
pub fn openai_completions_chunk(data: &[u8]) {
    openai_completions::chunk::check_against_serde(&String::from_utf8_lossy(data));
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
            let mut frames =
                BodyFrames::from_chunks_with_decoder(body, EventStreamDecoder::new(), &options);
            return bedrock::read_stream(writer, &model, &mut frames).await;
        }
        let mut events = SseEvents::from_chunks(body, &options);
        match api.as_str() {
            openai_completions::API => {
                openai_completions::read_stream(writer, &model, &mut events).await
            }
            openai_responses::API => {
                openai_responses::read_stream(writer, &model, &mut events, Default::default()).await
            }
            anthropic::API => anthropic::read_stream(writer, &model, &mut events, None).await,
            google::API => google::read_stream(writer, &model, &mut events).await,
            mistral::API => mistral::read_stream(writer, &model, &mut events).await,
            openai_codex::API => {
                openai_codex::read_stream(writer, &model, &mut events, Default::default()).await
            }
            "proxy" => crate::agent::read_stream(writer, events).await,
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

/// Hostile values (issue 17): `data` as a model id, a Vertex project and location, and as the
/// JSON of settings and options objects.
///
/// - the URL each URL-building provider makes from it is either refused or parses with the
///   base path intact, the id in exactly the segments it names, no query or fragment of its own;
/// - `strict_json` never accepts an array as one of the option objects, and accepts what it
///   accepts exactly as serde_json would read it;
/// - `parse_json_lenient` agrees with serde_json wherever serde_json succeeds.
pub fn hostile_values(data: &[u8]) {
    use crate::agent::AgentSettings;
    use crate::ai::partial_json::parse_json_lenient;
    use crate::ai::providers::faux::FauxOptions;
    use crate::ai::providers::google_vertex::endpoint::{Scope, stream_url as vertex_url};
    use crate::ai::strict_json;

    let text = String::from_utf8_lossy(data);
    let base = "http://127.0.0.1:9/gateway/v1";
    // What a provider built is what is sent: parsing it changes nothing (no `..` resolved, no
    // query or fragment split off), and it stays under the base path.
    let check = |url: &str, query: Option<&str>| {
        let parsed = reqwest::Url::parse(url).expect("a URL that parses");
        assert_eq!(parsed.as_str(), url, "the URL parser rewrote it");
        assert_eq!(parsed.host_str(), Some("127.0.0.1"), "{url}");
        assert!(
            parsed.path().starts_with("/gateway/v1/"),
            "left the base: {url}"
        );
        assert_eq!(parsed.query(), query, "a query of its own: {url}");
        assert_eq!(parsed.fragment(), None, "{url}");
    };
    let mut model = Model::new(google::API, "fuzz", text.as_ref(), base);
    if let Ok(url) = google::stream_url(&model) {
        check(&url, Some("alt=sse"));
    }
    model.api = "google-vertex".into();
    if let Ok(url) = vertex_url(&model, &Scope::ApiKey) {
        check(&url, Some("alt=sse"));
    }
    model.id = "gemini".into();
    let scope = Scope::Project {
        project: text.to_string(),
        location: text.to_string(),
    };
    let _ = vertex_url(&model, &scope);
    if let Ok(url) = bedrock::config::converse_stream_url(base, &text) {
        check(&url, None);
        assert_eq!(url.matches('/').count(), 7, "the id is one segment: {url}");
    }

    if let Ok(strict) = parse_json_lenient(&text)
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
    {
        assert_eq!(strict, value, "lenient parsing changed a valid document");
    }
    let array = text.trim_start().starts_with('[');
    if let Ok(settings) = strict_json::from_str::<AgentSettings>(&text) {
        assert!(!array, "an array read as settings");
        let plain: AgentSettings = serde_json::from_str(&text).expect("serde reads it too");
        assert_eq!(
            serde_json::to_value(&settings).ok(),
            serde_json::to_value(&plain).ok()
        );
    }
    if strict_json::from_str::<StreamOptions>(&text).is_ok() {
        assert!(!array, "an array read as options");
    }
    if let Ok(options) = strict_json::from_str::<FauxOptions>(&text) {
        assert!(!array, "an array read as faux options");
        let _ = options.validate();
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
            hostile_values(input);
        }
        for value in [
            "../../../admin/delete?all=1#",
            "models/../../x",
            "..",
            "a/b/c",
            r#"["high"]"#,
            r#"{"thinkingLevel":"high","streamOptions":{"thinkingBudgets":[1]}}"#,
            r#"{"t":"\ud800"}"#,
        ] {
            hostile_values(value.as_bytes());
        }
    }
}
