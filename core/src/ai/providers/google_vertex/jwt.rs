//! The signed JWT a service account exchanges for a token (RS256, google-auth-library's
//! `GoogleToken`): its own module because it is the one place that touches the private key.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;
use thiserror::Error;

use super::credentials::{CLOUD_PLATFORM_SCOPE, ServiceAccount};

/// How long an assertion is valid (Google accepts at most an hour).
const ASSERTION_LIFETIME_SECS: u64 = 3600;

/// Why no assertion could be signed. The messages never hold the key.
#[derive(Debug, Error)]
pub(crate) enum AssertionError {
    /// The key's base64 body does not decode.
    #[error("its private_key is not a PEM key")]
    NotPem,
    /// The key decodes but is no RSA key `ring` accepts.
    #[error("its private_key is not a usable RSA key ({0})")]
    NotRsa(ring::error::KeyRejected),
    /// `ring` could not sign.
    #[error("signing with its private_key failed")]
    SigningFailed,
}

/// The DER bytes of a PEM private key (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY`), and
/// whether it is PKCS#8.
fn pem_der(pem: &str) -> Result<(Vec<u8>, bool), AssertionError> {
    let pkcs8 = pem.contains("-----BEGIN PRIVATE KEY-----");
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let der = STANDARD
        .decode(body.as_bytes())
        .map_err(|_| AssertionError::NotPem)?;
    Ok((der, pkcs8))
}

/// The signed JWT a service account exchanges for a token (RS256, valid for an hour).
pub(crate) fn signed_assertion(
    account: &ServiceAccount,
    now_secs: u64,
) -> Result<String, AssertionError> {
    use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
    let (der, pkcs8) = pem_der(&account.private_key)?;
    let key = if pkcs8 {
        RsaKeyPair::from_pkcs8(&der)
    } else {
        RsaKeyPair::from_der(&der)
    }
    .map_err(AssertionError::NotRsa)?;
    let mut header = json!({"alg": "RS256", "typ": "JWT"});
    if let Some(id) = account
        .private_key_id
        .as_deref()
        .filter(|id| !id.is_empty())
    {
        header["kid"] = json!(id);
    }
    let claims = json!({
        "iss": account.client_email,
        "scope": CLOUD_PLATFORM_SCOPE,
        "aud": account.token_uri(),
        "iat": now_secs,
        "exp": now_secs + ASSERTION_LIFETIME_SECS,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| AssertionError::SigningFailed)?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::ai::providers::google_vertex::credentials::Credentials;

    const SERVICE_ACCOUNT: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/google-vertex/service_account.json"
    ));

    fn decode_part(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn assertions_are_rs256_jwts_that_verify() {
        use ring::signature::{
            KeyPair as _, RSA_PKCS1_2048_8192_SHA256, RsaKeyPair, UnparsedPublicKey,
        };
        let Credentials::ServiceAccount(mut account) = Credentials::parse(SERVICE_ACCOUNT).unwrap()
        else {
            panic!("a service account");
        };
        account.token_uri = Some("http://127.0.0.1:9/token".into());
        let jwt = signed_assertion(&account, 1_700_000_000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(
            decode_part(parts[0]),
            json!({"alg": "RS256", "typ": "JWT", "kid": "0123456789abcdef0123456789abcdef01234567"})
        );
        assert_eq!(
            decode_part(parts[1]),
            json!({"iss": "pi-test@pi-test-project.iam.gserviceaccount.com",
                   "scope": CLOUD_PLATFORM_SCOPE, "aud": "http://127.0.0.1:9/token",
                   "iat": 1_700_000_000u64, "exp": 1_700_003_600u64})
        );
        let (der, _) = pem_der(&account.private_key).unwrap();
        let key = RsaKeyPair::from_pkcs8(&der).unwrap();
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, key.public_key().as_ref())
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the signature verifies with the account's public key");

        account.private_key =
            "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n".into();
        let error = signed_assertion(&account, 0).unwrap_err().to_string();
        assert!(error.contains("not a usable RSA key"), "{error}");
    }
}
