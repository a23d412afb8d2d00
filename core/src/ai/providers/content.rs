//! How the built-in providers read user and tool-result blocks.

use crate::ai::types::UserContent;

/// The text blocks, joined by newlines (images left out): a tool result as every API's text
/// field takes it.
pub(crate) fn joined_text(blocks: &[UserContent]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            UserContent::Text(text) => Some(text.text.as_str()),
            UserContent::Image(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether any block is an image.
pub(crate) fn has_images(blocks: &[UserContent]) -> bool {
    blocks
        .iter()
        .any(|block| matches!(block, UserContent::Image(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::ImageContent;

    #[test]
    fn texts_join_by_lines_without_images() {
        let image = UserContent::Image(ImageContent {
            data: "AAAA".into(),
            mime_type: "image/png".into(),
        });
        let blocks = [UserContent::text("a"), image, UserContent::text("b")];
        assert_eq!(joined_text(&blocks), "a\nb");
        assert!(has_images(&blocks));
        assert!(!has_images(&blocks[..1]));
        assert_eq!(joined_text(&[]), "");
    }
}
