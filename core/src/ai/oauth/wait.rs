//! Every wait of a login goes through [`bounded`]: it ends on the cancellation token or the
//! deadline, whichever comes first, so no flow can hang.

use std::future::Future;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::error::OAuthError;

/// Runs `future` until it finishes, `cancel` fires ([`OAuthError::Cancelled`]) or `deadline`
/// passes ([`OAuthError::TimedOut`] naming `what`). Cancellation wins a tie.
pub(crate) async fn bounded<T>(
    future: impl Future<Output = Result<T, OAuthError>>,
    cancel: &CancellationToken,
    deadline: Instant,
    what: &'static str,
) -> Result<T, OAuthError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(OAuthError::Cancelled),
        () = tokio::time::sleep_until(deadline) => Err(OAuthError::TimedOut { what }),
        result = future => result,
    }
}

/// [`bounded`] without a deadline of its own: for steps that carry their own timeout (HTTP
/// requests) but must still stop on cancellation.
pub(crate) async fn cancellable<T>(
    future: impl Future<Output = Result<T, OAuthError>>,
    cancel: &CancellationToken,
) -> Result<T, OAuthError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(OAuthError::Cancelled),
        result = future => result,
    }
}

/// `now + duration`, saturating far in the future instead of overflowing.
pub(crate) fn deadline_after(duration: std::time::Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(duration)
        .unwrap_or_else(|| now + std::time::Duration::from_secs(86_400 * 365))
}
