//! A response body of this client, readable two ways: through the `reqwest::Response` that
//! carries it, as any response's (an error body, a test's `text()`), or directly by the frame
//! reader of a stream ([`take_body`]).
//!
//! Through reqwest, every poll of a frame passes four adapters (reqwest's body and decoder, two
//! error mappings, the bytes stream) before it reaches the socket: about 290 instructions per
//! frame more than the direct path (callgrind), and that much more code to bring back into the
//! caches when a frame arrives after the thread slept. The direct path polls the body itself;
//! sharing the body costs about 400 instructions per request.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures::Stream;
use http_body::{Body as _, Frame};

use super::body::Body;
use crate::ai::error::ProviderError;

/// The body, in the response's extensions and in its reqwest body alike; whoever reads first
/// through [`take_body`] takes it, and reqwest's side then reads an ended body.
#[derive(Clone)]
pub(super) struct Shared(Arc<Mutex<Option<Body>>>);

impl Shared {
    pub(super) fn new(body: Body) -> Self {
        Self(Arc::new(Mutex::new(Some(body))))
    }

    fn lock(&self) -> MutexGuard<'_, Option<Body>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl http_body::Body for Shared {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        match self.lock().as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.lock()
            .as_ref()
            .is_none_or(http_body::Body::is_end_stream)
    }
}

/// The body of `response` when this client made it, taken out to be read directly; `None` for
/// another client's response (or one whose body was taken before).
pub(in crate::ai::providers::http) fn take_body(
    response: &mut reqwest::Response,
) -> Option<DirectBody> {
    let shared = response.extensions_mut().remove::<Shared>()?;
    let body = shared.lock().take()?;
    Some(DirectBody(body))
}

/// A body read directly: its data chunks, and its failure worded as reqwest's path words it
/// (`transport_error`), without reqwest's own layer between the two.
pub(in crate::ai::providers::http) struct DirectBody(Body);

impl Stream for DirectBody {
    type Item = Result<Bytes, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let body = &mut self.get_mut().0;
        loop {
            let chunk = match ready!(Pin::new(&mut *body).poll_frame(cx)) {
                None => None,
                Some(Err(error)) => Some(Err(ProviderError::Network(format!(
                    "{}: {error}",
                    super::super::BODY_CUT_OFF
                )))),
                // Trailers (this client never hands them out) carry no data.
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(bytes) => Some(Ok(bytes)),
                    Err(_) => continue,
                },
            };
            return Poll::Ready(chunk);
        }
    }
}
