//! The `application/vnd.amazon.eventstream` binary framing, decoded incrementally.
//!
//! A message is `total_len: u32 | headers_len: u32 | prelude_crc: u32 | headers | payload |
//! message_crc: u32` (big-endian; both CRCs are CRC-32 over everything before them). A header is
//! `name_len: u8 | name | type: u8 | value`, the value's size given by its type.
//!
//! The decoder takes the body in chunks cut anywhere. It keeps at most one incomplete message,
//! and rejects a prelude whose CRC or lengths are wrong as soon as its 12 bytes are in, so a
//! corrupted length can never make it wait for (or buffer) gigabytes.

use thiserror::Error;

use super::super::http::FrameDecoder;
use crate::ai::error::ProviderError;

/// The largest message accepted (AWS's limit for eventstream messages).
pub const MAX_MESSAGE_LEN: usize = 16 * 1024 * 1024;
/// The largest header block accepted (AWS's limit).
pub const MAX_HEADERS_LEN: usize = 128 * 1024;

const PRELUDE_LEN: usize = 12;
const CRC_LEN: usize = 4;
const MIN_MESSAGE_LEN: usize = PRELUDE_LEN + CRC_LEN;

/// A header value, by wire type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderValue {
    /// Types 0 and 1.
    Bool(bool),
    /// Type 2.
    Byte(i8),
    /// Type 3.
    Int16(i16),
    /// Type 4.
    Int32(i32),
    /// Type 5.
    Int64(i64),
    /// Type 6.
    Bytes(Vec<u8>),
    /// Type 7.
    String(String),
    /// Type 8: milliseconds since the Unix epoch.
    Timestamp(i64),
    /// Type 9.
    Uuid([u8; 16]),
}

/// One decoded message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    /// Headers in wire order.
    pub headers: Vec<(String, HeaderValue)>,
    /// The payload (JSON for Bedrock).
    pub payload: Vec<u8>,
}

impl Message {
    /// The value of the string header `name` (`:message-type`, `:event-type`, ...).
    pub(crate) fn header_str(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(key, value)| match value {
            HeaderValue::String(text) if key == name => Some(text.as_str()),
            _ => None,
        })
    }
}

/// Why the body is not a valid eventstream.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum EventStreamError {
    /// The prelude's CRC does not match its first 8 bytes.
    #[error(
        "corrupted eventstream frame: prelude CRC mismatch (expected {expected:#010x}, got {actual:#010x})"
    )]
    PreludeCrc {
        /// Computed.
        expected: u32,
        /// Sent.
        actual: u32,
    },
    /// The message's CRC does not match its bytes.
    #[error(
        "corrupted eventstream frame: message CRC mismatch (expected {expected:#010x}, got {actual:#010x})"
    )]
    MessageCrc {
        /// Computed.
        expected: u32,
        /// Sent.
        actual: u32,
    },
    /// The prelude's lengths are impossible or over the limits.
    #[error("invalid eventstream frame: total length {total}, headers length {headers}")]
    Lengths {
        /// Declared total length.
        total: u32,
        /// Declared header block length.
        headers: u32,
    },
    /// A header does not fit its block or has an unknown type.
    #[error("invalid eventstream frame header: {0}")]
    Header(&'static str),
    /// The body ended inside a message.
    #[error("eventstream body ended inside a frame ({0} bytes left over)")]
    Truncated(usize),
}

/// The incremental decoder.
#[derive(Debug, Default)]
pub struct EventStreamDecoder {
    /// Bytes of the message being received (only when a chunk ended inside one).
    partial: Vec<u8>,
    /// Once an error was returned, everything else is ignored.
    failed: bool,
}

impl EventStreamDecoder {
    /// A decoder at the start of a body.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Decodes `bytes`, appending completed messages to `out`.
    pub(crate) fn decode(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<Message>,
    ) -> Result<(), EventStreamError> {
        if self.failed {
            return Ok(());
        }
        let result = self.decode_inner(bytes, out);
        self.failed = result.is_err();
        result
    }

    fn decode_inner(
        &mut self,
        mut bytes: &[u8],
        out: &mut Vec<Message>,
    ) -> Result<(), EventStreamError> {
        // Complete the message left over from the previous chunk, copying only what it needs.
        // (Twice at most: first up to the end of the prelude, then up to the end of the message.)
        while !self.partial.is_empty() {
            let wanted = self.bytes_wanted()?;
            if wanted == 0 {
                out.push(parse_message(&self.partial)?);
                self.partial.clear();
                break;
            }
            if bytes.is_empty() {
                return Ok(());
            }
            let take = wanted.min(bytes.len());
            self.partial.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        // Whole messages straight from the chunk.
        while bytes.len() >= PRELUDE_LEN {
            let total = check_prelude(bytes)?;
            if bytes.len() < total {
                break;
            }
            out.push(parse_message(&bytes[..total])?);
            bytes = &bytes[total..];
        }
        self.partial.extend_from_slice(bytes);
        Ok(())
    }

    /// How many more bytes the partial message needs (checking its prelude once it is in).
    fn bytes_wanted(&self) -> Result<usize, EventStreamError> {
        if self.partial.len() < PRELUDE_LEN {
            return Ok(PRELUDE_LEN - self.partial.len());
        }
        Ok(check_prelude(&self.partial)? - self.partial.len())
    }

    /// The body has ended; fails if it ended inside a message.
    pub(crate) fn end(&mut self) -> Result<(), EventStreamError> {
        if self.failed || self.partial.is_empty() {
            return Ok(());
        }
        self.failed = true;
        Err(EventStreamError::Truncated(self.partial.len()))
    }
}

impl FrameDecoder for EventStreamDecoder {
    type Frame = Message;

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Message>) -> Result<(), ProviderError> {
        self.decode(bytes, out)
            .map_err(|error| ProviderError::Decode(error.to_string()))
    }

    fn finish(&mut self, _out: &mut Vec<Message>) -> Result<(), ProviderError> {
        self.end()
            .map_err(|error| ProviderError::Decode(error.to_string()))
    }
}

fn be_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// Validates the 12-byte prelude at the start of `bytes`; returns the message's total length.
fn check_prelude(bytes: &[u8]) -> Result<usize, EventStreamError> {
    let total = be_u32(&bytes[0..4]);
    let headers = be_u32(&bytes[4..8]);
    let expected = crc32fast::hash(&bytes[0..8]);
    let actual = be_u32(&bytes[8..12]);
    if expected != actual {
        return Err(EventStreamError::PreludeCrc { expected, actual });
    }
    let (total_len, headers_len) = (total as usize, headers as usize);
    if !(MIN_MESSAGE_LEN..=MAX_MESSAGE_LEN).contains(&total_len)
        || headers_len > MAX_HEADERS_LEN
        || headers_len > total_len - MIN_MESSAGE_LEN
    {
        return Err(EventStreamError::Lengths { total, headers });
    }
    Ok(total_len)
}

/// Parses one complete message whose prelude has been checked.
fn parse_message(bytes: &[u8]) -> Result<Message, EventStreamError> {
    let body_end = bytes.len() - CRC_LEN;
    let expected = crc32fast::hash(&bytes[..body_end]);
    let actual = be_u32(&bytes[body_end..]);
    if expected != actual {
        return Err(EventStreamError::MessageCrc { expected, actual });
    }
    let headers_end = PRELUDE_LEN + be_u32(&bytes[4..8]) as usize;
    Ok(Message {
        headers: parse_headers(&bytes[PRELUDE_LEN..headers_end])?,
        payload: bytes[headers_end..body_end].to_vec(),
    })
}

/// A cursor over a header block.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], EventStreamError> {
        if self.0.len() < n {
            return Err(EventStreamError::Header("a header runs past its block"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], EventStreamError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn sized(&mut self) -> Result<&'a [u8], EventStreamError> {
        let len = u16::from_be_bytes(self.array()?);
        self.take(usize::from(len))
    }
}

fn parse_headers(block: &[u8]) -> Result<Vec<(String, HeaderValue)>, EventStreamError> {
    let mut cursor = Cursor(block);
    let mut headers = Vec::new();
    while !cursor.0.is_empty() {
        let [name_len] = cursor.array()?;
        let name = std::str::from_utf8(cursor.take(usize::from(name_len))?)
            .map_err(|_| EventStreamError::Header("a header name is not UTF-8"))?
            .to_owned();
        let [kind] = cursor.array()?;
        let value = match kind {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(i8::from_be_bytes(cursor.array()?)),
            3 => HeaderValue::Int16(i16::from_be_bytes(cursor.array()?)),
            4 => HeaderValue::Int32(i32::from_be_bytes(cursor.array()?)),
            5 => HeaderValue::Int64(i64::from_be_bytes(cursor.array()?)),
            6 => HeaderValue::Bytes(cursor.sized()?.to_vec()),
            7 => HeaderValue::String(
                std::str::from_utf8(cursor.sized()?)
                    .map_err(|_| EventStreamError::Header("a string header is not UTF-8"))?
                    .to_owned(),
            ),
            8 => HeaderValue::Timestamp(i64::from_be_bytes(cursor.array()?)),
            9 => HeaderValue::Uuid(cursor.array()?),
            _ => return Err(EventStreamError::Header("unknown header value type")),
        };
        headers.push((name, value));
    }
    Ok(headers)
}

/// Encodes a message (the inverse of the decoder; used by tests and fixtures).
pub fn encode(message: &Message) -> Vec<u8> {
    let mut headers = Vec::new();
    for (name, value) in &message.headers {
        headers.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        headers.extend_from_slice(&name.as_bytes()[..name.len().min(255)]);
        let sized = |out: &mut Vec<u8>, kind: u8, data: &[u8]| {
            let len = u16::try_from(data.len()).unwrap_or(u16::MAX);
            out.push(kind);
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&data[..usize::from(len)]);
        };
        match value {
            HeaderValue::Bool(true) => headers.push(0),
            HeaderValue::Bool(false) => headers.push(1),
            HeaderValue::Byte(v) => headers.extend([2, v.to_be_bytes()[0]]),
            HeaderValue::Int16(v) => {
                headers.push(3);
                headers.extend_from_slice(&v.to_be_bytes());
            }
            HeaderValue::Int32(v) => {
                headers.push(4);
                headers.extend_from_slice(&v.to_be_bytes());
            }
            HeaderValue::Int64(v) => {
                headers.push(5);
                headers.extend_from_slice(&v.to_be_bytes());
            }
            HeaderValue::Bytes(data) => sized(&mut headers, 6, data),
            HeaderValue::String(text) => sized(&mut headers, 7, text.as_bytes()),
            HeaderValue::Timestamp(v) => {
                headers.push(8);
                headers.extend_from_slice(&v.to_be_bytes());
            }
            HeaderValue::Uuid(v) => {
                headers.push(9);
                headers.extend_from_slice(v);
            }
        }
    }
    let total = PRELUDE_LEN + headers.len() + message.payload.len() + CRC_LEN;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(
        &u32::try_from(headers.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&headers);
    out.extend_from_slice(&message.payload);
    let message_crc = crc32fast::hash(&out);
    out.extend_from_slice(&message_crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn event(kind: &str, payload: &str) -> Message {
        Message {
            headers: vec![
                (":event-type".into(), HeaderValue::String(kind.into())),
                (
                    ":content-type".into(),
                    HeaderValue::String("application/json".into()),
                ),
                (":message-type".into(), HeaderValue::String("event".into())),
            ],
            payload: payload.as_bytes().to_vec(),
        }
    }

    fn sample() -> Vec<Message> {
        vec![
            event("messageStart", r#"{"p":"abcd","role":"assistant"}"#),
            event(
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":"Grüße 世界"}}"#,
            ),
            Message {
                headers: vec![
                    ("b".into(), HeaderValue::Bool(true)),
                    ("f".into(), HeaderValue::Bool(false)),
                    ("y".into(), HeaderValue::Byte(-3)),
                    ("s".into(), HeaderValue::Int16(-300)),
                    ("i".into(), HeaderValue::Int32(70_000)),
                    ("l".into(), HeaderValue::Int64(-1)),
                    ("bytes".into(), HeaderValue::Bytes(vec![0, 255, 7])),
                    ("t".into(), HeaderValue::Timestamp(1_700_000_000_000)),
                    ("u".into(), HeaderValue::Uuid([9; 16])),
                ],
                payload: Vec::new(),
            },
            Message::default(),
        ]
    }

    fn decode_in_pieces(bytes: &[u8], cuts: &[usize]) -> Result<Vec<Message>, EventStreamError> {
        let mut decoder = EventStreamDecoder::new();
        let mut out = Vec::new();
        let mut start = 0;
        for &cut in cuts {
            let cut = cut.clamp(start, bytes.len());
            decoder.decode(&bytes[start..cut], &mut out)?;
            start = cut;
        }
        decoder.decode(&bytes[start..], &mut out)?;
        decoder.end()?;
        Ok(out)
    }

    #[test]
    fn round_trips_every_header_type() {
        let messages = sample();
        let bytes: Vec<u8> = messages.iter().flat_map(encode).collect();
        assert_eq!(decode_in_pieces(&bytes, &[]).unwrap(), messages);
        assert_eq!(messages[0].header_str(":event-type"), Some("messageStart"));
        assert_eq!(messages[2].header_str("b"), None);
    }

    #[test]
    fn matches_the_published_test_vector() {
        // `int32_header` from AWS's eventstream test suite: one int32 header
        // `event-type` = 0x0000A00C and payload `{'foo':'bar'}`.
        let bytes = [
            0x00, 0x00, 0x00, 0x2d, 0x00, 0x00, 0x00, 0x10, 0x41, 0xc4, 0x24, 0xb8, 0x0a, 0x65,
            0x76, 0x65, 0x6e, 0x74, 0x2d, 0x74, 0x79, 0x70, 0x65, 0x04, 0x00, 0x00, 0xa0, 0x0c,
            0x7b, 0x27, 0x66, 0x6f, 0x6f, 0x27, 0x3a, 0x27, 0x62, 0x61, 0x72, 0x27, 0x7d, 0x36,
            0xf4, 0x80, 0xa0,
        ];
        let decoded = decode_in_pieces(&bytes, &[5, 13, 30]).unwrap();
        assert_eq!(
            decoded,
            [Message {
                headers: vec![("event-type".into(), HeaderValue::Int32(0xa00c))],
                payload: b"{'foo':'bar'}".to_vec(),
            }]
        );
        assert_eq!(encode(&decoded[0]), bytes);
    }

    #[test]
    fn corrupted_message_crc_is_an_error() {
        let mut bytes = encode(&event("messageStop", r#"{"stopReason":"end_turn"}"#));
        let payload_byte = bytes.len() - 6;
        bytes[payload_byte] ^= 0x01;
        let error = decode_in_pieces(&bytes, &[20]).unwrap_err();
        assert!(
            matches!(error, EventStreamError::MessageCrc { .. }),
            "{error}"
        );
        assert!(error.to_string().starts_with("corrupted eventstream frame"));
    }

    #[test]
    fn corrupted_prelude_fails_before_the_body_arrives() {
        let mut bytes = encode(&event("messageStart", "{}"));
        bytes[1] ^= 0x40; // total length now ~4 MiB larger
        let mut decoder = EventStreamDecoder::new();
        let mut out = Vec::new();
        // Only the prelude: the error comes at once, without waiting for the declared length.
        let error = decoder.decode(&bytes[..12], &mut out).unwrap_err();
        assert!(
            matches!(error, EventStreamError::PreludeCrc { .. }),
            "{error}"
        );
        // After an error the decoder stays quiet.
        assert_eq!(decoder.decode(&bytes[12..], &mut out), Ok(()));
        assert!(out.is_empty());
    }

    #[test]
    fn oversized_or_impossible_lengths_are_rejected() {
        let prelude = |total: u32, headers: u32| {
            let mut bytes = total.to_be_bytes().to_vec();
            bytes.extend_from_slice(&headers.to_be_bytes());
            let crc = crc32fast::hash(&bytes);
            bytes.extend_from_slice(&crc.to_be_bytes());
            bytes
        };
        for (total, headers) in [(u32::MAX, 0), (8, 0), (20, 5), (200_000, 150_000)] {
            let error = EventStreamDecoder::new()
                .decode(&prelude(total, headers), &mut Vec::new())
                .unwrap_err();
            assert_eq!(error, EventStreamError::Lengths { total, headers });
        }
    }

    #[test]
    fn truncated_body_is_an_error() {
        let bytes = encode(&event("messageStart", "{}"));
        let error = decode_in_pieces(&bytes[..bytes.len() - 1], &[]).unwrap_err();
        assert_eq!(error, EventStreamError::Truncated(bytes.len() - 1));
        // Truncated inside the prelude too.
        assert_eq!(
            decode_in_pieces(&bytes[..5], &[]).unwrap_err(),
            EventStreamError::Truncated(5)
        );
    }

    #[test]
    fn bad_headers_are_rejected() {
        let mut message = encode(&Message {
            headers: vec![("x".into(), HeaderValue::String("y".into()))],
            payload: Vec::new(),
        });
        // Change the value type to 42 and fix the message CRC.
        message[14] = 42;
        let end = message.len() - 4;
        let crc = crc32fast::hash(&message[..end]);
        message[end..].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            decode_in_pieces(&message, &[]).unwrap_err(),
            EventStreamError::Header("unknown header value type")
        );
    }

    proptest! {
        #[test]
        fn any_chunking_decodes_the_same(cuts in proptest::collection::vec(0usize..400, 0..40)) {
            let messages = sample();
            let bytes: Vec<u8> = messages.iter().flat_map(encode).collect();
            let mut cuts = cuts;
            cuts.sort_unstable();
            prop_assert_eq!(decode_in_pieces(&bytes, &cuts).unwrap(), messages);
        }
    }
}
