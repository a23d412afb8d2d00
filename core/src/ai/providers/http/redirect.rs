//! Following redirects by hand, so that credentials never leave their origin.
//!
//! reqwest's own policy drops only `Authorization` and cookies on a change of host, so a 307 to
//! another host would carry Anthropic's `x-api-key` or Google's `x-goog-api-key` along. The
//! shared client follows no redirect; [`execute`] does, keeping only the headers known to carry
//! no credential (an allow-list, [`is_known_safe_header`]) when the scheme, host or port
//! changes: a deny-list cannot know that a gateway's `X-Auth-Key` is a key.

use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, LOCATION};
use reqwest::{Method, StatusCode};

use super::{client, h1, transport_error};
use crate::ai::error::ProviderError;
use crate::ai::options::is_known_safe_header;

/// Redirects followed before giving up (as browsers and reqwest).
pub(crate) const MAX_REDIRECTS: usize = 10;

/// Why no response came.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth another attempt: the connection failed or was cut, or timed out.
    Transient(ProviderError),
    /// Not worth another attempt: a redirect loop.
    Final(ProviderError),
}

impl Failure {
    /// The error.
    pub(crate) fn into_error(self) -> ProviderError {
        match self {
            Failure::Transient(error) | Failure::Final(error) => error,
        }
    }
}

/// Sends `first`, following up to [`MAX_REDIRECTS`] redirects. A response without a usable
/// `Location` is returned as it is (its status then reads as an error).
///
/// The request is borrowed: the built-in HTTP/1.1 client sends it as it is, and a copy is
/// made only for a redirect (or for reqwest, which takes its request by value), so that an
/// attempt does not hold two copies of its headers while it waits for the answer.
pub(crate) async fn execute(first: &reqwest::Request) -> Result<reqwest::Response, Failure> {
    // The request of the redirect being followed.
    let mut redirected: Option<reqwest::Request> = None;
    for _ in 0..=MAX_REDIRECTS {
        let request = redirected.as_ref().unwrap_or(first);
        let response = if h1::serves(request) {
            h1::execute(request).await.map_err(Failure::Transient)?
        } else {
            client()
                .execute(copy(request)?)
                .await
                .map_err(|error| Failure::Transient(transport_error(&error)))?
        };
        let status = response.status();
        let from = request.url();
        let target = response
            .headers()
            .get(LOCATION)
            .and_then(|location| location.to_str().ok())
            .and_then(|location| from.join(location).ok())
            .filter(|target| matches!(target.scheme(), "http" | "https"));
        let (Some(target), true) = (target, is_redirect(status)) else {
            return Ok(response);
        };
        let mut next = copy(request)?;
        if target.origin() != from.origin() {
            keep_known_safe(next.headers_mut());
        }
        if matches!(
            status,
            StatusCode::SEE_OTHER | StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND
        ) && next.method() == Method::POST
        {
            // What fetch and reqwest do: the method becomes GET and the body goes.
            *next.method_mut() = Method::GET;
            *next.body_mut() = None;
            next.headers_mut().remove(CONTENT_TYPE);
            next.headers_mut().remove(CONTENT_LENGTH);
        }
        *next.url_mut() = target;
        redirected = Some(next);
    }
    Err(Failure::Final(ProviderError::other(
        format!("Too many redirects: more than {MAX_REDIRECTS} in a row"),
        None,
    )))
}

/// A copy of `request` to send (its body is in memory: the providers' bodies always are).
fn copy(request: &reqwest::Request) -> Result<reqwest::Request, Failure> {
    request.try_clone().ok_or_else(|| {
        Failure::Final(ProviderError::other(
            "Could not send the request: its body cannot be sent twice",
            None,
        ))
    })
}

fn is_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// Removes every header not known to be safe for another origin.
fn keep_known_safe(headers: &mut HeaderMap) {
    let names: Vec<_> = headers
        .keys()
        .filter(|name| !is_known_safe_header(name.as_str()))
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_stripped_and_the_rest_kept() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer a"),
            ("x-api-key", "b"),
            ("x-goog-api-key", "c"),
            ("api-key", "d"),
            ("cf-aig-authorization", "e"),
            ("cookie", "f=g"),
            ("x-auth-key", "cloudflare-global-key"),
            ("x-custom-auth", "h"),
            ("x-tenant", "i"),
            ("content-type", "application/json"),
            ("anthropic-version", "2023-06-01"),
            ("user-agent", "pi"),
        ] {
            headers.insert(
                reqwest::header::HeaderName::from_static(name),
                value.parse().unwrap(),
            );
        }
        keep_known_safe(&mut headers);
        let mut left: Vec<&str> = headers.keys().map(|name| name.as_str()).collect();
        left.sort_unstable();
        assert_eq!(left, ["anthropic-version", "content-type", "user-agent"]);
    }
}
