"""The GIL is released whenever Rust waits."""

from __future__ import annotations

import threading
import time

import pi_agent


def test_background_thread_progresses_during_prompt_sync() -> None:
    with pi_agent.FauxProvider(tokens_per_second=200) as faux:
        faux.push("tick " * 100)  # ~125 tokens: about 0.6 s of paced output
        agent = pi_agent.Agent(faux.model)
        ticks = 0
        stop = threading.Event()

        def spin() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1

        worker = threading.Thread(target=spin)
        worker.start()
        try:
            began = time.monotonic()
            agent.prompt_sync("count")
            elapsed = time.monotonic() - began
        finally:
            stop.set()
            worker.join()
        assert elapsed > 0.3
        assert agent.messages[-1]["stopReason"] == "stop"
        # A held GIL would leave the spinner at (almost) zero for the whole wait.
        assert ticks > 100_000, ticks


def test_background_thread_progresses_during_blocking_stream_iteration() -> None:
    with pi_agent.FauxProvider(tokens_per_second=200) as faux:
        faux.push("tock " * 60)
        ticks = 0
        stop = threading.Event()

        def spin() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1

        worker = threading.Thread(target=spin)
        worker.start()
        try:
            message = pi_agent.complete_sync(faux.model, {"messages": []})
        finally:
            stop.set()
            worker.join()
        assert message["stopReason"] == "stop"
        assert ticks > 50_000, ticks
