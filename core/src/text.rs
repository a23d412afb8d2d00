//! Cutting UTF-8 text at byte offsets without splitting a character (for excerpts in messages
//! and for chunking text in tests and fuzzing), and the case-blind search that header names and
//! base URLs are matched with.

/// The largest character boundary of `text` at or below `index` (clamped to its length).
pub(crate) fn floor_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest character boundary of `text` at or above `index` (clamped to its length).
pub(crate) fn ceil_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// The longest start of `text` of at most `max_bytes` bytes that ends on a character boundary.
pub(crate) fn prefix(text: &str, max_bytes: usize) -> &str {
    &text[..floor_boundary(text, max_bytes)]
}

/// Whether `haystack` contains `needle`, ASCII letters compared case-insensitively.
///
/// In place, with no lowercased copy and no substring searcher to set up: what it matches is a
/// header name or a base URL against a handful of short words, once per request, where setting
/// up `str::contains` for each word cost more than the comparisons. A window is compared only
/// where its first byte matches (a request's headers are checked against ten words each, and
/// comparing every window whole was a few thousand instructions per request).
pub(crate) fn contains_ignore_ascii_case(haystack: &str, needle: &str) -> bool {
    let Some((&first, rest)) = needle.as_bytes().split_first() else {
        return true;
    };
    let first = first.to_ascii_lowercase();
    haystack.as_bytes().windows(needle.len()).any(|window| {
        window[0].to_ascii_lowercase() == first && window[1..].eq_ignore_ascii_case(rest)
    })
}

/// Which of `needles` `haystack` contains, ignoring ASCII case, as a bit per needle (bit `i`
/// for `needles[i]`; at most 64): [`contains_ignore_ascii_case`] for many needles in one pass.
/// A position is looked at further only if its byte starts one of the needles (a set of 256
/// bits): a base URL is checked against a dozen provider hosts per request, and a scan per host
/// cost more than a thousand instructions.
pub(crate) fn contains_which_ignore_ascii_case(haystack: &str, needles: &[&str]) -> u64 {
    assert!(needles.len() <= 64, "at most 64 needles");
    let mut starts = [0u64; 4];
    let mut found = 0u64;
    for (index, needle) in needles.iter().enumerate() {
        match needle.as_bytes().first() {
            Some(&first) => {
                let first = first.to_ascii_lowercase();
                starts[usize::from(first >> 6)] |= 1 << (first & 63);
            }
            None => found |= 1 << index,
        }
    }
    let haystack = haystack.as_bytes();
    for at in 0..haystack.len() {
        let first = haystack[at].to_ascii_lowercase();
        if starts[usize::from(first >> 6)] & (1 << (first & 63)) == 0 {
            continue;
        }
        let rest = &haystack[at..];
        // An empty needle is found already, so a needle looked at here has a first byte.
        for (index, needle) in needles.iter().enumerate() {
            if found & (1 << index) == 0
                && needle.as_bytes()[0].to_ascii_lowercase() == first
                && rest
                    .get(..needle.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(needle.as_bytes()))
            {
                found |= 1 << index;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_ignoring_ascii_case() {
        assert!(contains_ignore_ascii_case("X-Custom-AUTH", "auth"));
        assert!(contains_ignore_ascii_case(
            "https://API.openai.com/v1",
            "api.openai.com"
        ));
        assert!(contains_ignore_ascii_case("key", "key"));
        assert!(contains_ignore_ascii_case("", ""));
        assert!(!contains_ignore_ascii_case("ke", "key"));
        assert!(!contains_ignore_ascii_case("keep-alive", "key"));
        assert!(!contains_ignore_ascii_case("", "key"));
        // Non-ASCII text is compared byte for byte.
        assert!(contains_ignore_ascii_case("x-ÄUTH-Schlüssel", "schlüssel"));
        assert!(!contains_ignore_ascii_case("x-äuth", "ÄUTH"));
    }

    /// The one-pass search says what one search per needle says, on haystacks made of the
    /// needles' pieces in both cases.
    #[test]
    fn contains_which_is_contains_for_each_needle() {
        let needles = ["api.x.ai", "moonshot", "chutes.ai", "", "é", "ai", "x"];
        let pieces = [
            "api.", "x.ai", "MOON", "shot", "chutes", ".ai", "é", "-", "A", "x",
        ];
        let mut rng = crate::test_rng::XorShift(0x2545_F491_4F6C_DD1D);
        for _ in 0..5_000 {
            let haystack: String = (0..rng.below(6)).map(|_| rng.pick(&pieces)).collect();
            let expected = needles
                .iter()
                .enumerate()
                .filter(|(_, needle)| contains_ignore_ascii_case(&haystack, needle))
                .fold(0u64, |bits, (index, _)| bits | 1 << index);
            assert_eq!(
                contains_which_ignore_ascii_case(&haystack, &needles),
                expected,
                "{haystack:?}"
            );
        }
        assert_eq!(
            contains_which_ignore_ascii_case("https://API.X.AI/v1", &needles),
            0b1101001
        );
    }

    #[test]
    fn cuts_between_characters() {
        let text = "aé€😀";
        assert_eq!(prefix(text, 0), "");
        assert_eq!(prefix(text, 2), "a");
        assert_eq!(prefix(text, 3), "aé");
        assert_eq!(prefix(text, 100), text);
        assert_eq!(floor_boundary(text, 5), 3);
        assert_eq!(ceil_boundary(text, 4), 6);
        assert_eq!(ceil_boundary(text, 7), 10);
        assert_eq!(ceil_boundary(text, 99), 10);
    }
}
