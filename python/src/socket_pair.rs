//! Connected pairs of local sockets, for waking a thread that waits in Python's own C code
//! (a selector, `socket.recv`) from a thread that does not hold the GIL: a Unix socket pair
//! where there is one, else a TCP connection over the loopback interface (Windows' selectors
//! watch sockets only).

#[cfg(unix)]
pub(crate) type Socket = std::os::unix::net::UnixStream;
#[cfg(not(unix))]
pub(crate) type Socket = std::net::TcpStream;

/// Two connected sockets.
#[cfg(unix)]
pub(crate) fn pair() -> std::io::Result<(Socket, Socket)> {
    Socket::pair()
}

/// Two connected sockets: connects to a listener of its own; an accepted peer that is not
/// this connection (another local process racing for the port) is refused.
#[cfg(not(unix))]
pub(crate) fn pair() -> std::io::Result<(Socket, Socket)> {
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    let signal = Socket::connect(listener.local_addr()?)?;
    loop {
        let (watched, peer) = listener.accept()?;
        if peer == signal.local_addr()? {
            signal.set_nodelay(true)?;
            return Ok((signal, watched));
        }
    }
}

/// The file descriptor (a `SOCKET` on Windows) of `socket`, as Python's `fileno()` gives it.
#[cfg(unix)]
pub(crate) fn fileno(socket: &Socket) -> u64 {
    use std::os::fd::AsRawFd as _;
    // A file descriptor is never negative.
    socket.as_raw_fd().unsigned_abs().into()
}

/// The file descriptor (a `SOCKET` on Windows) of `socket`, as Python's `fileno()` gives it.
#[cfg(windows)]
pub(crate) fn fileno(socket: &Socket) -> u64 {
    use std::os::windows::io::AsRawSocket as _;
    socket.as_raw_socket()
}
