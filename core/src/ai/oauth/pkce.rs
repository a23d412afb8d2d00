//! PKCE (RFC 7636, S256) and random `state` values (pi's `pkce.ts`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::error::OAuthError;

/// A PKCE pair: the verifier stays here, the challenge goes in the authorization URL.
pub(crate) struct Pkce {
    /// 32 random bytes, base64url without padding (43 characters).
    pub(crate) verifier: String,
    /// `base64url(sha256(verifier))`.
    pub(crate) challenge: String,
}

/// `n` bytes from the operating system's CSPRNG.
fn random_bytes<const N: usize>() -> Result<[u8; N], OAuthError> {
    let mut bytes = [0_u8; N];
    getrandom::fill(&mut bytes).map_err(|err| OAuthError::Random {
        message: err.to_string(),
    })?;
    Ok(bytes)
}

/// The S256 challenge of `verifier`.
pub(crate) fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A fresh verifier and its challenge.
pub(crate) fn generate_pkce() -> Result<Pkce, OAuthError> {
    let verifier = URL_SAFE_NO_PAD.encode(random_bytes::<32>()?);
    let challenge = challenge_of(&verifier);
    Ok(Pkce {
        verifier,
        challenge,
    })
}

/// 16 random bytes as 32 lowercase hex digits (the Codex flow's `state`).
pub(crate) fn random_state() -> Result<String, OAuthError> {
    use std::fmt::Write as _;
    let bytes = random_bytes::<16>()?;
    let mut hex = String::with_capacity(32);
    for byte in bytes {
        let _ = write!(hex, "{byte:02x}");
    }
    Ok(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_matches_rfc_7636_example() {
        // RFC 7636 appendix B.
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_43_url_safe_characters_and_differ() {
        let a = generate_pkce().unwrap();
        let b = generate_pkce().unwrap();
        assert_eq!(a.verifier.len(), 43);
        assert!(
            a.verifier
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.challenge, challenge_of(&a.verifier));
    }

    #[test]
    fn state_is_32_hex_digits() {
        let state = random_state().unwrap();
        assert_eq!(state.len(), 32);
        assert!(state.bytes().all(|c| c.is_ascii_hexdigit()));
    }
}
