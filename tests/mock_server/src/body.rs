//! Body pieces: bytes given in the script, or bytes generated while they are written, so that a
//! scripted gigabyte never exists in the server's memory.

use serde_json::{Map, Value};

/// Size of one generated write.
const BLOCK: usize = 64 * 1024;

/// One piece of a response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Bytes written as they are.
    Bytes(Vec<u8>),
    /// `len` bytes of a pattern repeated (the last copy cut short), written block by block.
    Repeat {
        /// Whole copies of the pattern (about 64 KiB; never empty), so every block starts in
        /// phase.
        block: Vec<u8>,
        /// Total bytes.
        len: usize,
    },
}

impl Piece {
    /// Number of bytes the piece writes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Piece::Bytes(bytes) => bytes.len(),
            Piece::Repeat { len, .. } => *len,
        }
    }

    /// Whether the piece writes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the piece is generated (and so cannot be re-cut by `split`).
    pub(crate) fn is_generated(&self) -> bool {
        matches!(self, Piece::Repeat { .. })
    }

    /// The consecutive blocks the piece is written as (none of them empty).
    pub(crate) fn blocks(&self) -> impl Iterator<Item = &[u8]> {
        let (block, len): (&[u8], usize) = match self {
            Piece::Bytes(bytes) => (bytes, bytes.len()),
            Piece::Repeat { block, len } => (block, *len),
        };
        let step = block.len().max(1);
        (0..len)
            .step_by(step)
            .map(move |start| &block[..step.min(len - start)])
    }
}

/// Parses one element of an `sse` array: a string (sent verbatim) or a generated piece,
/// `{"repeat": "<text>", "bytes": N}` or `{"hex": "<hex digits>"}`.
pub(crate) fn parse_piece(item: &Value) -> Result<Piece, String> {
    match item {
        Value::String(text) => Ok(Piece::Bytes(text.as_bytes().to_vec())),
        Value::Object(obj) => parse_object(obj),
        other => Err(format!(
            "`sse` array elements must be strings or piece objects, got {other}"
        )),
    }
}

fn parse_object(obj: &Map<String, Value>) -> Result<Piece, String> {
    let keys: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !k.starts_with('_'))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    match sorted.as_slice() {
        ["bytes", "repeat"] => {
            let pattern = match &obj["repeat"] {
                Value::String(s) if !s.is_empty() => s.as_bytes().to_vec(),
                other => return Err(format!("`repeat` must be a non-empty string, got {other}")),
            };
            let len = obj["bytes"]
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    format!(
                        "`bytes` must be a non-negative integer, got {}",
                        obj["bytes"]
                    )
                })?;
            let copies = (BLOCK / pattern.len()).max(1);
            Ok(Piece::Repeat {
                block: pattern.repeat(copies),
                len,
            })
        }
        ["hex"] => match &obj["hex"] {
            Value::String(s) => decode_hex(s).map(Piece::Bytes),
            other => Err(format!("`hex` must be a string, got {other}")),
        },
        _ => Err(format!(
            "a piece object is {{\"repeat\", \"bytes\"}} or {{\"hex\"}}, got keys {keys:?}"
        )),
    }
}

/// Hex digits (ASCII whitespace ignored) to bytes.
fn decode_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .map(|b| match b {
            b'0'..=b'9' => Ok(b - b'0'),
            b'a'..=b'f' => Ok(b - b'a' + 10),
            b'A'..=b'F' => Ok(b - b'A' + 10),
            other => Err(format!("`hex` has a non-hex character {:?}", other as char)),
        })
        .collect::<Result<_, _>>()?;
    if !digits.len().is_multiple_of(2) {
        return Err("`hex` needs an even number of digits".into());
    }
    Ok(digits
        .chunks(2)
        .map(|pair| pair[0] << 4 | pair[1])
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pieces_parse() {
        assert_eq!(
            parse_piece(&json!("ab")).unwrap(),
            Piece::Bytes(b"ab".to_vec())
        );
        assert_eq!(
            parse_piece(&json!({"hex": "1f 8B00"})).unwrap(),
            Piece::Bytes(vec![0x1f, 0x8b, 0])
        );
        assert_eq!(
            parse_piece(&json!({"repeat": "xy", "bytes": 5}))
                .unwrap()
                .len(),
            5
        );
        for bad in [
            json!({"hex": "abc"}),
            json!({"hex": "zz"}),
            json!({"repeat": "", "bytes": 1}),
            json!({"repeat": "x"}),
            json!({"repeat": "x", "bytes": -1}),
            json!({"hex": "00", "repeat": "x"}),
            json!(1),
        ] {
            assert!(parse_piece(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn repeat_is_generated_in_phase() {
        let piece = parse_piece(&json!({"repeat": "abc", "bytes": BLOCK * 2 + 7})).unwrap();
        let blocks: Vec<&[u8]> = piece.blocks().collect();
        assert!(blocks.len() >= 3);
        assert!(blocks.iter().all(|b| !b.is_empty() && b.len() <= BLOCK));
        let out = blocks.concat();
        assert_eq!(out.len(), BLOCK * 2 + 7);
        assert!(out.chunks(3).all(|c| b"abc".starts_with(c)));
        assert_eq!(Piece::Bytes(Vec::new()).blocks().count(), 0);
    }
}
