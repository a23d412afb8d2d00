//! Cutting UTF-8 text at byte offsets without splitting a character (for excerpts in messages
//! and for chunking text in tests and fuzzing).

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

#[cfg(test)]
mod tests {
    use super::*;

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
