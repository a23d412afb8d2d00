//! How the built-in providers read user and tool-result blocks.

use std::borrow::Borrow;

use crate::ai::types::{AssistantMessage, Message, ToolResultMessage, UserContent, UserMessage};

/// Text of the assistant message some servers need between tool results and a user message
/// (Mistral's own API, and Chat Completions servers with that rule).
#[cfg_attr(not(any(feature = "openai", feature = "mistral")), allow(dead_code))]
pub(crate) const TOOL_RESULTS_BRIDGE: &str = "I have processed the tool results.";

/// A message of a transcript, or a run of consecutive tool results taken together (the APIs
/// want one turn's results in one user message, or need to know where the run ends).
pub(crate) enum Turn<'a> {
    /// A user message.
    User(&'a UserMessage),
    /// An assistant message.
    Assistant(&'a AssistantMessage),
    /// One or more tool results, in order.
    ToolResults(Vec<&'a ToolResultMessage>),
}

/// `messages` (owned or borrowed ones) as [`Turn`]s, in order.
pub(crate) fn turns<M: Borrow<Message>>(messages: &[M]) -> impl Iterator<Item = Turn<'_>> {
    let mut rest = messages;
    std::iter::from_fn(move || {
        let (first, tail) = rest.split_first()?;
        let turn = match first.borrow() {
            Message::User(user) => Turn::User(user),
            Message::Assistant(assistant) => Turn::Assistant(assistant),
            Message::ToolResult(_) => {
                let results: Vec<&ToolResultMessage> = rest
                    .iter()
                    .map_while(|message| match message.borrow() {
                        Message::ToolResult(result) => Some(result),
                        _ => None,
                    })
                    .collect();
                rest = &rest[results.len()..];
                return Some(Turn::ToolResults(results));
            }
        };
        rest = tail;
        Some(turn)
    })
}

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

/// Whether any block is an image (also what `transform_messages` asks, hence defined with the
/// blocks).
pub(crate) use crate::ai::types::has_images;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::ImageContent;

    #[test]
    fn consecutive_tool_results_are_one_turn() {
        let result = |id: &str| {
            Message::ToolResult(ToolResultMessage {
                tool_call_id: id.into(),
                ..ToolResultMessage::default()
            })
        };
        let messages = [
            Message::User(UserMessage::text("q")),
            Message::Assistant(AssistantMessage::default()),
            result("a"),
            result("b"),
            Message::User(UserMessage::text("next")),
            result("c"),
        ];
        let shape: Vec<String> = turns(&messages)
            .map(|turn| match turn {
                Turn::User(_) => "user".to_owned(),
                Turn::Assistant(_) => "assistant".to_owned(),
                Turn::ToolResults(results) => results
                    .iter()
                    .map(|result| result.tool_call_id.as_str())
                    .collect::<Vec<_>>()
                    .join("+"),
            })
            .collect();
        assert_eq!(shape, ["user", "assistant", "a+b", "user", "c"]);
        assert_eq!(turns::<Message>(&[]).count(), 0);
    }

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
