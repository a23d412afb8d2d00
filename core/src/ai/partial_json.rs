//! Incremental, tolerant JSON parser for streamed tool-call arguments.
//!
//! Providers stream tool-call arguments as JSON text in small deltas, and the
//! UI wants a best-effort value after every delta. Re-parsing the accumulated
//! text each time is quadratic in the argument size, so this parser consumes
//! each byte once: a state machine keeps a stack of open containers, and every
//! completed value is moved into its parent straight away.
//!
//! Snapshots follow the npm `partial-json` package with `Allow.ALL` (what pi
//! uses): unterminated strings are included, incomplete numbers are included
//! when what arrived already parses, incomplete literals and object keys
//! without a value are dropped, and open containers are closed.
//!
//! The parser is deliberately forgiving of mistakes models make in string
//! contents, like pi's `repairJson`: raw control characters are kept, unknown
//! escapes such as `\x` are kept as the two characters `\` and `x`, lone
//! surrogate escapes become U+FFFD and `\u` without four hex digits is kept
//! literally. Trailing commas before `]` or `}` are accepted too.

use memchr::memchr2;
use serde_json::{Map, Number, Value};

/// Deepest container nesting accepted. serde_json refuses deeper documents,
/// so anything we build can round-trip through it, and the recursive
/// `Drop`/`Clone` of `Value` cannot overflow the stack on hostile input.
const MAX_DEPTH: usize = 127;

/// What the parser expects at the next non-whitespace byte, or which token it
/// is in the middle of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A value must follow (start of input, or after `:`).
    Value,
    /// After `[` or an array `,`: a value or `]`.
    ArrayItem,
    /// After `{` or an object `,`: a key or `}`.
    ObjectKey,
    /// After an object key.
    Colon,
    /// After a value inside a container: `,` or the closing bracket.
    AfterValue,
    /// Inside a string (key or value).
    Str,
    /// Inside a number; its text accumulates in `num_buf`.
    Number,
    /// Inside `true`, `false` or `null`.
    Literal,
    /// A whole top-level value has been parsed.
    Done,
}

/// Escape-sequence progress inside a string; survives chunk boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    /// Just saw `\`.
    Backslash,
    /// Saw `\u` and `len` hex digits (kept so a bad sequence can be emitted
    /// literally).
    Unicode {
        digits: [u8; 4],
        len: u8,
    },
}

#[derive(Debug)]
enum Frame {
    Array(Vec<Value>),
    Object {
        map: Map<String, Value>,
        /// A completed key still waiting for its value.
        key: Option<String>,
    },
}

/// Incremental, tolerant JSON parser; see the module documentation.
#[derive(Debug)]
pub struct PartialJsonParser {
    stack: Vec<Frame>,
    mode: Mode,
    root: Option<Value>,
    error: bool,
    bytes_received: usize,
    /// The string being decoded; moved (not copied) into the tree when done.
    str_buf: String,
    str_is_key: bool,
    escape: Escape,
    /// A decoded high surrogate waiting to see whether a low one follows.
    pending_high: Option<u16>,
    num_buf: String,
    literal: &'static [u8],
    literal_matched: usize,
}

impl Default for PartialJsonParser {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialJsonParser {
    /// Creates a parser that has received nothing yet.
    pub fn new() -> Self {
        Self {
            stack: Vec::new(),
            mode: Mode::Value,
            root: None,
            error: false,
            bytes_received: 0,
            str_buf: String::new(),
            str_is_key: false,
            escape: Escape::None,
            pending_high: None,
            num_buf: String::new(),
            literal: b"",
            literal_matched: 0,
        }
    }

    /// Consumes the next piece of JSON text.
    ///
    /// Tokens, escapes and `\u` sequences may be split anywhere between
    /// calls. After a syntax error further input is counted but ignored.
    pub fn push(&mut self, chunk: &str) {
        self.bytes_received += chunk.len();
        let bytes = chunk.as_bytes();
        let mut i = 0;
        while i < bytes.len() && !self.error {
            i = match self.mode {
                Mode::Str => self.string_step(chunk, i),
                Mode::Number => self.number_step(chunk, i),
                Mode::Literal => self.literal_step(bytes, i),
                _ => match bytes[i] {
                    b' ' | b'\t' | b'\n' | b'\r' => i + 1,
                    c => self.structural_step(c, i),
                },
            };
        }
    }

    /// Best-effort snapshot of the value received so far, with open
    /// containers closed; `Value::Null` if nothing usable has arrived yet.
    ///
    /// Costs O(size of the value) and leaves the parser untouched.
    pub fn value(&self) -> Value {
        self.snapshot().unwrap_or(Value::Null)
    }

    /// Like [`value`](Self::value), but moves the tree out instead of cloning.
    pub fn into_value(self) -> Value {
        self.into_snapshot().unwrap_or(Value::Null)
    }

    /// Whether a whole top-level value has been parsed (possibly followed by
    /// garbage, which [`has_error`](Self::has_error) reports).
    pub fn is_complete(&self) -> bool {
        self.root.is_some()
    }

    /// Whether a syntax error stopped the parse; the value built before the
    /// error is still available.
    pub fn has_error(&self) -> bool {
        self.error
    }

    /// Total number of bytes passed to [`push`](Self::push).
    pub fn bytes_received(&self) -> usize {
        self.bytes_received
    }

    fn fail(&mut self) {
        self.error = true;
    }

    /// Handles one non-whitespace byte outside any token; returns the index
    /// of the next byte to look at.
    fn structural_step(&mut self, c: u8, i: usize) -> usize {
        match (self.mode, c) {
            (Mode::Value | Mode::ArrayItem, b'{') => {
                if self.open(Frame::Object {
                    map: Map::new(),
                    key: None,
                }) {
                    self.mode = Mode::ObjectKey;
                }
            }
            (Mode::Value | Mode::ArrayItem, b'[') => {
                if self.open(Frame::Array(Vec::new())) {
                    self.mode = Mode::ArrayItem;
                }
            }
            (Mode::Value | Mode::ArrayItem, b'"') => self.start_string(false),
            (Mode::Value | Mode::ArrayItem, b'-' | b'0'..=b'9') => {
                self.num_buf.clear();
                self.mode = Mode::Number;
                // The number step consumes this byte as part of the token.
                return i;
            }
            (Mode::Value | Mode::ArrayItem, b't' | b'f' | b'n') => {
                self.literal = match c {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                self.literal_matched = 1;
                self.mode = Mode::Literal;
            }
            (Mode::ArrayItem, b']') => self.close(),
            (Mode::ObjectKey, b'"') => self.start_string(true),
            (Mode::ObjectKey, b'}') => self.close(),
            (Mode::Colon, b':') => self.mode = Mode::Value,
            (Mode::AfterValue, b',') => {
                self.mode = match self.stack.last() {
                    Some(Frame::Object { .. }) => Mode::ObjectKey,
                    _ => Mode::ArrayItem,
                };
            }
            (Mode::AfterValue, b']') if matches!(self.stack.last(), Some(Frame::Array(_))) => {
                self.close();
            }
            (Mode::AfterValue, b'}') if matches!(self.stack.last(), Some(Frame::Object { .. })) => {
                self.close();
            }
            _ => self.fail(),
        }
        i + 1
    }

    fn open(&mut self, frame: Frame) -> bool {
        if self.stack.len() >= MAX_DEPTH {
            self.fail();
            return false;
        }
        self.stack.push(frame);
        true
    }

    fn close(&mut self) {
        match self.stack.pop() {
            Some(Frame::Array(items)) => self.complete_value(Value::Array(items)),
            Some(Frame::Object { map, .. }) => self.complete_value(Value::Object(map)),
            None => self.fail(),
        }
    }

    /// Moves a finished value into its parent (or makes it the result).
    fn complete_value(&mut self, value: Value) {
        match self.stack.last_mut() {
            None => {
                self.root = Some(value);
                self.mode = Mode::Done;
            }
            Some(Frame::Array(items)) => {
                items.push(value);
                self.mode = Mode::AfterValue;
            }
            Some(Frame::Object { map, key }) => {
                if let Some(key) = key.take() {
                    map.insert(key, value);
                }
                self.mode = Mode::AfterValue;
            }
        }
    }

    fn start_string(&mut self, is_key: bool) {
        self.str_buf.clear();
        self.str_is_key = is_key;
        self.escape = Escape::None;
        self.pending_high = None;
        self.mode = Mode::Str;
    }

    fn finish_string(&mut self) {
        let s = std::mem::take(&mut self.str_buf);
        if self.str_is_key {
            if let Some(Frame::Object { key, .. }) = self.stack.last_mut() {
                *key = Some(s);
            }
            self.mode = Mode::Colon;
        } else {
            self.complete_value(Value::String(s));
        }
    }

    /// Decodes string content from `chunk[i..]`; returns where it stopped
    /// (end of chunk, or just past the closing quote).
    fn string_step(&mut self, chunk: &str, mut i: usize) -> usize {
        let bytes = chunk.as_bytes();
        while i < bytes.len() {
            match self.escape {
                Escape::None => {
                    if self.pending_high.is_some() && bytes[i] != b'\\' {
                        self.pending_high = None;
                        self.str_buf.push(char::REPLACEMENT_CHARACTER);
                    }
                    // Raw control characters are accepted, so only quotes and
                    // backslashes interrupt the bulk copy.
                    match memchr2(b'"', b'\\', &bytes[i..]) {
                        None => {
                            self.str_buf.push_str(&chunk[i..]);
                            return bytes.len();
                        }
                        Some(off) => {
                            let end = i + off;
                            self.str_buf.push_str(&chunk[i..end]);
                            if bytes[end] == b'"' {
                                self.finish_string();
                                return end + 1;
                            }
                            self.escape = Escape::Backslash;
                            i = end + 1;
                        }
                    }
                }
                Escape::Backslash => {
                    let c = bytes[i];
                    if c != b'u' && self.pending_high.take().is_some() {
                        self.str_buf.push(char::REPLACEMENT_CHARACTER);
                    }
                    self.escape = Escape::None;
                    let decoded = match c {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            self.escape = Escape::Unicode {
                                digits: [0; 4],
                                len: 0,
                            };
                            i += 1;
                            continue;
                        }
                        _ => {
                            // Unknown escape: keep it verbatim. `i` follows an
                            // ASCII backslash, so it is a char boundary.
                            let ch = chunk[i..]
                                .chars()
                                .next()
                                .unwrap_or(char::REPLACEMENT_CHARACTER);
                            self.str_buf.push('\\');
                            self.str_buf.push(ch);
                            i += ch.len_utf8();
                            continue;
                        }
                    };
                    self.str_buf.push(decoded);
                    i += 1;
                }
                Escape::Unicode { mut digits, len } => {
                    let c = bytes[i];
                    if c.is_ascii_hexdigit() {
                        digits[usize::from(len)] = c;
                        let len = len + 1;
                        i += 1;
                        if len == 4 {
                            self.escape = Escape::None;
                            self.push_code_unit(hex4(digits));
                        } else {
                            self.escape = Escape::Unicode { digits, len };
                        }
                    } else {
                        // Not a \u escape after all: keep what we saw and
                        // reprocess this byte as ordinary string content.
                        if self.pending_high.take().is_some() {
                            self.str_buf.push(char::REPLACEMENT_CHARACTER);
                        }
                        self.str_buf.push_str("\\u");
                        for &d in &digits[..usize::from(len)] {
                            self.str_buf.push(char::from(d));
                        }
                        self.escape = Escape::None;
                    }
                }
            }
        }
        i
    }

    fn push_code_unit(&mut self, unit: u16) {
        if let Some(high) = self.pending_high.take() {
            if (0xDC00..=0xDFFF).contains(&unit) {
                let code =
                    0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                self.str_buf
                    .push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                return;
            }
            self.str_buf.push(char::REPLACEMENT_CHARACTER);
        }
        match unit {
            0xD800..=0xDBFF => self.pending_high = Some(unit),
            _ => self
                .str_buf
                .push(char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER)),
        }
    }

    fn number_step(&mut self, chunk: &str, i: usize) -> usize {
        let bytes = chunk.as_bytes();
        let end = bytes[i..]
            .iter()
            .position(|&b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .map_or(bytes.len(), |off| i + off);
        self.num_buf.push_str(&chunk[i..end]);
        if end < bytes.len() {
            // The terminator is left for the structural step.
            match self.num_buf.parse::<Number>() {
                Ok(n) => self.complete_value(Value::Number(n)),
                Err(_) => self.fail(),
            }
        }
        end
    }

    fn literal_step(&mut self, bytes: &[u8], mut i: usize) -> usize {
        while i < bytes.len() && self.literal_matched < self.literal.len() {
            if bytes[i] != self.literal[self.literal_matched] {
                self.fail();
                return i;
            }
            i += 1;
            self.literal_matched += 1;
        }
        if self.literal_matched == self.literal.len() {
            let value = match self.literal {
                b"true" => Value::Bool(true),
                b"false" => Value::Bool(false),
                _ => Value::Null,
            };
            self.complete_value(value);
        }
        i
    }

    /// The token in progress, if partial-json semantics include it.
    fn partial_leaf(&self) -> Option<Value> {
        match self.mode {
            Mode::Str if !self.str_is_key => Some(Value::String(self.str_buf.clone())),
            Mode::Number => self.num_buf.parse::<Number>().ok().map(Value::Number),
            _ => None,
        }
    }

    fn snapshot(&self) -> Option<Value> {
        if let Some(root) = &self.root {
            return Some(root.clone());
        }
        let mut child = self.partial_leaf();
        for frame in self.stack.iter().rev() {
            child = Some(match frame {
                Frame::Array(items) => {
                    let mut items = items.clone();
                    items.extend(child);
                    Value::Array(items)
                }
                Frame::Object { map, key } => {
                    let mut map = map.clone();
                    if let (Some(key), Some(child)) = (key, child) {
                        map.insert(key.clone(), child);
                    }
                    Value::Object(map)
                }
            });
        }
        child
    }

    fn into_snapshot(mut self) -> Option<Value> {
        if let Some(root) = self.root.take() {
            return Some(root);
        }
        let mut child = if self.mode == Mode::Str && !self.str_is_key {
            Some(Value::String(std::mem::take(&mut self.str_buf)))
        } else {
            self.partial_leaf()
        };
        for frame in self.stack.into_iter().rev() {
            child = Some(match frame {
                Frame::Array(mut items) => {
                    items.extend(child);
                    Value::Array(items)
                }
                Frame::Object { mut map, key } => {
                    if let (Some(key), Some(child)) = (key, child) {
                        map.insert(key, child);
                    }
                    Value::Object(map)
                }
            });
        }
        child
    }
}

fn hex4(digits: [u8; 4]) -> u16 {
    digits.iter().fold(0u16, |acc, &d| {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => d.wrapping_sub(b'A').wrapping_add(10),
        };
        (acc << 4) | u16::from(v)
    })
}

/// Parses possibly incomplete or sloppy streamed JSON without ever failing.
///
/// Returns `{}` when nothing usable was parsed (empty or whitespace-only
/// input, or garbage from the first byte); otherwise whatever was parsed,
/// which may be a scalar if the input was one.
pub fn parse_streaming_json(s: &str) -> Value {
    let mut parser = PartialJsonParser::new();
    parser.push(s);
    parser
        .into_snapshot()
        .unwrap_or_else(|| Value::Object(Map::new()))
}

/// Parses one complete JSON document a provider sent (an SSE `data` payload, an eventstream
/// payload, a WebSocket message): strictly with serde_json, and when that fails, with this
/// module's tolerant parser if it reads one whole document without a syntax error.
///
/// One reading for every API (issue 17): a lone surrogate escape (`"\ud800"`, which
/// serde_json refuses) becomes U+FFFD and the rest of the answer is kept; raw control characters
/// inside strings are kept. Anything else that is not JSON — a document nested deeper than 127
/// levels included — is serde_json's error, never a silently shortened value.
pub(crate) fn parse_json_lenient(data: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(data) {
        Ok(value) => Ok(value),
        Err(error) => {
            let mut parser = PartialJsonParser::new();
            parser.push(data);
            if parser.is_complete() && !parser.has_error() {
                Ok(parser.into_value())
            } else {
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn parse_chunks(chunks: &[&str]) -> PartialJsonParser {
        let mut p = PartialJsonParser::new();
        for c in chunks {
            p.push(c);
        }
        p
    }

    fn snapshot(s: &str) -> Value {
        parse_chunks(&[s]).value()
    }

    /// All char-boundary split points of `s`.
    fn boundaries(s: &str) -> impl Iterator<Item = usize> + '_ {
        (0..=s.len()).filter(|&i| s.is_char_boundary(i))
    }

    const DOCS: &[&str] = &[
        r#"{"a": 1, "b": [true, false, null], "c": {"d": "e"}}"#,
        r#"  [ -0.5e10, 1E-3, 0, -12, 18446744073709551615, 18446744073709551616, -9223372036854775808, 3.141592653589793 ]  "#,
        r#"{"s": "esc \" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u4e2d \ud83d\ude00 end", "uni": "héllo 中文 😀"}"#,
        r#"{"nested": {"deep": [[[{"x": [1, {"y": ""}]}]]]}, "empty": {}, "arr": []}"#,
        r#""just a string""#,
        "42",
        "\n\t{\r\n\"k\"\t:\n\"v\"\n}\n",
        r#"{"dup": 1, "dup": 2}"#,
        r#"{"path":"src/main.rs","content":"fn main() {\n    println!(\"hi\");\n}\n","n":1.0}"#,
    ];

    #[test]
    fn valid_documents_match_serde_json() {
        for doc in DOCS {
            let expected: Value = serde_json::from_str(doc).unwrap();
            let p = parse_chunks(&[doc]);
            assert!(!p.has_error(), "{doc}");
            assert_eq!(p.value(), expected, "{doc}");
            assert_eq!(p.into_value(), expected, "{doc}");
        }
    }

    #[test]
    fn every_split_point_gives_same_value() {
        for doc in DOCS {
            let whole = parse_chunks(&[doc]).into_value();
            for i in boundaries(doc) {
                let p = parse_chunks(&[&doc[..i], &doc[i..]]);
                assert!(!p.has_error(), "{doc} @ {i}");
                assert_eq!(p.into_value(), whole, "{doc} @ {i}");
            }
        }
    }

    #[test]
    fn char_at_a_time_gives_same_value() {
        for doc in DOCS {
            let mut p = PartialJsonParser::new();
            let mut buf = [0u8; 4];
            for ch in doc.chars() {
                p.push(ch.encode_utf8(&mut buf));
                // Snapshots must never panic whatever the state.
                let _ = p.value();
            }
            assert_eq!(
                p.into_value(),
                serde_json::from_str::<Value>(doc).unwrap(),
                "{doc}"
            );
        }
    }

    #[test]
    fn completeness_and_bytes_received() {
        let mut p = PartialJsonParser::new();
        p.push(r#"{"a": "#);
        assert!(!p.is_complete());
        p.push("1}");
        assert!(p.is_complete());
        p.push("  \n");
        assert!(!p.has_error());
        assert_eq!(p.bytes_received(), 11);
        // A top-level number can't be known complete until a terminator.
        let p = parse_chunks(&["12"]);
        assert!(!p.is_complete());
        assert_eq!(p.value(), json!(12));
        assert!(parse_chunks(&["12 "]).is_complete());
    }

    #[test]
    fn partial_snapshots() {
        assert_eq!(snapshot(r#"{"a": "hel"#), json!({"a": "hel"}));
        assert_eq!(snapshot(r#"{"a": 1, "b"#), json!({"a": 1}));
        assert_eq!(snapshot(r#"{"a": 1, "b""#), json!({"a": 1}));
        assert_eq!(snapshot(r#"{"a": 1, "b": "#), json!({"a": 1}));
        assert_eq!(snapshot("[1, 2, tr"), json!([1, 2]));
        assert_eq!(snapshot("[1, 2, nul"), json!([1, 2]));
        assert_eq!(snapshot("[fals"), json!([]));
        assert_eq!(
            snapshot(r#"{"a": {"b": [1, {"c": "x"#),
            json!({"a": {"b": [1, {"c": "x"}]}})
        );
        assert_eq!(
            snapshot(r#"{"a": {"b": [1, {"c"#),
            json!({"a": {"b": [1, {}]}})
        );
        assert_eq!(snapshot("[12"), json!([12]));
        assert_eq!(snapshot("[-"), json!([]));
        assert_eq!(snapshot("[1."), json!([]));
        assert_eq!(snapshot("[1e"), json!([]));
        assert_eq!(snapshot("[1e-"), json!([]));
        assert_eq!(snapshot("[1.5"), json!([1.5]));
        assert_eq!(snapshot("[1.5e3"), json!([1500.0]));
        assert_eq!(snapshot("[1, "), json!([1]));
        assert_eq!(snapshot("{"), json!({}));
        assert_eq!(snapshot("[["), json!([[]]));
        assert_eq!(snapshot(r#""ab"#), json!("ab"));
        assert_eq!(snapshot(r#"{"a": "x\"#), json!({"a": "x"}));
        assert_eq!(snapshot(r#"{"a": "x\u00"#), json!({"a": "x"}));
        assert_eq!(snapshot(""), Value::Null);
    }

    #[test]
    fn parse_streaming_json_cases() {
        assert_eq!(parse_streaming_json(""), json!({}));
        assert_eq!(parse_streaming_json("  \n "), json!({}));
        assert_eq!(parse_streaming_json("garbage"), json!({}));
        assert_eq!(parse_streaming_json("tru"), json!({}));
        assert_eq!(parse_streaming_json("null"), Value::Null);
        assert_eq!(parse_streaming_json("7"), json!(7));
        assert_eq!(parse_streaming_json(r#""s"#), json!("s"));
        assert_eq!(
            parse_streaming_json(r#"{"cmd": "ls -l"#),
            json!({"cmd": "ls -l"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": [1, 2]}"#),
            json!({"a": [1, 2]})
        );
    }

    #[test]
    fn repairs() {
        assert_eq!(
            parse_streaming_json("{\"a\": \"line1\nline2\ttab\u{1}\"}"),
            json!({"a": "line1\nline2\ttab\u{1}"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\x41 \' \é"}"#),
            json!({"a": "\\x41 \\' \\é"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\ud83d\ude00"}"#),
            json!({"a": "😀"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\ud83dx"}"#),
            json!({"a": "\u{FFFD}x"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\ud83d"}"#),
            json!({"a": "\u{FFFD}"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\ude00\ud83d\n"}"#),
            json!({"a": "\u{FFFD}\u{FFFD}\n"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\ud83d\u0041"}"#),
            json!({"a": "\u{FFFD}A"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\ud83d\ud83d\ude00"}"#),
            json!({"a": "\u{FFFD}😀"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\u12g4 \u"}"#),
            json!({"a": "\\u12g4 \\u"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\u12\"q"}"#),
            json!({"a": "\\u12\"q"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\uD83D\uDE00 \u00E9"}"#),
            json!({"a": "😀 é"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": [1, 2,], "b": 3,}"#),
            json!({"a": [1, 2], "b": 3})
        );
    }

    #[test]
    fn trailing_backslash_waits_for_next_chunk() {
        let mut p = PartialJsonParser::new();
        p.push(r#"{"a": "x\"#);
        assert_eq!(p.value(), json!({"a": "x"}));
        assert!(!p.has_error());
        p.push(r#""y"}"#);
        assert!(p.is_complete());
        assert_eq!(p.into_value(), json!({"a": "x\"y"}));
        let p = parse_chunks(&[r#"["\ud8"#, r#"3d\"#, "u", "de", r#"00"]"#]);
        assert_eq!(p.into_value(), json!(["😀"]));
    }

    #[test]
    fn hard_errors_keep_value_built_so_far() {
        let p = parse_chunks(&[r#"{"a": 1 x"#, r#", "b": 2}"#]);
        assert!(p.has_error());
        assert!(!p.is_complete());
        assert_eq!(p.value(), json!({"a": 1}));
        assert_eq!(p.bytes_received(), 18);

        let p = parse_chunks(&[r#"{"a": [1, 2.3.4]}"#]);
        assert!(p.has_error());
        assert_eq!(p.into_value(), json!({"a": [1]}));

        let p = parse_chunks(&[r#"{"a" 1}"#]);
        assert!(p.has_error());
        assert_eq!(p.into_value(), json!({}));

        let p = parse_chunks(&["[truex]"]);
        assert!(p.has_error());
        assert_eq!(p.into_value(), json!([true]));

        let p = parse_chunks(&["[tx]"]);
        assert!(p.has_error());
        assert_eq!(p.into_value(), json!([]));

        for bad in [
            "]", "}", ":", ",", "[}", "{]", "{1:2}", "[01]", "{\"a\":}", "[1 2]",
        ] {
            assert!(parse_chunks(&[bad]).has_error(), "{bad}");
        }
    }

    #[test]
    fn trailing_garbage_after_complete_value() {
        let p = parse_chunks(&[r#"{"a": 1}  "#, "\n", "xyz"]);
        assert!(p.is_complete());
        assert!(p.has_error());
        assert_eq!(p.into_value(), json!({"a": 1}));
        assert_eq!(parse_streaming_json(r#"{"a": 1}{"b": 2}"#), json!({"a": 1}));
    }

    #[test]
    fn lenient_documents_replace_lone_surrogates_and_refuse_the_rest() {
        assert_eq!(
            parse_json_lenient(r#"{"t":"a\ud800b","n":[1,{"k":"\udc00"}]}"#).unwrap(),
            json!({"t": "a\u{FFFD}b", "n": [1, {"k": "\u{FFFD}"}]})
        );
        assert_eq!(
            parse_json_lenient(r#"{"t":"\ud83d\ude00"}"#).unwrap(),
            json!({"t": "😀"})
        );
        assert!(parse_json_lenient(r#"{"t":"\ud800"} x"#).is_err());
        assert!(parse_json_lenient(r#"{"t":"\ud800""#).is_err());
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(parse_json_lenient(&deep).is_err());
    }

    #[test]
    fn nesting_limit_matches_serde_json() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let p = parse_chunks(&[&ok]);
        assert!(!p.has_error());
        assert_eq!(p.into_value(), serde_json::from_str::<Value>(&ok).unwrap());
        let too_deep = "[".repeat(100_000);
        let p = parse_chunks(&[&too_deep]);
        assert!(p.has_error());
        let v = p.into_value();
        assert!(serde_json::from_str::<Value>(&serde_json::to_string(&v).unwrap()).is_ok());
    }

    #[test]
    fn large_string_in_small_chunks() {
        let content: String = "ab\\n\\\"é😀\\u00e9 ".repeat(20_000);
        let doc = format!(r#"{{"content": "{content}"}}"#);
        let expected: Value = serde_json::from_str(&doc).unwrap();
        let mut p = PartialJsonParser::new();
        let mut start = 0;
        while start < doc.len() {
            let end = crate::text::ceil_boundary(&doc, start + 7);
            p.push(&doc[start..end]);
            start = end;
        }
        assert_eq!(p.into_value(), expected);
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[a-z\"\\\\/\n\t é😀\u{1}]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z\"é😀\\\\]{0,5}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn split_at_indices<'a>(s: &'a str, cuts: &[proptest::sample::Index]) -> Vec<&'a str> {
        let mut points: Vec<usize> = cuts
            .iter()
            .map(|c| crate::text::floor_boundary(s, c.index(s.len() + 1)))
            .collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut prev = 0;
        for p in points {
            chunks.push(&s[prev..p]);
            prev = p;
        }
        chunks.push(&s[prev..]);
        chunks
    }

    proptest! {
        #[test]
        fn random_values_random_splits(
            value in arb_json(),
            pretty in any::<bool>(),
            cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..16),
        ) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let expected: Value = serde_json::from_str(&text).unwrap();
            let whole = parse_chunks(&[&text]);
            prop_assert!(!whole.has_error());
            prop_assert_eq!(whole.into_value(), expected.clone());
            let split = parse_chunks(&split_at_indices(&text, &cuts));
            prop_assert!(!split.has_error());
            prop_assert_eq!(split.into_value(), expected);
        }

        #[test]
        fn prefix_snapshots_never_panic_and_match_finish(
            value in arb_json(),
            cut in any::<proptest::sample::Index>(),
        ) {
            let text = serde_json::to_string(&value).unwrap();
            let chunks = split_at_indices(&text, &[cut]);
            let mut p = PartialJsonParser::new();
            p.push(chunks[0]);
            let snap = p.value();
            prop_assert_eq!(snap, parse_chunks(&[chunks[0]]).into_value());
            p.push(chunks[1]);
            prop_assert_eq!(p.into_value(), serde_json::from_str::<Value>(&text).unwrap());
        }

        #[test]
        fn arbitrary_text_never_panics_and_splits_agree(
            text in "[\\[\\]{}\":,\\\\u0-9a-fA-Ftrulsn. \n\\-+eé😀]{0,64}",
            cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..8),
        ) {
            let whole = parse_chunks(&[&text]);
            let split = parse_chunks(&split_at_indices(&text, &cuts));
            prop_assert_eq!(split.has_error(), whole.has_error());
            prop_assert_eq!(split.is_complete(), whole.is_complete());
            prop_assert_eq!(split.value(), whole.value());
            let _ = parse_streaming_json(&text);
        }
    }
}
