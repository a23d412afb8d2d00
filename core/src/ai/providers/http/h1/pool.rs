//! Idle keep-alive connections of the HTTP/1.1 client, per origin.
//!
//! A connection waits here as a plain `std` socket, registered with no runtime: the next
//! request registers it with its own if it waits through one (see `conn`). So a connection opened on one runtime (a test's, a
//! binding's worker) is never driven by a runtime that is gone or not running, which a pooled
//! `tokio` socket would be. Before reuse, a non-blocking peek checks that the server has not
//! closed it meanwhile (servers close idle connections after a few seconds). While any
//! connection waits, a reaper thread drops those the server closed or that waited too long, so
//! an idle program does not keep closed connections (`CLOSE_WAIT`) until its next request.

use std::collections::HashMap;
use std::net::TcpStream as StdTcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::ai::providers::http::{FORK_GENERATIONS, GENERATION, MAX_IDLE_PER_HOST, POOL_IDLE};

/// Where a connection goes: host and port.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
pub(crate) struct Origin {
    pub host: Box<str>,
    pub port: u16,
}

struct Idle {
    socket: StdTcpStream,
    since: Instant,
}

/// The idle connections, by origin, most recent last.
#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<HashMap<Origin, Vec<Idle>>>,
    /// How long a connection may wait here.
    idle_timeout: Duration,
    /// A reaper thread runs (see [`Pool::reap`]).
    reaping: AtomicBool,
}

/// One pool per fork generation, as for the reqwest clients (see
/// [`forget_connections_after_fork`](crate::ai::forget_connections_after_fork)): a child never
/// touches a lock its parent held at the fork, nor writes on its parent's connections.
static POOLS: [OnceLock<Pool>; FORK_GENERATIONS] = [const { OnceLock::new() }; FORK_GENERATIONS];

/// This process's pool.
pub(crate) fn pool() -> &'static Pool {
    POOLS[GENERATION.load(Ordering::Acquire)].get_or_init(|| Pool::new(POOL_IDLE))
}

/// Whether generation `generation`'s pool was used.
pub(crate) fn used(generation: usize) -> bool {
    POOLS[generation].get().is_some()
}

impl Pool {
    fn new(idle_timeout: Duration) -> Self {
        Self {
            idle: Mutex::default(),
            idle_timeout,
            reaping: AtomicBool::new(false),
        }
    }

    /// An idle connection to `origin` the server still holds open (registered with no
    /// runtime: see `conn`).
    pub(crate) fn take(&self, origin: &Origin) -> Option<StdTcpStream> {
        loop {
            let Idle { socket, since } = {
                let mut idle = lock(&self.idle);
                let waiting = idle.get_mut(origin)?;
                let last = waiting.pop();
                if waiting.is_empty() {
                    idle.remove(origin);
                }
                last?
            };
            if since.elapsed() < self.idle_timeout && is_open(&socket) {
                return Some(socket);
            }
        }
    }

    /// Keeps `socket` (taken out of its runtime with `into_std`) for the next request to
    /// `origin`; drops connections that waited too
    /// long, and the oldest when `origin` already has [`MAX_IDLE_PER_HOST`].
    pub(crate) fn put(&'static self, origin: Origin, socket: StdTcpStream) {
        let now = Instant::now();
        {
            let mut idle = lock(&self.idle);
            idle.retain(|_, waiting| {
                waiting.retain(|entry| now.duration_since(entry.since) < self.idle_timeout);
                !waiting.is_empty()
            });
            let waiting = idle.entry(origin).or_default();
            if waiting.len() >= MAX_IDLE_PER_HOST {
                waiting.remove(0);
            }
            waiting.push(Idle { socket, since: now });
        }
        self.start_reaper();
    }

    /// Starts the reaper thread unless one runs: it wakes every half idle timeout (at most
    /// every 5 s), drops the connections the server closed or that waited too long, and ends
    /// when none waits. Without a thread (the process cannot make one), connections are still
    /// dropped at the next `take` or `put`.
    fn start_reaper(&'static self) {
        if self.reaping.swap(true, Ordering::AcqRel) {
            return;
        }
        let interval = (self.idle_timeout / 2).min(Duration::from_secs(5));
        let started = std::thread::Builder::new()
            .name("pi-agent-pool".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(interval);
                    if !self.reap() {
                        continue;
                    }
                    self.reaping.store(false, Ordering::Release);
                    // A `put` between the last look and the store above saw a reaper running.
                    if lock(&self.idle).is_empty() || self.reaping.swap(true, Ordering::AcqRel) {
                        return;
                    }
                }
            });
        if started.is_err() {
            self.reaping.store(false, Ordering::Release);
        }
    }

    /// Drops the connections the server closed or that waited too long; whether none waits.
    fn reap(&self) -> bool {
        let now = Instant::now();
        let mut idle = lock(&self.idle);
        idle.retain(|_, waiting| {
            waiting.retain(|entry| {
                now.duration_since(entry.since) < self.idle_timeout && is_open(&entry.socket)
            });
            !waiting.is_empty()
        });
        idle.is_empty()
    }

    /// How many connections wait for `origin`.
    #[cfg(test)]
    pub(crate) fn idle(&self, origin: &Origin) -> usize {
        lock(&self.idle).get(origin).map_or(0, Vec::len)
    }
}

/// The idle map, also after a panic elsewhere (its entries are always whole).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether the server still holds the connection open with nothing unread on it: a peek that
/// would block. Data or an end of stream means it is not fit for a new request.
fn is_open(socket: &StdTcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(socket.peek(&mut byte), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock)
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn a_connection_the_server_closed_is_dropped_while_the_program_idles() {
        // Without a reaper, the client's end stayed open (CLOSE_WAIT) until the next request.
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(Duration::from_millis(400))));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = StdTcpStream::connect(listener.local_addr().unwrap()).unwrap();
        client.set_nonblocking(true).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let origin = Origin {
            host: "127.0.0.1".into(),
            port: 1,
        };
        pool.put(origin.clone(), client);
        assert_eq!(pool.idle(&origin), 1);
        // The server closes its end; the reaper then drops the client's, which the server
        // sees as the end of the stream (a hang guard: the reaper looks every 200 ms).
        server
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        server.shutdown(std::net::Shutdown::Write).unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(
            server.read(&mut byte).unwrap(),
            0,
            "the client's end was closed"
        );
        assert_eq!(pool.idle(&origin), 0);
    }
}
