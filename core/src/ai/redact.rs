//! Keeping credentials out of every text the library writes: error messages, retry diagnostics
//! and `Debug` output.
//!
//! A server that echoes the key it received (in a 401 body, an error event, a proxy's diagnostic
//! page) must not turn it into an `errorMessage` that ends up in a log or a saved transcript. So
//! every request collects the credentials it sends into a [`Redactor`], and the stream writer
//! passes every message it emits through it.

use std::collections::BTreeMap;
use std::fmt;

use super::model::Model;
use super::options::StreamOptions;

/// What a hidden secret is replaced with.
pub(crate) const REDACTED: &str = "<redacted>";

/// Secrets shorter than this are not hidden: they are not real credentials, and replacing
/// them would garble ordinary words.
const MIN_SECRET_LEN: usize = 8;

// A header is a credential by `options::is_credential_header`: such headers are hidden in
// `Debug` output, dropped on a redirect to another origin, and their values are hidden in
// messages.
pub(crate) use super::options::is_credential_header;

/// The secrets of one request, and the means to hide them in a text.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    /// Longest first, so that a secret containing another is hidden whole.
    secrets: Vec<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

impl Redactor {
    /// Hides `secret` (and its JSON-escaped spelling) from now on.
    pub(crate) fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.len() < MIN_SECRET_LEN {
            return;
        }
        self.push(secret);
        // JSON escapes only quotes, backslashes and control characters: a secret with none
        // (every real key) is spelled the same inside a JSON string.
        if secret.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
            let escaped = serde_json::to_string(secret).unwrap_or_default();
            if let Some(escaped) = escaped.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                self.push(escaped);
            }
        }
    }

    /// Keeps `form` once, longest first.
    fn push(&mut self, form: &str) {
        if form.len() < MIN_SECRET_LEN || self.secrets.iter().any(|s| s == form) {
            return;
        }
        let at = self.secrets.partition_point(|s| s.len() >= form.len());
        self.secrets.insert(at, form.to_owned());
    }

    /// Hides the value of a credential header: the whole value, the token after an auth scheme
    /// (`Bearer <token>`), and each cookie value. Other headers are ignored.
    pub(crate) fn add_header(&mut self, name: &str, value: &str) {
        if !is_credential_header(name) {
            return;
        }
        self.add(value);
        if let Some((scheme, token)) = value.trim().split_once(' ')
            && scheme.chars().all(|c| c.is_ascii_alphabetic())
        {
            self.add(token);
        }
        if crate::text::contains_ignore_ascii_case(name, "cookie") {
            for pair in value.split(';') {
                if let Some((_, cookie)) = pair.split_once('=') {
                    self.add(cookie);
                }
            }
        }
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }
}

/// `Debug` of a header map: names shown, credential values hidden.
struct Headers<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(name, value)| {
                let shown = if is_credential_header(name) {
                    REDACTED
                } else {
                    value.as_str()
                };
                (name, shown)
            }))
            .finish()
    }
}

/// A URL with its user info (which may be a token) hidden.
pub(crate) fn url_without_user_info(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://{REDACTED}@{host}{}", &rest[authority_end..]),
        None => url.to_owned(),
    }
}

// Written out field by field (the destructuring makes a new field a compile error here) so
// that credentials in `headers` never print.
impl fmt::Debug for StreamOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let StreamOptions {
            temperature,
            max_tokens,
            signal,
            api_key,
            transport,
            cache_retention,
            session_id,
            on_payload,
            on_response,
            headers,
            request_timeout_ms,
            max_retries,
            max_retry_delay_ms,
            metadata,
            idle_timeout_ms,
            max_event_bytes,
            max_error_body_bytes,
            reasoning,
            thinking_budgets,
            tool_choice,
            output_schema,
            reasoning_effort,
            reasoning_summary,
            service_tier,
            interleaved_thinking,
            thinking_display,
            thinking_enabled,
            thinking_budget_tokens,
            effort,
            thinking,
            project,
            location,
            prompt_mode,
            azure_api_version,
            azure_resource_name,
            azure_base_url,
            azure_deployment_name,
            region,
            profile,
            bearer_token,
            request_metadata,
            text_verbosity,
        } = self;
        f.debug_struct("StreamOptions")
            .field("temperature", temperature)
            .field("max_tokens", max_tokens)
            .field("signal", signal)
            .field("api_key", api_key)
            .field("transport", transport)
            .field("cache_retention", cache_retention)
            .field("session_id", session_id)
            .field("on_payload", on_payload)
            .field("on_response", on_response)
            .field("headers", &Headers(headers))
            .field("request_timeout_ms", request_timeout_ms)
            .field("max_retries", max_retries)
            .field("max_retry_delay_ms", max_retry_delay_ms)
            .field("metadata", metadata)
            .field("idle_timeout_ms", idle_timeout_ms)
            .field("max_event_bytes", max_event_bytes)
            .field("max_error_body_bytes", max_error_body_bytes)
            .field("reasoning", reasoning)
            .field("thinking_budgets", thinking_budgets)
            .field("tool_choice", tool_choice)
            .field("output_schema", output_schema)
            .field("reasoning_effort", reasoning_effort)
            .field("reasoning_summary", reasoning_summary)
            .field("service_tier", service_tier)
            .field("interleaved_thinking", interleaved_thinking)
            .field("thinking_display", thinking_display)
            .field("thinking_enabled", thinking_enabled)
            .field("thinking_budget_tokens", thinking_budget_tokens)
            .field("effort", effort)
            .field("thinking", thinking)
            .field("project", project)
            .field("location", location)
            .field("prompt_mode", prompt_mode)
            .field("azure_api_version", azure_api_version)
            .field("azure_resource_name", azure_resource_name)
            .field("azure_base_url", azure_base_url)
            .field("azure_deployment_name", azure_deployment_name)
            .field("region", region)
            .field("profile", profile)
            .field("bearer_token", bearer_token)
            .field("request_metadata", request_metadata)
            .field("text_verbosity", text_verbosity)
            .finish()
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Model {
            id,
            name,
            api,
            provider,
            base_url,
            reasoning,
            thinking_level_map,
            input,
            cost,
            context_window,
            max_tokens,
            headers,
            compat,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("name", name)
            .field("api", api)
            .field("provider", provider)
            .field("base_url", &url_without_user_info(base_url))
            .field("reasoning", reasoning)
            .field("thinking_level_map", thinking_level_map)
            .field("input", input)
            .field("cost", cost)
            .field("context_window", context_window)
            .field("max_tokens", max_tokens)
            .field("headers", &headers.as_ref().map(Headers))
            .field("compat", compat)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers() {
        for name in [
            "Authorization",
            "x-api-key",
            "X-Goog-Api-Key",
            "api-key",
            "cf-aig-authorization",
            "Cookie",
            "proxy-authorization",
            "x-amz-security-token",
            "x-portkey-api-key",
            "X-Session-Id",
            "PASSWD",
            "x-Amz-Signature",
            "X-CUSTOM-AUTH",
        ] {
            assert!(is_credential_header(name), "{name}");
        }
        for name in [
            "content-type",
            "x-extra",
            "anthropic-beta",
            "keep-alive",
            "x-affinity",
        ] {
            assert!(!is_credential_header(name), "{name}");
        }
    }

    /// The one-pass matcher says what "contains one of the words, ignoring ASCII case" says,
    /// on names made of the words' pieces, their letters in both cases, and other bytes.
    #[test]
    fn credential_names_are_the_names_containing_a_word() {
        use crate::ai::options::CREDENTIAL_WORDS;
        let pieces: Vec<&str> = CREDENTIAL_WORDS
            .iter()
            .flat_map(|word| [*word, &word[..word.len() - 1], &word[1..]])
            .chain(["-", "X", "é", "A", "s", "", "pass", "sig"])
            .collect();
        let mut rng = crate::test_rng::XorShift(0x9E37_79B9_7F4A_7C15);
        let mut credentials = 0;
        for _ in 0..20_000 {
            let mut name = String::new();
            for _ in 0..rng.below(4) + 1 {
                let piece = rng.pick(&pieces);
                if rng.below(2) == 0 {
                    name.push_str(&piece.to_ascii_uppercase());
                } else {
                    name.push_str(piece);
                }
            }
            let expected = CREDENTIAL_WORDS
                .iter()
                .any(|word| crate::text::contains_ignore_ascii_case(&name, word));
            assert_eq!(is_credential_header(&name), expected, "{name:?}");
            credentials += usize::from(expected);
        }
        // Both answers are common.
        assert!((2_000..18_000).contains(&credentials), "{credentials}");
    }

    #[test]
    fn redacts_values_tokens_and_cookies_longest_first() {
        let mut redactor = Redactor::default();
        redactor.add_header("Authorization", "Bearer sk-abc-123456");
        redactor.add_header("cookie", "a=cookie-one-1234; b=short");
        redactor.add_header("x-extra", "not-a-secret-at-all");
        redactor.add("tiny");
        assert_eq!(
            redactor.redact(
                "got Bearer sk-abc-123456, sk-abc-123456, cookie-one-1234, short, tiny, not-a-secret-at-all"
            ),
            "got <redacted>, <redacted>, <redacted>, short, tiny, not-a-secret-at-all"
        );
    }

    #[test]
    fn json_escaped_secrets_are_hidden_too() {
        let mut redactor = Redactor::default();
        redactor.add("key\"with/quote\\");
        assert_eq!(
            redactor.redact(r#"{"echo":"key\"with/quote\\"}"#),
            r#"{"echo":"<redacted>"}"#
        );
    }

    #[test]
    fn user_info_in_urls_is_hidden() {
        assert_eq!(
            url_without_user_info("https://user:pw@host:1/v1?x=1"),
            "https://<redacted>@host:1/v1?x=1"
        );
        assert_eq!(
            url_without_user_info("https://host/a@b"),
            "https://host/a@b"
        );
    }
}
