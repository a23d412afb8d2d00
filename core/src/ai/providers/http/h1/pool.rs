//! Idle keep-alive connections of the HTTP/1.1 client, per origin.
//!
//! A connection waits here as a plain `std` socket, registered with no runtime: the next
//! request registers it with its own if it waits through one (see `conn`). So a connection opened on one runtime (a test's, a
//! binding's worker) is never driven by a runtime that is gone or not running, which a pooled
//! `tokio` socket would be. Before reuse, a non-blocking peek checks that the server has not
//! closed it meanwhile (servers close idle connections after a few seconds).

use std::collections::HashMap;
use std::net::TcpStream as StdTcpStream;
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
}

/// One pool per fork generation, as for the reqwest clients (see
/// [`forget_connections_after_fork`](crate::ai::forget_connections_after_fork)): a child never
/// touches a lock its parent held at the fork, nor writes on its parent's connections.
static POOLS: [OnceLock<Pool>; FORK_GENERATIONS] = [const { OnceLock::new() }; FORK_GENERATIONS];

/// This process's pool.
pub(crate) fn pool() -> &'static Pool {
    POOLS[GENERATION.load(std::sync::atomic::Ordering::Acquire)].get_or_init(|| Pool {
        idle: Mutex::default(),
        idle_timeout: POOL_IDLE,
    })
}

/// Whether generation `generation`'s pool was used.
pub(crate) fn used(generation: usize) -> bool {
    POOLS[generation].get().is_some()
}

impl Pool {
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
    pub(crate) fn put(&self, origin: Origin, socket: StdTcpStream) {
        let now = Instant::now();
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
