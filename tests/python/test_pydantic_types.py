"""pydantic validates pi_agent.types' TypedDicts (they come from typing_extensions before 3.12)."""

from __future__ import annotations

import pytest

import pi_agent
from pi_agent import types

pydantic = pytest.importorskip("pydantic")


def test_a_real_transcript_validates(faux: pi_agent.FauxProvider) -> None:
    faux.push([pi_agent.faux_tool_call("echo", {"text": "x"})])
    faux.push("done")

    def echo(text: str) -> str:
        """Echoes."""
        return text

    agent = pi_agent.Agent(faux.model, tools=[echo])
    agent.prompt_sync("go")
    adapter = pydantic.TypeAdapter(list[types.Message])
    assert adapter.validate_python(agent.messages) == agent.messages
    assistant = pydantic.TypeAdapter(types.AssistantMessage)
    assert assistant.validate_python(agent.messages[-1])["stopReason"] == "stop"


def test_a_malformed_message_is_refused() -> None:
    adapter = pydantic.TypeAdapter(types.UserMessage)
    with pytest.raises(pydantic.ValidationError):
        adapter.validate_python({"role": "user", "timestamp": 0})
    with pytest.raises(pydantic.ValidationError):
        pydantic.TypeAdapter(types.Usage).validate_python({"input": "many"})
