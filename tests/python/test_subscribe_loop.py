"""``agent.subscribe(fn, loop=...)`` (issue 18): a plain-function subscriber called on the
caller's event loop thread (``loop.call_soon_threadsafe``), in event order, so it may feed an
``asyncio.Queue``; refused for ``async def`` subscribers and for non-loops; a blocked loop
never stalls the run."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List

import pytest

import pi_agent


def test_a_plain_subscriber_runs_on_the_given_loop_in_order(faux: pi_agent.FauxProvider) -> None:
    faux.set_responses([[pi_agent.faux_text("one two three")]])
    agent = pi_agent.Agent(faux.model)

    async def main() -> List[str]:
        loop = asyncio.get_running_loop()
        queue: "asyncio.Queue[Dict[str, Any]]" = asyncio.Queue()
        threads: List[int] = []

        def on_event(event: Dict[str, Any]) -> None:
            threads.append(threading.get_ident())
            queue.put_nowait(event)  # only safe on the loop's own thread

        agent.subscribe(on_event, loop=loop)
        await agent.prompt("Hi")
        types: List[str] = []
        while True:
            event = await asyncio.wait_for(queue.get(), timeout=30)
            types.append(event["type"])
            if event["type"] == "agent_end":
                break
        assert set(threads) == {threading.get_ident()}, threads
        return types

    types = asyncio.run(main())
    assert types[0] == "agent_start" and types[-1] == "agent_end", types
    assert types.index("message_start") < types.index("message_end")
    assert "message_update" in types


def test_a_loop_in_another_thread_gets_the_events_of_a_sync_run(faux: pi_agent.FauxProvider) -> None:
    faux.set_responses([[pi_agent.faux_text("hello")]])
    agent = pi_agent.Agent(faux.model)
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    seen: List[str] = []
    threads: List[int] = []
    ended = threading.Event()

    def on_event(event: Dict[str, Any], signal: pi_agent.Signal) -> None:
        assert isinstance(signal, pi_agent.Signal)
        threads.append(threading.get_ident())
        seen.append(event["type"])
        if event["type"] == "agent_end":
            ended.set()

    try:
        unsubscribe = agent.subscribe(on_event, loop=loop)
        agent.prompt_sync("Hi")
        assert ended.wait(30)
        assert set(threads) == {runner.ident}
        assert seen[0] == "agent_start" and seen[-1] == "agent_end", seen
        unsubscribe()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(30)
        loop.close()


def test_a_blocked_loop_does_not_stall_the_run(faux: pi_agent.FauxProvider) -> None:
    # `prompt_sync` on the loop's own thread: the loop cannot run the callbacks until the run
    # is over, and the run does not wait for them.
    faux.set_responses([[pi_agent.faux_text("hello")]])
    agent = pi_agent.Agent(faux.model)
    seen: List[str] = []

    async def main() -> int:
        agent.subscribe(lambda event: seen.append(event["type"]), loop=asyncio.get_running_loop())
        agent.prompt_sync("Hi")  # blocks the loop
        before = len(seen)
        await asyncio.sleep(0)
        for _ in range(100):
            if seen and seen[-1] == "agent_end":
                break
            await asyncio.sleep(0.05)
        return before

    before = asyncio.run(main())
    assert before == 0
    assert seen[-1] == "agent_end", seen


def test_loop_is_refused_where_it_cannot_apply(faux: pi_agent.FauxProvider) -> None:
    agent = pi_agent.Agent(faux.model)

    async def on_event(event: Dict[str, Any]) -> None:
        pass

    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(pi_agent.PiTypeError, match="async def") as raised:
            agent.subscribe(on_event, loop=loop)
        assert raised.value.field == "loop"
        with pytest.raises(pi_agent.PiTypeError, match="asyncio event loop"):
            agent.subscribe(print, loop="not a loop")  # type: ignore[arg-type]
    finally:
        loop.close()


def test_a_closed_loop_is_a_listener_error(faux: pi_agent.FauxProvider, unraisable: List[Any]) -> None:
    faux.set_responses([[pi_agent.faux_text("hello")]])
    agent = pi_agent.Agent(faux.model)
    loop = asyncio.new_event_loop()
    loop.close()
    agent.subscribe(print, loop=loop)
    agent.prompt_sync("Hi")
    assert agent.messages[-1]["role"] == "assistant"
    assert agent.listener_errors and "closed" in agent.listener_errors[0], agent.listener_errors
