"""The stream's event dicts, built directly in the binding for the per-delta events, are the
same dicts (keys, key order, value types) as the serde path gives: the agent's
`message_update` events carry the same events converted through that path."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, Iterator, List, Optional

import pytest

import pi_agent
from pi_agent import faux_text, faux_thinking, faux_tool_call

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "go", "timestamp": 0}]}
TEXT = "A reply long enough to arrive in several deltas, with ünïcode and \"quotes\"."


@pytest.fixture
def faux() -> Iterator[pi_agent.FauxProvider]:
    # One token per delta: the same response gives the same deltas every time.
    with pi_agent.FauxProvider(token_size=(1, 1)) as provider:
        yield provider


def response() -> List[Any]:
    return [faux_thinking("Think first."), faux_text(TEXT), faux_tool_call("lookup", {"q": "pi"}, id="c1")]


def shape(event: Dict[str, Any]) -> List[Any]:
    """Keys in order with their values and value types: what `==` on dicts does not check."""
    return [(key, value, type(value).__name__) for key, value in event.items()]


def agent_events(faux: pi_agent.FauxProvider) -> List[Dict[str, Any]]:
    @pi_agent.tool
    def lookup(q: str) -> str:
        """Looks something up.

        Args:
            q: What to look up.
        """
        return "x"

    faux.push(response())
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[lookup])
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)
    agent.prompt_sync("go")
    updates = [e["assistantMessageEvent"] for e in events if e["type"] == "message_update"]
    # The first turn's updates (the second turn answers "done").
    first_end = next(i for i, e in enumerate(updates) if e["type"] == "toolcall_end")
    return updates[: first_end + 1]


def test_sync_events_match_the_serde_shapes(faux: pi_agent.FauxProvider) -> None:
    expected = agent_events(faux)
    faux.push(response())
    with pi_agent.stream(faux.model, CONTEXT) as stream:
        events = list(stream)
    # message_update carries every event between start and done.
    assert [shape(e) for e in events[1:-1]] == [shape(e) for e in expected]
    kinds = {e["type"] for e in events}
    assert {"thinking_delta", "text_delta", "toolcall_delta", "text_start", "thinking_start"} <= kinds
    delta = next(e for e in events if e["type"] == "text_delta")
    assert list(delta) == ["type", "contentIndex", "delta"]
    assert "".join(e["delta"] for e in events if e["type"] == "text_delta") == TEXT


def test_async_events_equal_the_sync_ones(faux: pi_agent.FauxProvider) -> None:
    faux.push(response())
    with pi_agent.stream(faux.model, CONTEXT) as stream:
        sync_events = list(stream)
    faux.push(response())

    async def main() -> List[Dict[str, Any]]:
        async with pi_agent.stream(faux.model, CONTEXT) as stream:
            return [event async for event in stream]

    async_events = asyncio.run(main())
    # Only `start`/`done` carry timestamps that differ between the two requests.
    assert [shape(e) for e in async_events[1:-1]] == [shape(e) for e in sync_events[1:-1]]
    assert async_events[-1]["type"] == "done"


def test_an_awaited_step_then_the_end_of_the_stream(faux: pi_agent.FauxProvider) -> None:
    # `__anext__` gives a ready awaitable when the event is already there and an asyncio future
    # when it is not (which of the two depends on timing), so only what both promise is checked.
    faux.push("hi")

    async def main() -> None:
        stream = pi_agent.stream(faux.model, CONTEXT)
        step = stream.__anext__()
        first = await step
        assert first["type"] == "start"
        async for _ in stream:
            pass
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()

    asyncio.run(main())


def deep_shape(value: Any) -> Any:
    """Keys in order, values and their types, all the way down."""
    if isinstance(value, dict):
        return [(key, deep_shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [deep_shape(item) for item in value]
    return (value, type(value).__name__)


def test_agent_event_dicts_equal_the_json_value_path(faux: pi_agent.FauxProvider) -> None:
    # The agent's events are built straight from serde (no `serde_json::Value`); the stepper's
    # go through a Value. Fed the agent's own messages, the stepper must emit the same dicts.
    @pi_agent.tool
    def lookup(q: str, deep: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Looks something up.

        Args:
            q: What to look up.
            deep: Where to look.
        """
        return {"content": "ünï \"x\"", "details": {"n": 1, "f": 0.5, "none": None, "l": [1, "a", True]}}

    faux.push([faux_text("Let me look."), faux_tool_call("lookup", {"q": "pi", "deep": {"x": [1.5]}}, id="c1")])
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[lookup])
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)
    agent.prompt_sync("go")
    by_kind: Dict[str, List[Dict[str, Any]]] = {}
    for event in events:
        by_kind.setdefault(event["type"], []).append(event)
    prompt = by_kind["message_start"][0]["message"]
    assistant = by_kind["message_end"][1]["message"]
    result = by_kind["message_end"][2]["message"]
    assert result["role"] == "toolResult" and result["details"]["f"] == 0.5

    stepper, step = pi_agent.AgentStepper.start(prompts=[prompt])
    replayed = list(step["events"])
    for answer in (
        {"type": "steering", "messages": []},
        {"type": "model_result", "message": assistant, "startEmitted": True},
        {"type": "tool_results", "outcomes": [{"message": result, "terminate": False}]},
    ):
        replayed.extend(stepper.resume(answer)["events"])
    wanted = [e for e in events if e["type"] in {"message_start", "message_end", "turn_end"}]
    got = [e for e in replayed if e["type"] in {"message_start", "message_end", "turn_end"}]
    # The agent streamed the assistant's message_start itself; the stepper did not emit one.
    wanted = [e for e in wanted if not (e["type"] == "message_start" and e["message"]["role"] == "assistant")]
    assert [deep_shape(e) for e in got] == [deep_shape(e) for e in wanted[: len(got)]]
    assert len(got) == 6
    end = by_kind["tool_execution_end"][0]
    assert list(end) == ["type", "toolCallId", "toolName", "result", "isError"]
    assert deep_shape(end["result"]["details"]) == deep_shape(result["details"])
    updates = by_kind["message_update"]
    assert list(updates[0]) == ["type", "assistantMessageEvent"]


def test_partial_message_updates_carry_the_message_last(faux: pi_agent.FauxProvider) -> None:
    faux.push("hello there")
    agent = pi_agent.Agent(faux.model)
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append, partial=True)
    agent.prompt_sync("go")
    updates = [e for e in events if e["type"] == "message_update"]
    assert updates and all(list(e) == ["type", "assistantMessageEvent", "message"] for e in updates)
    last = updates[-1]["message"]
    assert last["role"] == "assistant" and isinstance(last["usage"]["cost"]["total"], float)
    final = [e for e in events if e["type"] == "message_end"][-1]["message"]
    assert set(last) <= set(final)
