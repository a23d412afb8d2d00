//! Incremental Server-Sent-Events decoder following the WHATWG `EventSource`
//! parsing rules.
//!
//! Bytes may arrive in arbitrary pieces (network reads rarely line up with
//! lines, let alone with UTF-8 character boundaries), so the decoder keeps
//! only the unterminated tail of the current line and never looks at a byte
//! twice: total work is linear in the number of bytes fed, whatever the
//! chunking.
//!
//! A decoder made [`with_limit`](SseDecoder::with_limit) also bounds memory:
//! a line, or the data of one event, longer than the limit stops the decoder
//! with [`EventTooLarge`] instead of buffering a server's endless line.

use memchr::{memchr, memchr2};

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// The largest `data` buffer [`SseDecoder::recycle`] keeps for the next event.
pub const RECYCLED_DATA_BYTES: usize = 4096;

/// The most bytes of handed-back buffers a decoder keeps beyond the one the next event fills:
/// the events of a read that brought several wait in their buffers until their reader is done
/// with them, so a burst needs as many; a paced stream (one event per read) keeps none.
const SPARE_DATA_BYTES: usize = 8192;

/// The longest `id:` kept. An id stays in effect for every later event and is copied into
/// each, so a server sending a huge one would make tiny events cost its size each; a longer one
/// is ignored, as an id containing NUL is (no provider sends ids anywhere near this).
pub const MAX_ID_BYTES: usize = 1024;

/// One dispatched Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `None` when the event has the default type
    /// (no `event:` line, or an empty one, which the spec treats as default).
    pub event: Option<String>,
    /// All `data:` lines of the event joined with `\n`.
    pub data: String,
    /// The last event ID in effect when the event was dispatched.
    ///
    /// Per the spec this persists across events until another `id:` line
    /// changes it; `None` means no `id:` line has been seen yet.
    pub id: Option<String>,
}

/// A line or an event longer than the decoder's limit arrived; the decoder
/// has stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE line or event is larger than {limit} bytes")]
pub struct EventTooLarge {
    /// The limit the decoder was made with.
    pub limit: usize,
}

/// Fields of the event being assembled; kept apart from the line buffer so the
/// buffer can be borrowed while these are mutated.
#[derive(Debug)]
struct EventState {
    data: String,
    /// Handed-back buffers (see [`SseDecoder::recycle`]) for the data of the events after the
    /// next one, at most [`SPARE_DATA_BYTES`] of capacity in all.
    spare: Vec<String>,
    spare_bytes: usize,
    has_data: bool,
    event: Option<String>,
    last_id: Option<String>,
    /// Largest line or event data accepted.
    limit: usize,
    /// Set once something exceeded `limit`; nothing is processed afterwards.
    too_large: bool,
}

impl Default for EventState {
    fn default() -> Self {
        Self {
            data: String::new(),
            spare: Vec::new(),
            spare_bytes: 0,
            has_data: false,
            event: None,
            last_id: None,
            limit: usize::MAX,
            too_large: false,
        }
    }
}

impl EventState {
    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if self.too_large {
            return;
        }
        if line.len() > self.limit {
            self.too_large = true;
            return;
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                let value = value.strip_prefix(b" ").unwrap_or(value);
                (&line[..colon], value)
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                // Measured after the lossy decoding, which may triple invalid bytes. Valid
                // UTF-8 (nearly every line) is checked by the faster strict validator first.
                let value = match std::str::from_utf8(value) {
                    Ok(text) => std::borrow::Cow::Borrowed(text),
                    Err(_) => String::from_utf8_lossy(value),
                };
                if self.data.len() + usize::from(self.has_data) + value.len() > self.limit {
                    self.too_large = true;
                    return;
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(&value);
            }
            b"event" => {
                self.event = if value.is_empty() {
                    None
                } else {
                    Some(String::from_utf8_lossy(value).into_owned())
                };
            }
            b"id" if value.len() <= MAX_ID_BYTES && memchr(0, value).is_none() => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            // An id containing NUL is ignored by the spec (a longer one than
            // `MAX_ID_BYTES` by us), `retry` only matters
            // to reconnecting clients, and unknown fields are ignored.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !self.has_data {
            // The spec drops events that carried no data line at all.
            return;
        }
        self.has_data = false;
        let spare = self.spare.pop().unwrap_or_default();
        self.spare_bytes -= spare.capacity();
        out.push(SseEvent {
            event,
            data: std::mem::replace(&mut self.data, spare),
            id: self.last_id.clone(),
        });
    }
}

/// Incremental Server-Sent-Events decoder.
///
/// Feed it the response body in whatever pieces the transport delivers; it
/// appends each event as soon as its terminating blank line has arrived.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Unterminated tail of the current line. It never contains CR or LF, so
    /// a new feed only needs to scan the newly appended bytes.
    buf: Vec<u8>,
    state: EventState,
    /// The last byte seen was a CR that ended a line; an LF right after it is
    /// the second half of a CRLF, not an empty line.
    pending_cr: bool,
    /// How many bytes of a leading BOM have been matched and withheld.
    bom_matched: usize,
    /// The stream start has been examined for a BOM.
    bom_done: bool,
}

impl SseDecoder {
    /// Creates a decoder positioned at the start of a stream, with no limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates a decoder that stops at a line, or the data of one event, longer
    /// than `max_event_bytes`; it then holds at most about that many bytes.
    pub fn with_limit(max_event_bytes: usize) -> Self {
        let mut decoder = Self::default();
        decoder.state.limit = max_event_bytes;
        decoder
    }

    /// Hands back an event its reader is done with: its `data` buffer holds a later event's
    /// data, which saves an allocation and a free per event. A buffer larger than
    /// [`RECYCLED_DATA_BYTES`] is dropped instead, so that a stream that once carried a large
    /// event does not hold that much memory for the rest of its life; so are buffers beyond
    /// a few KiB kept in all (the events of one network read, handed back one by one, are
    /// kept for the next read's).
    pub fn recycle(&mut self, event: SseEvent) {
        let mut data = event.data;
        let capacity = data.capacity();
        if capacity == 0 || capacity > RECYCLED_DATA_BYTES {
            return;
        }
        data.clear();
        let state = &mut self.state;
        if state.data.capacity() == 0 {
            state.data = data;
        } else if state.spare_bytes + capacity <= SPARE_DATA_BYTES {
            state.spare_bytes += capacity;
            state.spare.push(data);
        }
    }

    /// Consumes `bytes` and appends every event they complete to `out`.
    ///
    /// # Errors
    ///
    /// [`EventTooLarge`] once a line or an event's data is longer than the
    /// limit (and on every later call: the decoder has stopped).
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        if !self.state.too_large {
            self.feed_unchecked(bytes, out);
        }
        if self.state.too_large {
            // What was buffered will never be used.
            self.buf = Vec::new();
            self.state.data = String::new();
            self.state.spare = Vec::new();
            self.state.spare_bytes = 0;
            return Err(EventTooLarge {
                limit: self.state.limit,
            });
        }
        Ok(())
    }

    fn feed_unchecked(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        if self.bom_done {
            self.feed_lines(bytes, out);
            return;
        }
        let mut i = 0;
        while self.bom_matched < BOM.len() && i < bytes.len() && bytes[i] == BOM[self.bom_matched] {
            self.bom_matched += 1;
            i += 1;
        }
        if self.bom_matched == BOM.len() {
            self.bom_done = true;
            self.feed_lines(&bytes[i..], out);
        } else if i == bytes.len() {
            // Everything so far could still be a BOM split across feeds.
        } else {
            // Not a BOM after all: the withheld bytes are ordinary content.
            self.bom_done = true;
            let withheld = self.bom_matched;
            self.feed_lines(&BOM[..withheld], out);
            self.feed_lines(&bytes[i..], out);
        }
    }

    /// Ends the stream: processes a final line that lacks its terminator and
    /// dispatches an event whose terminating blank line never came.
    ///
    /// The decoder is reset afterwards (except for the last event ID), so it
    /// can be reused for a new stream.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if self.state.too_large {
            return;
        }
        if !self.bom_done {
            let withheld = self.bom_matched;
            self.bom_done = true;
            self.feed_lines(&BOM[..withheld], out);
        }
        if !self.buf.is_empty() {
            self.state.process_line(&self.buf, out);
            self.buf.clear();
        }
        self.state.dispatch(out);
        self.pending_cr = false;
        self.bom_done = false;
        self.bom_matched = 0;
    }

    fn feed_lines(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) {
        if bytes.is_empty() {
            return;
        }
        if self.pending_cr {
            self.pending_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        if self.buf.is_empty() {
            // Common case: decode straight from the caller's slice and only
            // copy the unterminated tail.
            let tail = scan_lines(bytes, 0, &mut self.state, &mut self.pending_cr, out);
            if bytes.len() - tail > self.state.limit {
                self.state.too_large = true;
                return;
            }
            self.buf.extend_from_slice(&bytes[tail..]);
        } else {
            let scanned = self.buf.len();
            self.buf.extend_from_slice(bytes);
            let tail = scan_lines(
                &self.buf,
                scanned,
                &mut self.state,
                &mut self.pending_cr,
                out,
            );
            // One drain per feed keeps compaction linear: it moves at most the
            // bytes that arrived in this feed.
            if tail > 0 {
                self.buf.drain(..tail);
            }
            if self.buf.len() > self.state.limit {
                self.state.too_large = true;
            }
        }
    }
}

/// Processes every complete line of `data` (whose bytes before `from` are
/// known to hold no line terminator) and returns where the unterminated tail
/// starts.
fn scan_lines(
    data: &[u8],
    from: usize,
    state: &mut EventState,
    pending_cr: &mut bool,
    out: &mut Vec<SseEvent>,
) -> usize {
    let mut line_start = 0;
    let mut pos = from;
    while let Some(off) = memchr2(b'\r', b'\n', &data[pos..]) {
        let end = pos + off;
        state.process_line(&data[line_start..end], out);
        let mut next = end + 1;
        if data[end] == b'\r' {
            match data.get(next) {
                Some(b'\n') => next += 1,
                Some(_) => {}
                None => *pending_cr = true,
            }
        }
        line_start = next;
        pos = next;
    }
    line_start
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            dec.feed(c, &mut out).unwrap();
        }
        dec.finish(&mut out);
        out
    }

    fn decode(input: &[u8]) -> Vec<SseEvent> {
        decode_chunks(&[input])
    }

    fn ev(event: Option<&str>, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            id: id.map(str::to_owned),
        }
    }

    const MIXED: &[u8] =
        "\u{FEFF}: comment\r\nevent: greet\r\ndata: héllo 😀\r\ndata:second\r\n\r\n\
        id: 7\rdata\r\rdata: x\n: c\nretry: 10\nunknown: y\n\ndata:  two spaces\r\nevent\r\n\r\n\
        event: only\n\nid: a\0b\ndata: é\n\ndata: tail"
            .as_bytes();

    fn mixed_expected() -> Vec<SseEvent> {
        vec![
            ev(Some("greet"), "héllo 😀\nsecond", None),
            ev(None, "", Some("7")),
            ev(None, "x", Some("7")),
            ev(None, " two spaces", Some("7")),
            ev(None, "é", Some("7")),
            ev(None, "tail", Some("7")),
        ]
    }

    #[test]
    fn an_id_longer_than_the_limit_is_ignored() {
        let long = "i".repeat(MAX_ID_BYTES + 1);
        let fits = "j".repeat(MAX_ID_BYTES);
        let input = format!("id: 1\ndata: a\n\nid: {long}\ndata: b\n\nid: {fits}\ndata: c\n\n");
        assert_eq!(
            decode(input.as_bytes()),
            [
                ev(None, "a", Some("1")),
                ev(None, "b", Some("1")),
                ev(None, "c", Some(&fits)),
            ]
        );
    }

    #[test]
    fn mixed_input_whole() {
        assert_eq!(decode(MIXED), mixed_expected());
    }

    #[test]
    fn mixed_input_every_split_point() {
        for i in 0..=MIXED.len() {
            assert_eq!(
                decode_chunks(&[&MIXED[..i], &MIXED[i..]]),
                mixed_expected(),
                "split at {i}"
            );
        }
    }

    #[test]
    fn mixed_input_every_pair_of_split_points() {
        for i in 0..=MIXED.len() {
            for j in i..=MIXED.len() {
                let got = decode_chunks(&[&MIXED[..i], &MIXED[i..j], &MIXED[j..]]);
                assert_eq!(got, mixed_expected(), "split at {i},{j}");
            }
        }
    }

    #[test]
    fn byte_at_a_time() {
        let chunks: Vec<&[u8]> = MIXED.chunks(1).collect();
        assert_eq!(decode_chunks(&chunks), mixed_expected());
    }

    #[test]
    fn crlf_split_does_not_make_blank_line() {
        // If the CR/LF pair were seen as two terminators, the event would be
        // dispatched after the first data line.
        let got = decode_chunks(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(got, vec![ev(None, "a\nb", None)]);
    }

    #[test]
    fn lone_cr_lines() {
        assert_eq!(
            decode(b"data: a\rdata: b\r\r"),
            vec![ev(None, "a\nb", None)]
        );
    }

    #[test]
    fn event_without_data_is_dropped_and_name_does_not_leak() {
        let got = decode(b"event: ping\n\ndata: x\n\n");
        assert_eq!(got, vec![ev(None, "x", None)]);
    }

    #[test]
    fn empty_data_line_dispatches_empty_event() {
        assert_eq!(
            decode(b"data:\n\ndata\n\n"),
            vec![ev(None, "", None), ev(None, "", None)]
        );
    }

    #[test]
    fn only_one_space_stripped() {
        assert_eq!(decode(b"data:   x \n\n"), vec![ev(None, "  x ", None)]);
    }

    #[test]
    fn id_with_nul_ignored_and_id_persists() {
        let got = decode(b"id: 1\ndata: a\n\nid: 2\0\ndata: b\n\nid\ndata: c\n\n");
        assert_eq!(
            got,
            vec![
                ev(None, "a", Some("1")),
                ev(None, "b", Some("1")),
                ev(None, "c", Some(""))
            ]
        );
    }

    #[test]
    fn bom_only_skipped_at_start() {
        let bom = "\u{FEFF}";
        let input = format!("{bom}data: a\n\ndata: {bom}b\n\n");
        assert_eq!(
            decode(input.as_bytes()),
            vec![ev(None, "a", None), ev(None, &format!("{bom}b"), None)]
        );
        // A second BOM at the start is content (it makes the first line's
        // field name unknown, so the event is ignored).
        let input = format!("{bom}{bom}data: a\n\ndata: b\n\n");
        assert_eq!(decode(input.as_bytes()), vec![ev(None, "b", None)]);
    }

    #[test]
    fn partial_bom_prefix_is_content() {
        // EF BB followed by 'd' is not a BOM: the bytes belong to the field name.
        let got = decode_chunks(&[&[0xEF], &[0xBB], b"data: a\n\ndata: b\n\n"]);
        assert_eq!(got, vec![ev(None, "b", None)]);
        let got = decode_chunks(&[&[0xEF, 0xBB]]);
        assert!(got.is_empty());
    }

    #[test]
    fn invalid_utf8_is_lossy() {
        let got = decode(b"data: a\xFFb\xE2\x82\n\n");
        assert_eq!(got, vec![ev(None, "a\u{FFFD}b\u{FFFD}", None)]);
    }

    #[test]
    fn multibyte_split_across_feeds() {
        let s = "data: 😀é\n\n".as_bytes();
        for i in 0..=s.len() {
            assert_eq!(
                decode_chunks(&[&s[..i], &s[i..]]),
                vec![ev(None, "😀é", None)]
            );
        }
    }

    #[test]
    fn finish_flushes_unterminated_event() {
        assert_eq!(decode(b"data: a\ndata: b"), vec![ev(None, "a\nb", None)]);
        assert_eq!(decode(b"data: a\n"), vec![ev(None, "a", None)]);
        assert_eq!(decode(b"data: a\r"), vec![ev(None, "a", None)]);
        assert!(decode(b"event: x\n").is_empty());
        assert!(decode(b"").is_empty());
    }

    #[test]
    fn feed_emits_eagerly() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"data: a\n\ndata: b\n", &mut out).unwrap();
        assert_eq!(out, vec![ev(None, "a", None)]);
        dec.feed(b"\n", &mut out).unwrap();
        assert_eq!(out.len(), 2);
        dec.finish(&mut out);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn a_recycled_buffer_holds_the_next_events_data() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"data: first event\n\n", &mut out).unwrap();
        let first = out.pop().unwrap();
        let buffer = first.data.as_ptr();
        dec.recycle(first);
        dec.feed(b"data: sec", &mut out).unwrap();
        dec.feed(b"ond\ndata: x\n\n", &mut out).unwrap();
        assert_eq!(out, vec![ev(None, "second\nx", None)]);
        assert_eq!(
            out[0].data.as_ptr(),
            buffer,
            "the first event's buffer was reused"
        );
        // A large buffer is let go, not kept for the stream's life.
        let large = SseEvent {
            event: None,
            data: "x".repeat(RECYCLED_DATA_BYTES + 1),
            id: None,
        };
        dec.recycle(large);
        assert_eq!(dec.state.data.capacity(), 0);
        // Handed back while an event's data is being assembled: that event is not disturbed.
        dec.feed(b"data: y\n", &mut out).unwrap();
        dec.recycle(out.pop().unwrap());
        dec.feed(b"data: z\n\n", &mut out).unwrap();
        assert_eq!(out, vec![ev(None, "y\nz", None)]);
    }

    #[test]
    fn the_buffers_of_a_burst_serve_the_next_burst() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        let burst = b"data: a\n\ndata: b\n\ndata: c\n\n";
        dec.feed(burst, &mut out).unwrap();
        let mut buffers: Vec<_> = out.iter().map(|event| event.data.as_ptr()).collect();
        for event in out.drain(..) {
            dec.recycle(event);
        }
        dec.feed(burst, &mut out).unwrap();
        assert_eq!(
            out,
            vec![
                ev(None, "a", None),
                ev(None, "b", None),
                ev(None, "c", None)
            ]
        );
        let mut reused: Vec<_> = out.iter().map(|event| event.data.as_ptr()).collect();
        buffers.sort_unstable();
        reused.sort_unstable();
        assert_eq!(reused, buffers, "no new buffer for the second burst");
        // The spare buffers are bounded in bytes: a long burst keeps a few KiB, not all.
        let many: Vec<u8> = b"data: 0123456789abcdef0123456789abcdef\n\n".repeat(1000);
        out.clear();
        dec.feed(&many, &mut out).unwrap();
        for event in out.drain(..) {
            dec.recycle(event);
        }
        assert!(dec.state.spare_bytes <= SPARE_DATA_BYTES);
        let kept: usize = dec.state.spare.iter().map(String::capacity).sum();
        assert_eq!(kept, dec.state.spare_bytes);
        assert!(!dec.state.spare.is_empty());
    }

    #[test]
    fn decoder_reusable_after_finish() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"data: a\r", &mut out).unwrap();
        dec.finish(&mut out);
        dec.feed(b"\xEF\xBB\xBF\ndata: b\n\n", &mut out).unwrap();
        // The leading LF of the second stream is a blank line, not half of a
        // CRLF from the previous stream.
        assert_eq!(out, vec![ev(None, "a", None), ev(None, "b", None)]);
    }

    #[test]
    fn long_line_in_many_chunks() {
        let payload = "x".repeat(100_000);
        let input = format!("data: {payload}\n\n");
        let chunks: Vec<&[u8]> = input.as_bytes().chunks(7).collect();
        assert_eq!(decode_chunks(&chunks), vec![ev(None, &payload, None)]);
    }

    #[test]
    fn limit_stops_endless_lines_and_events() {
        // One line that never ends, fed in pieces or at once.
        let mut dec = SseDecoder::with_limit(100);
        let mut out = Vec::new();
        dec.feed(b"data: ok\n\ndata: ", &mut out).unwrap();
        for _ in 0..3 {
            dec.feed(&[b'x'; 40], &mut out).unwrap_or(());
        }
        assert_eq!(dec.feed(b"x", &mut out), Err(EventTooLarge { limit: 100 }));
        assert_eq!(out, vec![ev(None, "ok", None)]);
        assert!(dec.buf.capacity() == 0, "the buffer is released");
        let mut dec = SseDecoder::with_limit(100);
        assert!(dec.feed(&[b'y'; 101], &mut out).is_err());
        // Many short lines of one event count together.
        let mut dec = SseDecoder::with_limit(100);
        let lines = "data: 0123456789\n".repeat(10);
        assert!(dec.feed(lines.as_bytes(), &mut Vec::new()).is_err());
        // Exactly at the limit is fine, and the limit is per event.
        let mut dec = SseDecoder::with_limit(16);
        let mut out = Vec::new();
        for _ in 0..10 {
            dec.feed(b"data: 0123456789\n\n", &mut out).unwrap();
        }
        assert_eq!(out.len(), 10);
        // The limit holds for the decoded data, where an invalid byte takes three (found by
        // the `sse` fuzz target).
        let mut dec = SseDecoder::with_limit(64);
        let mut line = b"data: ".to_vec();
        line.extend_from_slice(&[0xEF; 34]);
        line.extend_from_slice(b"\n\n");
        assert!(dec.feed(&line, &mut Vec::new()).is_err());
    }

    fn arb_line() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zé😀 :]{0,12}".prop_map(|v| format!("data:{v}")),
            "[a-z ]{0,6}".prop_map(|v| format!("event: {v}")),
            "[0-9a-z]{0,4}".prop_map(|v| format!("id: {v}")),
            "[a-z ]{0,6}".prop_map(|v| format!(": {v}")),
            Just(String::new()),
            Just("data".to_owned()),
            Just("retry: 5".to_owned()),
        ]
    }

    fn arb_stream() -> impl Strategy<Value = Vec<u8>> {
        (
            any::<bool>(),
            proptest::collection::vec(
                (
                    arb_line(),
                    prop_oneof![Just("\n"), Just("\r"), Just("\r\n")],
                ),
                0..24,
            ),
            any::<bool>(),
        )
            .prop_map(|(bom, lines, trailing_garbage)| {
                let mut s = if bom {
                    "\u{FEFF}".to_owned()
                } else {
                    String::new()
                };
                for (line, end) in lines {
                    s.push_str(&line);
                    s.push_str(end);
                }
                let mut bytes = s.into_bytes();
                if trailing_garbage {
                    bytes.extend_from_slice(b"data: \xFF\xC3");
                }
                bytes
            })
    }

    proptest! {
        #[test]
        fn random_splits_give_identical_events(
            input in arb_stream(),
            cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..12),
        ) {
            let whole = decode(&input);
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for p in points {
                chunks.push(&input[prev..p]);
                prev = p;
            }
            chunks.push(&input[prev..]);
            prop_assert_eq!(decode_chunks(&chunks), whole);
        }

        #[test]
        fn arbitrary_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..256), cut in any::<proptest::sample::Index>()) {
            let p = cut.index(input.len() + 1);
            prop_assert_eq!(decode_chunks(&[&input[..p], &input[p..]]), decode(&input));
        }
    }
}
