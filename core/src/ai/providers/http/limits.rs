//! The bounds one request runs within, resolved once from its options.

use std::time::Duration;

use crate::ai::options::{
    DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_ERROR_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_REQUEST_TIMEOUT_MS, StreamOptions,
};

/// The longest an error body is read, even with a longer (or no) idle timeout: error bodies are
/// small and sent at once, and the status alone is already worth reporting.
pub(crate) const ERROR_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Once an answer is complete (its finish reason and usage arrived), the longest the rest of the
/// body (an end marker such as `data: [DONE]`) is waited for, unless the idle timeout is
/// shorter or disabled. A server that stalls there cannot hold a finished answer for the whole
/// idle timeout.
pub(crate) const TRAILER_TIMEOUT: Duration = Duration::from_secs(10);

/// Time and size bounds of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Until the response headers arrive, per attempt (redirects included).
    pub(crate) request_timeout: Option<Duration>,
    /// Between two chunks of a body.
    pub(crate) idle_timeout: Option<Duration>,
    /// One SSE line or event.
    pub(crate) max_event_bytes: usize,
    /// The part of an error body that is read.
    pub(crate) max_error_body_bytes: usize,
}

/// A timeout option: `None` is `default_ms`, `Some(0)` is no timeout.
pub(crate) fn timeout(ms: Option<u64>, default_ms: u64) -> Option<Duration> {
    match ms.unwrap_or(default_ms) {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    }
}

fn size(bytes: Option<u64>, default: u64) -> usize {
    usize::try_from(bytes.unwrap_or(default)).unwrap_or(usize::MAX)
}

impl Limits {
    /// The bounds `options` ask for, defaults filled in.
    pub(crate) fn new(options: &StreamOptions) -> Self {
        Self {
            request_timeout: timeout(options.request_timeout_ms, DEFAULT_REQUEST_TIMEOUT_MS),
            idle_timeout: timeout(options.idle_timeout_ms, DEFAULT_IDLE_TIMEOUT_MS),
            max_event_bytes: size(options.max_event_bytes, DEFAULT_MAX_EVENT_BYTES),
            max_error_body_bytes: size(options.max_error_body_bytes, DEFAULT_MAX_ERROR_BODY_BYTES),
        }
    }

    /// How long an error body may take: the idle timeout, at most [`ERROR_BODY_TIMEOUT`].
    pub(crate) fn error_body_timeout(&self) -> Duration {
        self.idle_timeout
            .map_or(ERROR_BODY_TIMEOUT, |idle| idle.min(ERROR_BODY_TIMEOUT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_options_bound_every_wait() {
        let limits = Limits::new(&StreamOptions::default());
        // Issue 17: a server that never answers holds a call 3 × 60 s, not 3 × 10 min.
        assert_eq!(limits.request_timeout, Some(Duration::from_secs(60)));
        assert_eq!(limits.idle_timeout, Some(Duration::from_secs(600)));
        assert_eq!(limits.max_event_bytes, 16 << 20);
        assert_eq!(limits.max_error_body_bytes, 256 << 10);
        assert_eq!(limits.error_body_timeout(), ERROR_BODY_TIMEOUT);
    }

    #[test]
    fn zero_disables_a_timeout_and_values_are_kept() {
        let limits = Limits::new(&StreamOptions {
            request_timeout_ms: Some(0),
            idle_timeout_ms: Some(250),
            max_event_bytes: Some(10),
            max_error_body_bytes: Some(20),
            ..StreamOptions::default()
        });
        assert_eq!(limits.request_timeout, None);
        assert_eq!(limits.idle_timeout, Some(Duration::from_millis(250)));
        assert_eq!(limits.error_body_timeout(), Duration::from_millis(250));
        assert_eq!(
            (limits.max_event_bytes, limits.max_error_body_bytes),
            (10, 20)
        );
        let unbounded = Limits::new(&StreamOptions {
            idle_timeout_ms: Some(0),
            ..StreamOptions::default()
        });
        assert_eq!(unbounded.error_body_timeout(), ERROR_BODY_TIMEOUT);
    }
}
