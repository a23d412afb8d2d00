//! Reading a response body within its limits: the frames of a streamed body (SSE events, or
//! any other [`FrameDecoder`]'s), and the (bounded) text of an error body.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};

use super::deadline::{Elapsed, within};
use super::h1;
use super::idle::IdleTimer;
use super::limits::{Limits, TRAILER_TIMEOUT};
use super::{error_body_message, transport_error, transport_error_message};
use crate::ai::error::ProviderError;
use crate::ai::options::StreamOptions;
use crate::ai::sse::{SseDecoder, SseEvent};

/// An incremental decoder of a streamed body into frames (SSE events, eventstream messages):
/// fed the body's chunks as they arrive, cut anywhere.
pub(crate) trait FrameDecoder {
    /// What one decoded frame is.
    type Frame;

    /// Decodes `bytes`, appending every frame they complete to `out`. An error (of kind
    /// `decode`) ends the stream.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Self::Frame>) -> Result<(), ProviderError>;

    /// The body has ended: appends any frame still pending, or fails on a truncated one.
    fn finish(&mut self, out: &mut Vec<Self::Frame>) -> Result<(), ProviderError>;

    /// Takes back a frame its reader is done with, to reuse its buffers (by default, drops it).
    fn recycle(&mut self, frame: Self::Frame) {
        drop(frame);
    }
}

impl FrameDecoder for SseDecoder {
    type Frame = SseEvent;

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        SseDecoder::feed(self, bytes, out).map_err(|too_large| {
            ProviderError::Decode(format!(
                "The provider sent an SSE line or event larger than {} bytes \
                 (max_event_bytes); stopped reading",
                too_large.limit
            ))
        })
    }

    fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        SseDecoder::finish(self, out);
        Ok(())
    }

    fn recycle(&mut self, frame: SseEvent) {
        SseDecoder::recycle(self, frame);
    }
}

/// A body as a stream of byte chunks; errors are already classified.
type ByteStream = Pin<Box<dyn Stream<Item = Result<bytes::Bytes, ProviderError>> + Send>>;

/// How much of a body that decodes to no event is kept, to say what it was.
const PREVIEW_BYTES: usize = 64 * 1024;

/// The longest [`BodyFrames::read_to_end`] waits for the next chunk after the protocol's end
/// marker; the last chunk normally follows at once.
const END_TIMEOUT: Duration = Duration::from_secs(1);

/// The most of a body [`BodyFrames::read_to_end`] reads and discards after the protocol's end
/// marker before it lets the body go.
const MAX_END_BYTES: usize = 64 * 1024;

/// How much of an unexpected body a message quotes.
const QUOTE_CHARS: usize = 300;

/// The error of a body whose next chunk took longer than `limit`.
fn idle_error(limit: Duration) -> ProviderError {
    ProviderError::Timeout(format!(
        "Stream idle timeout: no data for {} ms",
        limit.as_millis()
    ))
}

/// The frames of a streamed body, decoded incrementally (each byte once) by `D` within the
/// request's limits: an idle timeout between chunks, and whatever the decoder bounds (for SSE,
/// one event). Every provider reads its response through this.
///
/// When a body yields no frame at all, [`incomplete`](Self::incomplete) says what it was
/// instead (JSON, HTML, binary data, compressed data), from the first bytes it kept.
pub(crate) struct BodyFrames<D: FrameDecoder> {
    body: ByteStream,
    decoder: D,
    pending: VecDeque<D::Frame>,
    scratch: Vec<D::Frame>,
    /// The frame [`next`](Self::next) lent out last, handed back to the decoder at the next
    /// call (an SSE event's buffer then holds the next event's data).
    current: Option<D::Frame>,
    idle_timeout: Option<IdleTimer>,
    content_type: Option<String>,
    content_encoding: Option<String>,
    /// The first bytes, while no event has been decoded.
    preview: Vec<u8>,
    bytes_seen: u64,
    events_seen: u64,
    ended: bool,
    /// A decode error, reported once the frames decoded before it have been taken.
    failed: Option<ProviderError>,
}

/// The events of a streamed SSE body, at most `max_event_bytes` each.
pub(crate) type SseEvents = BodyFrames<SseDecoder>;

impl SseEvents {
    /// Starts reading `response`'s body as SSE within the limits of `options`.
    pub(crate) fn new(response: reqwest::Response, options: &StreamOptions) -> Self {
        let decoder = SseDecoder::with_limit(Limits::new(options).max_event_bytes);
        Self::with_decoder(response, decoder, options)
    }

    /// Reads an in-memory SSE body, delivered in the given chunks (for tests and fuzzing: the
    /// same decoding path as a network body, without a network).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn from_chunks(chunks: Vec<Vec<u8>>, options: &StreamOptions) -> Self {
        let decoder = SseDecoder::with_limit(Limits::new(options).max_event_bytes);
        Self::from_chunks_with_decoder(chunks, decoder, options)
    }
}

impl<D: FrameDecoder> BodyFrames<D> {
    /// Starts reading `response`'s body with `decoder`, within the limits of `options`.
    pub(crate) fn with_decoder(
        mut response: reqwest::Response,
        decoder: D,
        options: &StreamOptions,
    ) -> Self {
        let header = |name: reqwest::header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let content_encoding = header(reqwest::header::CONTENT_ENCODING);
        // The library's HTTP/1.1 client's body is read directly, not through reqwest's
        // adapters (see `h1::direct`).
        let body: ByteStream = match h1::take_body(&mut response) {
            Some(body) => Box::pin(body),
            None => Box::pin(
                response
                    .bytes_stream()
                    .map(|chunk| chunk.map_err(|error| transport_error(&error))),
            ),
        };
        let mut frames = Self::from_stream(body, decoder, options);
        frames.content_type = content_type;
        frames.content_encoding = content_encoding;
        frames
    }

    /// Reads an in-memory body with `decoder`, delivered in the given chunks.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn from_chunks_with_decoder(
        chunks: Vec<Vec<u8>>,
        decoder: D,
        options: &StreamOptions,
    ) -> Self {
        let body = futures::stream::iter(
            chunks
                .into_iter()
                .map(|chunk| Ok(bytes::Bytes::from(chunk))),
        );
        Self::from_stream(Box::pin(body), decoder, options)
    }

    fn from_stream(body: ByteStream, decoder: D, options: &StreamOptions) -> Self {
        Self {
            body,
            decoder,
            pending: VecDeque::new(),
            scratch: Vec::new(),
            current: None,
            idle_timeout: Limits::new(options).idle_timeout.map(IdleTimer::new),
            content_type: None,
            content_encoding: None,
            preview: Vec::new(),
            bytes_seen: 0,
            events_seen: 0,
            ended: false,
            failed: None,
        }
    }

    /// The next frame, lent until the next call; `Ok(None)` once the body has ended.
    pub(crate) async fn next(&mut self) -> Result<Option<&D::Frame>, ProviderError> {
        self.recycle_current();
        if let Some(encoding) = self.unreadable_encoding() {
            return Err(ProviderError::Decode(format!(
                "The provider sent a compressed body (content-encoding: {encoding}), which is \
                 not decoded: an event stream must be sent uncompressed"
            )));
        }
        loop {
            if let Some(frame) = self.pending.pop_front() {
                self.events_seen += 1;
                return Ok(Some(self.current.insert(frame)));
            }
            if let Some(error) = self.failed.take() {
                self.ended = true;
                return Err(error);
            }
            if self.ended {
                return Ok(None);
            }
            let chunk = match &mut self.idle_timeout {
                Some(idle) => {
                    let limit = idle.limit();
                    idle.wait(self.body.next())
                        .await
                        .map_err(|Elapsed| idle_error(limit))?
                }
                None => self.body.next().await,
            };
            let decoded = match chunk {
                Some(Ok(bytes)) => {
                    self.bytes_seen += bytes.len() as u64;
                    if self.events_seen == 0 && self.preview.len() < PREVIEW_BYTES {
                        let room = PREVIEW_BYTES - self.preview.len();
                        self.preview
                            .extend_from_slice(&bytes[..room.min(bytes.len())]);
                    }
                    self.decoder.feed(&bytes, &mut self.scratch)
                }
                Some(Err(error)) => return Err(error),
                None => {
                    self.ended = true;
                    self.decoder.finish(&mut self.scratch)
                }
            };
            if !self.scratch.is_empty() {
                // The preview is only for bodies that are not event streams.
                self.preview = Vec::new();
            }
            self.pending.extend(self.scratch.drain(..));
            // Frames completed before a decode error are still delivered first.
            if let Err(error) = decoded {
                self.failed = Some(error);
            }
        }
    }

    /// The next frame that has already arrived, without waiting for more of the body (for a
    /// protocol whose answer is over but whose last network chunk may hold more).
    pub(crate) fn next_buffered(&mut self) -> Option<&D::Frame> {
        self.recycle_current();
        let event = self.pending.pop_front()?;
        self.events_seen += 1;
        Some(self.current.insert(event))
    }

    fn recycle_current(&mut self) {
        if let Some(frame) = self.current.take() {
            self.decoder.recycle(frame);
        }
    }

    /// Call once the answer is complete and only an end marker may follow: from now on the
    /// body is waited for at most [`TRAILER_TIMEOUT`] between chunks (or the idle timeout, if
    /// shorter; not at all if it is disabled).
    pub(crate) fn expect_end(&mut self) {
        if let Some(idle) = &mut self.idle_timeout {
            idle.set_limit(idle.limit().min(TRAILER_TIMEOUT));
        }
    }

    /// Reads the rest of a body whose protocol has ended (its end marker was read, and the
    /// stream's answer is whole), discarding it, until the body's own end: the framing's end
    /// (the last chunk) follows the marker at once, and a connection read to its end is kept
    /// for the next request (by the library's HTTP/1.1 client and by hyper alike). Without
    /// this, a body let go right after the marker keeps its connection only when the last
    /// chunk happened to arrive in the same read, which a loaded machine or a server that
    /// writes it apart does not promise. As pi, whose SDKs read every stream to its end.
    ///
    /// Bounded: at most [`END_TIMEOUT`] in all (less when the idle timeout is shorter) and
    /// [`MAX_END_BYTES`]; past either, or on an error, the body is simply let go (its
    /// connection closes). Nothing read here changes the answer.
    pub(crate) async fn read_to_end(&mut self) {
        if self.ended || self.failed.is_some() {
            return;
        }
        let limit = self
            .idle_timeout
            .as_ref()
            .map_or(END_TIMEOUT, |idle| idle.limit().min(END_TIMEOUT));
        let mut discarded = 0;
        // One limit for the whole rest, not one per chunk: a server trickling a byte now and
        // then must not hold back the `done` of a complete answer. `within` polls the body
        // first: a body whose end has arrived arms no timer.
        let drained = within(limit, async {
            while let Some(Ok(bytes)) = self.body.next().await {
                discarded += bytes.len();
                if discarded > MAX_END_BYTES {
                    return false;
                }
            }
            true
        })
        .await;
        if !matches!(drained, Ok(false)) {
            self.ended = true;
        }
    }

    /// The error for a body that ended before the protocol's end (kind `decode`): `default`
    /// when events arrived (or the body looks like an event stream), else a description of
    /// what did.
    pub(crate) fn incomplete(&self, default: &str) -> ProviderError {
        ProviderError::Decode(self.incomplete_message(default))
    }

    fn incomplete_message(&self, default: &str) -> String {
        if self.events_seen > 0 {
            return default.to_owned();
        }
        let content_type = self.content_type.as_deref();
        let event_stream = content_type
            .is_none_or(|ct| crate::text::contains_ignore_ascii_case(ct, "event-stream"));
        describe_non_sse(&self.preview, self.bytes_seen, content_type, event_stream)
            .unwrap_or_else(|| default.to_owned())
    }

    fn unreadable_encoding(&self) -> Option<&str> {
        self.content_encoding
            .as_deref()
            .map(str::trim)
            .filter(|encoding| !encoding.is_empty() && !encoding.eq_ignore_ascii_case("identity"))
    }
}

/// Says what a body that yielded no event was, unless it looks like an (empty or cut) event
/// stream.
fn describe_non_sse(
    preview: &[u8],
    total: u64,
    content_type: Option<&str>,
    event_stream: bool,
) -> Option<String> {
    let shown_type = content_type.unwrap_or("none");
    if total == 0 {
        return (!event_stream).then(|| {
            format!(
                "The provider sent an empty body instead of an event stream (content-type: \
                 {shown_type})"
            )
        });
    }
    if preview.starts_with(&[0x1f, 0x8b]) {
        return Some(format!(
            "The provider sent gzip-compressed data ({total} bytes, content-type: \
             {shown_type}) instead of an event stream"
        ));
    }
    let text = match std::str::from_utf8(preview) {
        Ok(text) => Some(text),
        // A preview cut inside a character is still text.
        Err(error) if error.error_len().is_none() => {
            std::str::from_utf8(&preview[..error.valid_up_to()]).ok()
        }
        Err(_) => None,
    };
    let Some(text) = text.filter(|text| {
        !text
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    }) else {
        return Some(format!(
            "The provider sent {total} bytes of binary data (content-type: {shown_type}) \
             instead of an event stream"
        ));
    };
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return Some(format!(
            "The provider sent JSON (content-type: {shown_type}) instead of an event stream: \
             {}",
            quote(&error_body_message(text))
        ));
    }
    if event_stream && !trimmed.starts_with('<') {
        // Text in event-stream framing that held no complete event: a cut stream.
        return None;
    }
    Some(format!(
        "The provider sent {shown_type} instead of an event stream: {}",
        quote(text)
    ))
}

/// At most [`QUOTE_CHARS`] characters of `text`, trimmed.
fn quote(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The body of a failed response, read within the limits: at most `max_error_body_bytes`, for
/// at most [`Limits::error_body_timeout`] in all. Returns the text and, when the body was cut
/// short, why.
pub(crate) async fn read_error_body(
    response: reqwest::Response,
    limits: &Limits,
) -> (String, Option<String>) {
    let max = limits.max_error_body_bytes;
    let deadline = tokio::time::Instant::now() + limits.error_body_timeout();
    let mut body = response.bytes_stream();
    let mut collected: Vec<u8> = Vec::new();
    let cut = loop {
        match tokio::time::timeout_at(deadline, body.next()).await {
            Err(_) => {
                break Some(format!(
                    "error body cut: it timed out after {} ms",
                    limits.error_body_timeout().as_millis()
                ));
            }
            Ok(None) => break None,
            Ok(Some(Err(error))) => {
                break Some(format!(
                    "error body cut: {}",
                    transport_error_message(&error)
                ));
            }
            Ok(Some(Ok(bytes))) => {
                let room = max - collected.len();
                collected.extend_from_slice(&bytes[..room.min(bytes.len())]);
                if bytes.len() > room {
                    break Some(format!(
                        "error body cut at max_error_body_bytes = {max} bytes"
                    ));
                }
            }
        }
    };
    (String::from_utf8_lossy(&collected).into_owned(), cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_event_streams_are_described() {
        let describe = |preview: &[u8], total: u64, content_type: Option<&str>| {
            let event_stream = content_type.is_none_or(|ct| ct.contains("event-stream"));
            describe_non_sse(preview, total, content_type, event_stream)
        };
        assert_eq!(
            describe(
                br#"{"error":{"message":"quota"}}"#,
                29,
                Some("application/json")
            )
            .unwrap(),
            "The provider sent JSON (content-type: application/json) instead of an event stream: quota"
        );
        assert!(
            describe(&[0x1f, 0x8b, 8], 3, None)
                .unwrap()
                .contains("gzip")
        );
        let binary = describe(&[0, 1, 0xff], 3, Some("text/event-stream")).unwrap();
        assert!(binary.contains("3 bytes of binary data"), "{binary}");
        assert!(
            describe(b"", 0, Some("text/plain"))
                .unwrap()
                .contains("empty body")
        );
        assert_eq!(
            describe(b"<html>login</html>", 18, Some("text/html")).unwrap(),
            "The provider sent text/html instead of an event stream: <html>login</html>"
        );
        let long = "é".repeat(QUOTE_CHARS + 5);
        let cut = describe(long.as_bytes(), 10_000, Some("text/plain")).unwrap();
        assert!(cut.ends_with("é…"), "{cut}");
        // A preview cut inside a character is text, not binary.
        let mut partial = b"ab".to_vec();
        partial.push(0xc3);
        assert!(
            describe(&partial, 3, Some("text/plain"))
                .unwrap()
                .contains(": ab")
        );
        // An event stream cut before its first event, or an empty one, is just cut short.
        assert_eq!(describe(b": ping\n\ndata: {\"a\"", 20, None), None);
        assert_eq!(describe(b"", 0, Some("text/event-stream")), None);
    }

    #[tokio::test]
    async fn each_event_reuses_the_buffer_of_the_one_before() {
        let options = StreamOptions::default();
        let mut events = SseEvents::from_chunks(
            vec![
                b"data: first\n\n".to_vec(),
                b"data: 2nd\n\n".to_vec(),
                b"data: third\n\n".to_vec(),
            ],
            &options,
        );
        let first = events.next().await.unwrap().unwrap();
        assert_eq!(first.data, "first");
        let buffer = first.data.as_ptr();
        for expected in ["2nd", "third"] {
            let event = events.next().await.unwrap().unwrap();
            assert_eq!(event.data, expected);
            assert_eq!(event.data.as_ptr(), buffer);
        }
    }

    #[tokio::test]
    async fn in_memory_bodies_decode_like_network_ones() {
        let options = StreamOptions::default();
        let mut events = SseEvents::from_chunks(
            vec![b"data: a\n".to_vec(), b"\ndata: b\n\n".to_vec()],
            &options,
        );
        assert_eq!(events.next().await.unwrap().unwrap().data, "a");
        // The chunk that completed `a` completed `b` too.
        assert_eq!(events.next_buffered().map(|e| e.data.as_str()), Some("b"));
        assert_eq!(events.next_buffered(), None);
        assert_eq!(events.next().await.unwrap(), None);
        assert_eq!(
            events.incomplete("cut"),
            ProviderError::Decode("cut".into())
        );

        let options = StreamOptions {
            max_event_bytes: Some(8),
            ..StreamOptions::default()
        };
        let mut events = SseEvents::from_chunks(vec![b"data: 123456789".to_vec()], &options);
        let error = events.next().await.unwrap_err();
        assert_eq!(error.kind(), Some(crate::ai::ErrorKind::Decode));
        assert!(error.to_string().contains("larger than 8 bytes"), "{error}");
        assert_eq!(events.next().await.unwrap(), None);
    }
}
