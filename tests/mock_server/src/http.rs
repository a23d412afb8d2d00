//! Minimal hand-written HTTP/1.1: request parsing and response framing.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::body::Piece;

/// Largest accepted request head.
const MAX_HEAD: usize = 1 << 20;
/// Largest accepted request body.
const MAX_BODY: usize = 64 << 20;

/// A parsed HTTP request.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The target without its query string.
    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The client closed the connection before sending anything.
    Closed,
    /// The request is not acceptable HTTP/1.1.
    Malformed(String),
    /// Socket error (the connection is unusable).
    Io,
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Io
    }
}

/// Buffered reader over the connection.
struct Reader<'a> {
    stream: &'a mut TcpStream,
    buf: Vec<u8>,
    pos: usize,
}

impl Reader<'_> {
    /// Reads more bytes into the buffer; errors on EOF.
    async fn fill(&mut self) -> Result<(), ReadError> {
        let mut tmp = [0u8; 8192];
        let n = self.stream.read(&mut tmp).await?;
        if n == 0 {
            return Err(ReadError::Malformed("connection closed mid-request".into()));
        }
        self.buf.extend_from_slice(&tmp[..n]);
        Ok(())
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    async fn take(&mut self, n: usize) -> Result<Vec<u8>, ReadError> {
        while self.available().len() < n {
            self.fill().await?;
        }
        let out = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        Ok(out)
    }

    async fn line(&mut self) -> Result<String, ReadError> {
        loop {
            if let Some(i) = find(self.available(), b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[self.pos..self.pos + i]).into_owned();
                self.pos += i + 2;
                return Ok(line);
            }
            if self.available().len() > MAX_HEAD {
                return Err(ReadError::Malformed("line too long".into()));
            }
            self.fill().await?;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads one request: the head up to `\r\n\r\n`, then a body framed by
/// `Transfer-Encoding: chunked` or `Content-Length` (none: empty body).
pub(crate) async fn read_request(stream: &mut TcpStream) -> Result<Request, ReadError> {
    let mut buf = Vec::with_capacity(4096);
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        // The terminator may straddle two reads.
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::Malformed("request head too large".into()));
        }
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Err(if buf.is_empty() {
                ReadError::Closed
            } else {
                ReadError::Malformed("connection closed in request head".into())
            });
        }
        buf.extend_from_slice(&tmp[..n]);
    };

    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ').filter(|p| !p.is_empty());
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Malformed(format!(
            "bad request line {request_line:?}"
        )));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Malformed(format!(
            "unsupported version {version:?}"
        )));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Malformed(format!("bad header line {line:?}")));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut request = Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: Vec::new(),
    };

    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let content_length = match request.header("content-length") {
        Some(v) => Some(
            v.parse::<usize>()
                .map_err(|_| ReadError::Malformed(format!("bad content-length {v:?}")))?,
        ),
        None => None,
    };
    if !chunked && content_length.unwrap_or(0) == 0 {
        return Ok(request);
    }

    let mut reader = Reader {
        stream,
        buf,
        pos: head_end + 4,
    };
    let expects_continue = request
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    if expects_continue && reader.available().is_empty() {
        reader
            .stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await?;
    }

    if chunked {
        let mut body = Vec::new();
        loop {
            let line = reader.line().await?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| ReadError::Malformed(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !reader.line().await?.is_empty() {}
                break;
            }
            if body.len() + size > MAX_BODY {
                return Err(ReadError::Malformed("request body too large".into()));
            }
            body.extend_from_slice(&reader.take(size).await?);
            if reader.take(2).await? != b"\r\n" {
                return Err(ReadError::Malformed("chunk not followed by CRLF".into()));
            }
        }
        request.body = body;
    } else if let Some(len) = content_length {
        if len > MAX_BODY {
            return Err(ReadError::Malformed("request body too large".into()));
        }
        request.body = reader.take(len).await?;
    }
    Ok(request)
}

/// Standard reason phrase for `status` (empty if unknown).
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Site Overloaded",
        _ => "",
    }
}

/// Serialises a response head (status line, headers, blank line).
pub(crate) fn head(status: u16, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// How the body bytes are framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Transfer-Encoding: chunked`, one chunk per write.
    Chunked,
    /// Raw bytes after a `Content-Length` head.
    Length,
}

/// Transport shaping of a response body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Shaping {
    pub(crate) split: Option<usize>,
    pub(crate) split_random: Option<u64>,
    pub(crate) delay_ms: u64,
    pub(crate) drop_after_bytes: Option<usize>,
    pub(crate) stall_after_bytes: Option<usize>,
    pub(crate) stall_ms: Option<u64>,
    /// Stall before the response head for this long (or until the client disconnects).
    pub(crate) head_stall_ms: Option<u64>,
    /// Wait this long before the terminating chunk (not a fault: the connection is kept).
    pub(crate) end_delay_ms: u64,
}

/// Default stall duration when `stall_ms` is not given.
const DEFAULT_STALL: Duration = Duration::from_secs(60);

/// splitmix64 step.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Cuts the body into the pieces that are written one at a time. Generated pieces are kept as
/// they are (the script refuses `split` with them).
pub(crate) fn pieces(events: Vec<Piece>, shaping: &Shaping) -> Vec<Piece> {
    if events.iter().any(Piece::is_generated) {
        return events.into_iter().filter(|e| !e.is_empty()).collect();
    }
    let bytes = events
        .into_iter()
        .map(|piece| match piece {
            Piece::Bytes(bytes) => bytes,
            Piece::Repeat { .. } => Vec::new(),
        })
        .collect();
    cut(bytes, shaping).into_iter().map(Piece::Bytes).collect()
}

fn cut(events: Vec<Vec<u8>>, shaping: &Shaping) -> Vec<Vec<u8>> {
    if let Some(n) = shaping.split {
        let body = events.concat();
        return body.chunks(n.max(1)).map(<[u8]>::to_vec).collect();
    }
    if let Some(seed) = shaping.split_random {
        let body = events.concat();
        let mut state = seed;
        let mut out = Vec::new();
        let mut rest = &body[..];
        while !rest.is_empty() {
            // 1..=16; the modulo keeps the value tiny so the cast is exact.
            let len = (1 + splitmix64(&mut state) % 16) as usize;
            let (piece, tail) = rest.split_at(len.min(rest.len()));
            out.push(piece.to_vec());
            rest = tail;
        }
        return out;
    }
    // A zero-length HTTP chunk would terminate the body: never write one.
    events.into_iter().filter(|e| !e.is_empty()).collect()
}

async fn write_piece(stream: &mut TcpStream, framing: Framing, piece: &[u8]) -> io::Result<()> {
    match framing {
        Framing::Chunked => {
            let mut out = format!("{:x}\r\n", piece.len()).into_bytes();
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
            stream.write_all(&out).await
        }
        Framing::Length => stream.write_all(piece).await,
    }
}

/// Pauses writing for `ms` (default 60 s) or until the peer disconnects.
/// Returns `true` if the peer went away.
pub(crate) async fn stall(stream: &mut TcpStream, ms: Option<u64>) -> bool {
    let sleep = tokio::time::sleep(ms.map_or(DEFAULT_STALL, Duration::from_millis));
    tokio::pin!(sleep);
    let mut scratch = [0u8; 1024];
    loop {
        tokio::select! {
            () = &mut sleep => return false,
            r = stream.read(&mut scratch) => match r {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            },
        }
    }
}

/// Writes `head` then the body `pieces`, applying delays, stall and drop.
/// Ends with the zero chunk (chunked framing) unless the script drops the
/// connection. With `keep_alive` the connection stays open for the next request; else it is
/// half-closed and drained.
pub(crate) async fn write_response(
    stream: &mut TcpStream,
    head: &[u8],
    pieces: &[Piece],
    framing: Framing,
    shaping: &Shaping,
    keep_alive: bool,
) -> io::Result<()> {
    if let Some(ms) = shaping.head_stall_ms
        && stall(stream, Some(ms)).await
    {
        return Ok(());
    }
    stream.write_all(head).await?;
    let mut pos = 0usize;
    let mut stalled = shaping.stall_after_bytes.is_none();
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 && shaping.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(shaping.delay_ms)).await;
        }
        for block in piece.blocks() {
            let mut rest = block;
            while !rest.is_empty() {
                if let Some(s) = shaping.stall_after_bytes
                    && !stalled
                    && pos >= s
                {
                    stalled = true;
                    if stall(stream, shaping.stall_ms).await {
                        return Ok(());
                    }
                }
                if shaping.drop_after_bytes.is_some_and(|d| pos >= d) {
                    return Ok(());
                }
                let mut take = rest.len();
                if let Some(d) = shaping.drop_after_bytes {
                    take = take.min(d - pos);
                }
                if let Some(s) = shaping.stall_after_bytes
                    && !stalled
                {
                    take = take.min(s - pos);
                }
                write_piece(stream, framing, &rest[..take]).await?;
                pos += take;
                rest = &rest[take..];
            }
        }
    }
    if !stalled && stall(stream, shaping.stall_ms).await {
        return Ok(());
    }
    if shaping.drop_after_bytes.is_some() {
        return Ok(());
    }
    if framing == Framing::Chunked {
        if shaping.end_delay_ms > 0 {
            stream.flush().await?;
            tokio::time::sleep(Duration::from_millis(shaping.end_delay_ms)).await;
        }
        stream.write_all(b"0\r\n\r\n").await?;
    }
    stream.flush().await?;
    if keep_alive {
        return Ok(());
    }
    // Half-close so the client sees a clean EOF after the full response, then
    // wait (briefly) for the client to close: closing with unread input would
    // send a RST that may destroy response bytes the client has not read yet.
    stream.shutdown().await?;
    let mut scratch = [0u8; 1024];
    let drain = async {
        while let Ok(n) = stream.read(&mut scratch).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
    Ok(())
}
