"""Reference cycles through pi_agent objects are collected: an agent whose tool, hook or
subscriber refers back to it — the usual shape of a class that owns an agent — goes with
``gc.collect()`` once no run of it is going, and collecting it stops its run as dropping it
does. So does a session whose tool refers back to it, once it is idle. (A running agent or
session keeps what its core may still call alive.)"""

from __future__ import annotations

import asyncio
import gc
import pathlib
import time
import weakref
from typing import Any, Callable, Dict

import pi_agent

from conftest import MockServer
from test_robustness import HANG_GUARD, StalledServer, stalled  # noqa: F401 (fixture)


class Owner:
    """What a program keeps: an object holding an agent whose callbacks refer back to it."""

    agent: Any
    session: Any
    run: Any

    def on_event(self, event: Dict[str, Any]) -> None:
        pass


def collected_after(build: Callable[[Owner], None]) -> bool:
    """Builds a cycle through a new `Owner`, drops it, runs the collector; whether it went."""
    owner = Owner()
    build(owner)
    gone = weakref.ref(owner)
    del owner
    gc.collect()
    return gone() is None


def echo_tool(owner: Owner) -> pi_agent.Tool:
    def echo() -> str:
        return type(owner).__name__

    return pi_agent.Tool("echo", "Echoes", {"type": "object"}, echo)


def test_an_agent_whose_tool_refers_to_it_is_collected(mock_server: MockServer) -> None:
    def build(owner: Owner) -> None:
        owner.agent = pi_agent.Agent(mock_server.model(), tools=[echo_tool(owner)])

    assert collected_after(build)


def test_an_agent_whose_subscriber_is_its_owners_method_is_collected(mock_server: MockServer) -> None:
    def build(owner: Owner) -> None:
        owner.agent = pi_agent.Agent(mock_server.model())
        owner.agent.subscribe(owner.on_event)

    assert collected_after(build)


def test_an_unsubscribed_subscriber_is_no_longer_held(mock_server: MockServer) -> None:
    """Neither by the agent nor by the idle worker threads that called it."""
    mock_server.push({"text": "hello"})
    agent = pi_agent.Agent(mock_server.model(), api_key="k")
    owner = Owner()
    unsubscribe = agent.subscribe(owner.on_event)
    agent.prompt_sync("hi")
    gone = weakref.ref(owner)
    unsubscribe()
    unsubscribe()
    del owner
    gc.collect()
    assert gone() is None


def test_an_agent_whose_hooks_refer_to_it_is_collected(mock_server: MockServer) -> None:
    def build(owner: Owner) -> None:
        owner.agent = pi_agent.Agent(
            mock_server.model(), should_stop_after_turn=lambda context: owner is None
        )
        owner.agent.transform_context = lambda messages: [owner] and messages

    assert collected_after(build)


def test_an_agent_kept_through_its_finished_run_is_collected(mock_server: MockServer) -> None:
    mock_server.push({"text": "hello"})

    def build(owner: Owner) -> None:
        owner.agent = pi_agent.Agent(mock_server.model(), api_key="k")
        owner.agent.subscribe(owner.on_event)
        owner.run = owner.agent.run("hi")
        types = [event["type"] for event in owner.run]
        assert types[-1] == "agent_end"
        del owner.agent  # the run keeps it

    assert collected_after(build)


def test_an_idle_session_whose_tool_refers_to_it_is_collected(
    mock_server: MockServer, tmp_path: pathlib.Path
) -> None:
    """Before any run, and after a run that called the tool."""
    mock_server.push(
        {"tool_calls": [{"id": "call-1", "name": "echo", "arguments": {}}]},
        {"text": "done"},
    )
    settings = {"streamOptions": {"apiKey": "test-key"}}

    def build(owner: Owner, name: str, run: bool) -> None:
        owner.session = pi_agent.Session(
            tmp_path / f"{name}.db", name, mock_server.model(), tools=[echo_tool(owner)],
            settings=settings,
        )
        if run:
            owner.session.prompt("r1", "hi")
            assert owner.session.wait_idle(timeout=HANG_GUARD)
            roles = [m["role"] for m in owner.session.transcript()]
            assert roles == ["user", "assistant", "toolResult", "assistant"]

    assert collected_after(lambda owner: build(owner, "fresh", False))
    assert collected_after(lambda owner: build(owner, "ran", True))


def test_a_running_agents_cycle_is_collected_once_its_run_ends(stalled: StalledServer) -> None:  # noqa: F811
    """While a run is going, its core may still call the tools and subscribers: the cycle stays
    until the run ends (here the stream's idle watchdog ends it), then goes."""
    owner = Owner()
    owner.agent = pi_agent.Agent(
        stalled.model(), tools=[echo_tool(owner)], api_key="k", max_retries=0,
        stream_idle_timeout_ms=300,
    )
    owner.agent.subscribe(owner.on_event)

    async def start() -> None:
        asyncio.ensure_future(owner.agent.prompt("hi"))
        await asyncio.get_running_loop().run_in_executor(None, stalled.accepted.wait, HANG_GUARD)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(start())
    loop.close()  # the task awaiting prompt() is abandoned
    gone = weakref.ref(owner)
    del owner, start, loop
    deadline = time.monotonic() + HANG_GUARD
    while gone() is not None:
        assert time.monotonic() < deadline, "the cycle was never collected"
        gc.collect()
        time.sleep(0.05)
    assert stalled.closed.wait(HANG_GUARD), "the request stayed open"
