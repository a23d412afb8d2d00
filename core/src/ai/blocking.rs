//! Reading a stream on the caller's own thread: what
//! [`AssistantMessageEventStream::blocking_next`](super::AssistantMessageEventStream::blocking_next)
//! (and through it C's `pi_stream_next` and Python's `for`) waits with.
//!
//! A thread that reads a stream by blocking used to wait for a runtime worker: the worker's
//! `epoll` saw the socket, ran the stream's task, and woke the reader, two thread wake-ups per
//! frame. Here the reader polls the stream's task itself, and when the task waits for its
//! socket (the library's HTTP/1.1 client, see `providers/http/h1`), the reader waits for that
//! socket with `poll(2)` on its own thread, as a program reading a socket does: the kernel
//! wakes the thread that parses the frame. Everything else the task may wait for (a timer, an
//! abort, a connection of reqwest's) wakes the reader through its [`Parker`], whose
//! [`Doorbell`] (an eventfd on Linux: one descriptor per reading thread) the same `poll(2)`
//! watches.
//!
//! While the reader polls, [`is_reading_thread`] is true on its thread, and a socket that would
//! block names itself with [`wait_for`] instead of registering with the runtime (the runtime
//! would otherwise see it too, and wake a worker for every frame).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

/// What a socket waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interest {
    Read,
    Write,
}

/// A socket the polled task waits for: its descriptor and what for.
#[cfg(unix)]
type Wait = (std::os::fd::RawFd, Interest);
#[cfg(not(unix))]
type Wait = ();

thread_local! {
    /// A reader polls a stream's task on this thread (see the module's doc).
    static READING: Cell<bool> = const { Cell::new(false) };
    /// The socket the task named while it was polled.
    static WAIT: Cell<Option<Wait>> = const { Cell::new(None) };
    /// The socket the thread's last wait ended for (it is ready), during the poll after it.
    static READY: Cell<Option<Wait>> = const { Cell::new(None) };
    /// The earliest deadline the polled task waits for (see [`wake_at`]).
    static WAKE_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Whether the current thread is a reader polling a stream's task: a socket that would block
/// then calls [`wait_for`] and returns `Pending` without registering with the runtime. Always
/// false where the reader cannot wait for a socket itself (not Unix).
pub(crate) fn is_reading_thread() -> bool {
    cfg!(unix) && READING.with(Cell::get)
}

/// The polled task waits for `fd` to be ready for `interest` (call only when
/// [`is_reading_thread`]).
#[cfg(unix)]
pub(crate) fn wait_for(fd: std::os::fd::RawFd, interest: Interest) {
    WAIT.with(|wait| wait.set(Some((fd, interest))));
}

/// The polled task waits for `at` too (a time limit): the reading thread's wait ends then,
/// and the task is polled again (call only when [`is_reading_thread`]). A runtime timer would
/// do the same, but arming one from this thread wakes a runtime worker for nothing.
pub(crate) fn wake_at(at: Instant) {
    WAKE_AT.with(|wake_at| {
        if wake_at.get().is_none_or(|earlier| at < earlier) {
            wake_at.set(Some(at));
        }
    });
}

/// Whether the reading thread's last wait ended because `fd` became ready for `interest`
/// (then a read or write will not say `EAGAIN`); says so once per wait. A socket that was
/// drained can skip its attempt otherwise and name itself at once: `poll(2)` reports a socket
/// that is ready already, so a wrong guess costs one `poll`, never a lost frame.
#[cfg(unix)]
pub(crate) fn woke_for(fd: std::os::fd::RawFd, interest: Interest) -> bool {
    READY.with(|ready| {
        let woke = ready.get() == Some((fd, interest));
        if woke {
            ready.set(None);
        }
        woke
    })
}

/// What a reader's poll left for its wait: the socket it named and the deadline it set.
type Left = (Option<Wait>, Option<Instant>);

/// Polls with the current thread marked as a reader (when `mark`); returns what `poll` returned
/// and what it left for the wait. Nests: a poll inside another (a stream made while a task is
/// polled) leaves the outer one's marks as they were.
fn reading<T>(mark: bool, poll: impl FnOnce() -> T) -> (T, Left) {
    /// Puts the outer poll's marks back, even if `poll` panics.
    struct Restore {
        reading: bool,
        left: Left,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            READING.with(|reading| reading.set(self.reading));
            WAIT.with(|wait| wait.set(self.left.0));
            WAKE_AT.with(|wake_at| wake_at.set(self.left.1));
        }
    }
    if !mark {
        return (poll(), (None, None));
    }
    let restore = Restore {
        reading: READING.with(|reading| reading.replace(true)),
        left: (WAIT.with(Cell::take), WAKE_AT.with(Cell::take)),
    };
    let output = poll();
    let left = (WAIT.with(Cell::take), WAKE_AT.with(Cell::take));
    drop(restore);
    READY.with(|ready| ready.set(None));
    (output, left)
}

/// Polls a task once for a reader that is not there yet (a stream's first poll, as it is made):
/// as in a reader's poll, a socket that would wait names itself instead of registering with the
/// runtime (nobody would be woken by it), and the name is dropped.
pub(crate) fn start<T>(poll: impl FnOnce() -> T) -> T {
    reading(cfg!(unix), poll).0
}

/// Runs `poll` (which polls a task with the given waker) on the calling thread until it gives a
/// value, waiting in between for the socket it names or for its waker; `None` once `deadline`
/// has passed without one.
pub(crate) fn poll_until<T>(
    deadline: Option<Instant>,
    mut poll: impl FnMut(&Waker) -> Option<T>,
) -> Option<T> {
    let parker = Parker::current();
    let waker = Waker::from(Arc::clone(&parker));
    loop {
        parker.notified.store(false, Ordering::SeqCst);
        let (output, (wait, wake_at)) = reading(parker.watches_sockets(), || poll(&waker));
        if let Some(output) = output {
            return Some(output);
        }
        let now = Instant::now();
        if deadline.is_some_and(|deadline| deadline <= now) {
            return None;
        }
        // The caller's deadline or the task's, whichever comes first; the task's is only a
        // reason to poll it again.
        let wake = match (deadline, wake_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let timeout = wake.map(|wake| wake.saturating_duration_since(now));
        let ready = parker.park(wait, timeout);
        READY.with(|cell| cell.set(ready));
    }
}

/// A reading thread's wake-up: its waker sets a flag and, while the thread sleeps in `poll(2)`,
/// rings a [`Doorbell`] the thread watches. One per thread, made on first use.
struct Parker {
    /// Woken since the last poll of the task.
    notified: AtomicBool,
    /// The thread is (about to be) asleep: a wake must ring (or unpark).
    sleeping: AtomicBool,
    #[cfg(unix)]
    doorbell: Option<Doorbell>,
    /// Without a doorbell (no descriptor left, or not Unix), the thread parks, a waker unparks
    /// it, and the task's sockets wait through the runtime.
    thread: Option<std::thread::Thread>,
}

thread_local! {
    static PARKER: Arc<Parker> = Arc::new(Parker::new());
}

impl Parker {
    fn current() -> Arc<Self> {
        PARKER.with(Arc::clone)
    }

    #[cfg(unix)]
    fn new() -> Self {
        let doorbell = Doorbell::new().ok();
        Self {
            notified: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            // The thread's handle only where it is used: taking it allocates (and valgrind
            // counts a handle kept in a thread-local as possibly lost).
            thread: doorbell.is_none().then(std::thread::current),
            doorbell,
        }
    }

    #[cfg(not(unix))]
    fn new() -> Self {
        Self {
            notified: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            thread: Some(std::thread::current()),
        }
    }

    /// Whether this thread waits for the task's sockets itself.
    fn watches_sockets(&self) -> bool {
        #[cfg(unix)]
        return self.doorbell.is_some();
        #[cfg(not(unix))]
        return false;
    }

    /// Sleeps until woken, `wait`'s socket is ready, or `timeout` has passed; returns `wait`
    /// if its socket is ready. Returns at once when a wake came since the task was last polled.
    fn park(&self, wait: Option<Wait>, timeout: Option<Duration>) -> Option<Wait> {
        self.sleeping.store(true, Ordering::SeqCst);
        let ready = if self.notified.load(Ordering::SeqCst) {
            None
        } else {
            self.sleep(wait, timeout)
        };
        self.sleeping.store(false, Ordering::SeqCst);
        ready
    }

    fn sleep(&self, wait: Option<Wait>, timeout: Option<Duration>) -> Option<Wait> {
        #[cfg(unix)]
        if let Some(doorbell) = &self.doorbell {
            return poll_fds(doorbell, wait, timeout).then_some(wait).flatten();
        }
        let _ = wait;
        match timeout {
            Some(timeout) => std::thread::park_timeout(timeout),
            None => std::thread::park(),
        }
        None
    }
}

/// `poll(2)` on the doorbell and the task's socket, then silences the former; whether the
/// task's socket is ready.
#[cfg(unix)]
fn poll_fds(doorbell: &Doorbell, wait: Option<Wait>, timeout: Option<Duration>) -> bool {
    let entry = |fd, events| libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let mut fds = [entry(doorbell.fd(), libc::POLLIN), entry(-1, 0)];
    if let Some((fd, interest)) = wait {
        let events = match interest {
            Interest::Read => libc::POLLIN,
            Interest::Write => libc::POLLOUT,
        };
        fds[1] = entry(fd, events);
    }
    let timeout_ms = timeout.map_or(-1, |timeout| {
        // Rounded up: a wait that ends a little early would only poll once more.
        i32::try_from(timeout.as_millis().saturating_add(1)).unwrap_or(i32::MAX)
    });
    // SAFETY: `fds` holds two initialised entries (a negative `fd` is ignored by `poll`) and
    // outlives the call.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
    if ready > 0 && fds[0].revents != 0 {
        // Silenced, so that the next wait sleeps; the flag, not the doorbell, says "woken".
        doorbell.silence();
    }
    ready > 0 && fds[1].revents != 0
}

/// A descriptor `poll(2)` sees as readable once rung: an eventfd on Linux (one descriptor per
/// reading thread), a socket pair elsewhere. Non-blocking both ways.
#[cfg(unix)]
struct Doorbell {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    event: std::os::fd::OwnedFd,
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pair: (
        std::os::unix::net::UnixStream,
        std::os::unix::net::UnixStream,
    ),
}

#[cfg(unix)]
impl Doorbell {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn new() -> std::io::Result<Self> {
        use std::os::fd::FromRawFd as _;
        // SAFETY: plain system call; the descriptor it returns is ours alone.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor, owned by nothing else.
        let event = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        Ok(Self { event })
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn new() -> std::io::Result<Self> {
        let (signal, watched) = std::os::unix::net::UnixStream::pair()?;
        signal.set_nonblocking(true)?;
        watched.set_nonblocking(true)?;
        Ok(Self {
            pair: (signal, watched),
        })
    }

    /// The descriptor to watch.
    fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd as _;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        return self.event.as_raw_fd();
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        return self.pair.1.as_raw_fd();
    }

    /// Makes the descriptor readable (a full counter or buffer is readable already).
    fn ring(&self) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let one = 1u64.to_ne_bytes();
            // SAFETY: writes 8 bytes from a live buffer to our own descriptor.
            let _ = unsafe { libc::write(self.fd(), one.as_ptr().cast(), one.len()) };
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let _ = std::io::Write::write(&mut &self.pair.0, &[1]);
    }

    /// Makes it unreadable again.
    fn silence(&self) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let mut count = [0u8; 8];
            // SAFETY: reads at most 8 bytes into a live buffer from our own descriptor.
            let _ = unsafe { libc::read(self.fd(), count.as_mut_ptr().cast(), count.len()) };
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let mut bytes = [0u8; 64];
            while matches!(std::io::Read::read(&mut &self.pair.1, &mut bytes), Ok(n) if n > 0) {}
        }
    }
}

impl Wake for Parker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.notified.store(true, Ordering::SeqCst);
        if !self.sleeping.load(Ordering::SeqCst) {
            return;
        }
        #[cfg(unix)]
        if let Some(doorbell) = &self.doorbell {
            return doorbell.ring();
        }
        if let Some(thread) = &self.thread {
            thread.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A wake from another thread ends the wait; one that came before the wait is not lost.
    #[test]
    fn wakes_reach_the_waiting_thread_and_none_is_lost() {
        let (send, receive) = std::sync::mpsc::channel::<Waker>();
        let waker_thread = std::thread::spawn(move || {
            // Wakes the reader each time it hands over its waker (after its first poll).
            while let Ok(waker) = receive.recv() {
                waker.wake();
            }
        });
        let polls = AtomicUsize::new(0);
        let output = poll_until(None, |waker| {
            let n = polls.fetch_add(1, Ordering::SeqCst);
            if n == 3 {
                return Some(n);
            }
            send.send(waker.clone()).unwrap();
            if n == 1 {
                // A wake before the wait (the waker thread may well be faster): the next wait
                // must return at once, or this test hangs.
                waker.wake_by_ref();
            }
            None
        });
        assert_eq!(output, Some(3));
        drop(send);
        waker_thread.join().unwrap();
    }

    /// A task that makes a stream while it is polled (its first poll happens inside) keeps
    /// the socket it named before: the outer wait still watches it.
    #[cfg(unix)]
    #[test]
    fn a_poll_inside_a_poll_keeps_the_outer_wait() {
        use std::io::Write as _;
        use std::os::fd::AsRawFd as _;
        let (mut writer, reader) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut polls = 0;
        // Were the outer socket forgotten, only the deadline would end the wait: `None`.
        let deadline = Instant::now() + Duration::from_secs(10);
        let output = poll_until(Some(deadline), |_| {
            polls += 1;
            if polls == 2 {
                return Some(polls);
            }
            wait_for(reader.as_raw_fd(), Interest::Read);
            start(|| {
                assert!(is_reading_thread());
                wait_for(0, Interest::Write);
            });
            assert!(is_reading_thread(), "still the outer poll");
            writer.write_all(b"x").unwrap();
            None
        });
        assert_eq!(output, Some(2));
        assert!(!is_reading_thread());
    }

    #[test]
    fn a_deadline_ends_the_wait() {
        let deadline = Instant::now() + Duration::from_millis(20);
        let output: Option<()> = poll_until(Some(deadline), |_| None);
        assert_eq!(output, None);
        assert!(Instant::now() >= deadline);
    }

    /// The task's socket, named while it was polled, ends the wait when it is readable.
    #[cfg(unix)]
    #[test]
    fn a_named_socket_ends_the_wait() {
        use std::io::Write as _;
        use std::os::fd::AsRawFd as _;
        let (mut writer, reader) = std::os::unix::net::UnixStream::pair().unwrap();
        reader.set_nonblocking(true).unwrap();
        let mut polls = 0;
        let output = poll_until(None, |_| {
            polls += 1;
            if polls == 2 {
                return Some(polls);
            }
            assert!(is_reading_thread());
            wait_for(reader.as_raw_fd(), Interest::Read);
            // Readable from now on; nothing else wakes the thread.
            writer.write_all(b"x").unwrap();
            None
        });
        assert_eq!(output, Some(2));
        assert!(!is_reading_thread());
    }
}
