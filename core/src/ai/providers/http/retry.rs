//! Sending a request: header checks, a timeout per attempt, redirects, retries with backoff and
//! `Retry-After`, bounded error bodies, and credentials kept out of every message.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::body::read_error_body;
use super::deadline::within;
use super::error_body_message;
use super::limits::Limits;
use super::redirect::{self, Failure};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::{DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_DELAY_MS, StreamOptions};
use crate::ai::redact::{Redactor, is_credential_header};
use crate::ai::stack::boxed;
use crate::ai::types::now_ms;

/// Whether a status is worth retrying (pi's SDKs retry the same set).
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// A delay a server asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RetryAfter {
    /// The delay; [`Duration::MAX`] for one too large to represent (`inf`, `1e300`).
    pub delay: Duration,
    /// The header as the server sent it, e.g. `retry-after: 120`.
    pub header: String,
}

impl RetryAfter {
    /// The delay for a message: milliseconds, or the server's own words when it is too large
    /// to be a number of milliseconds.
    pub(crate) fn describe(&self) -> String {
        if self.delay == Duration::MAX {
            format!("`{}`", self.header)
        } else {
            format!("{} ms", self.delay.as_millis())
        }
    }

    /// The delay in milliseconds, unless it is too large to be a number of milliseconds.
    pub(crate) fn millis(&self) -> Option<u64> {
        (self.delay != Duration::MAX)
            .then(|| u64::try_from(self.delay.as_millis()).ok())
            .flatten()
    }
}

/// Seconds as a delay: negative is none, too large (or infinite) is [`Duration::MAX`].
fn delay_from_secs(seconds: f64) -> Duration {
    if seconds <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
    }
}

/// A number, not NaN (which says nothing about when to retry).
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|n| !n.is_nan())
}

/// The delay a server asks for: `retry-after-ms`, else `retry-after` in seconds or as an HTTP
/// date. Parsed defensively: values that are not numbers or dates are ignored, negative ones
/// and past dates mean "now", and huge ones saturate (see [`RetryAfter::delay`]).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<RetryAfter> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .map(|value| (format!("{name}: {value}"), value))
    };
    if let Some((shown, value)) = header("retry-after-ms")
        && let Some(ms) = number(value)
    {
        return Some(RetryAfter {
            delay: delay_from_secs(ms / 1000.0),
            header: shown,
        });
    }
    let (shown, value) = header("retry-after")?;
    let delay = match number(value) {
        Some(seconds) => delay_from_secs(seconds),
        None => {
            let at = parse_http_date(value)?;
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            Duration::from_secs(at.saturating_sub(now))
        }
    };
    Some(RetryAfter {
        delay,
        header: shown,
    })
}

/// Seconds since the epoch of an IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`), the form HTTP
/// servers send.
fn parse_http_date(text: &str) -> Option<u64> {
    let mut parts = text.split_whitespace();
    let _weekday = parts.next()?;
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u64 = parts.next()?.parse().ok()?;
    let mut clock = parts.next()?.split(':').map(|n| n.parse::<u64>().ok());
    let (hour, minute, second) = (clock.next()??, clock.next()??, clock.next()??);
    if parts.next()? != "GMT" || !(1..=31).contains(&day) || !(1970..=9999).contains(&year) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm), for years from 1970.
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = (era * 146_097 + day_of_era).checked_sub(719_468)?;
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// Which failed responses a provider retries, how often and how long it waits when the server
/// names no delay. Connection failures are always retried; a server's `Retry-After` always
/// wins over the backoff, within `max_retry_delay_ms`.
#[derive(Clone, Copy)]
pub(crate) struct RetryPolicy<'a> {
    /// Retries when the options set no `max_retries`.
    pub default_max_retries: u32,
    /// Whether a failed response (status, headers, body) is worth another attempt.
    pub retryable: &'a (dyn Fn(u16, &HeaderMap, &str) -> bool + Send + Sync),
    /// The first backoff delay; each retry doubles it (with jitter).
    pub base_delay: Duration,
}

impl RetryPolicy<'static> {
    /// The shared policy: [`is_retryable_status`], [`DEFAULT_MAX_RETRIES`], 0.5 s doubling.
    pub(crate) const DEFAULT: RetryPolicy<'static> = RetryPolicy {
        default_max_retries: DEFAULT_MAX_RETRIES,
        retryable: &|status, _, _| is_retryable_status(status),
        base_delay: Duration::from_millis(500),
    };
}

/// Exponential backoff (0.5 s, 1 s, 2 s, ... for a 0.5 s base) with jitter, capped.
fn backoff(attempt: u32, base: Duration, cap: Duration) -> Duration {
    let base = base.saturating_mul(1 << attempt.min(16));
    // Jitter in [0.5, 1.0) without a random-number dependency: the clock's low bits are enough
    // to spread clients apart.
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let factor = 0.5 + f64::from(nanos % 1000) / 2000.0;
    base.mul_f64(factor).min(cap)
}

/// Checks the caller's headers (`model.headers`, `options.headers`) before anything is sent, so
/// that a bad one is named (its value is never shown: it may be a secret).
fn check_headers(model: &Model, options: &StreamOptions) -> Result<(), ProviderError> {
    let all = model
        .headers
        .iter()
        .flatten()
        .map(|header| ("model.headers", header))
        .chain(
            options
                .headers
                .iter()
                .map(|header| ("options.headers", header)),
        );
    for (origin, (name, value)) in all {
        let invalid = |message| Err(ProviderError::other(message, Some(ErrorKind::BadRequest)));
        if HeaderName::from_bytes(name.as_bytes()).is_err() {
            return invalid(format!("Invalid HTTP header name `{name}` in {origin}"));
        }
        if HeaderValue::from_str(value).is_err() {
            return invalid(format!(
                "Invalid value for HTTP header `{name}` in {origin} (control characters or \
                 non-ASCII text are not allowed)"
            ));
        }
    }
    Ok(())
}

/// Why a request could not be built, with reqwest's reasons (an invalid URL, say).
fn build_error(error: reqwest::Error) -> ProviderError {
    use std::error::Error as _;
    // Without the URL reqwest quotes: its query may hold a key, and this comes before the
    // request's secrets are known to the writer.
    let error = error.without_url();
    let mut message = format!("Could not build the request: {error}");
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    ProviderError::other(message, Some(ErrorKind::BadRequest))
}

/// The credentials a request carries: its credential headers and the caller's.
fn redactor_for(request: &reqwest::Request, model: &Model, options: &StreamOptions) -> Redactor {
    let mut redactor = Redactor::default();
    for (name, value) in request.headers() {
        if let Ok(value) = value.to_str() {
            redactor.add_header(name.as_str(), value);
        }
    }
    for (name, value) in model.headers.iter().flatten().chain(&options.headers) {
        redactor.add_header(name, value);
    }
    // A key in the URL (`?key=...`, `?api_key=...`), as some gateways take it: the same names
    // as a credential header's (`key` is one of its words).
    for (name, value) in request.url().query_pairs() {
        if is_credential_header(&name) {
            redactor.add(&value);
        }
    }
    if let Some(key) = &options.api_key {
        redactor.add(key.expose());
    }
    redactor
}

/// `"<status> <provider message>"`, the shape pi's SDK errors have.
pub(crate) fn default_error(status: reqwest::StatusCode, _: &HeaderMap, body: &str) -> String {
    format!("{} {}", status.as_u16(), error_body_message(body))
}

/// Sends a provider's request with retries: the retries go to the message's `diagnostics`,
/// `format_error` words a failed response, `policy` says what is retried, and `writer` hides the
/// request's credentials in every message it writes from now on (an error event echoing the
/// key included).
pub(crate) async fn send_with_policy(
    writer: &mut StreamWriter,
    build: impl Fn() -> reqwest::RequestBuilder,
    options: &StreamOptions,
    model: &Model,
    format_error: impl Fn(reqwest::StatusCode, &HeaderMap, &str) -> String,
    policy: RetryPolicy<'_>,
) -> Result<reqwest::Response, ProviderError> {
    check_headers(model, options)?;
    let request = build().build().map_err(build_error)?;
    writer.hide_secrets(redactor_for(&request, model, options));
    // The attempts redact their diagnostics with the writer's copy: no second one.
    let redactor = writer.redactor();
    let mut diagnostics = Vec::new();
    // Boxed: the request phase (retries, redirects, the HTTP client's own futures) is several
    // KiB of state that is dead once the body streams; inline it would stay in every stream's
    // task for the whole response.
    let result = boxed(|| {
        attempts(
            request,
            options,
            model,
            &mut diagnostics,
            redactor,
            format_error,
            policy,
        )
    })
    .await;
    if !diagnostics.is_empty() {
        writer
            .message_mut()
            .diagnostics
            .get_or_insert_default()
            .extend(diagnostics);
    }
    result
}

/// Sends once, without retries (for the agent proxy, whose protocol has none), within the
/// request timeout and following redirects like [`send`]; `writer` hides the request's
/// credentials from then on.
pub(crate) async fn send_once(
    writer: &mut StreamWriter,
    builder: reqwest::RequestBuilder,
    options: &StreamOptions,
) -> Result<reqwest::Response, ProviderError> {
    let request = builder.build().map_err(build_error)?;
    let mut redactor = Redactor::default();
    for (name, value) in request.headers() {
        if let Ok(value) = value.to_str() {
            redactor.add_header(name.as_str(), value);
        }
    }
    writer.hide_secrets(redactor);
    // Boxed for the reason given in `send_with_policy`.
    let limits = Limits::new(options);
    boxed(|| execute_within(&request, &limits))
        .await
        .map_err(Failure::into_error)
}

/// One attempt: the request and its redirects, within the request timeout.
async fn execute_within(
    request: &reqwest::Request,
    limits: &Limits,
) -> Result<reqwest::Response, Failure> {
    match limits.request_timeout {
        Some(timeout) => within(timeout, redirect::execute(request))
            .await
            .unwrap_or_else(|_| {
                Err(Failure::Transient(ProviderError::Timeout(format!(
                    "Request timed out after {} ms waiting for the response headers \
                     (request_timeout_ms / timeoutMs)",
                    timeout.as_millis()
                ))))
            }),
        None => redirect::execute(request).await,
    }
}

/// The text of an error body, read within the limits of `options`, with a note when it was
/// cut short.
pub(crate) async fn error_body_text(
    response: reqwest::Response,
    options: &StreamOptions,
) -> String {
    let (mut body, cut) = read_error_body(response, &Limits::new(options)).await;
    if let Some(cut) = cut {
        body.push_str(&format!(" ({cut})"));
    }
    body
}

async fn attempts(
    request: reqwest::Request,
    options: &StreamOptions,
    model: &Model,
    diagnostics: &mut Vec<Value>,
    redactor: &Redactor,
    format_error: impl Fn(reqwest::StatusCode, &HeaderMap, &str) -> String,
    policy: RetryPolicy<'_>,
) -> Result<reqwest::Response, ProviderError> {
    let limits = Limits::new(options);
    let max_retries = options.max_retries.unwrap_or(policy.default_max_retries);
    let cap = Duration::from_millis(
        options
            .max_retry_delay_ms
            .unwrap_or(DEFAULT_MAX_RETRY_DELAY_MS),
    );
    let mut attempt = 0;
    if let Some(host) = request.url().host_str() {
        tracing::Span::current().record("server.address", host);
    }
    tracing::debug!(
        target: "pi_agent::http",
        method = %request.method(),
        "server.address" = request.url().host_str().unwrap_or(""),
        "url.path" = request.url().path(),
        body_bytes = request.body().and_then(|body| body.as_bytes()).map_or(0, <[u8]>::len),
        "sending request"
    );
    loop {
        let started = std::time::Instant::now();
        // Borrowed: an attempt copies the request only to follow a redirect.
        let sent = execute_within(&request, &limits).await;
        match &sent {
            Ok(response) => {
                tracing::Span::current()
                    .record("http.response.status_code", response.status().as_u16());
                tracing::debug!(
                    target: "pi_agent::http",
                    attempt = attempt + 1,
                    "http.response.status_code" = response.status().as_u16(),
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "response headers"
                );
            }
            Err(_) => tracing::debug!(
                target: "pi_agent::http",
                attempt = attempt + 1,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "request failed before a response"
            ),
        }
        let (error, status, hint) = match sent {
            Ok(response) => {
                let status = response.status();
                if let Some(callback) = &options.on_response {
                    let headers: BTreeMap<String, String> = response
                        .headers()
                        .iter()
                        .filter_map(|(k, v)| {
                            Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned()))
                        })
                        .collect();
                    (callback.0)(status.as_u16(), &headers, model);
                }
                if status.is_success() {
                    return Ok(response);
                }
                let hint = retry_after(response.headers());
                let headers = response.headers().clone();
                let (body, cut) = read_error_body(response, &limits).await;
                // Hidden before the message is worded: wording cuts the body, and a secret the
                // cut goes through would no longer be found whole.
                let body = redactor.redact(&body);
                let mut error = format_error(status, &headers, &body);
                if let Some(cut) = cut {
                    error.push_str(&format!(" ({cut})"));
                }
                let error = ProviderError::http(
                    status.as_u16(),
                    redactor.redact(&error),
                    hint.as_ref().and_then(RetryAfter::millis),
                );
                if !(policy.retryable)(status.as_u16(), &headers, &body) {
                    return Err(error);
                }
                (error, Some(status.as_u16()), hint)
            }
            Err(Failure::Transient(error)) => {
                (error.map_message(|text| redactor.redact(text)), None, None)
            }
            Err(Failure::Final(error)) => {
                return Err(error.map_message(|text| redactor.redact(text)));
            }
        };
        if attempt >= max_retries {
            return Err(error);
        }
        if let Some(hint) = &hint
            && hint.delay > cap
        {
            return Err(ProviderError::http(
                status.unwrap_or_default(),
                format!(
                    "{error} (the server asked to retry after {}, more than max_retry_delay_ms = {} ms)",
                    redactor.redact(&hint.describe()),
                    cap.as_millis()
                ),
                hint.millis(),
            ));
        }
        let delay = hint.map_or_else(
            || backoff(attempt, policy.base_delay, cap),
            |hint| hint.delay,
        );
        attempt += 1;
        // INFO, not WARNING: a retry is the library doing its job; the failure, if it comes,
        // is the message.
        tracing::info!(
            target: "pi_agent::retry",
            attempt,
            delay_ms = delay.as_millis() as u64,
            "http.response.status_code" = status,
            error = %error,
            "retrying the request"
        );
        diagnostics.push(json!({
            "type": "retry",
            "timestamp": now_ms(),
            "error": {"message": error.to_string()},
            "details": {"attempt": attempt, "delayMs": delay.as_millis() as u64, "status": status},
        }));
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn retry_after_is_parsed_defensively() {
        let delay = |pairs: &[(&'static str, &str)]| retry_after(&headers(pairs)).map(|r| r.delay);
        assert_eq!(delay(&[("retry-after", "2")]), Some(Duration::from_secs(2)));
        assert_eq!(
            delay(&[("retry-after", "1.5")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            delay(&[("retry-after-ms", "20"), ("retry-after", "9")]),
            Some(Duration::from_millis(20))
        );
        // Not a number: the other header, else nothing.
        assert_eq!(
            delay(&[("retry-after-ms", "NaN"), ("retry-after", "3")]),
            Some(Duration::from_secs(3))
        );
        assert_eq!(delay(&[("retry-after", "soon")]), None);
        assert_eq!(delay(&[("retry-after", "nan")]), None);
        for huge in ["inf", "1e20", "99999999999999999999999"] {
            assert_eq!(
                delay(&[("retry-after", huge)]),
                Some(Duration::MAX),
                "{huge}"
            );
        }
        assert_eq!(delay(&[("retry-after-ms", "1e300")]), Some(Duration::MAX));
        for none in ["-5", "-inf", "0"] {
            assert_eq!(
                delay(&[("retry-after", none)]),
                Some(Duration::ZERO),
                "{none}"
            );
        }
        assert_eq!(
            delay(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
            Some(Duration::ZERO)
        );
        let far = delay(&[("retry-after", "Fri, 01 Jan 9999 00:00:00 GMT")]).unwrap();
        assert!(far > Duration::from_secs(200 * 365 * 86_400));
        let hint = retry_after(&headers(&[("retry-after", "inf")])).unwrap();
        assert_eq!(hint.describe(), "`retry-after: inf`");
    }

    #[test]
    fn http_dates() {
        assert_eq!(
            parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(1_445_412_480)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Sun, 29 Feb 2032 23:59:59 GMT"),
            Some(1_961_711_999)
        );
        for bad in [
            "",
            "Wed, 21 Oct 2015 07:28:00 UTC",
            "Wed, 21 Foo 2015 07:28:00 GMT",
            "Wed, 32 Oct 2015 07:28:00 GMT",
            "Wed, 21 Oct 2015 07:28 GMT",
            "Wed, 21 Oct 1969 07:28:00 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_headers_are_named_without_their_values() {
        let model = Model::new("a", "b", "c", "http://127.0.0.1");
        let options = StreamOptions {
            headers: [("x-ok".to_owned(), "secret\nvalue".to_owned())].into(),
            ..StreamOptions::default()
        };
        let error = check_headers(&model, &options).unwrap_err();
        assert_eq!(error.kind(), Some(ErrorKind::BadRequest));
        let error = error.to_string();
        assert!(error.contains("`x-ok` in options.headers"), "{error}");
        assert!(!error.contains("secret"));
        let mut model = model;
        model.headers = Some([("bad name".to_owned(), "1".to_owned())].into());
        let error = check_headers(&model, &StreamOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "Invalid HTTP header name `bad name` in model.headers"
        );
    }
}
