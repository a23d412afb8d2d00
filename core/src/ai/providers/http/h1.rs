//! The library's own HTTP/1.1 client, for plain-`http://` provider requests (local model
//! servers, gateways on the same host or network) sent with the library's client.
//!
//! Why not reqwest here: over hyper, every open stream holds 25 KiB of fixed per-connection
//! buffers that cannot be set smaller (a 9 KiB dispatch block, an 8 KiB read buffer, an 8 KiB
//! write head), and every frame passes from hyper's connection task to the stream's task,
//! often across threads. Here the stream's own task reads its socket: one 2 KiB read buffer
//! that grows only for a fast body, no task in between, and a handful of system calls per
//! request. The protocol is the same HTTP/1.1 reqwest speaks to an `http://` URL, with the
//! same default `accept: */*`, connect timeout and idle pool bounds.
//!
//! Everything else goes through reqwest, as before: HTTPS (ALPN, HTTP/2), a proxy from the
//! environment (`HTTP_PROXY`, `ALL_PROXY`, any case), a body that is a stream, and every request
//! once the program set its own client ([`set_http_client`](crate::ai::set_http_client)).
//! Redirects, retries and time limits are the caller's ([`super::redirect`], [`super::retry`])
//! either way; the response is a `reqwest::Response` like any other.

mod body;
mod conn;
mod direct;
mod head;
mod pool;

use std::io;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use bytes::BytesMut;
use reqwest::ResponseBuilderExt as _;

use self::body::{Body, INITIAL_READ_BYTES};
use self::conn::Conn;
use self::head::{Head, MAX_HEAD_BYTES, encode_request, has_token, parse_response};
use self::pool::{Origin, pool};
use super::CONNECT_TIMEOUT;
use super::deadline::within;
use crate::ai::error::ProviderError;

pub(super) use self::direct::take_body;
pub(super) use self::pool::used as pool_used;

/// Whether this client sends `request` (see the module's doc for what goes to reqwest).
pub(super) fn serves(request: &reqwest::Request) -> bool {
    let url = request.url();
    url.scheme() == "http"
        && url.host().is_some()
        && request.body().is_none_or(|body| body.as_bytes().is_some())
        && !super::custom_client_set()
        && !proxy_in_environment()
}

/// Whether the environment names a proxy for `http://` URLs, as reqwest's default client reads
/// it (once; reqwest too reads it once, when its client is built).
fn proxy_in_environment() -> bool {
    static PROXY: OnceLock<bool> = OnceLock::new();
    *PROXY.get_or_init(|| {
        ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()))
    })
}

/// Sends `request` (one [`serves`]) and reads the response head. A pooled connection the
/// server closed before answering is replaced once, by a fresh connection: a connection the
/// server had closed while it idled is the usual cause (it read nothing of the request), but it
/// may also have read the request and died, so the request is not sent again on pooled
/// connection after pooled connection (a POST generating an answer, up to the pool's size
/// times, whatever `max_retries` says).
pub(super) async fn execute(
    request: &reqwest::Request,
) -> Result<reqwest::Response, ProviderError> {
    let url = request.url();
    let origin = Origin {
        host: url.host_str().unwrap_or_default().into(),
        port: url.port_or_known_default().unwrap_or(80),
    };
    let body = request
        .body()
        .and_then(reqwest::Body::as_bytes)
        .unwrap_or_default();
    let wire = encode_request(request, body);
    let closes = has_token(request.headers(), &reqwest::header::CONNECTION, "close");
    let mut fresh_only = false;
    loop {
        let pooled = if fresh_only {
            None
        } else {
            pool().take(&origin)
        };
        let (mut socket, reused, sent) = match pooled {
            Some(socket) => (Conn::new(socket), true, 0),
            None => {
                let (socket, sent) = connect(request, &origin, &wire).await?;
                (socket, false, sent)
            }
        };
        let mut buffer = BytesMut::with_capacity(INITIAL_READ_BYTES);
        let unsent = &wire[sent..];
        let head = exchange(&mut socket, unsent, &mut buffer, request.method(), closes).await;
        let head = match head {
            Ok(head) => head,
            Err(Exchange::Unanswered(_)) if reused => {
                fresh_only = true;
                continue;
            }
            Err(Exchange::Unanswered(error) | Exchange::Failed(error)) => {
                return Err(ProviderError::Network(format!("Connection error: {error}")));
            }
        };
        let Head {
            status,
            headers,
            framing,
            reusable,
        } = head;
        let body = direct::Shared::new(Body::new(socket, buffer, framing, reusable, origin));
        let mut response = http::Response::builder()
            .status(status)
            .version(http::Version::HTTP_11)
            .url(request.url().clone())
            .extension(body.clone());
        if let Some(map) = response.headers_mut() {
            *map = headers;
        }
        return response
            .body(reqwest::Body::wrap(body))
            .map(reqwest::Response::from)
            .map_err(|error| ProviderError::Network(format!("Connection error: {error}")));
    }
}

/// Why an exchange gave no response head.
enum Exchange {
    /// The connection failed before any byte of an answer: on a reused connection, the server
    /// had closed it.
    Unanswered(io::Error),
    /// It failed after.
    Failed(io::Error),
}

/// Writes the request (what of it [`connect`] did not send already) and reads the response
/// head (interim `1xx` heads skipped); `buffer` keeps the body bytes read with it.
async fn exchange(
    socket: &mut Conn,
    wire: &[u8],
    buffer: &mut BytesMut,
    method: &reqwest::Method,
    closes: bool,
) -> Result<Head, Exchange> {
    // A server may answer before it has read the whole request (a `413` for a body too large,
    // a `401`) and close the connection: writing the rest then fails, but its answer is in the
    // socket, ahead of the reset, and says more than "connection reset". So a failed write is
    // followed by a read, which cannot wait (the connection is closed or reset), and its error
    // stands only when no answer came.
    let mut unsent = None;
    if !wire.is_empty() {
        unsent = socket.write_all(wire).await.err();
    }
    let mut answered = false;
    loop {
        if let Some((mut head, used)) =
            parse_response(buffer, method, closes).map_err(Exchange::Failed)?
        {
            bytes::Buf::advance(buffer, used);
            // Part of the request is still unsent: the connection cannot carry another.
            head.reusable &= unsent.is_none();
            if head.status == reqwest::StatusCode::SWITCHING_PROTOCOLS {
                return Err(Exchange::Failed(head::invalid(
                    "the server switched protocols".into(),
                )));
            }
            if head.status.is_informational() {
                continue;
            }
            return Ok(head);
        }
        if buffer.len() >= MAX_HEAD_BYTES {
            return Err(Exchange::Failed(head::invalid(format!(
                "the response head is larger than {MAX_HEAD_BYTES} bytes"
            ))));
        }
        if buffer.capacity() == buffer.len() {
            buffer.reserve(INITIAL_READ_BYTES);
        }
        let read = socket.read_buf(buffer).await;
        match read {
            Ok(0) => {
                let error = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection before its response head",
                );
                return Err(if answered {
                    Exchange::Failed(error)
                } else {
                    Exchange::Unanswered(unsent.unwrap_or(error))
                });
            }
            Ok(_) => answered = true,
            Err(error) if answered => return Err(Exchange::Failed(error)),
            Err(error) => return Err(Exchange::Unanswered(unsent.unwrap_or(error))),
        }
    }
}

/// A fresh connection to `origin`, its addresses tried in order within [`CONNECT_TIMEOUT`]
/// (see [`connect_any`]), and how much of `wire` (the request) it has sent already.
///
/// The request is written right after the non-blocking `connect`, before the socket is
/// registered with any runtime (see [`Conn`]): a connection to a local server is usually
/// established by then, and the request leaves without a wait for writability (an `epoll`
/// round trip, often on another thread), the `SO_ERROR` check after it, or the connect timer's
/// registration (the timeout below arms its timer only when the connection is still pending).
/// A socket still connecting takes nothing (`EAGAIN`) and is waited for as before.
async fn connect(
    request: &reqwest::Request,
    origin: &Origin,
    wire: &[u8],
) -> Result<(Conn, usize), ProviderError> {
    let failed = |error: &dyn std::fmt::Display| {
        format!(
            "{}: {error}",
            super::could_not_connect(&origin.host, origin.port)
        )
    };
    let attempt = async {
        let (addresses, budget): (Vec<SocketAddr>, _) = match request.url().host() {
            Some(url::Host::Ipv4(ip)) => {
                (vec![SocketAddr::from((ip, origin.port))], CONNECT_TIMEOUT)
            }
            Some(url::Host::Ipv6(ip)) => {
                (vec![SocketAddr::from((ip, origin.port))], CONNECT_TIMEOUT)
            }
            _ => {
                // The addresses share what the lookup left of the limit.
                let asked = tokio::time::Instant::now();
                let addresses = tokio::net::lookup_host((&*origin.host, origin.port))
                    .await?
                    .collect();
                (addresses, CONNECT_TIMEOUT.saturating_sub(asked.elapsed()))
            }
        };
        connect_any(&addresses, wire, budget).await
    };
    let timed_out = || {
        ProviderError::Timeout(failed(&format_args!(
            "no connection after {} ms",
            CONNECT_TIMEOUT.as_millis()
        )))
    };
    match within(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok(connected)) => Ok(connected),
        Ok(Err(error)) if error.kind() == io::ErrorKind::TimedOut => Err(timed_out()),
        Ok(Err(error)) => Err(ProviderError::Network(failed(&error))),
        Err(_) => Err(timed_out()),
    }
}

/// Connects to the first of `addresses` that answers within `budget`, in order. Each attempt
/// gets an equal share of what is left of the budget, so an address that never answers (a
/// host's IPv6 address without a route to it, its packets dropped) leaves time for the next
/// one instead of using it all: reqwest's connector divides its connect timeout the same way.
/// An attempt given up is a socket that never connected, so it sent nothing.
async fn connect_any(
    addresses: &[SocketAddr],
    wire: &[u8],
    budget: Duration,
) -> io::Result<(Conn, usize)> {
    if let [address] = addresses {
        // One address: the caller's `within` bounds it (no clock read here).
        return connect_and_send(*address, wire).await;
    }
    let started = tokio::time::Instant::now();
    let mut last = None;
    for (tried, &address) in addresses.iter().enumerate() {
        let left = u32::try_from(addresses.len() - tried).unwrap_or(u32::MAX);
        let share = budget.saturating_sub(started.elapsed()) / left;
        match within(share, connect_and_send(address, wire)).await {
            Ok(Ok(connected)) => return Ok(connected),
            Ok(Err(error)) => last = Some(error),
            Err(_) => {
                last = Some(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{address}: no connection after {} ms", share.as_millis()),
                ));
            }
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address for the host")))
}

/// Connects to `address` and sends what of `wire` the socket takes at once; the connection is
/// established (or the error is the connection's) when this returns: it took part of `wire`, or
/// became writable without an error.
async fn connect_and_send(address: SocketAddr, wire: &[u8]) -> io::Result<(Conn, usize)> {
    let socket = nonblocking_socket(address)?;
    socket.set_tcp_nodelay(true)?;
    match socket.connect(&address.into()) {
        Ok(()) => {}
        Err(error) if connecting(&error) => {}
        Err(error) => return Err(error),
    }
    let mut socket = std::net::TcpStream::from(socket);
    // std's `write` sends with `MSG_NOSIGNAL`: a failed connection is an error, not a SIGPIPE.
    let sent = match io::Write::write(&mut socket, wire) {
        Ok(sent) => sent,
        // Still connecting: Linux says `EAGAIN`, Windows and the BSDs say "not connected".
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::NotConnected
            ) =>
        {
            0
        }
        Err(error) => return Err(error),
    };
    let mut socket = Conn::new(socket);
    // A socket that took part of the request is connected; what happens to the rest is the
    // exchange's (a server may answer and reset it before reading it all).
    if sent == 0 && !wire.is_empty() {
        // What tokio's own `connect` waits for: writable, then the connection's error if any.
        socket.writable().await?;
        if let Some(error) = socket.take_error()? {
            return Err(error);
        }
    }
    Ok((socket, sent))
}

/// A non-blocking TCP socket for `address` (one system call where the platform can).
fn nonblocking_socket(address: SocketAddr) -> io::Result<socket2::Socket> {
    let domain = socket2::Domain::for_address(address);
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        socket2::Socket::new(
            domain,
            socket2::Type::STREAM.nonblocking(),
            Some(socket2::Protocol::TCP),
        )
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    {
        let socket =
            socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
        socket.set_nonblocking(true)?;
        Ok(socket)
    }
}

/// Whether a non-blocking `connect`'s error only says the connection is under way.
fn connecting(error: &io::Error) -> bool {
    #[cfg(unix)]
    if error.raw_os_error() == Some(libc::EINPROGRESS) {
        return true;
    }
    error.kind() == io::ErrorKind::WouldBlock
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// A raw server: each connection reads requests (heads ending in a blank line, bodies by
    /// `content-length`) and answers each with the next of `answers`; `None` closes the
    /// connection instead. Returns its port and how many connections it accepted.
    async fn serve(answers: Vec<Option<&'static str>>) -> (u16, Arc<AtomicUsize>) {
        let (port, accepted, _) = serve_counting(answers).await;
        (port, accepted)
    }

    /// [`serve`], also counting the requests read whole.
    async fn serve_counting(
        answers: Vec<Option<&'static str>>,
    ) -> (u16, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let read = requests.clone();
        let counter = accepted.clone();
        let answers = Arc::new(std::sync::Mutex::new(answers.into_iter()));
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let answers = answers.clone();
                let read = read.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    loop {
                        let mut chunk = [0u8; 4096];
                        let Ok(n) = socket.read(&mut chunk).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        seen.extend_from_slice(&chunk[..n]);
                        let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") else {
                            continue;
                        };
                        let head = String::from_utf8_lossy(&seen[..end]).to_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length: "))
                            .map_or(0, |n| n.trim().parse().unwrap());
                        if seen.len() < end + 4 + length {
                            continue;
                        }
                        seen.drain(..end + 4 + length);
                        read.fetch_add(1, Ordering::SeqCst);
                        let answer = answers.lock().unwrap().next().flatten();
                        match answer {
                            Some(answer) => socket.write_all(answer.as_bytes()).await.unwrap(),
                            None => return,
                        }
                    }
                });
            }
        });
        (port, accepted, requests)
    }

    async fn post(port: u16) -> Result<(u16, String), ProviderError> {
        let request = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/v1/x"))
            .body("{}")
            .build()
            .unwrap();
        assert!(serves(&request));
        let response = execute(&request).await?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|error| {
            ProviderError::Network(super::super::transport_error_message(&error))
        })?;
        Ok((status, text))
    }

    const CHUNKED: &str = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
                           5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";

    #[tokio::test]
    async fn a_connection_read_to_its_end_is_used_again() {
        let (port, accepted) = serve(vec![Some(CHUNKED), Some(CHUNKED)]).await;
        let origin = Origin {
            host: "127.0.0.1".into(),
            port,
        };
        assert_eq!(post(port).await.unwrap(), (200, "hello world".into()));
        assert_eq!(pool().idle(&origin), 1);
        assert_eq!(post(port).await.unwrap(), (200, "hello world".into()));
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    /// A head several times the first read buffer's size (cookies, rate-limit headers) takes
    /// more reads, and a body larger than the buffer comes whole.
    #[tokio::test]
    async fn a_head_and_a_body_larger_than_the_read_buffer_come_whole() {
        let cookie = "c".repeat(INITIAL_READ_BYTES);
        let body = "b".repeat(3 * INITIAL_READ_BYTES);
        let answer = format!(
            "HTTP/1.1 200 OK\r\nset-cookie: {cookie}\r\nset-cookie: {cookie}\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        let (port, accepted) = serve(vec![Some(answer.leak()), Some(CHUNKED)]).await;
        assert_eq!(post(port).await.unwrap(), (200, body));
        // Read to its end: the connection serves the next request.
        assert_eq!(post(port).await.unwrap(), (200, "hello world".into()));
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_replaced() {
        // The first connection answers once, then closes when the second request comes (or
        // before): the second request gets a fresh connection either way.
        let (port, accepted) = serve(vec![
            Some("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"),
            None,
            Some(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 3\r\n\r\nyes",
            ),
        ])
        .await;
        assert_eq!(post(port).await.unwrap(), (200, "ok".into()));
        assert_eq!(post(port).await.unwrap(), (201, "yes".into()));
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_request_is_not_sent_again_on_pooled_connection_after_pooled_connection() {
        // Four connections go back to the pool; then the server reads each request and closes
        // without answering (it died on it). The request is sent once on a pooled connection
        // and once on a fresh one, not on each of the four.
        const OK: Option<&str> = Some("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        let mut answers = vec![OK; 4];
        answers.extend([None; 8]);
        let (port, _, requests) = serve_counting(answers).await;
        let filled = futures::future::join_all((0..4).map(|_| post(port))).await;
        assert!(filled.iter().all(Result::is_ok), "{filled:?}");
        let origin = Origin {
            host: "127.0.0.1".into(),
            port,
        };
        assert_eq!(pool().idle(&origin), 4);
        let before = requests.load(Ordering::SeqCst);
        let error = post(port).await.unwrap_err().to_string();
        assert!(error.contains("Connection error"), "{error}");
        assert_eq!(requests.load(Ordering::SeqCst) - before, 2);
    }

    /// A server that answers one request with half its body, then closes the connection.
    async fn cut_body_server() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await;
            let cut = "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf";
            socket.write_all(cut.as_bytes()).await.unwrap();
        });
        port
    }

    #[tokio::test]
    async fn a_cut_body_is_an_error_and_its_connection_is_not_kept() {
        let port = cut_body_server().await;
        let error = post(port).await.unwrap_err().to_string();
        assert!(error.contains("cut off"), "{error}");
        let origin = Origin {
            host: "127.0.0.1".into(),
            port,
        };
        assert_eq!(pool().idle(&origin), 0);
    }

    /// A body read directly (a stream's frame reader, see `direct`) gives the same bytes and
    /// fails with the same kind and words as through reqwest; the response's reqwest side then
    /// reads an ended body.
    #[tokio::test]
    async fn a_cut_body_reads_alike_directly_and_through_reqwest() {
        let through_reqwest = post(cut_body_server().await).await.unwrap_err();
        let port = cut_body_server().await;
        let request = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/v1/x"))
            .body("{}")
            .build()
            .unwrap();
        let mut response = execute(&request).await.unwrap();
        let mut body = take_body(&mut response).expect("this client's body");
        assert!(take_body(&mut response).is_none(), "taken once");
        let mut read = Vec::new();
        let directly = loop {
            match futures::StreamExt::next(&mut body).await {
                Some(Ok(bytes)) => read.extend_from_slice(&bytes),
                Some(Err(error)) => break error,
                None => panic!("a cut body ended without an error"),
            }
        };
        assert_eq!(read, b"half");
        // reqwest adds its own layer ("request or response body error") between the two.
        let cause = "the server closed the connection 6 bytes before the body's end";
        for error in [&directly, &through_reqwest] {
            let text = error.to_string();
            assert!(
                text.starts_with("Connection error: the response body was cut off: ")
                    && text.ends_with(cause),
                "{text}"
            );
        }
        assert!(
            matches!(directly, ProviderError::Network(_)),
            "{directly:?}"
        );
        assert_eq!(response.text().await.unwrap(), "");
    }

    /// The first write right after `connect` takes what the socket buffer holds; the rest
    /// goes through the runtime once the connection is writable.
    #[tokio::test]
    async fn a_request_larger_than_the_socket_buffer_is_sent_whole() {
        let (port, _) = serve(vec![Some("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")]).await;
        let body = "x".repeat(8 << 20);
        let request = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/v1/x"))
            .body(body)
            .build()
            .unwrap();
        let response = execute(&request).await.unwrap();
        assert_eq!(response.text().await.unwrap(), "ok");
    }

    /// A server that answers `413` after the request head, without reading the body, and
    /// closes: its answer reaches the caller, not the reset that writing the body ran into.
    #[tokio::test]
    async fn an_answer_before_the_whole_body_is_read_is_the_response() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let mut chunk = [0u8; 1024];
                let n = socket.read(&mut chunk).await.unwrap();
                seen.extend_from_slice(&chunk[..n]);
            }
            let answer =
                "HTTP/1.1 413 Payload Too Large\r\ncontent-length: 13\r\n\r\nbody too big!";
            socket.write_all(answer.as_bytes()).await.unwrap();
            // Closing with the body unread resets the connection.
            drop(socket);
        });
        let request = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/v1/x"))
            .body("x".repeat(32 << 20))
            .build()
            .unwrap();
        let response = execute(&request).await.unwrap();
        assert_eq!(response.status().as_u16(), 413);
        assert_eq!(response.text().await.unwrap(), "body too big!");
        // Its connection was not kept: a second request to the closed port fails to connect.
        let error = execute(&request).await.unwrap_err();
        assert!(error.to_string().contains("could not connect"), "{error}");
    }

    #[tokio::test]
    async fn a_refused_connection_names_host_and_port() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let error = post(port).await.unwrap_err();
        assert!(
            error.to_string().starts_with(&format!(
                "Connection error: could not connect to the provider at 127.0.0.1:{port}"
            )),
            "{error}"
        );
    }

    #[test]
    fn https_proxies_and_custom_clients_go_to_reqwest() {
        let client = reqwest::Client::new();
        assert!(!serves(
            &client.get("https://example.com/").build().unwrap()
        ));
        assert!(serves(&client.get("http://[::1]:8/x").build().unwrap()));
        // reqwest moves a URL's user and password into an `authorization` header.
        let request = client.get("http://user:pw@127.0.0.1/").build().unwrap();
        assert!(serves(&request) && request.headers().contains_key("authorization"));
    }

    /// An address that never answers (its packets dropped: here a listener whose accept queue
    /// is full, so the kernel drops new SYNs) takes only its share of the connect budget; the
    /// next address gets the request, once.
    // Linux drops a SYN to a full accept queue (by default); other systems may refuse it.
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_address_that_never_answers_leaves_time_for_the_next() {
        let silent =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        silent
            .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        silent.listen(0).unwrap();
        let silent_address = silent.local_addr().unwrap().as_socket().unwrap();
        // The one connection its queue holds; the next SYN is dropped.
        let _queued = std::net::TcpStream::connect(silent_address).unwrap();
        let (port, accepted, requests) = serve_counting(vec![None]).await;
        let good = SocketAddr::from(([127, 0, 0, 1], port));
        let wire = b"POST /v1/x HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n";
        let budget = Duration::from_secs(6);
        let connected = within(budget, connect_any(&[silent_address, good], wire, budget)).await;
        let (mut conn, sent) = connected
            .expect("the silent address used the whole budget")
            .expect("the second address connects");
        if sent < wire.len() {
            conn.write_all(&wire[sent..]).await.unwrap();
        }
        for _ in 0..6000 {
            if requests.load(Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(requests.load(Ordering::SeqCst), 1);
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // Every address silent: a timeout, each in its turn.
        let error = connect_any(
            &[silent_address, silent_address],
            wire,
            Duration::from_millis(400),
        )
        .await
        .err()
        .expect("nothing answers");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
    }
}
