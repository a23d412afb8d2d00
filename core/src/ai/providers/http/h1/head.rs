//! The two heads of an HTTP/1.1 exchange: the request we write (with its body, in one buffer)
//! and the response head we parse (with `httparse`), and what that head says about the body's
//! framing and whether the connection can be used again.

use std::io;
use std::mem::MaybeUninit;

use reqwest::header::{ACCEPT, CONNECTION, CONTENT_LENGTH, HOST, HeaderMap, TRANSFER_ENCODING};
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};

/// The most headers a response head may have (hyper's default too).
const MAX_HEADERS: usize = 100;

/// The largest response head read before giving up on it.
pub(super) const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The request's bytes: its head, then its body, ready for one write. The headers are sent in
/// the request's order; `host`, `accept: */*` (what reqwest's default client adds) and
/// `content-length` are added when the request has none.
pub(super) fn encode_request(request: &reqwest::Request, body: &[u8]) -> Vec<u8> {
    let url = request.url();
    let mut out = Vec::with_capacity(256 + body.len());
    out.extend_from_slice(request.method().as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(url.path().as_bytes());
    if let Some(query) = url.query() {
        out.push(b'?');
        out.extend_from_slice(query.as_bytes());
    }
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let headers = request.headers();
    if !headers.contains_key(HOST) {
        out.extend_from_slice(b"host: ");
        out.extend_from_slice(url.host_str().unwrap_or("").as_bytes());
        if let Some(port) = url.port() {
            out.extend_from_slice(format!(":{port}").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in headers {
        // The body is sent whole: the length is ours to say.
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
            continue;
        }
        line(&mut out, name.as_str().as_bytes(), value.as_bytes());
    }
    if !headers.contains_key(ACCEPT) {
        out.extend_from_slice(b"accept: */*\r\n");
    }
    if !body.is_empty() || !matches!(*request.method(), Method::GET | Method::HEAD) {
        line(
            &mut out,
            b"content-length",
            body.len().to_string().as_bytes(),
        );
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

fn line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// How a response body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    /// No body (`204`, `304`, an answer to `HEAD`).
    Empty,
    /// `content-length` bytes.
    Length(u64),
    /// `transfer-encoding: chunked`.
    Chunked,
    /// Until the server closes the connection.
    UntilClose,
}

/// A parsed response head.
#[derive(Debug)]
pub(super) struct Head {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub framing: Framing,
    /// Whether the connection can carry another request once the body is read.
    pub reusable: bool,
}

/// Parses a complete response head at the start of `bytes`: `Ok(None)` when more bytes are
/// needed, else the head and how many bytes it took. An interim (`1xx`) response is returned
/// like any other; the caller skips it.
pub(super) fn parse_response(
    bytes: &[u8],
    method: &Method,
    request_closes: bool,
) -> io::Result<Option<(Head, usize)>> {
    // Left uninitialized: zeroing a hundred 32-byte slots for the handful a response has
    // wrote 3 KiB of cold stack per response.
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        bytes,
        &mut slots,
    );
    let consumed = match parsed {
        Ok(httparse::Status::Complete(consumed)) => consumed,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(error) => return Err(invalid(format!("invalid HTTP response head: {error}"))),
    };
    let status = response
        .code
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or_else(|| invalid("invalid HTTP status code".to_owned()))?;
    let mut headers = HeaderMap::with_capacity(response.headers.len());
    for header in response.headers.iter() {
        let name = HeaderName::from_bytes(header.name.as_bytes())
            .map_err(|_| invalid(format!("invalid HTTP header name `{}`", header.name)))?;
        let value = HeaderValue::from_bytes(header.value)
            .map_err(|_| invalid(format!("invalid value for HTTP header `{name}`")))?;
        headers.append(name, value);
    }
    let framing = framing(status, &headers, method)?;
    let keep_alive = response.version == Some(1)
        && !request_closes
        && !has_token(&headers, &CONNECTION, "close");
    let head = Head {
        status,
        framing,
        reusable: keep_alive && framing != Framing::UntilClose,
        headers,
    };
    Ok(Some((head, consumed)))
}

/// The body's framing, by RFC 9112 section 6.3.
fn framing(status: StatusCode, headers: &HeaderMap, method: &Method) -> io::Result<Framing> {
    if *method == Method::HEAD
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok(Framing::Empty);
    }
    if headers.contains_key(TRANSFER_ENCODING) {
        // Chunked only when it is the last coding; anything else is read to the close.
        let last = headers
            .get_all(TRANSFER_ENCODING)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .rfind(|coding| !coding.is_empty());
        return Ok(match last {
            Some(coding) if coding.eq_ignore_ascii_case("chunked") => Framing::Chunked,
            _ => Framing::UntilClose,
        });
    }
    let mut length = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        for part in value.as_bytes().split(|&byte| byte == b',') {
            let part = std::str::from_utf8(part).unwrap_or("").trim();
            let parsed = part
                .parse::<u64>()
                .ok()
                .filter(|_| part.bytes().all(|byte| byte.is_ascii_digit()));
            match (parsed, length) {
                (Some(n), None) => length = Some(n),
                (Some(n), Some(seen)) if n == seen => {}
                _ => return Err(invalid("invalid content-length in the response".to_owned())),
            }
        }
    }
    Ok(length.map_or(Framing::UntilClose, Framing::Length))
}

/// Whether a comma-separated header holds `token` (case-insensitive).
pub(super) fn has_token(headers: &HeaderMap, name: &HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|part| part.trim().eq_ignore_ascii_case(token))
}

pub(super) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(head: &str) -> io::Result<Option<(Head, usize)>> {
        parse_response(head.as_bytes(), &Method::POST, false)
    }

    #[test]
    fn the_request_carries_host_accept_and_length_after_its_own_headers() {
        let client = reqwest::Client::new();
        let request = client
            .post("http://127.0.0.1:8080/v1/chat?x=1")
            .header("content-type", "application/json")
            .header("authorization", "Bearer k")
            .build()
            .unwrap();
        let bytes = encode_request(&request, b"{}");
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "POST /v1/chat?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\
             content-type: application/json\r\nauthorization: Bearer k\r\n\
             accept: */*\r\ncontent-length: 2\r\n\r\n{}"
        );
    }

    #[test]
    fn framing_follows_the_head() {
        let (head, used) = parse("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello")
            .unwrap()
            .unwrap();
        assert_eq!(
            (head.framing, head.reusable, used),
            (Framing::Length(5), true, 38)
        );
        let (head, _) = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(head.framing, Framing::Chunked);
        let (head, _) = parse("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((head.framing, head.reusable), (Framing::UntilClose, false));
        let (head, _) = parse("HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!head.reusable);
        let (head, _) = parse("HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!head.reusable);
        let (head, _) = parse("HTTP/1.1 204 No Content\r\n\r\n").unwrap().unwrap();
        assert_eq!(head.framing, Framing::Empty);
        let (head, _) = parse("HTTP/1.1 100 Continue\r\n\r\n").unwrap().unwrap();
        assert!(head.status.is_informational());
        assert!(parse("HTTP/1.1 200 OK\r\ncontent-").unwrap().is_none());
    }

    #[test]
    fn a_bad_head_is_an_error() {
        for bad in [
            "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: +5\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
            "HTTP/9 200 OK\r\n\r\n",
            "garbage\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse("HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\n\r\n")
                .unwrap()
                .unwrap()
                .0
                .framing,
            Framing::Length(5)
        );
    }
}
