"""Narrowing helpers and `text_of` on real transcripts."""

from __future__ import annotations

from typing import Any, List

import pi_agent


def test_guards_narrow_a_real_transcript(faux: pi_agent.FauxProvider) -> None:
    faux.push([pi_agent.faux_thinking("hmm"), pi_agent.faux_tool_call("echo", {"text": "x"})])
    faux.push([pi_agent.faux_text("first "), pi_agent.faux_text("second")])

    def echo(text: str) -> str:
        """Echoes."""
        return text

    agent = pi_agent.Agent(faux.model, tools=[echo])
    agent.prompt_sync("go")
    user, call, result, answer = agent.messages
    assert pi_agent.is_user_message(user) and not pi_agent.is_assistant_message(user)
    assert pi_agent.is_assistant_message(call) and pi_agent.is_assistant_message(answer)
    assert pi_agent.is_tool_result_message(result) and not pi_agent.is_user_message(result)
    blocks = call["content"]
    assert [pi_agent.is_thinking_content(block) for block in blocks] == [True, False]
    assert [pi_agent.is_tool_call(block) for block in blocks] == [False, True]
    calls = [block for block in blocks if pi_agent.is_tool_call(block)]
    assert calls[0]["name"] == "echo"   # narrowed: a type checker knows "name" exists
    assert pi_agent.text_of(user) == "go"
    assert pi_agent.text_of(call) == ""
    assert pi_agent.text_of(result) == "x"
    assert pi_agent.text_of(answer) == "first second"


def test_guards_on_blocks_events_and_odd_values() -> None:
    assert pi_agent.is_text_content({"type": "text", "text": "a"})
    assert pi_agent.is_image_content({"type": "image", "data": "", "mimeType": "image/png"})
    assert not pi_agent.is_image_content({"type": "text"})
    for odd in (None, "user", 3, [], {"role": None}):
        assert not pi_agent.is_user_message(odd)
        assert not pi_agent.is_tool_call(odd)
        assert pi_agent.text_of(odd) == ""
    assert pi_agent.text_of({"role": "notification", "text": "custom"}) == ""
    assert pi_agent.text_of(
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "caption"}]}
    ) == "caption"


def test_text_delta_guard_on_a_stream(faux: pi_agent.FauxProvider) -> None:
    faux.push("hello there")
    context: Any = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
    deltas: List[str] = []
    with pi_agent.stream(faux.model, context) as events:
        for event in events:
            if pi_agent.is_text_delta(event):
                deltas.append(event["delta"])
    assert "".join(deltas) == "hello there"
