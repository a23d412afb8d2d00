//! AWS Signature Version 4 for one HTTP request, through the `aws-sigv4` crate (the signer the
//! AWS SDK for Rust uses), so the canonical request, key derivation and encoding rules are AWS's
//! own rather than a re-implementation.

use std::time::SystemTime;

use aws_sigv4::http_request::{
    PayloadChecksumKind, SignableBody, SignableRequest, SigningParams, SigningSettings, sign,
};
use aws_sigv4::sign::v4;
use thiserror::Error;

use super::credentials::AwsCredentials;

/// The service name Bedrock requests are signed for.
pub const BEDROCK_SIGNING_NAME: &str = "bedrock";

/// A request to sign.
#[derive(Clone, Copy, Debug)]
pub struct SignableInput<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// The full URL, already percent-encoded as it will be sent.
    pub url: &'a str,
    /// Headers to sign besides `host` (taken from the URL) and the ones signing adds.
    pub headers: &'a [(&'a str, &'a str)],
    /// The exact body bytes.
    pub body: &'a [u8],
    /// The signing region, e.g. `us-east-1`.
    pub region: &'a str,
    /// The signing name of the service, e.g. `bedrock`.
    pub service: &'a str,
    /// The request time (`x-amz-date`).
    pub time: SystemTime,
    /// Whether to add (and sign) `x-amz-content-sha256`, as the AWS SDK for JavaScript does.
    pub content_sha256_header: bool,
}

/// Why a request could not be signed. Never contains a secret.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SigningError {
    /// The URL has no host or is not a valid URI.
    #[error("cannot sign a request to `{0}`: the URL must be absolute with a host")]
    InvalidUrl(String),
    /// The signer refused the request.
    #[error("could not sign the Bedrock request: {0}")]
    Signer(String),
}

/// The headers signing adds: `x-amz-date`, `authorization`, and, as needed,
/// `x-amz-security-token` and `x-amz-content-sha256`.
pub fn sign_request(
    credentials: &AwsCredentials,
    input: &SignableInput<'_>,
) -> Result<Vec<(String, String)>, SigningError> {
    let has_host = reqwest::Url::parse(input.url)
        .ok()
        .is_some_and(|url| url.host_str().is_some_and(|host| !host.is_empty()));
    // Checked here because the signer panics on a URI without a host.
    if !has_host {
        return Err(SigningError::InvalidUrl(input.url.to_owned()));
    }
    let identity = credentials.to_sdk_credentials().into();
    let mut settings = SigningSettings::default();
    if input.content_sha256_header {
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    }
    let params: SigningParams<'_> = v4::SigningParams::builder()
        .identity(&identity)
        .region(input.region)
        .name(input.service)
        .time(input.time)
        .settings(settings)
        .build()
        .map_err(|error| SigningError::Signer(error.to_string()))?
        .into();
    let request = SignableRequest::new(
        input.method,
        input.url,
        input.headers.iter().copied(),
        SignableBody::Bytes(input.body),
    )
    .map_err(|_| SigningError::InvalidUrl(input.url.to_owned()))?;
    let (instructions, _signature) = sign(request, &params)
        .map_err(|error| SigningError::Signer(error.to_string()))?
        .into_parts();
    let (headers, _query) = instructions.into_parts();
    Ok(headers
        .into_iter()
        .map(|header| (header.name().to_owned(), header.value().to_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    //! Vectors from AWS's SigV4 test suite (`aws-sig-v4-test-suite`, as shipped with the CRT and
    //! `aws-sigv4`): credentials `AKIDEXAMPLE`, region `us-east-1`, service `service`, time
    //! 2015-08-30T12:36:00Z.

    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::ai::options::ApiKey;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    fn credentials(session_token: Option<&str>) -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: ApiKey::new(SECRET),
            session_token: session_token.map(ApiKey::new),
        }
    }

    fn time() -> SystemTime {
        // 2015-08-30T12:36:00Z
        UNIX_EPOCH + Duration::from_secs(1_440_938_160)
    }

    fn input<'a>(
        method: &'a str,
        url: &'a str,
        headers: &'a [(&'a str, &'a str)],
        body: &'a [u8],
    ) -> SignableInput<'a> {
        SignableInput {
            method,
            url,
            headers,
            body,
            region: "us-east-1",
            service: "service",
            time: time(),
            content_sha256_header: false,
        }
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
        headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map_or("", |(_, value)| value.as_str())
    }

    #[test]
    fn get_vanilla() {
        let signed = sign_request(
            &credentials(None),
            &input("GET", "https://example.amazonaws.com/", &[], b""),
        )
        .unwrap();
        assert_eq!(header(&signed, "x-amz-date"), "20150830T123600Z");
        assert_eq!(
            header(&signed, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    #[test]
    fn post_vanilla_query() {
        let signed = sign_request(
            &credentials(None),
            &input(
                "POST",
                "https://example.amazonaws.com/?Param1=value1",
                &[],
                b"",
            ),
        )
        .unwrap();
        assert!(header(&signed, "authorization").ends_with(
            "Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"
        ));
    }

    #[test]
    fn post_x_www_form_urlencoded() {
        let body = b"Param1=value1";
        let mut request = input(
            "POST",
            "https://example.amazonaws.com/",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Content-Length", "13"),
            ],
            body,
        );
        request.content_sha256_header = true;
        let signed = sign_request(&credentials(None), &request).unwrap();
        assert_eq!(
            header(&signed, "x-amz-content-sha256"),
            "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"
        );
        assert_eq!(
            header(&signed, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, \
             Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b"
        );
    }

    #[test]
    fn get_vanilla_with_session_token() {
        let token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
        let signed = sign_request(
            &credentials(Some(token)),
            &input("GET", "https://example.amazonaws.com/", &[], b""),
        )
        .unwrap();
        assert_eq!(header(&signed, "x-amz-security-token"), token);
        assert_eq!(
            header(&signed, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date;x-amz-security-token, \
             Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"
        );
    }

    #[test]
    fn bedrock_path_is_signed_double_encoded() {
        // The model id's `:` is sent as `%3A`; SigV4 (non-S3) encodes the path once more, so
        // the canonical URI holds `%253A`. The signature differs from the single-encoded one.
        let url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse-stream";
        let mut request = input("POST", url, &[("content-type", "application/json")], b"{}");
        request.service = BEDROCK_SIGNING_NAME;
        let signed = sign_request(&credentials(None), &request).unwrap();
        let authorization = header(&signed, "authorization");
        assert!(
            authorization.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date, Signature="
            ),
            "{authorization}"
        );
        assert!(!format!("{signed:?}").contains(SECRET));
    }

    #[test]
    fn url_without_host_is_an_error_not_a_panic() {
        for url in ["/model/x/converse-stream", "not a url", "http:///path"] {
            let error =
                sign_request(&credentials(None), &input("POST", url, &[], b"")).unwrap_err();
            assert!(
                matches!(error, SigningError::InvalidUrl(_)),
                "{url}: {error}"
            );
        }
    }
}
