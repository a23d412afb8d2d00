"""`for` over a stream reads the response on the calling thread (core's `blocking_next`, GIL
released): the same event dicts as `async for`, other Python threads run meanwhile, and Ctrl-C
during a wait on a silent server aborts the request."""

from __future__ import annotations

import _thread
import asyncio
import threading
import time
from typing import Any, Dict, List

import pytest

import pi_agent

from conftest import MockServer

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
PACED: Dict[str, Any] = {"text": "one two three four five", "delta_size": 4, "delay_ms": 5}


def test_for_and_async_for_give_the_same_dicts(mock_server: MockServer) -> None:
    mock_server.push(PACED, PACED)
    model = mock_server.model()
    with pi_agent.stream(model, CONTEXT, api_key="sk-test") as events:
        on_the_thread = list(events)

    async def read() -> List[Dict[str, Any]]:
        async with pi_agent.stream(model, CONTEXT, api_key="sk-test") as events:
            return [event async for event in events]

    in_the_loop = asyncio.run(read())
    # The timestamps, timing and response ids differ between two requests; everything else is
    # the same.
    for event in on_the_thread + in_the_loop:
        for message in (event.get("partial"), event.get("message"), event.get("error")):
            if message is not None:
                message["timestamp"] = 0
                message.pop("timing", None)
                message.pop("responseId", None)
    assert on_the_thread == in_the_loop
    assert on_the_thread[-1]["type"] == "done"
    assert on_the_thread[-1]["message"]["content"][0]["text"] == "one two three four five"


def test_other_threads_run_while_a_for_waits(mock_server: MockServer) -> None:
    # 40 frames 20 ms apart: the loop waits most of the time, without the GIL.
    mock_server.push({"text": "x" * 40, "delta_size": 1, "delay_ms": 20})
    ticks = 0
    done = threading.Event()

    def tick() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        with pi_agent.stream(mock_server.model(), CONTEXT, api_key="sk-test") as events:
            deltas = [event["delta"] for event in events if event["type"] == "text_delta"]
    finally:
        done.set()
        ticker.join()
    assert "".join(deltas) == "x" * 40
    # The other thread ran while the read waited (it would not at all with the GIL held).
    assert ticks > 10


@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_while_for_waits_on_a_silent_server_aborts_the_request(
    mock_server: MockServer,
) -> None:
    mock_server.push(
        {"text": "never finished", "delta_size": 2, "stall_after_bytes": 150, "stall_ms": 60000}
    )
    events = pi_agent.stream(mock_server.model(), CONTEXT, api_key="sk-test")
    seen: List[str] = []
    interrupted = False
    try:
        for event in events:
            seen.append(event["type"])
            if len(seen) == 1:
                # Sent once the read is under way; it lands while `for` waits.
                threading.Timer(0.2, _thread.interrupt_main).start()
    except KeyboardInterrupt:
        interrupted = True
    assert interrupted and seen[0] == "start"
    # The request was aborted: the stream ends with that error.
    rest = [event for event in events]
    assert rest[-1]["type"] == "error"
    assert rest[-1]["error"]["stopReason"] == "aborted"
