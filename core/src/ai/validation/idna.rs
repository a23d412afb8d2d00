//! Host-name labels as TypeBox's `hostname` and `idn-hostname` formats check them
//! (`typebox/format/idna`): ASCII letter-digit-hyphen labels, punycode `xn--` labels, and Unicode
//! labels under the RFC 5891/5892/5893 rules TypeBox implements (permitted categories, context
//! rules, the bidi rule, the 63-octet A-label limit). Character properties come from the same
//! Unicode regular-expression classes TypeBox uses.

use std::sync::OnceLock;

use super::js_regex::{Flags, JsRegex};

type Slot = OnceLock<Option<JsRegex>>;

/// Whether `c` is in the class `pattern` (a JavaScript `u`-mode class, compiled on first use).
fn is(slot: &'static Slot, pattern: &str, c: char) -> bool {
    let mut buffer = [0_u8; 4];
    slot.get_or_init(|| JsRegex::new(pattern, Flags::UNICODE).ok())
        .as_ref()
        .is_some_and(|regex| regex.is_match(c.encode_utf8(&mut buffer)))
}

macro_rules! class {
    ($name:ident, $pattern:expr) => {
        fn $name(c: char) -> bool {
            static SLOT: Slot = OnceLock::new();
            is(&SLOT, $pattern, c)
        }
    };
}

class!(is_letter, r"\p{L}");
class!(is_mark_nonspacing, r"\p{Mn}");
class!(is_combining_mark, r"[\p{Mn}\p{Mc}\p{Me}]");
class!(is_greek, r"\p{Script=Greek}");
class!(is_hebrew, r"\p{Script=Hebrew}");
class!(
    is_japanese,
    r"[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]"
);
class!(
    is_arabic_letter,
    r"[\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Mandaic}]"
);
class!(
    is_virama,
    r"[\u{094d}\u{09cd}\u{0a4d}\u{0acd}\u{0b4d}\u{0bcd}\u{0c4d}\u{0ccd}\u{0d3b}\u{0d3c}\u{0d4d}\u{0dca}\u{1b44}\u{1baa}\u{1bab}\u{a9c0}\u{11046}\u{1107f}\u{110b9}\u{11133}\u{11134}\u{111c0}\u{11235}\u{1134d}\u{11442}\u{114c2}\u{115bf}\u{1163f}\u{116b6}\u{11c3f}\u{11d44}\u{11d45}]"
);
class!(
    is_disallowed,
    r"[\u{0640}\u{07fa}\u{302e}\u{302f}\u{3031}\u{3032}\u{3033}\u{3034}\u{3035}\u{303b}]"
);
class!(
    is_permitted,
    r"\p{L}|[\u{002d}\u{002b}]|[\u{002e}\u{002c}\u{003a}\u{002f}]|\p{Nd}|\p{Mn}|\p{Mc}|[\u{00b7}\u{0375}\u{05f3}\u{05f4}\u{200c}\u{200d}\u{30fb}]|[\u{00df}\u{03c2}\u{06fd}\u{06fe}\u{0f0b}\u{3007}]"
);

fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// TypeBox's `hostname`: 1–253 UTF-16 units, no trailing dot, every label an ASCII or punycode
/// label of 1–63 units.
pub(crate) fn is_hostname(value: &str) -> bool {
    let length = utf16_len(value);
    if length == 0 || length > 253 || value.ends_with('.') {
        return false;
    }
    value.split('.').all(|label| {
        let length = utf16_len(label);
        length > 0 && length <= 63 && (is_puny_label(label) || is_ascii_label(label))
    })
}

/// TypeBox's `idn-hostname` (after its full-width, ignored-character and full-stop mappings;
/// the NFC normalisation it applies first is not repeated here).
pub(crate) fn is_idn_hostname(value: &str) -> bool {
    if value.is_empty() || value.contains(' ') {
        return false;
    }
    let normalized: String = value
        .chars()
        .filter_map(|c| match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0),
            '\u{AD}'
            | '\u{34F}'
            | '\u{180B}'..='\u{180D}'
            | '\u{200B}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{E0100}'..='\u{E01EF}' => None,
            _ => Some(c),
        })
        .map(|c| match c {
            '\u{3002}' | '\u{FF0E}' | '\u{FF61}' => '.',
            c => c,
        })
        .collect();
    if utf16_len(&normalized) > 253 {
        return false;
    }
    let labels: Vec<&str> = normalized.split('.').collect();
    let bidi = labels.iter().any(|label| has_bidi_chars(label));
    labels.iter().all(|label| {
        let length = utf16_len(label);
        length > 0
            && length <= 63
            && (is_puny_label(label) || is_unicode_label(label))
            && (!bidi || satisfies_bidi_rule(label))
    })
}

fn is_ascii_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    !label.starts_with('-')
        && !label.ends_with('-')
        && bytes.get(2..4) != Some(&b"--"[..])
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
}

fn is_ace_prefixed(label: &str) -> bool {
    label.to_lowercase().starts_with("xn--")
}

fn is_puny_label(label: &str) -> bool {
    if !is_ace_prefixed(label) {
        return false;
    }
    let body = label.get(4..).unwrap_or("").to_lowercase();
    if body.rfind('-') == Some(0) {
        return false;
    }
    match decode(&body) {
        Some(decoded) => !decoded.is_ascii() && is_unicode_label(&decoded),
        None => false,
    }
}

/// TypeBox's `IsUnicodeLabel`.
fn is_unicode_label(label: &str) -> bool {
    if !label.is_ascii() && encode(label).len() + 4 > 63 {
        return false;
    }
    if has_right_to_left(label) && !satisfies_bidi_rule(label) {
        return false;
    }
    let chars: Vec<char> = label.chars().collect();
    let (Some(&first), Some(&last)) = (chars.first(), chars.last()) else {
        return false;
    };
    if first == '-' || last == '-' || chars.get(2..4) == Some(&['-', '-'][..]) {
        return false;
    }
    if is_combining_mark(first) {
        return false;
    }
    let mut japanese = false;
    for (i, &c) in chars.iter().enumerate() {
        if is_disallowed(c) || !is_permitted(c) {
            return false;
        }
        japanese |= is_japanese(c);
        let previous = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        let next = chars.get(i + 1).copied();
        let ok = match c {
            '\u{B7}' => previous == Some('l') && next == Some('l'),
            '\u{375}' => next.is_some_and(is_greek),
            '\u{5F3}' | '\u{5F4}' => previous.is_some_and(is_hebrew),
            '\u{200C}' => previous.is_some_and(|p| p as u32 >= 0x80 || is_virama(p)),
            '\u{200D}' => previous.is_some_and(is_virama),
            _ => true,
        };
        if !ok {
            return false;
        }
    }
    !label.contains('\u{30FB}') || japanese
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bidi {
    L,
    R,
    Al,
    En,
    An,
    Nsm,
    On,
}

fn bidi_class(c: char) -> Bidi {
    if c.is_ascii_digit() || ('\u{06F0}'..='\u{06F9}').contains(&c) {
        Bidi::En
    } else if ('\u{0660}'..='\u{0669}').contains(&c) {
        Bidi::An
    } else if is_mark_nonspacing(c) {
        Bidi::Nsm
    } else if is_hebrew(c) {
        Bidi::R
    } else if is_arabic_letter(c) {
        Bidi::Al
    } else if is_letter(c) {
        Bidi::L
    } else {
        Bidi::On
    }
}

fn has_right_to_left(label: &str) -> bool {
    label
        .chars()
        .any(|c| matches!(bidi_class(c), Bidi::R | Bidi::Al | Bidi::An))
}

fn has_bidi_chars(label: &str) -> bool {
    if is_ace_prefixed(label) {
        let body = label.get(4..).unwrap_or("").to_lowercase();
        return decode(&body).is_some_and(|decoded| has_right_to_left(&decoded));
    }
    has_right_to_left(label)
}

/// The parts of RFC 5893's bidi rule TypeBox checks.
fn satisfies_bidi_rule(label: &str) -> bool {
    let mut rtl = false;
    let (mut saw_en, mut saw_an) = (false, false);
    for (index, c) in label.chars().enumerate() {
        let class = bidi_class(c);
        if index == 0 {
            if !matches!(class, Bidi::L | Bidi::R | Bidi::Al) {
                return false;
            }
            rtl = matches!(class, Bidi::R | Bidi::Al);
        }
        let allowed = if rtl {
            !matches!(class, Bidi::L)
        } else {
            !matches!(class, Bidi::R | Bidi::Al | Bidi::An)
        };
        if !allowed {
            return false;
        }
        saw_en |= class == Bidi::En;
        saw_an |= class == Bidi::An;
    }
    !(rtl && saw_en && saw_an)
}

const BASE: u64 = 36;
const T_MIN: u64 = 1;
const T_MAX: u64 = 26;

fn adapt(delta: u64, points: u64, first: bool) -> u64 {
    let mut delta = if first { delta / 700 } else { delta / 2 };
    delta += delta / points;
    let mut k = 0;
    while delta > ((BASE - T_MIN) * T_MAX) / 2 {
        delta /= BASE - T_MIN;
        k += BASE;
    }
    k + ((BASE - T_MIN + 1) * delta) / (delta + 38)
}

fn threshold(k: u64, bias: u64) -> u64 {
    if k <= bias {
        T_MIN
    } else if k >= bias + T_MAX {
        T_MAX
    } else {
        k - bias
    }
}

/// RFC 3492 decoding of a lower-case punycode payload; `None` when malformed.
pub(crate) fn decode(input: &str) -> Option<String> {
    let bytes = input.as_bytes();
    let mut output: Vec<u64> = Vec::new();
    let delimiter = input.rfind('-');
    if let Some(end) = delimiter.filter(|&d| d > 0) {
        for &b in &bytes[..end] {
            if b >= 128 {
                return None;
            }
            output.push(u64::from(b));
        }
    }
    let mut at = delimiter.map_or(0, |d| d + 1);
    let (mut n, mut i, mut bias) = (128_u64, 0_u64, 72_u64);
    while at < bytes.len() {
        let old_i = i;
        let mut w = 1_u64;
        let mut k = BASE;
        loop {
            let c = *bytes.get(at)?;
            at += 1;
            let digit = match c {
                b'a'..=b'z' => u64::from(c - b'a'),
                b'0'..=b'9' => u64::from(c - b'0') + 26,
                _ => return None,
            };
            i = i.checked_add(digit.checked_mul(w)?)?;
            let t = threshold(k, bias);
            if digit < t {
                break;
            }
            w = w.checked_mul(BASE - t)?;
            k += BASE;
        }
        let length = output.len() as u64 + 1;
        bias = adapt(i - old_i, length, old_i == 0);
        n = n.checked_add(i / length)?;
        i %= length;
        output.insert(i as usize, n);
        i += 1;
    }
    output
        .into_iter()
        .map(|code| u32::try_from(code).ok().and_then(char::from_u32))
        .collect()
}

/// RFC 3492 encoding (the payload after `xn--`), to measure an A-label.
fn encode(input: &str) -> String {
    let digit = |d: u64| -> char {
        if d < 26 {
            char::from(b'a' + d as u8)
        } else {
            char::from(b'0' + (d - 26) as u8)
        }
    };
    let points: Vec<u64> = input.chars().map(|c| u64::from(u32::from(c))).collect();
    let mut out: String = input.chars().filter(char::is_ascii).collect();
    let basic = out.encode_utf16().count() as u64;
    if basic > 0 {
        out.push('-');
    }
    let (mut n, mut delta, mut bias) = (128_u64, 0_u64, 72_u64);
    let mut handled = basic;
    while (handled as usize) < points.len() {
        let Some(m) = points.iter().copied().filter(|&p| p >= n).min() else {
            break;
        };
        delta += (m - n) * (handled + 1);
        n = m;
        for &point in &points {
            if point < n {
                delta += 1;
            }
            if point == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = threshold(k, bias);
                    if q < t {
                        break;
                    }
                    out.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta += 1;
        n += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punycode_round_trips() {
        assert_eq!(decode("bcher-kva").as_deref(), Some("bücher"));
        assert_eq!(encode("bücher"), "bcher-kva");
        assert_eq!(encode("ü"), "tda");
        assert_eq!(decode("tda").as_deref(), Some("ü"));
    }

    #[test]
    fn labels() {
        assert!(is_hostname("example.com"));
        assert!(is_hostname("xn--bcher-kva.example"));
        assert!(!is_hostname("xn--a.com"));
        assert!(!is_hostname("ab--cd.com"));
        assert!(is_idn_hostname("bücher.example"));
        assert!(!is_idn_hostname("\u{300}a"));
        assert!(is_idn_hostname("a\u{3002}b"));
    }
}
