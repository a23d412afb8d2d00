//! A `chat.completion.chunk` as the stream reads it: the typed view, and the cursor reading of
//! it that a frame takes first (see [`json_cursor`](crate::ai::providers::json_cursor)).

use serde::Deserialize;
use serde_json::Value;

use super::request::REASONING_FIELDS;
use crate::ai::providers::json_cursor::{Cursor, Seen};
use crate::ai::providers::lenient::{Array, First, Object, Str, U64};

/// The parts of a `chat.completion.chunk` the stream reads, borrowed from the SSE data (see
/// [`lenient`](crate::ai::providers::lenient): a field of another type reads as absent). The
/// rare whole-JSON fields are boxed: every chunk moves these structs around while parsing, and
/// a `Value` inline would make each move several hundred bytes.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(default, borrow)]
    pub(super) id: Str<'a>,
    #[serde(default, borrow)]
    pub(super) model: Str<'a>,
    /// The stream reads the first choice only, as pi does (`choices[0]`).
    #[serde(default, borrow)]
    pub(super) choices: First<Object<Choice<'a>>>,
    #[serde(default)]
    pub(super) usage: Option<Box<Value>>,
    #[serde(default)]
    pub(super) error: Option<Box<Value>>,
    /// `"error"` on an error sent as the chunk itself (older vLLM:
    /// `{"object": "error", "message": ..., "type": ..., "code": 400}`).
    #[serde(default, borrow)]
    pub(super) object: Str<'a>,
    #[serde(default, borrow)]
    pub(super) message: Str<'a>,
    /// Groq puts the usage of a stream in `x_groq.usage` on the last chunk.
    #[serde(default)]
    pub(super) x_groq: Option<Box<Value>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default, borrow)]
    pub(super) finish_reason: Str<'a>,
    #[serde(default, borrow)]
    pub(super) delta: Object<Delta<'a>>,
    #[serde(default)]
    pub(super) usage: Option<Box<Value>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    pub(super) content: Str<'a>,
    #[serde(default, borrow)]
    pub(super) reasoning_content: Str<'a>,
    #[serde(default, borrow)]
    pub(super) reasoning: Str<'a>,
    #[serde(default, borrow)]
    pub(super) reasoning_text: Str<'a>,
    #[serde(default, borrow)]
    pub(super) tool_calls: Array<Object<ToolCallDelta<'a>>>,
    #[serde(default)]
    pub(super) reasoning_details: Option<Box<Value>>,
}

impl Delta<'_> {
    /// The reasoning text and the field it came in, in [`REASONING_FIELDS`] order.
    pub(super) fn reasoning(&self) -> Option<(&'static str, &str)> {
        let fields = [
            &self.reasoning_content,
            &self.reasoning,
            &self.reasoning_text,
        ];
        REASONING_FIELDS
            .into_iter()
            .zip(fields)
            .find_map(|(name, field)| field.get().filter(|t| !t.is_empty()).map(|t| (name, t)))
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ToolCallDelta<'a> {
    #[serde(default)]
    pub(super) index: U64,
    #[serde(default, borrow)]
    pub(super) id: Str<'a>,
    #[serde(default, borrow)]
    pub(super) function: Object<FunctionDelta<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    pub(super) name: Str<'a>,
    #[serde(default, borrow)]
    pub(super) arguments: Str<'a>,
}

/// Reads `data` as a chunk with the [`Cursor`]: `None` when the cursor leaves the text to
/// serde (a field holding a whole JSON value that is not `null`, an unknown field holding an
/// object or array, an escaped key, a duplicated field, a top-level value that is not an
/// object, or anything malformed). When it gives a chunk, serde's reading of `data` gives the
/// same one.
pub(super) fn read(data: &str) -> Option<Chunk<'_>> {
    let mut cursor = Cursor::new(data);
    let mut chunk = Chunk::default();
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            "id" => chunk.id = seen.once(0, cursor.lenient_str())?,
            "model" => chunk.model = seen.once(1, cursor.lenient_str())?,
            "choices" => chunk.choices = seen.once(2, cursor.lenient_first(choice))?,
            "object" => chunk.object = seen.once(3, cursor.lenient_str())?,
            "message" => chunk.message = seen.once(4, cursor.lenient_str())?,
            "usage" => seen.once(5, cursor.null())?,
            "error" => seen.once(6, cursor.null())?,
            "x_groq" => seen.once(7, cursor.null())?,
            _ => cursor.skip_scalar()?,
        }
        Some(())
    })?;
    cursor.at_end().then_some(chunk)
}

fn choice<'a>(cursor: &mut Cursor<'a>) -> Option<Choice<'a>> {
    let mut choice = Choice::default();
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            "finish_reason" => choice.finish_reason = seen.once(0, cursor.lenient_str())?,
            "delta" => choice.delta = seen.once(1, cursor.lenient_object(delta))?,
            "usage" => seen.once(2, cursor.null())?,
            _ => cursor.skip_scalar()?,
        }
        Some(())
    })?;
    Some(choice)
}

fn delta<'a>(cursor: &mut Cursor<'a>) -> Option<Delta<'a>> {
    let mut delta = Delta::default();
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            "content" => delta.content = seen.once(0, cursor.lenient_str())?,
            "reasoning_content" => delta.reasoning_content = seen.once(1, cursor.lenient_str())?,
            "reasoning" => delta.reasoning = seen.once(2, cursor.lenient_str())?,
            "reasoning_text" => delta.reasoning_text = seen.once(3, cursor.lenient_str())?,
            "tool_calls" => delta.tool_calls = seen.once(4, cursor.lenient_objects(tool_call))?,
            "reasoning_details" => seen.once(5, cursor.null())?,
            _ => cursor.skip_scalar()?,
        }
        Some(())
    })?;
    Some(delta)
}

fn tool_call<'a>(cursor: &mut Cursor<'a>) -> Option<ToolCallDelta<'a>> {
    let mut call = ToolCallDelta::default();
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            "index" => call.index = seen.once(0, cursor.lenient_u64())?,
            "id" => call.id = seen.once(1, cursor.lenient_str())?,
            "function" => call.function = seen.once(2, cursor.lenient_object(function))?,
            _ => cursor.skip_scalar()?,
        }
        Some(())
    })?;
    Some(call)
}

fn function<'a>(cursor: &mut Cursor<'a>) -> Option<FunctionDelta<'a>> {
    let mut function = FunctionDelta::default();
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            "name" => function.name = seen.once(0, cursor.lenient_str())?,
            "arguments" => function.arguments = seen.once(1, cursor.lenient_str())?,
            _ => cursor.skip_scalar()?,
        }
        Some(())
    })?;
    Some(function)
}

/// Checks that a chunk the cursor reads from `data` is the chunk serde reads (panics if not);
/// says how deep the cursor's chunk went: 0, left to serde; 1, read; 2, down to a tool call's
/// function. The unit tests and the fuzz target `openai_completions_chunk` call it.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn check_against_serde(data: &str) -> usize {
    let Some(chunk) = read(data) else {
        return 0;
    };
    let deep = chunk.choices.0.iter().any(|choice| {
        choice.0.as_ref().is_some_and(|choice| {
            choice.delta.0.as_ref().is_some_and(|delta| {
                delta.tool_calls.items().iter().any(|call| {
                    call.0
                        .as_ref()
                        .is_some_and(|call| call.function.0.is_some())
                })
            })
        })
    });
    let by_serde = serde_json::from_str::<Object<Chunk<'_>>>(data)
        .ok()
        .and_then(|chunk| chunk.0)
        .map(|chunk| format!("{chunk:?}"));
    assert_eq!(
        Some(format!("{chunk:?}")),
        by_serde,
        "the cursor and serde disagree on {data:?}"
    );
    1 + usize::from(deep)
}

#[cfg(test)]
mod tests {
    use super::check_against_serde as check;
    use super::*;

    #[test]
    fn servers_chunks_are_read_by_the_cursor() {
        for data in [
            // OpenAI (with its `obfuscation` padding), the first and a later chunk.
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"ab"}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" line\nwith \"quotes\" \u00e9 \ud83d\ude00"},"logprobs":null,"finish_reason":null}]}"#,
            // A tool call's first delta and an arguments delta.
            r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]}"#,
            // llama.cpp (reasoning_content, a timings-less chunk), vLLM's finish.
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"reasoning_content":"Let me think"}}],"created":1,"id":"chatcmpl-x","model":"smollm2","system_fingerprint":"b1-x","object":"chat.completion.chunk"}"#,
            r#"{"id":"cmpl-1","object":"chat.completion.chunk","created":2,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}"#,
            // Whitespace between tokens, an empty object.
            " { \"id\" : \"a\" ,\n\t\"choices\" : [ ] } ",
            "{}",
        ] {
            assert!(check(data) > 0, "the cursor left to serde: {data}");
        }
    }

    #[test]
    fn the_first_choice_is_read_and_the_others_skipped() {
        let data = r#"{"choices":[{"finish_reason":"stop"},{"finish_reason":"length"},7]}"#;
        assert_eq!(check(data), 1);
        let chunk = read(data).expect("read by the cursor");
        let first = chunk
            .choices
            .0
            .and_then(|choice| choice.0)
            .expect("a choice");
        assert_eq!(first.finish_reason.get(), Some("stop"));
        // What the cursor leaves to serde in a later choice still leaves the chunk to serde.
        assert!(read(r#"{"choices":[{},{"logprobs":{"content":[]}}]}"#).is_none());
    }

    #[test]
    fn what_the_cursor_does_not_read_is_left_to_serde() {
        for data in [
            r#"{"id":"c","usage":{"prompt_tokens":1}}"#,
            r#"{"choices":[{"delta":{},"logprobs":{"content":[]}}]}"#,
            r#"{"id":"a","id":"b"}"#,
            r#"{"\u0069d":"a"}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}"#,
            "{\"id\":\"a\u{1}\"}",
            r#"{"id":"a"} x"#,
            r#"["not an object"]"#,
            r#"{"id":"a","#,
            // Found by the fuzzer: serde refuses a number it cannot hold where it reads a value.
            "{  \"choices\":[ 77777777777777777.77777776e77777777777777]\r}",
        ] {
            assert!(read(data).is_none(), "{data}");
        }
    }

    /// A small deterministic generator (xorshift): chunks of every shape the fields allow,
    /// right and wrong types, escapes good and bad, duplicated and unknown keys, whitespace,
    /// then cut or mutated.
    struct Gen(crate::test_rng::XorShift);

    impl Gen {
        fn below(&mut self, n: usize) -> usize {
            self.0.below(n)
        }
        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            self.0.pick(items)
        }
        fn ws(&mut self) -> &'static str {
            self.pick(&["", "", "", " ", "\n", "\t ", "\r\n"])
        }
        /// A scalar; one in twenty is one serde refuses (a bad escape, a raw control character,
        /// a malformed number or literal).
        fn scalar(&mut self) -> String {
            if self.below(20) == 0 {
                return self
                    .pick(&[
                        "\"\\ud800\"",
                        "\"\\x\"",
                        "\"a\u{1}\"",
                        "01",
                        "1.",
                        "-",
                        "nul",
                        "\"open",
                    ])
                    .to_owned();
            }
            let pieces = [
                "plain",
                "é",
                "😀",
                "\\n",
                "\\\"",
                "\\\\",
                "\\/",
                "\\u00e9",
                "\\ud83d\\ude00",
                "\u{7f}",
                " ",
            ];
            match self.below(4) {
                0 | 1 => {
                    let mut text = String::from("\"");
                    for _ in 0..self.below(4) {
                        text.push_str(self.pick(&pieces));
                    }
                    text + "\""
                }
                2 => self
                    .pick(&[
                        "0",
                        "7",
                        "-0",
                        "-1",
                        "1.5",
                        "1e3",
                        "2E-2",
                        "18446744073709551615",
                        "18446744073709551616",
                        "1e999",
                        "-1.5e-999",
                    ])
                    .to_owned(),
                _ => self.pick(&["true", "false", "null"]).to_owned(),
            }
        }
        fn value(&mut self, depth: usize, keys: &[&str]) -> String {
            match self.below(10) {
                0 if depth < 3 => {
                    let mut items = Vec::new();
                    for _ in 0..self.below(3) {
                        items.push(self.value(depth + 1, keys));
                    }
                    format!("[{}]", items.join(","))
                }
                1 | 2 if depth < 3 => self.object(depth + 1, keys),
                _ => self.scalar(),
            }
        }
        /// A member `"key": value` with whitespace around.
        fn member(&mut self, key: &str, value: String) -> String {
            let (a, b, c, d) = (self.ws(), self.ws(), self.ws(), self.ws());
            format!("{a}\"{key}\"{b}:{c}{value}{d}")
        }
        /// An object of the chunk's own nesting, `levels` deep from here, its other members
        /// scalars (mostly) or anything.
        fn shaped(&mut self, levels: &[(&str, &[&str])], keys: &[&str]) -> String {
            let Some(((nested, scalars), inner)) = levels.split_first() else {
                return self.value(2, keys);
            };
            let mut members = Vec::new();
            for _ in 0..self.below(4) {
                let member = if self.below(6) == 0 {
                    let (key, value) = (self.pick(keys), self.value(2, keys));
                    self.member(key, value)
                } else {
                    let (key, value) = (self.pick(scalars), self.scalar());
                    self.member(key, value)
                };
                members.push(member);
            }
            if !nested.is_empty() {
                let value = if nested.ends_with('s') {
                    let mut items = Vec::new();
                    for _ in 0..1 + self.below(2) {
                        items.push(self.shaped(inner, keys));
                    }
                    format!("[{}]", items.join(","))
                } else {
                    self.shaped(inner, keys)
                };
                let member = self.member(nested, value);
                members.insert(self.below(members.len() + 1), member);
            }
            format!("{{{}}}", members.join(","))
        }
        fn object(&mut self, depth: usize, keys: &[&str]) -> String {
            let mut members = Vec::new();
            for _ in 0..self.below(5) {
                let key = match self.below(8) {
                    0 => "\\u0069d",
                    1 => "logprobs",
                    _ => self.pick(keys),
                };
                let (a, b, c, d) = (self.ws(), self.ws(), self.ws(), self.ws());
                members.push(format!("{a}\"{key}\"{b}:{c}{}{d}", self.value(depth, keys)));
            }
            format!("{{{}}}", members.join(","))
        }
    }

    #[test]
    fn the_cursor_reads_what_serde_reads_on_generated_chunks() {
        let keys = [
            "id",
            "model",
            "choices",
            "object",
            "message",
            "usage",
            "error",
            "x_groq",
            "delta",
            "finish_reason",
            "content",
            "reasoning_content",
            "reasoning",
            "reasoning_text",
            "tool_calls",
            "reasoning_details",
            "index",
            "function",
            "name",
            "arguments",
            "type",
        ];
        let mut generator = Gen(crate::test_rng::XorShift(0x9e37_79b9_7f4a_7c15));
        let (mut read_by_cursor, mut with_function, mut cases) = (0, 0, 0);
        for _ in 0..40_000 {
            let levels: [(&str, &[&str]); 5] = [
                (
                    "choices",
                    &["id", "model", "object", "message", "usage", "created"],
                ),
                ("delta", &["finish_reason", "usage", "index", "logprobs"]),
                (
                    "tool_calls",
                    &["content", "reasoning_content", "reasoning", "role"],
                ),
                ("function", &["index", "id", "type"]),
                ("", &["name", "arguments"]),
            ];
            let mut data = if generator.below(2) == 0 {
                generator.object(0, &keys)
            } else {
                generator.shaped(&levels, &keys)
            };
            match generator.below(6) {
                0 => {
                    let cut = generator.below(data.len() + 1);
                    let cut = (0..=cut).rev().find(|at| data.is_char_boundary(*at));
                    data.truncate(cut.unwrap_or(0));
                }
                1 => {
                    let at = generator.below(data.len() + 1);
                    if data.is_char_boundary(at) {
                        data.insert_str(at, generator.pick(&[",", "}", "\"", "]", " "]));
                    }
                }
                _ => {}
            }
            cases += 1;
            match check(&data) {
                0 => {}
                1 => read_by_cursor += 1,
                _ => (read_by_cursor, with_function) = (read_by_cursor + 1, with_function + 1),
            }
        }
        // Many generated chunks are nested where the cursor stops, or wrong; still, a good
        // share must be the cursor's, some of them down to a tool call's function, or this
        // test compares nothing.
        assert!(
            read_by_cursor * 10 > cases && with_function * 100 > cases,
            "{read_by_cursor} read, {with_function} with a function, of {cases}"
        );
    }
}
