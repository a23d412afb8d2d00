"""Narrowing helpers for the message, content and event dicts of :mod:`pi_agent.types`.

Each ``is_*`` function checks the dict's tag (``role`` or ``type``) and is a ``TypeGuard``, so
a type checker narrows the union after it::

    for message in agent.messages:
        if pi_agent.is_assistant_message(message):
            for block in message["content"]:
                if pi_agent.is_tool_call(block):
                    print(block["name"], block["arguments"])

They only look at the tag of a ``dict``, as pi does: they do not validate the rest of it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs ~10 ms at import
if TYPE_CHECKING:
    import sys
    from typing import Any, Mapping

    if sys.version_info >= (3, 10):
        from typing import TypeGuard
    else:
        from typing_extensions import TypeGuard

    from .types import (
        AgentEvent,
        AssistantMessage,
        AssistantMessageEvent,
        ImageContent,
        TextContent,
        TextDeltaEvent,
        ThinkingContent,
        ToolCall,
        ToolResultMessage,
        UserMessage,
    )

__all__ = [
    "is_user_message",
    "is_assistant_message",
    "is_tool_result_message",
    "is_text_content",
    "is_thinking_content",
    "is_image_content",
    "is_tool_call",
    "is_text_delta",
    "text_of",
]


def _tag(value: object, key: str) -> object:
    return value.get(key) if isinstance(value, dict) else None


def is_user_message(message: object) -> TypeGuard[UserMessage]:
    """Whether ``message`` is a user message (``role`` ``"user"``)."""
    return _tag(message, "role") == "user"


def is_assistant_message(message: object) -> TypeGuard[AssistantMessage]:
    """Whether ``message`` is an assistant message (``role`` ``"assistant"``)."""
    return _tag(message, "role") == "assistant"


def is_tool_result_message(message: object) -> TypeGuard[ToolResultMessage]:
    """Whether ``message`` is a tool result (``role`` ``"toolResult"``)."""
    return _tag(message, "role") == "toolResult"


def is_text_content(block: object) -> TypeGuard[TextContent]:
    """Whether a content block is text (``type`` ``"text"``)."""
    return _tag(block, "type") == "text"


def is_thinking_content(block: object) -> TypeGuard[ThinkingContent]:
    """Whether a content block is thinking (``type`` ``"thinking"``)."""
    return _tag(block, "type") == "thinking"


def is_image_content(block: object) -> TypeGuard[ImageContent]:
    """Whether a content block is an image (``type`` ``"image"``)."""
    return _tag(block, "type") == "image"


def is_tool_call(block: object) -> TypeGuard[ToolCall]:
    """Whether a content block is a tool call (``type`` ``"toolCall"``)."""
    return _tag(block, "type") == "toolCall"


def is_text_delta(
    event: AssistantMessageEvent | AgentEvent | Mapping[str, Any],
) -> TypeGuard[TextDeltaEvent]:
    """Whether a stream event is a ``text_delta`` (for an agent's ``message_update`` event,
    test its ``assistantMessageEvent``)."""
    return _tag(event, "type") == "text_delta"


def text_of(message: object) -> str:
    """The text of a message: its ``content`` when that is a str (a user message), else its
    text blocks joined without separator (as they stream); thinking, images and tool calls are
    left out. ``""`` for a message without text, e.g. a custom message."""
    content = _tag(message, "content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        block["text"]
        for block in content
        if is_text_content(block) and isinstance(block.get("text"), str)
    )
