//! A connection's socket, registered with the runtime only while a runtime task waits on it.
//!
//! A stream read on a thread of its own (see `ai::blocking`) reads its socket directly and
//! waits for it with that thread's `poll(2)`: were the socket registered, the runtime would see
//! every frame too and wake a worker for nothing. A task awaiting the stream registers it on
//! its first wait, and a reading thread takes it out again. A fresh or pooled connection starts
//! out unregistered, so a connection read only by a thread never touches the runtime.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{BufMut as _, BytesMut};
use tokio::io::AsyncWrite as _;
use tokio_util::io::poll_read_buf;

use crate::ai::blocking;

/// A connection to a server (see the module's doc).
pub(super) struct Conn {
    socket: Socket,
    /// A reading thread's last read left the socket empty: the next read waits first (see
    /// `blocking::woke_for`), which spares a read that would say `EAGAIN` per frame.
    drained: bool,
}

enum Socket {
    /// Not registered with any runtime (non-blocking).
    Plain(std::net::TcpStream),
    /// Registered with the runtime of the task that last waited on it.
    Registered(tokio::net::TcpStream),
    /// Lost while changing between the two (registering failed: no runtime).
    Gone,
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the connection is gone")
}

impl Conn {
    /// A connection over `socket`, which must be non-blocking.
    pub(super) fn new(socket: std::net::TcpStream) -> Self {
        Self {
            socket: Socket::Plain(socket),
            drained: false,
        }
    }

    /// The socket, unregistered: for a reading thread, and for the pool.
    fn plain(&mut self) -> io::Result<&std::net::TcpStream> {
        if let Socket::Registered(_) = self.socket {
            let Socket::Registered(socket) = std::mem::replace(&mut self.socket, Socket::Gone)
            else {
                unreachable!("matched above");
            };
            self.socket = Socket::Plain(socket.into_std()?);
        }
        match &self.socket {
            Socket::Plain(socket) => Ok(socket),
            _ => Err(gone()),
        }
    }

    /// The socket, registered with the current runtime: for a runtime task's wait.
    fn registered(&mut self) -> io::Result<&mut tokio::net::TcpStream> {
        if let Socket::Plain(_) = self.socket {
            let Socket::Plain(socket) = std::mem::replace(&mut self.socket, Socket::Gone) else {
                unreachable!("matched above");
            };
            self.socket = Socket::Registered(tokio::net::TcpStream::from_std(socket)?);
        }
        match &mut self.socket {
            Socket::Registered(socket) => Ok(socket),
            _ => Err(gone()),
        }
    }

    /// Reads what has arrived into `buffer`'s spare room (`Ok(0)`: the server closed).
    pub(super) fn poll_read_buf(
        &mut self,
        cx: &mut Context<'_>,
        buffer: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        if blocking::is_reading_thread() {
            let drained = self.drained;
            let socket = self.plain()?;
            #[cfg(unix)]
            if drained && !woke_for(socket, blocking::Interest::Read) {
                return self
                    .would_block(io::ErrorKind::WouldBlock.into(), blocking::Interest::Read);
            }
            #[cfg(not(unix))]
            let _ = drained;
            if buffer.capacity() == buffer.len() {
                buffer.reserve(1);
            }
            let spare = buffer.spare_capacity_mut();
            let room = spare.len();
            let received = socket2::SockRef::from(socket).recv(spare);
            return match received {
                Ok(read) => {
                    // SAFETY: `recv` initialised the first `read` bytes of the spare room.
                    unsafe { buffer.advance_mut(read) };
                    // Less than there was room for: the socket has nothing more now.
                    self.drained = read < room;
                    Poll::Ready(Ok(read))
                }
                Err(error) => {
                    self.drained = true;
                    self.would_block(error, blocking::Interest::Read)
                }
            };
        }
        // `poll_read_buf` (not `poll_read_ready` and `try_read_buf`): a read that leaves room in
        // the buffer has drained the socket, and tokio then clears its readiness, so the next
        // poll waits without a read that would only say `EAGAIN`.
        poll_read_buf(Pin::new(self.registered()?), cx, buffer)
    }

    /// Writes what of `data` the socket takes now.
    pub(super) fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        if blocking::is_reading_thread() {
            let socket = self.plain()?;
            // std's `write` sends with `MSG_NOSIGNAL`: a closed connection is an error, not a
            // SIGPIPE.
            return match io::Write::write(&mut &*socket, data) {
                Ok(written) => Poll::Ready(Ok(written)),
                Err(error) => self.would_block(error, blocking::Interest::Write),
            };
        }
        Pin::new(self.registered()?).poll_write(cx, data)
    }

    /// Waits until the socket is writable (a connection under way is then established or
    /// failed; see [`Self::take_error`]).
    pub(super) fn poll_writable(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if blocking::is_reading_thread() {
            let socket = self.plain()?;
            // A zero-timeout `poll(2)` would say as much; the reading thread's wait does it.
            let mut probe = libc_pollfd(socket, true);
            if poll_now(&mut probe) {
                return Poll::Ready(Ok(()));
            }
            return self.would_block(io::ErrorKind::WouldBlock.into(), blocking::Interest::Write);
        }
        self.registered()?.poll_write_ready(cx)
    }

    /// The socket's pending error (a failed connect), if any.
    pub(super) fn take_error(&self) -> io::Result<Option<io::Error>> {
        match &self.socket {
            Socket::Plain(socket) => socket.take_error(),
            Socket::Registered(socket) => socket.take_error(),
            Socket::Gone => Err(gone()),
        }
    }

    /// `Pending` after naming the socket to the reading thread, for an error that says it would
    /// block; the error otherwise.
    fn would_block<T>(
        &mut self,
        error: io::Error,
        interest: blocking::Interest,
    ) -> Poll<io::Result<T>> {
        if error.kind() != io::ErrorKind::WouldBlock {
            return Poll::Ready(Err(error));
        }
        #[cfg(unix)]
        if let Socket::Plain(socket) = &self.socket {
            use std::os::fd::AsRawFd as _;
            blocking::wait_for(socket.as_raw_fd(), interest);
        }
        #[cfg(not(unix))]
        let _ = interest;
        Poll::Pending
    }

    /// Reads into `buffer` (see [`Self::poll_read_buf`]).
    pub(super) async fn read_buf(&mut self, buffer: &mut BytesMut) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_read_buf(cx, buffer)).await
    }

    /// Writes all of `data`.
    pub(super) async fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let written = std::future::poll_fn(|cx| self.poll_write(cx, data)).await?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            data = &data[written..];
        }
        Ok(())
    }

    /// Waits until the socket is writable (see [`Self::poll_writable`]).
    pub(super) async fn writable(&mut self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_writable(cx)).await
    }

    /// The socket, taken out of any runtime (for the pool).
    pub(super) fn into_std(mut self) -> io::Result<std::net::TcpStream> {
        self.plain()?;
        match self.socket {
            Socket::Plain(socket) => Ok(socket),
            _ => Err(gone()),
        }
    }
}

/// Whether the reading thread's last wait ended for `socket` (see `blocking::woke_for`).
#[cfg(unix)]
fn woke_for(socket: &std::net::TcpStream, interest: blocking::Interest) -> bool {
    use std::os::fd::AsRawFd as _;
    blocking::woke_for(socket.as_raw_fd(), interest)
}

/// A `pollfd` for `socket`, for writability or readability.
#[cfg(unix)]
fn libc_pollfd(socket: &std::net::TcpStream, write: bool) -> libc::pollfd {
    use std::os::fd::AsRawFd as _;
    libc::pollfd {
        fd: socket.as_raw_fd(),
        events: if write { libc::POLLOUT } else { libc::POLLIN },
        revents: 0,
    }
}

/// Whether the socket is ready now (a zero-timeout `poll(2)`).
#[cfg(unix)]
fn poll_now(entry: &mut libc::pollfd) -> bool {
    // SAFETY: one initialised entry, alive for the call.
    unsafe { libc::poll(entry, 1, 0) > 0 }
}

#[cfg(not(unix))]
fn libc_pollfd(_: &std::net::TcpStream, _: bool) {}

#[cfg(not(unix))]
fn poll_now(_: &mut ()) -> bool {
    true
}
