//! A strict, bail-out reader for the small JSON objects a stream sends once per frame.
//!
//! serde's derived reading of a chunk goes through its generic machinery (a visitor per value,
//! `deserialize_any` for every [`lenient`](super::lenient) field, a field-name match per key):
//! about 4,000 instructions and 180 cache lines of code for a 150-byte Chat Completions chunk,
//! nearly half of what a frame costs. This cursor reads the few shapes a provider knows with a
//! handful of small loops: 1,200 to 1,500 instructions less per frame (`benches/overhead/ROUNDS.md`,
//! issue 23's thirteenth round).
//!
//! It is an addition, never a replacement: every reading method returns `None` ("bail") for
//! anything it does not handle exactly as serde_json and the [`lenient`](super::lenient)
//! wrappers would (a nested value where a scalar was expected, an escaped key, a number that
//! is not a plain integer, malformed input), and the caller then reads the text the serde way.
//! So a value this cursor returns is always the value serde's reading gives (tested against it
//! on generated chunks, and fuzzed: `fuzz/fuzz_targets/openai_completions_chunk.rs`).

use std::borrow::Cow;

use super::lenient::{Array, First, Object, Str, U64};

/// A position in one JSON text.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    /// The next byte after JSON whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// Consumes `byte` if it comes next (after whitespace).
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        if next {
            self.at += 1;
        }
        next
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// A string at the cursor (its opening quote next): borrowed when it has no escapes.
    /// `None` for a raw control character or an escape serde_json refuses.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.text.as_bytes();
        let open = self.at;
        let mut at = open + 1;
        let mut escaped = false;
        loop {
            at = find_special(bytes, at)?;
            match bytes[at] {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    // The escaped byte is never the end; `\u` digits are plain bytes.
                    at += 2;
                }
                _ => return None,
            }
        }
        self.at = at + 1;
        if escaped {
            // A newline in the text, a quote in tool arguments: serde_json unescapes and
            // validates (surrogate pairs included) exactly as its own reading of the chunk would,
            // into an owned string as that reading did.
            serde_json::from_str::<String>(&self.text[open..=at])
                .ok()
                .map(Cow::Owned)
        } else {
            // Both ends are ASCII quotes, so both are character boundaries.
            Some(Cow::Borrowed(&self.text[open + 1..at]))
        }
    }

    /// An object's key and its colon; `None` for an escaped key (serde would match it after
    /// unescaping: left to serde).
    fn key(&mut self) -> Option<&'a str> {
        if self.peek()? != b'"' {
            return None;
        }
        match self.string()? {
            Cow::Borrowed(key) if self.eat(b':') => Some(key),
            _ => None,
        }
    }

    /// An integer's text (`-? (0 | [1-9][0-9]*)`, at most 20 digits). A fraction, an exponent
    /// or a longer integer is left to serde, which refuses those it cannot hold in an `f64`
    /// where it reads a value (and not where it skips one).
    fn integer(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let first = start + usize::from(bytes.get(start) == Some(&b'-'));
        let mut at = first;
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        let digits = at - first;
        if digits == 0
            || digits > 20
            || (digits > 1 && bytes[first] == b'0')
            || matches!(bytes.get(at), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        self.at = at;
        Some(&self.text[start..at])
    }

    /// `true`, `false` or `null`.
    fn literal(&mut self) -> Option<()> {
        let rest = &self.text.as_bytes()[self.at..];
        let length = [&b"true"[..], b"false", b"null"]
            .into_iter()
            .find(|word| rest.starts_with(word))?
            .len();
        self.at += length;
        Some(())
    }

    /// Skips a scalar (string, number, literal); `None` for an object or array (nested values
    /// are left to serde) or malformed input.
    pub(crate) fn skip_scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.integer().map(drop),
            _ => self.literal(),
        }
    }

    /// `null`, the only value read for a field serde would keep as a whole JSON value (usage,
    /// an error): anything else is left to serde.
    pub(crate) fn null(&mut self) -> Option<()> {
        self.peek()?;
        if self.text.as_bytes()[self.at..].starts_with(b"null") {
            self.at += 4;
            return Some(());
        }
        None
    }

    /// An object's members: `member` reads each value after its key (and returns `None` to
    /// bail). No trailing comma, as JSON.
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let key = self.key()?;
            member(self, key)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(());
        }
    }

    /// An array's elements: `element` reads each one.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(());
        }
        loop {
            element(self)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b']').then_some(());
        }
    }

    /// A [`Str`] field: a string, or absent for another scalar.
    pub(crate) fn lenient_str(&mut self) -> Option<Str<'a>> {
        match self.peek()? {
            b'"' => self.string().map(|text| Str(Some(text))),
            b'{' | b'[' => None,
            _ => self.skip_scalar().map(|()| Str(None)),
        }
    }

    /// A [`U64`] field: digits that fit a `u64`, or absent for a string or literal. A sign,
    /// fraction, exponent or overflow is left to serde (which reads some of them as a number).
    pub(crate) fn lenient_u64(&mut self) -> Option<U64> {
        match self.peek()? {
            b'0'..=b'9' => {
                // Starting at a digit, the integer has no sign: only digits.
                self.integer()?.parse().ok().map(|n| U64(Some(n)))
            }
            b'"' | b't' | b'f' | b'n' => self.skip_scalar().map(|()| U64(None)),
            _ => None,
        }
    }

    /// An [`Object`] field read by `read` (at the object's `{`), or absent for a scalar.
    pub(crate) fn lenient_object<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Object<T>> {
        match self.peek()? {
            b'{' => read(self).map(|value| Object(Some(value))),
            b'[' => None,
            _ => self.skip_scalar().map(|()| Object(None)),
        }
    }

    /// The [`First`] [`Object`] of an array, read by `read` (at its `{`; the others are read
    /// too, and dropped: what the cursor would refuse in them is left to serde), or absent for
    /// an empty array or a scalar.
    pub(crate) fn lenient_first<T>(
        &mut self,
        read: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<First<Object<T>>> {
        let mut first = None;
        self.lenient_each(read, |item| {
            first.get_or_insert(item);
        })?;
        Some(First(first))
    }

    /// An [`Array`] of [`Object`]s, each read by `read` (at its `{`), or absent for a scalar.
    pub(crate) fn lenient_objects<T>(
        &mut self,
        read: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Array<Object<T>>> {
        let mut items = Vec::with_capacity(1);
        let array = self.lenient_each(read, |item| items.push(item))?;
        Some(Array(array.then_some(items)))
    }

    /// Hands each [`Object`] of an array (read by `read`, at its `{`) to `each`; says whether
    /// the value was an array (`false`: a scalar, read as absent).
    fn lenient_each<T>(
        &mut self,
        mut read: impl FnMut(&mut Self) -> Option<T>,
        mut each: impl FnMut(Object<T>),
    ) -> Option<bool> {
        match self.peek()? {
            b'[' => self
                .array(|cursor| cursor.lenient_object(&mut read).map(&mut each))
                .map(|()| true),
            b'{' => None,
            _ => self.skip_scalar().map(|()| false),
        }
    }
}

/// The first byte at or after `from` that ends a string's plain run: a quote, a backslash or a
/// control character (which JSON does not allow raw). Eight bytes at a time: a string's bytes
/// are most of a chunk, and a byte-at-a-time loop cost more than serde's whole string reading.
fn find_special(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    /// The high bit of every byte of `word` that is `"`, `\\` or below 0x20. The lowest one is
    /// exact (a borrow only reaches bytes above a match), which is all the caller reads.
    fn special(word: u64) -> u64 {
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word))
            & HIGH
    }
    let mut at = from;
    while at < bytes.len() {
        let left = bytes.len() - at;
        let word = match bytes.get(at..at + 8) {
            Some(eight) => u64::from_le_bytes(eight.try_into().ok()?),
            None => {
                // The last few bytes, padded with zeros: a zero reads as a control character,
                // found only past the end.
                let mut padded = [0; 8];
                padded[..left].copy_from_slice(&bytes[at..]);
                u64::from_le_bytes(padded)
            }
        };
        let found = special(word);
        if found != 0 {
            let offset = (found.trailing_zeros() / 8) as usize;
            return (offset < left).then_some(at + offset);
        }
        at += 8;
    }
    None
}

/// The known keys of one object already read: serde's derived reading refuses a duplicated
/// field, so a second one is left to serde.
#[derive(Default)]
pub(crate) struct Seen(u32);

impl Seen {
    /// Marks key number `bit` and passes its `value` on; `None` if the key was seen before
    /// (or `value` is `None`).
    pub(crate) fn once<T>(&mut self, bit: u32, value: Option<T>) -> Option<T> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(text: &str) -> Option<(usize, bool)> {
        let mut cursor = Cursor::new(text);
        cursor.skip_scalar()?;
        Some((cursor.at, cursor.at_end()))
    }

    #[test]
    fn scalars_as_serde_reads_them_integers_only() {
        for ok in [
            "0",
            "-0",
            "12",
            "-7",
            "18446744073709551616",
            "true",
            "false",
            "null",
            r#""""#,
            r#""a\"b""#,
            r#""\ud83d\ude00""#,
        ] {
            assert_eq!(scalar(ok), Some((ok.len(), true)), "{ok}");
        }
        for bad in [
            "",
            "-",
            "+1",
            ".5",
            "01",
            "1.5",
            "1e5",
            "123456789012345678901",
            "nul",
            "tru",
            r#""a"#,
            "\"a\u{1}\"",
            r#""\x""#,
            r#""\ud800""#,
            "{}",
            "[]",
        ] {
            assert_eq!(scalar(bad), None, "{bad}");
        }
    }

    #[test]
    fn special_bytes_are_found_at_every_offset() {
        for length in 0..20 {
            for at in 0..length {
                for special in [b'"', b'\\', 0, 0x1f] {
                    let mut bytes = vec![b'a'; length];
                    bytes[at] = special;
                    // Bytes that look like matches to a careless bit trick after the match.
                    if at + 1 < length {
                        bytes[at + 1] = 0x21;
                    }
                    for from in 0..=at {
                        assert_eq!(
                            find_special(&bytes, from),
                            Some(at),
                            "{bytes:?} from {from}"
                        );
                    }
                    assert_eq!(find_special(&bytes, at + 1), None, "{bytes:?}");
                }
            }
            let plain: Vec<u8> = (0x20..=0xff).cycle().take(length).collect();
            let plain: Vec<u8> = plain
                .into_iter()
                .filter(|b| !matches!(b, b'"' | b'\\'))
                .collect();
            assert_eq!(find_special(&plain, 0), None, "{plain:?}");
        }
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let mut cursor = Cursor::new(r#""plain" "a\nb""#);
        assert!(matches!(
            cursor.lenient_str(),
            Some(Str(Some(Cow::Borrowed("plain"))))
        ));
        assert!(
            matches!(cursor.lenient_str(), Some(Str(Some(Cow::Owned(text)))) if text == "a\nb")
        );
        assert!(cursor.at_end());
    }

    #[test]
    fn nested_values_and_escaped_keys_are_left_to_serde() {
        assert!(Cursor::new("[1]").lenient_str().is_none());
        assert!(Cursor::new(r#"{"a":1}"#).lenient_str().is_none());
        assert!(
            Cursor::new(r#"{"\u0061":1}"#)
                .object(|c, _| c.skip_scalar())
                .is_none()
        );
        assert!(
            Cursor::new(r#"{"a":1,}"#)
                .object(|c, _| c.skip_scalar())
                .is_none()
        );
        assert!(
            Cursor::new(r#"{"a":1 "b":2}"#)
                .object(|c, _| c.skip_scalar())
                .is_none()
        );
        assert!(Cursor::new(r#"{"a":1}"#).null().is_none());
        assert!(Cursor::new("-1").lenient_u64().is_none());
        assert!(Cursor::new("1.0").lenient_u64().is_none());
        assert!(Cursor::new("18446744073709551616").lenient_u64().is_none());
        assert_eq!(Cursor::new(" 7").lenient_u64().map(|n| n.0), Some(Some(7)));
        assert_eq!(Cursor::new(r#""7""#).lenient_u64().map(|n| n.0), Some(None));
    }

    #[test]
    fn a_key_is_seen_once() {
        let mut seen = Seen::default();
        assert!(seen.once(3, Some(())).is_some());
        assert!(seen.once(4, Some(())).is_some());
        assert!(seen.once(3, Some(())).is_none());
    }
}
