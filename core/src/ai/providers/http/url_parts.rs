//! Values put into a URL (model ids, deployment names, project ids, regions, account ids):
//! each provider builds its URL from the caller's base URL and such values, and none of them
//! may change where the request goes.
//!
//! A model id `../../../admin/delete?all=1#` formatted into `{base}/models/{id}` would send the
//! request — and its key — to `/admin/delete` on the gateway's host. So every value goes
//! through [`path_segment`] (one encoded path segment, never `.`/`..`) or [`host_label`]
//! (letters, digits and `-` only). Query strings are built with `url`'s serializer, which
//! encodes each value (Azure's `api-version`).

use crate::ai::error::{ErrorKind, ProviderError};

/// Bytes kept as they are: RFC 3986's unreserved characters. Everything else is `%XX` (what
/// JavaScript's `encodeURIComponent` does, plus `!'()*`, as the AWS SDK encodes labels), so
/// `/`, `?`, `#`, `%`, `:` and `@` can never end a segment or start a query.
fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~')
}

fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if is_unreserved(byte) {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(byte >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(byte & 0xF)]));
        }
    }
    out
}

fn invalid(what: &str, value: &str, why: &str) -> ProviderError {
    // `{value:?}` keeps control characters visible and the message on one line.
    ProviderError::other(
        format!("Invalid {what} {value:?}: {why}"),
        Some(ErrorKind::BadRequest),
    )
}

/// `value` as exactly one URL path segment, percent-encoded. `what` names the value in the
/// error (`model id`, `project`). An empty value, `.` and `..` are refused: a URL parser
/// resolves them (even spelt `%2E%2E`) and the request would leave its path.
pub(crate) fn path_segment(what: &str, value: &str) -> Result<String, ProviderError> {
    if value.is_empty() {
        return Err(invalid(what, value, "it is empty"));
    }
    if value == "." || value == ".." {
        return Err(invalid(what, value, "it cannot be a URL path segment"));
    }
    Ok(encode(value))
}

/// `value` as `/`-separated path segments (an id already qualified as
/// `projects/p/locations/l/endpoints/e`), each encoded by [`path_segment`].
pub(crate) fn path_segments(what: &str, value: &str) -> Result<String, ProviderError> {
    let mut out = String::with_capacity(value.len());
    for (index, segment) in value.split('/').enumerate() {
        if index > 0 {
            out.push('/');
        }
        out.push_str(&path_segment(what, segment).map_err(|_| {
            invalid(
                what,
                value,
                "each `/`-separated part must be a non-empty name other than `.` and `..`",
            )
        })?);
    }
    Ok(out)
}

/// `value` as a host name label (an Azure resource name, a Vertex location that becomes part
/// of the host): ASCII letters, digits and `-`, 1 to 63 of them, not starting or ending with
/// `-`. Anything else is refused rather than encoded: a host has no escaping.
pub(crate) fn host_label<'a>(what: &str, value: &'a str) -> Result<&'a str, ProviderError> {
    let valid = (1..=63).contains(&value.len())
        && value
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if valid {
        Ok(value)
    } else {
        Err(invalid(
            what,
            value,
            "only letters, digits and `-` may become part of a host name",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_id_stays_one_segment() {
        assert_eq!(
            path_segment("model id", "../../../admin/delete?all=1#").unwrap(),
            "..%2F..%2F..%2Fadmin%2Fdelete%3Fall%3D1%23"
        );
        assert_eq!(
            path_segment("model id", "amazon.nova-lite-v1:0").unwrap(),
            "amazon.nova-lite-v1%3A0"
        );
        assert_eq!(path_segment("m", "a b%2Fé").unwrap(), "a%20b%252F%C3%A9");
        for bad in ["", ".", ".."] {
            let error = path_segment("model id", bad).unwrap_err().to_string();
            assert!(error.starts_with("Invalid model id"), "{error}");
        }
    }

    #[test]
    fn qualified_paths_keep_their_slashes_only() {
        assert_eq!(
            path_segments("model id", "projects/p/locations/l/endpoints/e").unwrap(),
            "projects/p/locations/l/endpoints/e"
        );
        assert_eq!(
            path_segments("model id", "projects/a?b/x#y").unwrap(),
            "projects/a%3Fb/x%23y"
        );
        for bad in ["projects/../admin", "projects//x", "projects/."] {
            assert!(path_segments("model id", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_labels() {
        assert_eq!(
            host_label("location", "us-central1").unwrap(),
            "us-central1"
        );
        for bad in ["evil.com/", "a.b", "", "-x", "x-", "a b", "a@b"] {
            assert!(host_label("location", bad).is_err(), "{bad}");
        }
    }
}
