//! A response body read straight from its connection, in the task that reads the stream: no
//! connection task in between, one read buffer that starts small and grows only for a body
//! that arrives faster than it is read. A body read to its end gives its connection back to
//! the pool, and so does one whose reader stopped at its protocol's end marker when the
//! framing's end has arrived too; one dropped midway (an aborted stream) closes it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes, BytesMut};
use http_body::Frame;

use super::conn::Conn;
use super::head::{Framing, invalid};
use super::pool::{Origin, pool};

/// The read buffer of a fresh connection: enough for most response heads (a larger one takes
/// one more read) and a few events; an idle stream holds no more. Every open stream holds one,
/// so it is small: a body that arrives faster than it is read doubles it (up to
/// [`MAX_READ_BYTES`]).
pub(super) const INITIAL_READ_BYTES: usize = 2 * 1024;

/// The largest read: a body arriving this fast (a large tool call) is read in such steps.
const MAX_READ_BYTES: usize = 64 * 1024;

/// The most of a body's rest read when its reader let go of it (see [`Body::settle`]).
const MAX_SETTLE_BYTES: usize = 16 * 1024;

/// The longest chunk-size line (with its extensions) or trailer section accepted.
const MAX_LINE_BYTES: usize = 4 * 1024;
const MAX_TRAILER_BYTES: usize = 16 * 1024;

/// Where the decoder is in the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// This many bytes left (`content-length`).
    Length(u64),
    /// Before a chunk-size line.
    ChunkSize,
    /// Inside a chunk: this many bytes left.
    ChunkData(u64),
    /// After a chunk's data: its CRLF.
    ChunkEnd,
    /// After the last chunk: trailer lines up to an empty one; this many bytes seen.
    Trailer(usize),
    /// Everything until the connection closes.
    UntilClose,
    /// The body has ended.
    Done,
}

/// What the decoder made of the buffered bytes.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Body bytes.
    Data(Bytes),
    /// More bytes are needed.
    NeedMore,
    /// The body has ended (the buffer holds what follows it).
    Done,
}

/// Undoes the body's framing, over bytes cut anywhere.
#[derive(Debug)]
pub(super) struct Decoder {
    state: State,
}

impl Decoder {
    pub(super) fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Empty | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::ChunkSize,
            Framing::UntilClose => State::UntilClose,
        };
        Self { state }
    }

    pub(super) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Takes what it can from the front of `buffer`.
    pub(super) fn step(&mut self, buffer: &mut BytesMut) -> io::Result<Step> {
        loop {
            match self.state {
                State::Done => return Ok(Step::Done),
                State::Length(left) | State::ChunkData(left) => {
                    if buffer.is_empty() {
                        return Ok(Step::NeedMore);
                    }
                    let take = usize::try_from(left).map_or(buffer.len(), |n| n.min(buffer.len()));
                    let left = left - take as u64;
                    self.state = match self.state {
                        State::Length(_) if left == 0 => State::Done,
                        State::Length(_) => State::Length(left),
                        _ if left == 0 => State::ChunkEnd,
                        _ => State::ChunkData(left),
                    };
                    return Ok(Step::Data(buffer.split_to(take).freeze()));
                }
                State::UntilClose => {
                    if buffer.is_empty() {
                        return Ok(Step::NeedMore);
                    }
                    return Ok(Step::Data(buffer.split().freeze()));
                }
                State::ChunkSize => match httparse::parse_chunk_size(buffer) {
                    // httparse reads a line without a digit (`\r\n`, `;ext`) as size 0, the
                    // last chunk: a body with a stray blank line would end there, silently cut.
                    Ok(httparse::Status::Complete(_))
                        if !buffer.first().is_some_and(u8::is_ascii_hexdigit) =>
                    {
                        return Err(invalid("invalid chunk size in the response body".into()));
                    }
                    Ok(httparse::Status::Complete((used, size))) => {
                        buffer.advance(used);
                        self.state = if size == 0 {
                            State::Trailer(0)
                        } else {
                            State::ChunkData(size)
                        };
                    }
                    Ok(httparse::Status::Partial) if buffer.len() <= MAX_LINE_BYTES => {
                        return Ok(Step::NeedMore);
                    }
                    _ => return Err(invalid("invalid chunk size in the response body".into())),
                },
                State::ChunkEnd => match buffer.as_ref() {
                    [] | [b'\r'] => return Ok(Step::NeedMore),
                    [b'\r', b'\n', ..] => {
                        buffer.advance(2);
                        self.state = State::ChunkSize;
                    }
                    _ => return Err(invalid("a chunk of the response body has no end".into())),
                },
                State::Trailer(seen) => {
                    let Some(end) = memchr::memchr(b'\n', buffer) else {
                        if seen + buffer.len() > MAX_TRAILER_BYTES {
                            return Err(invalid("the response's trailers are too large".into()));
                        }
                        return Ok(Step::NeedMore);
                    };
                    let empty = matches!(&buffer[..end], b"" | b"\r");
                    buffer.advance(end + 1);
                    self.state = if empty {
                        State::Done
                    } else {
                        State::Trailer(seen + end + 1)
                    };
                }
            }
        }
    }

    /// The connection closed: the end of a body read to the close, else a cut body.
    pub(super) fn closed(&mut self) -> io::Result<()> {
        match self.state {
            State::UntilClose | State::Done => {
                self.state = State::Done;
                Ok(())
            }
            State::Length(left) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the server closed the connection {left} bytes before the body's end"),
            )),
            _ => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection before the body's last chunk",
            )),
        }
    }
}

/// One response's body, read from its connection.
pub(super) struct Body {
    /// The connection; `None` once the body ended or failed.
    io: Option<Conn>,
    buffer: BytesMut,
    decoder: Decoder,
    /// Whether the connection goes back to the pool at the body's end.
    reusable: bool,
    origin: Origin,
    /// How much the next read asks room for.
    read_bytes: usize,
}

impl Body {
    /// The body that follows a head: `buffer` holds the bytes already read after it.
    pub(super) fn new(
        io: Conn,
        buffer: BytesMut,
        framing: Framing,
        reusable: bool,
        origin: Origin,
    ) -> Self {
        let mut body = Self {
            io: Some(io),
            buffer,
            decoder: Decoder::new(framing),
            reusable,
            origin,
            read_bytes: INITIAL_READ_BYTES,
        };
        if body.decoder.is_done() {
            body.finish();
        }
        body
    }

    /// The body has ended: its connection goes back to the pool if the server keeps it open
    /// and sent nothing more.
    fn finish(&mut self) {
        if let Some(io) = self.io.take()
            && self.reusable
            && let Ok(socket) = io.into_std()
        {
            self.give_back(socket);
        }
        self.buffer = BytesMut::new();
    }

    /// Pools the connection of an ended body, unless the server sent more after it.
    fn give_back(&mut self, socket: std::net::TcpStream) {
        if self.buffer.is_empty() {
            pool().put(std::mem::take(&mut self.origin), socket);
        }
    }

    /// The reader let go of the body before its end. A protocol's reader stops at its own end
    /// marker (`data: [DONE]`, `message_stop`), and the body's framing end (the last chunk)
    /// follows at once: what has already arrived is read, without waiting and at most
    /// [`MAX_SETTLE_BYTES`], and if the body ends there the connection is kept. Otherwise (an
    /// aborted stream) it closes now, which tells the server to stop.
    fn settle(&mut self, io: Conn) {
        let Ok(mut socket) = io.into_std() else {
            return;
        };
        let mut read = 0;
        loop {
            match self.decoder.step(&mut self.buffer) {
                Ok(Step::Done) => return self.give_back(socket),
                Ok(Step::Data(bytes)) => read += bytes.len(),
                Ok(Step::NeedMore) => {
                    let mut more = [0u8; 1024];
                    match io::Read::read(&mut socket, &mut more) {
                        Ok(n) if n > 0 => {
                            read += n;
                            self.buffer.extend_from_slice(&more[..n]);
                        }
                        // Closed, failed, or nothing there yet (`WouldBlock`).
                        _ => return,
                    }
                }
                Err(_) => return,
            }
            if read > MAX_SETTLE_BYTES {
                return;
            }
        }
    }

    /// The body failed: the connection is closed.
    fn fail(&mut self, error: io::Error) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        self.io = None;
        self.buffer = BytesMut::new();
        Poll::Ready(Some(Err(error)))
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Some(io) = self.io.take()
            && self.reusable
        {
            self.settle(io);
        }
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        let this = self.get_mut();
        loop {
            match this.decoder.step(&mut this.buffer) {
                Ok(Step::Data(bytes)) => return Poll::Ready(Some(Ok(Frame::data(bytes)))),
                Ok(Step::Done) => {
                    this.finish();
                    return Poll::Ready(None);
                }
                Ok(Step::NeedMore) => {}
                Err(error) => return this.fail(error),
            }
            let Some(io) = this.io.as_mut() else {
                // Failed before: reqwest does not poll again, but nothing more comes.
                return Poll::Ready(None);
            };
            if this.buffer.capacity() - this.buffer.len() < this.read_bytes / 4 {
                this.buffer.reserve(this.read_bytes);
            }
            let room = this.buffer.capacity() - this.buffer.len();
            let read = ready!(io.poll_read_buf(cx, &mut this.buffer));
            match read {
                Ok(0) => match this.decoder.closed() {
                    Ok(()) => {
                        this.io = None;
                        this.buffer = BytesMut::new();
                        return Poll::Ready(None);
                    }
                    Err(error) => return this.fail(error),
                },
                // A full read: the body comes faster than it is read; read more at a time.
                Ok(n) if n == room => this.read_bytes = (this.read_bytes * 2).min(MAX_READ_BYTES),
                Ok(_) => {}
                Err(error) => return this.fail(error),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.decoder.is_done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Decodes `wire` fed in pieces cut at `cuts`; the body, and whether it ended.
    fn decode(framing: Framing, wire: &[u8], cuts: &[usize]) -> io::Result<(Vec<u8>, bool)> {
        let mut decoder = Decoder::new(framing);
        let mut buffer = BytesMut::new();
        let mut body = Vec::new();
        let mut at = 0;
        let mut ends: Vec<usize> = cuts.iter().map(|&cut| cut.min(wire.len())).collect();
        ends.sort_unstable();
        ends.push(wire.len());
        for end in ends {
            buffer.extend_from_slice(&wire[at..end.max(at)]);
            at = end.max(at);
            loop {
                match decoder.step(&mut buffer)? {
                    Step::Data(bytes) => body.extend_from_slice(&bytes),
                    Step::NeedMore => break,
                    Step::Done => return Ok((body, true)),
                }
            }
        }
        Ok((body, false))
    }

    #[test]
    fn chunks_with_extensions_and_trailers_decode() {
        let wire =
            b"5;name=value\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nx-trailer: 1\r\n\r\nNEXT";
        let (body, done) = decode(Framing::Chunked, wire, &[]).unwrap();
        assert_eq!((body.as_slice(), done), (&b"hello world"[..], true));
    }

    #[test]
    fn bad_chunks_are_errors() {
        for wire in [&b"zz\r\n"[..], b"5\r\nhelloXX", b"5\r\nhello\r\n0\r\n"] {
            let result = decode(Framing::Chunked, wire, &[]);
            assert!(result.is_err() || !result.unwrap().1, "{wire:?}");
        }
        let long = vec![b'1'; MAX_LINE_BYTES + 2];
        assert!(decode(Framing::Chunked, &long, &[]).is_err());
        // A size line without a digit is not the last chunk (httparse reads it as 0).
        for wire in [
            &b"5
hello

5
world
0

"[..],
            b"5
hello
;ext
0

",
            b"5
hello
 
0

",
        ] {
            assert!(decode(Framing::Chunked, wire, &[]).is_err(), "{wire:?}");
        }
        let mut trailers = b"0\r\n".to_vec();
        trailers.extend(std::iter::repeat_n(b'x', MAX_TRAILER_BYTES + 1));
        assert!(decode(Framing::Chunked, &trailers, &[]).is_err());
    }

    #[test]
    fn a_length_body_stops_at_its_length_and_a_close_is_checked() {
        let (body, done) = decode(Framing::Length(3), b"abcdef", &[1]).unwrap();
        assert_eq!((body.as_slice(), done), (&b"abc"[..], true));
        let mut decoder = Decoder::new(Framing::Length(3));
        assert!(decoder.closed().is_err());
        let mut decoder = Decoder::new(Framing::UntilClose);
        assert!(decoder.closed().is_ok() && decoder.is_done());
    }

    proptest! {
        /// Any body, chunked any way and cut anywhere, decodes to itself.
        #[test]
        fn chunked_bodies_survive_any_cut(
            pieces in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 0..8),
            cuts in proptest::collection::vec(0usize..400, 0..12),
        ) {
            let mut wire = Vec::new();
            for piece in &pieces {
                wire.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                wire.extend_from_slice(piece);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(b"0\r\n\r\n");
            let (body, done) = decode(Framing::Chunked, &wire, &cuts).unwrap();
            prop_assert!(done);
            prop_assert_eq!(body, pieces.concat());
        }
    }
}
