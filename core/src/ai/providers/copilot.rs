//! GitHub Copilot's per-request headers (pi's `github-copilot-headers.ts`), sent on each of the
//! three APIs Copilot's models use (openai-completions, openai-responses, anthropic-messages)
//! after the model's headers and before the caller's:
//!
//! - `X-Initiator`: `user` when the conversation ends with a user message (or is empty), else
//!   `agent` (a follow-up after tool results);
//! - `Openai-Intent: conversation-edits`;
//! - `Copilot-Vision-Request: true` when any user message or tool result holds an image.

use super::content::has_images;
use crate::ai::types::{Message, UserMessageContent};

/// The provider id.
pub(crate) const PROVIDER: &str = "github-copilot";

/// The dynamic headers for a request carrying `messages`, in pi's order.
pub(crate) fn dynamic_headers(messages: &[Message]) -> Vec<(&'static str, &'static str)> {
    let initiator = match messages.last() {
        Some(message) if !matches!(message, Message::User(_)) => "agent",
        _ => "user",
    };
    let mut headers = vec![
        ("X-Initiator", initiator),
        ("Openai-Intent", "conversation-edits"),
    ];
    if has_image_input(messages) {
        headers.push(("Copilot-Vision-Request", "true"));
    }
    headers
}

/// Whether any user message or tool result carries an image.
pub(crate) fn has_image_input(messages: &[Message]) -> bool {
    messages.iter().any(|message| match message {
        Message::User(user) => match &user.content {
            UserMessageContent::Blocks(blocks) => has_images(blocks),
            UserMessageContent::Text(_) => false,
        },
        Message::ToolResult(result) => has_images(&result.content),
        Message::Assistant(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::{
        AssistantMessage, ImageContent, ToolResultMessage, UserContent, UserMessage,
    };

    #[test]
    fn initiator_and_vision() {
        assert_eq!(
            dynamic_headers(&[]),
            [
                ("X-Initiator", "user"),
                ("Openai-Intent", "conversation-edits")
            ]
        );
        let user = Message::User(UserMessage::text("hi"));
        let assistant = Message::Assistant(AssistantMessage::default());
        assert_eq!(dynamic_headers(std::slice::from_ref(&user))[0].1, "user");
        assert_eq!(dynamic_headers(&[user.clone(), assistant])[0].1, "agent");
        let image_result = Message::ToolResult(ToolResultMessage {
            content: vec![UserContent::Image(ImageContent {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            })],
            ..ToolResultMessage::default()
        });
        let headers = dynamic_headers(&[user, image_result]);
        assert_eq!(headers[0], ("X-Initiator", "agent"));
        assert_eq!(headers[2], ("Copilot-Vision-Request", "true"));
    }
}
