//! The string formats TypeBox registers by default (`typebox/format`), checked the way TypeBox
//! checks them: the same regular expressions (run with JavaScript semantics), date and time
//! arithmetic, and the WHATWG URL parser for `url`, `iri` and `iri-reference`. An unknown format
//! always passes, as in TypeBox.
//!
//! One difference, documented in the README: `idn-email` and `idn-hostname` skip the NFC
//! normalisation TypeBox applies before checking.

use std::sync::OnceLock;

use super::idna;
use super::js_regex::{Flags, JsRegex};
use super::schema::FormatCheck;

/// The check for `format`, or `None` when TypeBox does not know the format (it then passes).
pub(crate) fn checker(format: &str) -> Option<FormatCheck> {
    Some(match format {
        "date-time" => is_date_time,
        "date" => is_date,
        "duration" => |v| test(&DURATION_RE, DURATION, v),
        "email" => |v| test(&EMAIL_RE, EMAIL, v),
        "hostname" => idna::is_hostname,
        "idn-email" => |v| test(&IDN_EMAIL_RE, IDN_EMAIL, v),
        "idn-hostname" => idna::is_idn_hostname,
        "ipv4" => |v| test(&IPV4_RE, IPV4, v),
        "ipv6" => |v| test(&IPV6_RE, IPV6, v),
        "iri-reference" => is_iri_reference,
        "iri" => is_iri,
        "json-pointer-uri-fragment" => {
            |v| test(&JSON_POINTER_URI_FRAGMENT_RE, JSON_POINTER_URI_FRAGMENT, v)
        }
        "json-pointer" => |v| test(&JSON_POINTER_RE, JSON_POINTER, v),
        "regex" => |v| JsRegex::new(v, Flags::UNICODE).is_ok(),
        "relative-json-pointer" => |v| test(&RELATIVE_JSON_POINTER_RE, RELATIVE_JSON_POINTER, v),
        "time" => |v| is_time(v, true),
        "uri-reference" => |v| test(&URI_REFERENCE_RE, URI_REFERENCE, v),
        "uri-template" => |v| test(&URI_TEMPLATE_RE, URI_TEMPLATE, v),
        "uri" => |v| test(&URI_RE, URI, v),
        "url" => |v| reqwest::Url::parse(v).is_ok(),
        "uuid" => |v| test(&UUID_RE, UUID, v),
        _ => return None,
    })
}

type Slot = OnceLock<Option<JsRegex>>;

/// Runs one of the fixed patterns below (compiled on first use; a pattern that failed to compile
/// — a bug the unit tests rule out — matches nothing).
fn test(slot: &'static Slot, (pattern, flags): (&str, Flags), value: &str) -> bool {
    slot.get_or_init(|| JsRegex::new(pattern, flags).ok())
        .as_ref()
        .is_some_and(|regex| regex.is_match(value))
}

static DATE_TIME_SUFFIX_RE: Slot = OnceLock::new();
static DURATION_RE: Slot = OnceLock::new();
static EMAIL_RE: Slot = OnceLock::new();
static IDN_EMAIL_RE: Slot = OnceLock::new();
static IPV4_RE: Slot = OnceLock::new();
static IPV6_RE: Slot = OnceLock::new();
static JSON_POINTER_URI_FRAGMENT_RE: Slot = OnceLock::new();
static JSON_POINTER_RE: Slot = OnceLock::new();
static RELATIVE_JSON_POINTER_RE: Slot = OnceLock::new();
static URI_REFERENCE_RE: Slot = OnceLock::new();
static URI_TEMPLATE_RE: Slot = OnceLock::new();
static URI_RE: Slot = OnceLock::new();
static UUID_RE: Slot = OnceLock::new();

fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `^(\d\d\d\d)-(\d\d)-(\d\d)$` and a real calendar day.
fn is_date(value: &str) -> bool {
    const DAYS: [u32; 13] = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let bytes = value.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (
        digits(&value[..4]),
        digits(&value[5..7]),
        digits(&value[8..]),
    ) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let last = if month == 2 && leap {
        29
    } else {
        DAYS.get(month as usize).copied().unwrap_or(0)
    };
    (1..=12).contains(&month) && day >= 1 && day <= last
}

/// `^(\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:([Zz])|([+-])(\d\d):(\d\d))?$`, valid clock values, and a
/// leap second only at 23:59:60 UTC.
fn is_time(value: &str, strict_time_zone: bool) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() < 8 || bytes[2] != b':' || bytes[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) = (
        digits(&value[..2]),
        digits(&value[3..5]),
        digits(&value[6..8]),
    ) else {
        return false;
    };
    let mut rest = &value[8..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if end == 0 {
            return false;
        }
        rest = &fraction[end..];
    }
    let zone: Option<(i64, u32, u32)> = match rest.as_bytes() {
        [] => None,
        [b'Z' | b'z'] => Some((1, 0, 0)),
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (Some(h), Some(m)) = (digits(&rest[1..3]), digits(&rest[4..6])) else {
                return false;
            };
            if h > 23 || m > 59 {
                return false;
            }
            Some((if *sign == b'-' { -1 } else { 1 }, h, m))
        }
        _ => return false,
    };
    if strict_time_zone && zone.is_none() {
        return false;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    if second < 60 {
        return true;
    }
    let (sign, zone_hour, zone_minute) = zone.unwrap_or((1, 0, 0));
    let utc = i64::from(hour * 60 + minute) - sign * i64::from(zone_hour * 60 + zone_minute);
    (utc % 1440 + 1440) % 1440 == 1439
}

/// A date and a time separated by `T` or `t`, optionally followed by an RFC 9557 suffix.
fn is_date_time(value: &str) -> bool {
    let (date_time, suffix) = match value.find('[') {
        Some(index) => (&value[..index], Some(&value[index..])),
        None => (value, None),
    };
    if suffix.is_some_and(|suffix| !test(&DATE_TIME_SUFFIX_RE, DATE_TIME_SUFFIX, suffix)) {
        return false;
    }
    let mut parts = date_time.split(['T', 't']);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(date), Some(time), None) => is_date(date) && is_time(time, true),
        _ => false,
    }
}

fn has_bad_percent(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.iter().enumerate().any(|(index, &b)| {
        b == b'%'
            && !(bytes.get(index + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(index + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

fn is_iri(value: &str) -> bool {
    let invalid = |c: char| c <= ' ' || "<>^`{|}\\".contains(c);
    !value.contains(invalid) && !has_bad_percent(value) && reqwest::Url::parse(value).is_ok()
}

fn is_iri_reference(value: &str) -> bool {
    let invalid = |c: char| c <= ' ' || c == '\u{7F}' || c == '\\';
    if value.contains(invalid) || has_bad_percent(value) {
        return false;
    }
    // `^[a-zA-Z][a-zA-Z0-9+\-.]*\/\/`: a scheme-like prefix glued to `//`.
    let bytes = value.as_bytes();
    if bytes.first().is_some_and(u8::is_ascii_alphabetic) {
        let end = bytes
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || b"+-.".contains(b)))
            .unwrap_or(bytes.len());
        if bytes[end..].starts_with(b"//") {
            return false;
        }
    }
    reqwest::Url::parse("http://example.com")
        .and_then(|base| base.join(value))
        .is_ok()
}

/// TypeBox `format/date_time.mjs` (flags ``).
const DATE_TIME_SUFFIX: (&str, Flags) = (
    r##"^(?:\[!?(?:(?!\.{1,2}[/\]])[A-Za-z._][A-Za-z._0-9+-]{0,13}(?:\/(?!\.{1,2}[/\]])[A-Za-z._][A-Za-z._0-9+-]{0,13})*|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])\](?:\[!?[a-z_][a-z_0-9-]*=[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\])*|(?:\[!?[a-z_][a-z_0-9-]*=[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\])*)$"##,
    Flags {
        unicode: false,
        ignore_case: false,
    },
);

/// TypeBox `format/email.mjs` (flags `i`).
const EMAIL: (&str, Flags) = (
    r##"^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*|"(?:[^"\\]|\\[\x20-\x7e])*")@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[(?:IPv6:[a-f0-9:]+|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})\])$"##,
    Flags {
        unicode: false,
        ignore_case: true,
    },
);

/// TypeBox `format/uuid.mjs` (flags `i`).
const UUID: (&str, Flags) = (
    r##"^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$"##,
    Flags {
        unicode: false,
        ignore_case: true,
    },
);

/// TypeBox `format/uri.mjs` (flags `i`).
const URI: (&str, Flags) = (
    r##"^[a-z][a-z0-9+\-.]*:(?:\/\/(?:(?:[-a-z0-9._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:[\da-f]{1,4}:){6}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|::(?:[\da-f]{1,4}:){5}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:[\da-f]{1,4})?::(?:[\da-f]{1,4}:){4}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,1}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){3}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,2}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){2}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,3}[\da-f]{1,4})?::[\da-f]{1,4}:(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,4}[\da-f]{1,4})?::(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,5}[\da-f]{1,4})?::[\da-f]{1,4}|(?:(?:[\da-f]{1,4}:){0,6}[\da-f]{1,4})?::)|v[0-9a-f]+\.[-a-z0-9._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)|(?:[-a-z0-9._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?(?:\?(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$"##,
    Flags {
        unicode: false,
        ignore_case: true,
    },
);

/// TypeBox `format/uri_reference.mjs` (flags `i`).
const URI_REFERENCE: (&str, Flags) = (
    r##"^(?:[a-z][a-z0-9+\-.]*:(?:\/\/(?:(?:[-a-z0-9._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:[\da-f]{1,4}:){6}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|::(?:[\da-f]{1,4}:){5}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:[\da-f]{1,4})?::(?:[\da-f]{1,4}:){4}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,1}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){3}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,2}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){2}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,3}[\da-f]{1,4})?::[\da-f]{1,4}:(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,4}[\da-f]{1,4})?::(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,5}[\da-f]{1,4})?::[\da-f]{1,4}|(?:(?:[\da-f]{1,4}:){0,6}[\da-f]{1,4})?::)|v[0-9a-f]+\.[-a-z0-9._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)|(?:[-a-z0-9._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:\/\/(?:(?:[-a-z0-9._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:[\da-f]{1,4}:){6}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|::(?:[\da-f]{1,4}:){5}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:[\da-f]{1,4})?::(?:[\da-f]{1,4}:){4}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,1}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){3}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,2}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){2}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,3}[\da-f]{1,4})?::[\da-f]{1,4}:(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,4}[\da-f]{1,4})?::(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,5}[\da-f]{1,4})?::[\da-f]{1,4}|(?:(?:[\da-f]{1,4}:){0,6}[\da-f]{1,4})?::)|v[0-9a-f]+\.[-a-z0-9._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)|(?:[-a-z0-9._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[-a-z0-9._~!$&'()*+,;=@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?)(?:\?(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$"##,
    Flags {
        unicode: false,
        ignore_case: true,
    },
);

/// TypeBox `format/uri_template.mjs` (flags `i`).
const URI_TEMPLATE: (&str, Flags) = (
    r##"^(?:(?:[^\x00-\x20"<>%\\^`{|}\x7f]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?:\.(?:[a-z0-9_]|%[0-9a-f]{2})+)*(?::[1-9]\d{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?:\.(?:[a-z0-9_]|%[0-9a-f]{2})+)*(?::[1-9]\d{0,3}|\*)?)*\})*$"##,
    Flags {
        unicode: false,
        ignore_case: true,
    },
);

/// TypeBox `format/ipv4.mjs` (flags ``).
const IPV4: (&str, Flags) = (
    r##"^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$"##,
    Flags {
        unicode: false,
        ignore_case: false,
    },
);

/// TypeBox `format/ipv6.mjs` (flags `i`).
const IPV6: (&str, Flags) = (
    r##"^(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:)?[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)$"##,
    Flags {
        unicode: false,
        ignore_case: true,
    },
);

/// TypeBox `format/duration.mjs` (flags ``).
const DURATION: (&str, Flags) = (
    r##"^P((\d+Y(\d+M(\d+D)?)?|\d+M(\d+D)?|\d+D)(T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S))?|T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)|\d+W)$"##,
    Flags {
        unicode: false,
        ignore_case: false,
    },
);

/// TypeBox `format/json_pointer.mjs` (flags ``).
const JSON_POINTER: (&str, Flags) = (
    r##"^(?:\/(?:[^~/]|~0|~1)*)*$"##,
    Flags {
        unicode: false,
        ignore_case: false,
    },
);

/// TypeBox `format/relative_json_pointer.mjs` (flags ``).
const RELATIVE_JSON_POINTER: (&str, Flags) = (
    r##"^(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)$"##,
    Flags {
        unicode: false,
        ignore_case: false,
    },
);

/// TypeBox `format/json_pointer_uri_fragment.mjs` (flags `i`).
const JSON_POINTER_URI_FRAGMENT: (&str, Flags) = (
    r##"^#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$"##,
    Flags {
        unicode: false,
        ignore_case: true,
    },
);

/// TypeBox `format/idn_email.mjs` (flags `iu`).
const IDN_EMAIL: (&str, Flags) = (
    r##"^(?:[A-Za-z0-9!#$%&'*+\/=?^_`{|}~\u{0080}-\u{10FFFF}-]+(?:\.[A-Za-z0-9!#$%&'*+\/=?^_`{|}~\u{0080}-\u{10FFFF}-]+)*|"(?:[^"\\]|\\.)*")@[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,62})(?<!-)(?:\.[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,62})(?<!-))*$"##,
    Flags {
        unicode: true,
        ignore_case: true,
    },
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for (pattern, flags) in [
            DATE_TIME_SUFFIX,
            EMAIL,
            UUID,
            URI,
            URI_REFERENCE,
            URI_TEMPLATE,
            IPV4,
            IPV6,
            DURATION,
            JSON_POINTER,
            RELATIVE_JSON_POINTER,
            JSON_POINTER_URI_FRAGMENT,
            IDN_EMAIL,
        ] {
            if let Err(error) = JsRegex::new(pattern, flags) {
                panic!("{error}");
            }
        }
    }

    #[test]
    fn dates_and_times() {
        assert!(is_date("2024-02-29"));
        assert!(!is_date("2023-02-29"));
        assert!(!is_date("2024-13-01"));
        assert!(is_time("23:59:60Z", true));
        assert!(is_time("00:59:60+01:00", true));
        assert!(!is_time("22:59:60Z", true));
        assert!(!is_time("10:00:00", true));
        assert!(is_date_time("2024-01-01t10:00:00.5-05:30"));
        assert!(!is_date_time("2024-01-01 10:00:00Z"));
        assert!(is_date_time(
            "2024-01-01T10:00:00Z[Europe/Paris][u-ca=iso8601]"
        ));
        assert!(!is_date_time("2024-01-01T10:00:00Z[../x]"));
    }
}
