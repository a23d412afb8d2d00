//! Credential sources read with a size bound: a metadata server's, STS's, IAM's or a
//! subject-token URL's answer, and a subject-token file. Each is a few KiB; a misconfigured
//! URL that streams a large file, or a file such as `/dev/zero`, must not fill the memory.

use std::io::Read as _;

/// The most of a credential source that is read.
pub(crate) const MAX_ANSWER_BYTES: usize = 1 << 20;

/// What is said of a source past [`MAX_ANSWER_BYTES`].
pub(crate) const TOO_LARGE: &str = "the answer is larger than 1 MiB";

/// The body of `response` as text; `None` when it is longer than [`MAX_ANSWER_BYTES`] (the
/// rest is not read).
pub(crate) async fn capped_text(
    mut response: reqwest::Response,
) -> Result<Option<String>, reqwest::Error> {
    let mut collected: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if collected.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Ok(None);
        }
        collected.extend_from_slice(&chunk);
    }
    Ok(Some(String::from_utf8_lossy(&collected).into_owned()))
}

/// The file at `path` as text; an error ([`TOO_LARGE`]) when it is longer than
/// [`MAX_ANSWER_BYTES`].
pub(crate) fn capped_file(path: &str) -> std::io::Result<String> {
    let mut collected = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_ANSWER_BYTES as u64 + 1)
        .read_to_end(&mut collected)?;
    if collected.len() > MAX_ANSWER_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            TOO_LARGE,
        ));
    }
    String::from_utf8(collected)
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
}
