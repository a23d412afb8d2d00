//! An answer whose schema is not an object's (a list, a string, a union) travels wrapped as
//! `{"response": VALUE}`: tool parameters, and OpenAI's and Anthropic's structured outputs, take
//! only object schemas. [`Unwrap`] hands on the text of `VALUE` as the model writes it, so the
//! caller's text deltas, partial objects and final text are the answer itself.

use serde_json::Value;

use super::WRAPPED_ANSWER_KEY;
use super::typed::parse_output;

/// The text the wrapper starts with, whitespace aside: `{"response":`.
fn prefix() -> String {
    format!("{{\"{WRAPPED_ANSWER_KEY}\":")
}

/// One answer block's unwrapping (see the module's doc).
#[derive(Debug)]
pub(crate) struct Unwrap {
    state: State,
    /// The wrapper's opening text; `at` in [`State::Prefix`] counts its bytes matched.
    prefix: Vec<u8>,
    /// Everything the model wrote, while it may still be needed (see [`Unwrap::finish`]).
    raw: String,
    /// What was handed on: the value's text.
    shown: String,
    /// Backticks of a Markdown fence opening the answer (```` ```json ````), and whether its
    /// language tag is over: a model that is not held to the schema may fence its JSON.
    ticks: u8,
    tagged: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Matching the wrapper's opening; `at` bytes of it matched so far.
    Prefix { at: usize },
    /// Inside the value.
    Value {
        depth: u32,
        in_string: bool,
        escaped: bool,
    },
    /// After the value: the rest (`}`) is dropped.
    After,
    /// The answer did not start as an object: not wrapped, handed on as it comes.
    Bare,
    /// An object, but not the wrapper's opening: held back until the end.
    Held,
}

impl Unwrap {
    pub(crate) fn new() -> Self {
        Self {
            state: State::Prefix { at: 0 },
            prefix: prefix().into_bytes(),
            raw: String::new(),
            shown: String::new(),
            ticks: 0,
            tagged: false,
        }
    }

    /// Whether the answer ended inside the value (the model was cut off): its text may still
    /// read as a whole value (`12` of `1234`), but it is not the answer.
    pub(crate) fn cut(&self) -> bool {
        matches!(self.state, State::Value { .. })
    }

    /// Skips a byte of a fence opening the answer: up to three backticks, then a tag.
    fn fence_byte(&mut self, byte: u8) -> bool {
        if byte == b'`' && self.ticks < 3 && !self.tagged {
            self.ticks += 1;
            return true;
        }
        if self.ticks == 3 && !self.tagged {
            if byte.is_ascii_alphanumeric() {
                return true;
            }
            self.tagged = true;
        }
        false
    }

    /// The value's text so far.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Reads `delta` (the model's next text) and returns what of it is the value's text.
    pub(crate) fn push(&mut self, delta: &str) -> String {
        let before = self.shown.len();
        match self.state {
            State::Prefix { .. } | State::Held => self.raw.push_str(delta),
            State::Bare => {
                self.shown.push_str(delta);
                return delta.to_owned();
            }
            State::After => return String::new(),
            State::Value { .. } => {}
        }
        let bytes = delta.as_bytes();
        // Where the value's shown bytes began in `delta`.
        let mut start = None;
        for (i, &byte) in bytes.iter().enumerate() {
            if let State::Prefix { at } = self.state {
                if at == 0 && self.fence_byte(byte) {
                    continue;
                }
                let between_tokens = matches!(at, 0 | 1) || at >= self.prefix.len() - 1;
                if between_tokens && byte.is_ascii_whitespace() {
                    continue;
                }
                if at == self.prefix.len() {
                    // The value's first byte: read below.
                    self.state = State::Value {
                        depth: 0,
                        in_string: false,
                        escaped: false,
                    };
                } else if byte == self.prefix[at] {
                    self.state = State::Prefix { at: at + 1 };
                    continue;
                } else if at == 0 {
                    // Not an object at all: the model answered with the value itself.
                    self.state = State::Bare;
                    let raw = std::mem::take(&mut self.raw);
                    self.shown.push_str(&raw);
                    return raw;
                } else {
                    self.state = State::Held;
                    return String::new();
                }
            }
            if !matches!(self.state, State::Value { .. }) {
                break;
            }
            let begin = *start.get_or_insert(i);
            if !self.value_byte(byte) {
                // The value ended before this byte.
                self.shown.push_str(&delta[begin..i]);
                start = None;
                break;
            }
            if self.state == State::After {
                self.shown.push_str(&delta[begin..=i]);
                start = None;
                break;
            }
        }
        if let Some(start) = start {
            self.shown.push_str(&delta[start..]);
        }
        if !matches!(self.state, State::Prefix { .. } | State::Held) {
            // The raw text is needed only until the value is found.
            self.raw = String::new();
        }
        self.shown[before..].to_owned()
    }

    /// Takes one byte of the value: `false` when the value ended before it (the byte is not
    /// the value's). The state is [`State::After`] once the value ended, before or with it.
    fn value_byte(&mut self, byte: u8) -> bool {
        let State::Value {
            mut depth,
            mut in_string,
            mut escaped,
        } = self.state
        else {
            return false;
        };
        let mut ends_here = false;
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
                ends_here = depth == 0;
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' | b',' if depth == 0 => {
                    self.state = State::After;
                    return false;
                }
                byte if byte.is_ascii_whitespace() && depth == 0 => {
                    self.state = State::After;
                    return false;
                }
                b'}' | b']' => {
                    depth -= 1;
                    ends_here = depth == 0;
                }
                _ => {}
            }
        }
        self.state = if ends_here {
            State::After
        } else {
            State::Value {
                depth,
                in_string,
                escaped,
            }
        };
        true
    }

    /// The answer is over: the text still to hand on, if any. An answer that never got past
    /// the wrapper's opening, or opened differently, is read whole now: the value of its
    /// `response` when it is such an object, else the model's text as it is (validation then
    /// says what is wrong with it).
    pub(crate) fn finish(&mut self) -> String {
        if !matches!(self.state, State::Prefix { .. } | State::Held) {
            return String::new();
        }
        self.state = State::After;
        let raw = std::mem::take(&mut self.raw);
        let text = match parse_output(&raw) {
            Ok(Value::Object(mut object)) if object.len() == 1 => {
                match object.remove(WRAPPED_ANSWER_KEY) {
                    Some(value) => value.to_string(),
                    None => raw,
                }
            }
            _ => raw,
        };
        self.shown.push_str(&text);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `size` bytes (at char boundaries) and returns what was
    /// handed on, piece by piece joined, and the finished text.
    fn unwrap_in(text: &str, size: usize) -> String {
        let mut unwrap = Unwrap::new();
        let mut out = String::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = size.min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            out.push_str(&unwrap.push(&rest[..cut]));
            rest = &rest[cut..];
        }
        out.push_str(&unwrap.finish());
        assert_eq!(out, unwrap.shown());
        out
    }

    #[test]
    fn the_value_of_the_wrapper_is_handed_on_whatever_the_pieces() {
        let cases = [
            (r#"{"response": ["a", "b"]}"#, r#"["a", "b"]"#),
            (
                r#"{ "response" : [1, [2, {"x": "]}"}]] }"#,
                r#"[1, [2, {"x": "]}"}]]"#,
            ),
            (
                r#"{"response":"a \"quoted\" word, ok"}"#,
                r#""a \"quoted\" word, ok""#,
            ),
            (r#"{"response": 42}"#, "42"),
            (r#"{"response":true }"#, "true"),
            (r#"{"response": null, "extra": 1}"#, "null"),
            ("{\n  \"response\": {\"é\": \"ü\"}\n}", r#"{"é": "ü"}"#),
            // Not wrapped: the model answered with the value itself.
            (r#"["a"]"#, r#"["a"]"#),
            ("  42", "  42"),
            // Another object: read whole at the end.
            (
                r#"{"other": 1, "response": [3]}"#,
                r#"{"other": 1, "response": [3]}"#,
            ),
            (r#"{"city": "Paris"}"#, r#"{"city": "Paris"}"#),
            // Cut off before the value: the model's text, for the report.
            (r#"{"resp"#, r#"{"resp"#),
            // Fenced: the fence goes with the wrapper.
            ("```json\n{\"response\": [1]}\n```", "[1]"),
            ("```{\"response\": \"a\"}```", r#""a""#),
            // A fenced value itself is handed on as it is (`parse_output` reads fences).
            ("```json\n[1]\n```", "```json\n[1]\n```"),
        ];
        for (text, want) in cases {
            for size in [1, 2, 3, 7, 100] {
                assert_eq!(unwrap_in(text, size), want, "{text:?} in pieces of {size}");
            }
        }
    }

    #[test]
    fn an_answer_that_ends_inside_the_value_is_cut() {
        for (text, cut) in [
            (r#"{"response": 12"#, true),
            (r#"{"response": [1, 2"#, true),
            (r#"{"response": "ab"#, true),
            (r#"{"response": 12}"#, false),
            (r#"{"response": 12 "#, false),
            ("12", false),
        ] {
            let mut unwrap = Unwrap::new();
            unwrap.push(text);
            unwrap.finish();
            assert_eq!(unwrap.cut(), cut, "{text}");
        }
    }

    #[test]
    fn a_wrapper_read_whole_at_the_end_gives_its_value() {
        let mut unwrap = Unwrap::new();
        // The key spelled with an escape does not match the opening: held back, then read.
        assert_eq!(unwrap.push(r#"{"\u0072esponse": [1]}"#), "");
        assert_eq!(unwrap.finish(), "[1]");
    }
}
