"""The stream's event dicts, built directly in the binding for the per-delta events, are the
same dicts (keys, key order, value types) as the serde path gives: the agent's
`message_update` events carry the same events converted through that path."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, Iterator, List

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
