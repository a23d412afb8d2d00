"""Save and restore: `Agent.snapshot()` / `Agent.restore()`, in the JSON every binding shares."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

import pi_agent
from pi_agent import faux_tool_call

from test_agent import text_of

# What core writes (`serde_json::to_string(&agent.snapshot())`, `pi_agent_snapshot_json` in C):
# the model is filled in by the test, since the faux provider's api id differs per test.
SNAPSHOT_FROM_ANOTHER_BINDING = """{
  "version": 1,
  "systemPrompt": "Be brief.",
  "model": null,
  "thinkingLevel": "low",
  "messages": [
    {"role": "user", "content": "What is 6 * 7?", "timestamp": 1},
    {"role": "notification", "text": "restored from C"}
  ],
  "toolExecution": "sequential",
  "steeringMode": "all",
  "followUpMode": "one-at-a-time",
  "steeringQueue": [],
  "followUpQueue": [],
  "toolNames": ["multiply"]
}"""


def multiply(a: int, b: int) -> int:
    """Multiplies two integers."""
    return a * b


def test_snapshot_restore_continue(faux: pi_agent.FauxProvider) -> None:
    faux.push([faux_tool_call("multiply", {"a": 6, "b": 7})])
    faux.push("42")
    agent = pi_agent.Agent(
        faux.model,
        system_prompt="Be brief.",
        tools=[multiply],
        thinking_level="high",
        follow_up_mode="all",
    )
    agent.prompt_sync("What is 6 * 7?")
    agent.follow_up("And 7 * 8?")

    saved = json.dumps(agent.snapshot())  # plain JSON
    snapshot = json.loads(saved)
    assert snapshot["version"] == 2
    assert snapshot["toolNames"] == ["multiply"]
    assert snapshot["settings"]["followUpMode"] == "all"
    assert [m["role"] for m in snapshot["followUpQueue"]] == ["user"]

    seen: List[Any] = []
    restored = pi_agent.Agent.restore(
        snapshot,
        tools=[multiply],
        before_tool_call=lambda ctx: seen.append(ctx["args"]),
        tool_timeout_ms=5000,
    )
    assert restored.messages == agent.messages
    assert restored.model == agent.model
    assert restored.system_prompt == "Be brief."
    assert restored.thinking_level == "high"
    assert restored.follow_up_mode == "all"
    assert restored.has_queued_messages
    assert [tool.name for tool in restored.tools] == ["multiply"]
    assert restored.tool_timeout_ms == 5000
    # The watchdog given to restore is the restored agent's (core's settings, not a copy).
    assert restored.snapshot() == {**snapshot, "settings": {**snapshot["settings"], "toolTimeoutMs": 5000}}

    faux.push([faux_tool_call("multiply", {"a": 7, "b": 8})])
    faux.push("56")
    restored.continue_sync()  # the queued follow-up runs
    assert seen == [{"a": 7, "b": 8}]
    assert [text_of(m) for m in restored.messages if m["role"] != "assistant" or text_of(m)][-3:] == [
        "And 7 * 8?",
        "56",
        "56",
    ]
    assert len(agent.messages) == 4  # the original is untouched


def test_a_snapshot_written_by_another_binding_loads(faux: pi_agent.FauxProvider) -> None:
    snapshot: Dict[str, Any] = json.loads(SNAPSHOT_FROM_ANOTHER_BINDING)
    snapshot["model"] = faux.model.to_dict()
    agent = pi_agent.Agent.restore(snapshot, tools=[multiply])
    # Version 1 (settings at the top level) is read; version 2 nests them under `settings`.
    written = agent.snapshot()
    assert written["version"] == 2
    assert written["settings"] == {
        "thinkingLevel": "low",
        "toolExecution": "sequential",
        "steeringMode": "all",
        "followUpMode": "one-at-a-time",
        "streamOptions": {},
        "limits": {"maxTurns": 100},  # a snapshot without limits gets the default guard
    }
    for key in ["systemPrompt", "model", "messages", "steeringQueue", "followUpQueue", "toolNames"]:
        assert written[key] == snapshot[key], key
    assert agent.tool_execution == "sequential" and agent.steering_mode == "all"

    contexts: List[Any] = []
    faux.push(lambda context, call, model: contexts.append(context) or "It is 42.")
    agent.continue_sync()  # from the user message (the custom one is not sent)
    assert [m["role"] for m in contexts[0]["messages"]] == ["user"]
    assert contexts[0]["systemPrompt"] == "Be brief."
    assert text_of(agent.messages[-1]) == "It is 42."


def test_restore_takes_code_not_data(faux: pi_agent.FauxProvider) -> None:
    snapshot = pi_agent.Agent(faux.model).snapshot()
    with pytest.raises(TypeError, match="unexpected option `system_prompt`"):
        pi_agent.Agent.restore(snapshot, system_prompt="no")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="invalid snapshot"):
        pi_agent.Agent.restore({"version": 1})
    restored = pi_agent.Agent.restore(snapshot, api_key="sk-test", temperature=0.1)
    assert restored.messages == []
