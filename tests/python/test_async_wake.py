"""`async for` over a stream whose events are not there yet: the wait is woken through the
loop's wake channel (python/src/loop_wake.rs), without a runtime task per event; a loop that
cannot watch a file descriptor takes the general path. Either way every event arrives once,
in order, a cancelled wait loses nothing (the event is taken by the step of the task that
receives it; on the general path, a runtime task puts it in front of the stream first), and
two readers of one stream take turns."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any, Awaitable, Callable, Dict, List, TypeVar

import pytest

import pi_agent
from pi_agent import _bridge

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "go", "timestamp": 0}]}
T = TypeVar("T")
WORDS = "one two three four five six seven eight nine ten " * 3


def slow_faux() -> pi_agent.FauxProvider:
    # Paced: most `__anext__` calls find nothing there and wait.
    return pi_agent.FauxProvider(tokens_per_second=400)


async def read_all(model: pi_agent.Model) -> List[Dict[str, Any]]:
    async with pi_agent.stream(model, CONTEXT) as events:
        return [event async for event in events]


def text_of(events: List[Dict[str, Any]]) -> str:
    return "".join(event["delta"] for event in events if event["type"] == "text_delta")


def test_waits_are_woken_through_one_channel_per_loop() -> None:
    """Eight streams woken through one channel, over and over: a wake-up lost between the
    runtime threads and the loop would stall them all (it did, once in four rounds, while
    the channel cleared its flag before reading its bytes)."""
    rounds, streams = 12, 8
    with slow_faux() as faux:
        for _ in range(rounds * streams):
            faux.push(WORDS)

        loops: List["weakref.ref[asyncio.AbstractEventLoop]"] = []

        async def main() -> List[List[Dict[str, Any]]]:
            loop = asyncio.get_running_loop()
            loops.append(weakref.ref(loop))
            seen: List[List[Dict[str, Any]]] = []
            for _ in range(rounds):
                batch = asyncio.gather(*(read_all(faux.model) for _ in range(streams)))
                seen.extend(await asyncio.wait_for(batch, 60))
            # A wait took the loop path: the loop has a channel, registered as a reader.
            assert _bridge._WAKE_CHANNELS.get(loop) not in (None, False)
            return seen

        results = asyncio.run(main())
        assert len(results) == rounds * streams
        for events in results:
            assert events[0]["type"] == "start" and events[-1]["type"] == "done"
            assert text_of(events) == WORDS
    gc.collect()
    # A finished loop takes its channel along.
    finished = loops[0]()
    assert finished is None or finished not in _bridge._WAKE_CHANNELS


class NoReaderLoop(asyncio.SelectorEventLoop):
    """A loop that cannot watch file descriptors (as some embedded or proactor loops)."""

    def add_reader(self, *args: Any) -> None:
        raise NotImplementedError


def test_a_loop_without_add_reader_takes_the_general_path() -> None:
    with slow_faux() as faux:
        faux.push(WORDS)
        loop = NoReaderLoop()
        try:
            events = loop.run_until_complete(read_all(faux.model))
            assert _bridge._WAKE_CHANNELS.get(loop) is False
        finally:
            loop.close()
    assert events[-1]["type"] == "done"
    assert text_of(events) == WORDS


def test_a_second_reader_of_a_waiting_stream_is_served_by_the_general_path() -> None:
    """`result()` awaited while an `async for` wait is pending: one of them holds the stream,
    the other waits for it; both end, and the final message has the whole text."""
    with slow_faux() as faux:
        faux.push(WORDS)

        async def main() -> Dict[str, Any]:
            events = pi_agent.stream(faux.model, CONTEXT)
            first = await events.__anext__()
            assert first["type"] == "start"
            pending = asyncio.ensure_future(events.__anext__())
            await asyncio.sleep(0)
            message = await events.result()
            try:
                await pending
            except StopAsyncIteration:
                pass
            return message

        message = asyncio.run(main())
    assert message["stopReason"] == "stop"
    assert message["content"][0]["text"] == WORDS


PATHS = ["wake", "general"]


def run_on(path: str, main: Callable[[], Awaitable[T]]) -> T:
    """Runs `main` on a loop whose waits take `path`: the wake channel, or (a loop that cannot
    watch a file descriptor) the general path."""
    if path == "wake":
        return asyncio.run(main())
    loop = NoReaderLoop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def check_path(path: str) -> None:
    channel = _bridge._WAKE_CHANNELS.get(asyncio.get_running_loop())
    assert channel is False if path == "general" else channel not in (None, False)


# The general path's window (an event taken on the runtime, its wait cancelled before the loop
# took it) is narrow: it lost an event in about one stream in three, so several rounds.
ROUNDS = {"wake": 1, "general": 6}


@pytest.mark.parametrize("path", PATHS)
def test_a_cancelled_wait_loses_no_event(path: str) -> None:
    for _ in range(ROUNDS[path]):
        with slow_faux() as faux:
            faux.push(WORDS)

            async def main() -> List[Dict[str, Any]]:
                seen: List[Dict[str, Any]] = []
                timeouts = 0
                async with pi_agent.stream(faux.model, CONTEXT) as events:
                    iterator = events.__aiter__()
                    while True:
                        try:
                            # Far shorter than the pacing: most waits are cancelled.
                            seen.append(await asyncio.wait_for(iterator.__anext__(), 0.0005))
                        except asyncio.TimeoutError:
                            timeouts += 1
                            continue
                        except StopAsyncIteration:
                            break
                assert timeouts > 0
                check_path(path)
                return seen

            seen = run_on(path, main)
        kinds = [event["type"] for event in seen]
        assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("done") == 1
        assert text_of(seen) == WORDS


@pytest.mark.parametrize("path", PATHS)
def test_an_agent_run_read_with_cancelled_waits_loses_no_event(path: str) -> None:
    """The same for `async for` over an `Agent.run`."""
    for _ in range(ROUNDS[path]):
        with slow_faux() as faux:
            faux.push(WORDS)
            agent = pi_agent.Agent(faux.model)

            async def main() -> List[Dict[str, Any]]:
                seen: List[Dict[str, Any]] = []
                timeouts = 0
                async with agent.run("go", partial=True) as run:
                    iterator = run.__aiter__()
                    while True:
                        try:
                            seen.append(await asyncio.wait_for(iterator.__anext__(), 0.0005))
                        except asyncio.TimeoutError:
                            timeouts += 1
                        except StopAsyncIteration:
                            break
                assert timeouts > 0
                check_path(path)
                return seen

            seen = run_on(path, main)
        kinds = [event["type"] for event in seen]
        assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
        assert kinds.count("agent_end") == 1
        deltas = [
            event["assistantMessageEvent"]["delta"]
            for event in seen
            if event["type"] == "message_update"
            and event["assistantMessageEvent"]["type"] == "text_delta"
        ]
        assert "".join(deltas) == WORDS
        assert seen[-1]["messages"][-1]["content"][0]["text"] == WORDS


def test_a_wait_on_a_stream_nobody_else_holds_completes() -> None:
    """`await anext(pi_agent.stream(...))`: the stream object is a temporary, yet the wait holds
    the stream until its event comes (the stream itself was aborted with its object)."""
    with slow_faux() as faux:
        faux.push(WORDS)

        async def main() -> Dict[str, Any]:
            return await pi_agent.stream(faux.model, CONTEXT).__anext__()

        first = asyncio.run(asyncio.wait_for(main(), 30))
    assert first["type"] in ("start", "error")


def test_two_waits_on_one_stream_take_turns() -> None:
    """Two `__anext__` awaited at once on one stream: each event goes to one of them, in order,
    and neither waits forever."""
    with slow_faux() as faux:
        faux.push(WORDS)

        async def main() -> List[Dict[str, Any]]:
            seen: List[Dict[str, Any]] = []
            events = pi_agent.stream(faux.model, CONTEXT)
            iterator = events.__aiter__()

            async def one() -> Any:
                try:
                    return await iterator.__anext__()
                except StopAsyncIteration:
                    return None

            while True:
                pair = await asyncio.wait_for(asyncio.gather(one(), one()), 30)
                got = [event for event in pair if event is not None]
                seen.extend(got)
                if len(got) < 2:
                    return seen

        seen = asyncio.run(main())
    kinds = [event["type"] for event in seen]
    assert kinds[0] == "start" and kinds.count("done") == 1 and kinds[-1] == "done"
    assert text_of(seen) == WORDS
