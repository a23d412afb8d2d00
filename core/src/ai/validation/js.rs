//! The few JavaScript behaviours pi's validation report depends on: how numbers print
//! (`String(n)`, `JSON.stringify`), how strings become numbers (`Number(s)`), the order in which
//! an object's keys are visited, and `JSON.stringify(value, null, 2)` itself.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// A JSON number as JavaScript holds it (every number is a double after `JSON.parse`).
pub(crate) fn number_of(value: &serde_json::Number) -> f64 {
    value.as_f64().unwrap_or(f64::NAN)
}

/// `String(n)` / `Number.prototype.toString()`: the shortest digits that round-trip, in fixed
/// notation for exponents 1e-7 < |n| < 1e21 and `1.5e+21` style outside.
pub(crate) fn number_to_string(n: f64) -> String {
    if n.is_nan() {
        return "NaN".to_owned();
    }
    if n == 0.0 {
        return "0".to_owned();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let mut out = String::new();
    if n < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` prints the shortest round-trip digits too: "1.2345e-7".
    let scientific = format!("{:e}", n.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i64;
    let point = exponent.parse::<i64>().unwrap_or(0) + 1; // JS's n: digits × 10^(n−k)
    if k <= point && point <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (point - k) as usize));
    } else if 0 < point && point <= 21 {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    } else if -6 < point && point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = point - 1;
        let _ = write!(out, "e{}{}", if e >= 0 { '+' } else { '-' }, e.abs());
    }
    out
}

/// JavaScript's WhiteSpace and LineTerminator, which `String.prototype.trim` and `Number(s)`
/// strip (Rust's `char::is_whitespace` differs: it has U+0085 and lacks U+FEFF).
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// `Number(text)`: NaN when the text is not a JavaScript numeric literal. Accepts surrounding
/// whitespace, `Infinity`, decimal with optional sign and exponent, and unsigned `0x`/`0o`/`0b`.
pub(crate) fn string_to_number(text: &str) -> f64 {
    let text = text.trim_matches(is_js_whitespace);
    if text.is_empty() {
        return 0.0;
    }
    match text {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    let bytes = text.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' {
        let radix = match bytes[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            return radix_to_number(&text[2..], radix);
        }
    }
    if is_decimal_literal(bytes) {
        text.parse().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

fn radix_to_number(digits: &str, radix: u32) -> f64 {
    let mut exact: u128 = 0;
    let mut approximate = 0.0_f64;
    let mut overflowed = false;
    for c in digits.chars() {
        let Some(digit) = c.to_digit(radix) else {
            return f64::NAN;
        };
        if !overflowed {
            match exact
                .checked_mul(u128::from(radix))
                .and_then(|v| v.checked_add(u128::from(digit)))
            {
                Some(v) => exact = v,
                None => {
                    overflowed = true;
                    approximate = exact as f64;
                }
            }
        }
        if overflowed {
            approximate = approximate * f64::from(radix) + f64::from(digit);
        }
    }
    if overflowed {
        approximate
    } else {
        exact as f64
    }
}

/// `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`
fn is_decimal_literal(bytes: &[u8]) -> bool {
    let mut i = 0;
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_start = i;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - frac_start;
    }
    if digits == 0 {
        return false;
    }
    if i < bytes.len() && matches!(bytes[i], b'e' | b'E') {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == bytes.len()
}

/// Whether `key` is an array index ("0", "17", up to 2^32 − 2), which JavaScript objects list
/// before every other key, in numeric order.
fn array_index(key: &str) -> Option<u32> {
    let bytes = key.as_bytes();
    if bytes.is_empty() || bytes.len() > 10 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    key.parse::<u64>()
        .ok()
        .filter(|&n| n <= 4_294_967_294)
        .map(|n| n as u32)
}

/// The entries of `map` in JavaScript's own-property order: array indices ascending, then the
/// other keys in insertion order.
pub(crate) fn entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut all: Vec<(&String, &Value)> = map.iter().collect();
    if all.iter().any(|(key, _)| array_index(key).is_some()) {
        // Stable: non-index keys keep their relative order.
        all.sort_by_key(|(key, _)| array_index(key).map_or((1, 0), |n| (0, n)));
    }
    all
}

/// `JSON.stringify(value, null, 2)`.
pub(crate) fn stringify_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, 0);
    out
}

fn write_value(out: &mut String, value: &Value, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let n = number_of(n);
            if n.is_finite() {
                out.push_str(&number_to_string(n));
            } else {
                out.push_str("null");
            }
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                write_value(out, item, depth + 1);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (index, (key, item)) in entries(map).into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                write_string(out, key);
                out.push_str(": ");
                write_value(out, item, depth + 1);
            }
            newline(out, depth);
            out.push('}');
        }
    }
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    out.extend(std::iter::repeat_n(' ', depth * 2));
}

/// JSON.stringify's string quoting: only `"`, `\` and control characters are escaped.
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_javascript() {
        for (n, text) in [
            (0.0, "0"),
            (-0.0, "0"),
            (42.0, "42"),
            (-2.0, "-2"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1.5e-7, "1.5e-7"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (123456789012345680000.0, "123456789012345680000"),
            (12345678901234567890.0, "12345678901234567000"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
            (0.30000000000000004, "0.30000000000000004"),
        ] {
            assert_eq!(number_to_string(n), text, "{n}");
        }
    }

    #[test]
    fn strings_become_numbers_like_javascript() {
        for (text, n) in [
            ("42", 42.0),
            ("  7 ", 7.0),
            ("0x10", 16.0),
            ("0b101", 5.0),
            ("0o17", 15.0),
            (".5", 0.5),
            ("1.", 1.0),
            ("+3", 3.0),
            ("-.5e1", -5.0),
            ("\u{a0}5\u{2028}", 5.0),
            ("\u{feff}3", 3.0),
            ("1e-400", 0.0),
            ("", 0.0),
        ] {
            assert_eq!(string_to_number(text), n, "{text:?}");
        }
        for text in [
            "1_000", "-0x10", "1e", "0b", "abc", "inf", "NaN", "1e5e5", "\u{85}1",
        ] {
            assert!(string_to_number(text).is_nan(), "{text:?}");
        }
        assert_eq!(string_to_number("Infinity"), f64::INFINITY);
    }

    #[test]
    fn keys_follow_javascript_order() {
        let value: Value = serde_json::from_str(
            r#"{"b":1,"10":2,"2":3,"01":4,"4294967295":5,"4294967294":6,"a":7}"#,
        )
        .unwrap();
        let keys: Vec<&str> = entries(value.as_object().unwrap())
            .into_iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(
            keys,
            ["2", "10", "4294967294", "b", "01", "4294967295", "a"]
        );
    }

    #[test]
    fn pretty_json_matches_json_stringify() {
        let value: Value =
            serde_json::from_str(r#"{"a":[1,{"b":[]}],"c":{},"d":"\"\\\n\u0001é"}"#).unwrap();
        assert_eq!(
            stringify_pretty(&value),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {},\n  \"d\": \"\\\"\\\\\\n\\u0001é\"\n}"
        );
    }
}
