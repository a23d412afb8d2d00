"""A run as a value (core's ``AgentRun``): iteration, ``with`` / ``async with``, abort on early
exit and on drop, results; cancellation that completes the abort before it returns; Ctrl-C;
one naming convention for async/sync twins.

Synchronisation is by events (a subscriber or the run's own events say when the run has
started), never by sleeping; timeouts are only hang guards."""

from __future__ import annotations

import _thread
import asyncio
import gc
import inspect
import json
import threading
from typing import Any, Dict, Iterator, List

import pytest

import pi_agent

HANG_GUARD = 30.0
LONG = "word " * 2000


@pytest.fixture
def slow() -> Iterator[pi_agent.FauxProvider]:
    """A faux provider that streams slowly enough that a run is reliably still going."""
    with pi_agent.FauxProvider(tokens_per_second=200) as provider:
        yield provider


def first_update(run: pi_agent.AgentRun) -> Dict[str, Any]:
    for event in run:
        if event["type"] == "message_update":
            return event
    raise AssertionError("the run ended before streaming")


def test_a_run_iterates_its_events_and_gives_its_result(faux: pi_agent.FauxProvider) -> None:
    faux.push("hello")
    agent = pi_agent.Agent(faux.model)
    run = agent.run("hi")
    kinds = [event["type"] for event in run]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert run.is_finished
    new_messages = run.result_sync()
    assert new_messages == agent.messages
    assert [m["role"] for m in new_messages] == ["user", "assistant"]

    async def main() -> List[Any]:
        faux.push("again")
        run = agent.run("more")
        seen = [event["type"] async for event in run]
        assert seen[-1] == "agent_end"
        return await run.result()

    assert [m["role"] for m in asyncio.run(main())] == ["user", "assistant"]
    assert agent.prompt_sync("x")[-1]["stopReason"] == "error"  # nothing scripted any more


def test_a_run_starts_at_once_and_refuses_a_second(slow: pi_agent.FauxProvider) -> None:
    slow.push(LONG)
    agent = pi_agent.Agent(slow.model)
    run = agent.run("talk")
    assert agent.is_streaming
    assert isinstance(agent.signal, pi_agent.Signal) and not run.signal.aborted
    with pytest.raises(pi_agent.AgentBusyError, match="already processing"):
        agent.run("again")
    run.abort()
    assert run.signal.aborted
    run.result_sync()
    assert not agent.is_streaming and agent.signal is None
    assert agent.messages[-1]["stopReason"] == "aborted"


def test_leaving_with_early_aborts_and_waits(slow: pi_agent.FauxProvider) -> None:
    slow.set_responses([LONG, LONG])
    agent = pi_agent.Agent(slow.model)
    with agent.run("talk") as run:
        first_update(run)
    # The abort has completed: the agent is idle and takes a new run at once.
    assert not agent.is_streaming
    assert agent.messages[-1]["stopReason"] == "aborted"

    async def main() -> None:
        async with agent.run("talk", partial=True) as run:
            async for event in run:
                if event["type"] == "message_update":
                    assert event["message"]["role"] == "assistant"  # partial=True
                    break
        assert not agent.is_streaming

    asyncio.run(asyncio.wait_for(main(), HANG_GUARD))
    assert agent.messages[-1]["stopReason"] == "aborted"


def test_dropping_a_run_aborts_it(slow: pi_agent.FauxProvider) -> None:
    slow.push(LONG)
    agent = pi_agent.Agent(slow.model)
    run = agent.run("talk")
    first_update(run)
    del run
    gc.collect()
    agent.wait_for_idle_sync()
    assert agent.messages[-1]["stopReason"] == "aborted"


def test_cancelled_prompt_completes_its_abort_before_returning(slow: pi_agent.FauxProvider) -> None:
    """Issue 9 #12: after `task.cancel()` and `await task`, the agent is idle at once, so the
    next prompt never meets `AgentBusyError` (before, most of 200 cases were still
    streaming)."""
    rounds = 200
    slow.set_responses([LONG] * rounds)
    agent = pi_agent.Agent(slow.model)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        started = asyncio.Event()

        def on_event(event: Dict[str, Any]) -> None:
            if event["type"] == "message_update":
                loop.call_soon_threadsafe(started.set)

        agent.subscribe(on_event)
        for _ in range(rounds):
            started.clear()
            task = asyncio.create_task(agent.prompt("talk"))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not agent.is_streaming
            assert agent.messages[-1]["stopReason"] == "aborted"

    asyncio.run(asyncio.wait_for(main(), 120))
    assert len(agent.messages) == 2 * rounds


@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_during_prompt_sync_aborts_the_run(slow: pi_agent.FauxProvider) -> None:
    """The interrupt is sent once the run is streaming (no timer), and `prompt_sync` returns
    only when the abort has completed."""
    slow.push(LONG)
    agent = pi_agent.Agent(slow.model)
    sent = threading.Event()

    def interrupt_once(event: Dict[str, Any]) -> None:
        if event["type"] == "message_update" and not sent.is_set():
            sent.set()
            _thread.interrupt_main()

    agent.subscribe(interrupt_once)
    with pytest.raises(KeyboardInterrupt):
        agent.prompt_sync("talk")
    assert sent.is_set()
    assert not agent.is_streaming
    assert agent.messages[-1]["stopReason"] == "aborted"


def test_collecting_an_agent_whose_loop_was_closed_aborts_its_run(
    slow: pi_agent.FauxProvider,
) -> None:
    """A task awaiting `prompt()` on a loop that is closed while it runs is never cancelled;
    the run stops when the agent and its run are collected."""
    slow.push(LONG)
    agent = pi_agent.Agent(slow.model)
    streaming = threading.Event()
    agent.subscribe(lambda event: streaming.set() if event["type"] == "message_update" else None)
    signal = None

    async def start() -> None:
        nonlocal signal
        asyncio.ensure_future(agent.prompt("talk"))
        while agent.signal is None:
            await asyncio.sleep(0)
        signal = agent.signal

    loop = asyncio.new_event_loop()
    loop.run_until_complete(start())
    assert streaming.wait(HANG_GUARD)
    loop.close()  # the pending task is abandoned, never cancelled
    del agent, loop, start
    gc.collect()
    assert signal is not None
    assert signal.wait_sync(HANG_GUARD), "collecting the agent aborted its run"


def test_async_and_sync_twins_follow_one_convention(faux: pi_agent.FauxProvider) -> None:
    """The plain name is the asyncio form; the blocking twin ends in `_sync`."""
    twins = [
        (pi_agent, "complete"),
        (pi_agent, "complete_simple"),
        (pi_agent.Agent, "prompt"),
        (pi_agent.Agent, "continue_"),
        (pi_agent.Agent, "wait_for_idle"),
        (pi_agent.AssistantMessageEventStream, "result"),
        (pi_agent.AgentRun, "result"),
        (pi_agent.Signal, "wait"),
        (pi_agent.oauth, "login"),
        (pi_agent.oauth, "get_oauth_api_key"),
        (pi_agent.oauth, "refresh_oauth_token"),
    ]
    for owner, name in twins:
        sync_name = "continue_sync" if name == "continue_" else f"{name}_sync"
        assert hasattr(owner, name) and hasattr(owner, sync_name), (owner, name)
    for module in (pi_agent, pi_agent.oauth):
        assert not [n for n in dir(module) if n.startswith("acomplete") or n == "aresult"]
    assert not hasattr(pi_agent.AssistantMessageEventStream, "aresult")

    faux.set_responses(["a", "b"])
    context = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
    coroutine = pi_agent.complete(faux.model, context)
    assert inspect.isawaitable(coroutine)
    assert asyncio.run(coroutine)["content"][0]["text"] == "a"
    assert pi_agent.complete_sync(faux.model, context)["content"][0]["text"] == "b"
    agent = pi_agent.Agent(faux.model)
    asyncio.run(agent.wait_for_idle())
    agent.wait_for_idle_sync()


def test_a_run_keeps_its_agent_alive(faux: pi_agent.FauxProvider) -> None:
    """Only when nobody holds the agent *or* its run is the run aborted."""
    faux.push("still here")
    run = pi_agent.Agent(faux.model).run("hi")  # the agent object is not kept by the caller
    gc.collect()
    kinds = [event["type"] for event in run]
    assert kinds[-1] == "agent_end"
    assert run.result_sync()[-1]["content"] == [{"type": "text", "text": "still here"}]


def test_awaiting_a_run_gives_its_messages_and_text_deltas_stream() -> None:
    """Issue 18: `await agent.run(...)` works as pydantic-ai users expect, and
    `async for delta in run.text_deltas()` yields the answer text only."""
    import asyncio

    async def main() -> None:
        with pi_agent.FauxProvider() as faux:
            faux.set_responses(
                [[pi_agent.faux_tool_call("echo", {}, id="c1")], "Hello there, friend."]
            )

            def echo() -> str:
                """Echoes."""
                return "{\"json\": true}"

            agent = pi_agent.Agent(faux.model, tools=[echo])
            run = agent.run("hi")
            text = "".join([delta async for delta in run.text_deltas()])
            assert text == "Hello there, friend."
            faux.set_responses(["second"])
            new = await agent.run("again")
            assert new[-1]["role"] == "assistant" and new[-1]["content"] == [
                {"type": "text", "text": "second"}
            ]

    asyncio.run(main())


def test_async_subscribers_and_tools_run_on_the_awaiting_loop() -> None:
    """Issue 18: under `await`, `async def` subscribers and tools run on the caller's loop, so
    they may feed its asyncio objects directly."""
    import asyncio

    async def main() -> None:
        caller = asyncio.get_running_loop()
        queue: "asyncio.Queue[str]" = asyncio.Queue()
        loops: List[bool] = []
        with pi_agent.FauxProvider() as faux:
            faux.set_responses([[pi_agent.faux_tool_call("probe", {}, id="c1")], "done"])

            @pi_agent.tool
            async def probe() -> str:
                """Probes."""
                loops.append(asyncio.get_running_loop() is caller)
                return "ok"

            agent = pi_agent.Agent(faux.model, tools=[probe])

            async def subscriber(event: Any) -> None:
                loops.append(asyncio.get_running_loop() is caller)
                queue.put_nowait(event["type"])

            agent.subscribe(subscriber)
            await agent.prompt("go")
        assert loops and all(loops)
        seen = [queue.get_nowait() for _ in range(queue.qsize())]
        assert seen[0] == "agent_start" and seen[-1] == "agent_end"

    asyncio.run(main())


# A run started inside a coroutine, then waited for with a blocking call on the loop's thread.
BLOCKED_LOOP = """
import asyncio, json
import pi_agent

async def main() -> None:
    caller = asyncio.get_running_loop()
    loops = []
    with pi_agent.FauxProvider() as faux:
        faux.set_responses([[pi_agent.faux_tool_call("probe", {}, id="c1")], "done"] * 2)

        @pi_agent.tool
        async def probe() -> str:
            \"\"\"Probes.\"\"\"
            await asyncio.sleep(0)
            loops.append(asyncio.get_running_loop() is caller)
            return "ok"

        agent = pi_agent.Agent(faux.model, tools=[probe])

        async def subscriber(event) -> None:
            await asyncio.sleep(0)
            loops.append(asyncio.get_running_loop() is caller)

        agent.subscribe(subscriber)
        types = [event["type"] for event in agent.run("iterated with for")]
        messages = agent.run("waited with result_sync").result_sync()
    print(json.dumps([types[-1], [m["role"] for m in messages], len(loops), any(loops)]))

asyncio.run(main())
"""


def test_a_blocking_wait_on_the_loops_thread_moves_async_callbacks_off_it() -> None:
    """`for event in agent.run(...)` (or `result_sync()`) inside a coroutine blocks the loop
    that the run's `async def` tool and subscriber would run on: they run elsewhere instead of
    waiting for it for ever."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", BLOCKED_LOOP],
        capture_output=True, text=True, timeout=HANG_GUARD * 2,
    )
    assert done.returncode == 0, done.stderr
    last, roles, calls, on_caller = json.loads(done.stdout)
    assert last == "agent_end" and roles == ["user", "assistant", "toolResult", "assistant"]
    assert calls >= 10 and not on_caller


BLOCKED_LOOP_STREAM_FN = """
import asyncio, json
import pi_agent

async def events(model, context, options):
    await asyncio.sleep(0)
    yield {"type": "start"}
    yield {"type": "text_start", "contentIndex": 0}
    for word in ("from ", "an async generator"):
        await asyncio.sleep(0)
        yield {"type": "text_delta", "contentIndex": 0, "delta": word}
    yield {"type": "text_end", "contentIndex": 0}
    yield {"type": "done", "reason": "stop", "usage": {"input": 1, "output": 1}}

async def main() -> None:
    agent = pi_agent.Agent(pi_agent.Model("custom", api="custom-api"), stream_fn=events)
    types = [event["type"] for event in agent.run("iterated with for")]
    messages = agent.run("waited with result_sync").result_sync()
    print(json.dumps([types[-1], pi_agent.text_of(messages[-1])]))

asyncio.run(main())
"""


def test_an_async_generator_stream_fn_is_read_while_a_wait_blocks_its_loop() -> None:
    """A stream function's async generator is read on the caller's loop; a coroutine that
    blocks that loop waiting for the run (`for event in run`, `result_sync()`) would wait for
    itself: its reads move to a loop of their own, as tools and subscribers move to workers."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", BLOCKED_LOOP_STREAM_FN],
        capture_output=True, text=True, timeout=HANG_GUARD * 2,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["agent_end", "from an async generator"]


def test_a_call_sent_to_a_loop_that_closes_before_starting_it_runs_on_a_worker() -> None:
    """A loop seen running when an `async def` callback was sent to it may stop before it
    starts it, and then be closed (its pending callbacks dropped): the call moves to a worker
    instead of leaving the run waiting for it for ever."""
    from pi_agent import _bridge

    loop = asyncio.new_event_loop()  # not running: as if it stopped right after the check
    outcome: List[Any] = []
    finished = threading.Event()

    async def job() -> str:
        await asyncio.sleep(0)
        return "ran"

    _bridge.submit(job(), loop, lambda future: (outcome.append(future.result()), finished.set()), frozenset())
    assert loop in _bridge._QUEUED
    loop.close()
    assert finished.wait(HANG_GUARD), "the call was never started"
    assert outcome == ["ran"]
    assert loop not in _bridge._QUEUED


def test_waiting_for_a_run_from_inside_it_is_refused_not_a_hang() -> None:
    """A tool that waits for the run that called it would wait for itself (the run waits for
    the tool): refused with a clear error, as `agent.wait_for_idle()` from there is."""
    holder: List[Any] = []
    refusals: List[str] = []
    ready = threading.Event()

    with pi_agent.FauxProvider() as faux:
        faux.set_responses([[pi_agent.faux_tool_call("own", {}, id="c1")], "done"])

        @pi_agent.tool
        def own() -> str:
            """Waits for its own run."""
            assert ready.wait(HANG_GUARD)
            try:
                holder[0].result_sync()
            except pi_agent.PiError as error:
                refusals.append(str(error))
            return "refused"

        agent = pi_agent.Agent(faux.model, tools=[own])
        run = agent.run("go")
        holder.append(run)
        ready.set()
        finished: List[Any] = []
        waiter = threading.Thread(target=lambda: finished.append(run.result_sync()), daemon=True)
        waiter.start()
        waiter.join(HANG_GUARD)
        assert finished, "the run waited for itself"
    assert len(refusals) == 1 and "would wait for itself" in refusals[0], refusals
    roles = [m["role"] for m in finished[0]]
    assert roles == ["user", "assistant", "toolResult", "assistant"]


def test_reading_a_run_with_async_for_from_inside_it_is_refused_not_a_hang() -> None:
    """An async tool iterating the run that called it: the events already there are read,
    the first wait is refused (it would wait for itself), as with ``for``."""
    holder: List[Any] = []
    refusals: List[str] = []

    with pi_agent.FauxProvider() as faux:
        faux.set_responses([[pi_agent.faux_tool_call("own", {}, id="c1")], "done"])

        @pi_agent.tool
        async def own() -> str:
            """Reads its own run."""
            try:
                async for _ in holder[0]:
                    pass
            except pi_agent.PiError as error:
                refusals.append(str(error))
            return "refused"

        async def main() -> Any:
            agent = pi_agent.Agent(faux.model, tools=[own])
            run = agent.run("go")
            holder.append(run)
            return await asyncio.wait_for(run.result(), HANG_GUARD)

        asyncio.run(main())
    assert len(refusals) == 1 and "would wait for itself" in refusals[0], refusals
