"""Never crash, never hang, never leak (issue 9, Python items): hostile objects converted to
JSON, interpreter exit under a running sync tool, blocking calls from callbacks, dropped
streams and agents, blocking hooks and abort.

Crash cases run in a subprocess, so a regression fails the test instead of killing pytest.
Waits are on events, with generous timeouts as hang guards only."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import subprocess
import sys
import textwrap
import threading
from typing import Any, Dict, Iterator, List, Optional

import pytest

import pi_agent
from pi_agent import faux_tool_call

HANG_GUARD = 30.0
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def text_of(message: Dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in message["content"] if block["type"] == "text")


# ---------------------------------------------------------------------------------------------
# Issue 9 #2: deep and self-referential objects


def test_deep_and_self_referential_objects_are_errors_not_crashes() -> None:
    completed = run_python(
        """
        import pi_agent
        from pi_agent import faux_tool_call

        def deep(levels):
            value = []
            for _ in range(levels):
                value = [value]
            return value

        loop = []
        loop.append(loop)
        cycle = {}
        cycle["self"] = cycle
        hostile = [deep(200_000), loop, cycle]

        def expect_value_error(call):
            try:
                call()
            except ValueError as error:
                assert "nested more than 128 levels" in str(error), error
            else:
                raise AssertionError("accepted")

        with pi_agent.FauxProvider() as faux:
            model = faux.model
            for value in hostile:
                message = {"role": "user", "content": "hi", "timestamp": 0, "extra": value}
                expect_value_error(lambda: pi_agent.stream(model, {"messages": [message]}))
                agent = pi_agent.Agent(model)
                expect_value_error(lambda: setattr(agent, "messages", [{"role": "note", "x": value}]))
                expect_value_error(lambda: agent.prompt_sync({"role": "note", "x": value}))
                expect_value_error(lambda: pi_agent.is_context_overflow({"role": "assistant", "x": value}))
                expect_value_error(lambda: pi_agent.complete_sync(model, {"messages": []}, metadata={"x": value}))

            # Tool results and hook results: an error result the model reads; the run goes on.
            for value in hostile:
                def tool() -> object:
                    return {"content": "x", "details": value}

                def after(context):
                    return {"details": value}

                faux.push([faux_tool_call("tool")])
                faux.push("done")
                agent = pi_agent.Agent(model, tools=[pi_agent.Tool("tool", "", {"type": "object"}, tool)])
                agent.prompt_sync("go")
                results = [m for m in agent.messages if m["role"] == "toolResult"]
                assert results[-1]["isError"], results[-1]
                assert "nested more than 128 levels" in results[-1]["content"][0]["text"]
                assert agent.messages[-1]["content"][0]["text"] == "done"

                faux.push([faux_tool_call("tool")])
                faux.push("done")
                agent.after_tool_call = after
                agent.tools = [pi_agent.Tool("tool", "", {"type": "object"}, lambda: "fine")]
                agent.prompt_sync("again")
                results = [m for m in agent.messages if m["role"] == "toolResult"]
                assert results[-1]["isError"], results[-1]
                assert "nested more than 128 levels" in results[-1]["content"][0]["text"]

            # Nesting core accepts goes through every layer (tool details, snapshot) intact.
            faux.push([faux_tool_call("tool")])
            faux.push("done")
            agent = pi_agent.Agent(model, tools=[pi_agent.Tool("tool", "", {"type": "object"}, lambda: {"content": "ok", "details": deep(120)})])
            agent.prompt_sync("go")
            details = [m for m in agent.messages if m["role"] == "toolResult"][0]["details"]
            assert details == deep(120)
            restored = pi_agent.Agent.restore(agent.snapshot())
            assert restored.messages == agent.messages
        print("ok")
        """
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip().endswith("ok")


# ---------------------------------------------------------------------------------------------
# Issue 9 #3: interpreter exit while a sync tool still runs Python code


@pytest.mark.parametrize(
    "how",
    [
        "tool_timeout",  # the watchdog gave the call a result; the function runs on
        "abort",  # an abort gave the call a result; the function runs on
        "blocked_in_binding",  # the function is blocked in a pi_agent call at exit
    ],
)
def test_exit_while_a_sync_tool_still_runs(how: str) -> None:
    completed = run_python(
        f"""
        import threading, time
        import pi_agent
        from pi_agent import faux_tool_call

        how = {how!r}
        started = threading.Event()
        stalled = pi_agent.FauxProvider(tokens_per_second=0.001)
        stalled.push("never " * 100)

        def busy():
            started.set()
            if how == "blocked_in_binding":
                pi_agent.complete_sync(stalled.model, {{"messages": []}})
            while True:
                time.sleep(0.0005)  # takes and releases the GIL all the time

        with pi_agent.FauxProvider() as faux:
            faux.push([faux_tool_call("busy")])
            faux.push("after")
            timeout = 200 if how == "tool_timeout" else None
            agent = pi_agent.Agent(faux.model, tools=[busy], tool_timeout_ms=timeout)
            if how != "tool_timeout":
                threading.Thread(target=lambda: (started.wait(30), agent.abort()), daemon=True).start()
            agent.prompt_sync("go")
            assert started.is_set()
        print("exiting", flush=True)
        """
    )
    assert completed.returncode == 0, (completed.returncode, completed.stderr[-3000:])
    assert "exiting" in completed.stdout
    assert "fatal" not in completed.stderr.lower()


# ---------------------------------------------------------------------------------------------
# Issue 9 #9: blocking calls from callbacks


def test_a_subscriber_may_make_blocking_calls(faux: pi_agent.FauxProvider) -> None:
    """Another agent's `prompt_sync` and `complete_sync` inside a subscriber used to deadlock
    the run for good (the subscriber held the runtime thread the inner call needed)."""
    with pi_agent.FauxProvider() as other:
        other.set_responses(["inner completion", "inner agent"])
        faux.push("outer")
        helper = pi_agent.Agent(other.model)
        inner: List[Any] = []

        def on_event(event: Dict[str, Any]) -> None:
            if event["type"] == "agent_start":
                inner.append(pi_agent.complete_sync(other.model, {"messages": []}))
                inner.append(helper.prompt_sync("inner"))

        agent = pi_agent.Agent(faux.model)
        agent.subscribe(on_event)
        done = threading.Event()
        worker = threading.Thread(target=lambda: (agent.prompt_sync("go"), done.set()), daemon=True)
        worker.start()
        assert done.wait(HANG_GUARD), "the run deadlocked"
        assert text_of(inner[0]) == "inner completion"
        assert text_of(inner[1][-1]) == "inner agent"
        assert text_of(agent.messages[-1]) == "outer"


def test_waiting_for_the_own_run_from_inside_it_is_refused(
    faux: pi_agent.FauxProvider, unraisable: List[Any]
) -> None:
    """A tool, hook or subscriber waiting for its own agent to be idle would wait for itself
    forever: refused with a clear error instead."""
    agent: Optional[pi_agent.Agent] = None

    async def waits_async() -> str:
        assert agent is not None
        await agent.wait_for_idle()
        return "unreachable"

    def waits_sync() -> str:
        assert agent is not None
        agent.wait_for_idle_sync()
        return "unreachable"

    faux.push([faux_tool_call("waits_async"), faux_tool_call("waits_sync")])
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[waits_async, waits_sync])
    agent.subscribe(lambda event: agent.wait_for_idle_sync() if event["type"] == "turn_start" else None)

    async def main() -> None:
        assert agent is not None
        await asyncio.wait_for(agent.prompt("go"), HANG_GUARD)

    asyncio.run(main())
    results = [m for m in agent.messages if m["role"] == "toolResult"]
    assert [r["isError"] for r in results] == [True, True]
    for result in results:
        assert "from inside the agent's own run" in text_of(result)
    assert any("from inside the agent's own run" in error for error in agent.listener_errors)
    assert unraisable and isinstance(unraisable[0].exc_value, pi_agent.PiError)
    assert text_of(agent.messages[-1]) == "done"
    # From outside the run, waiting works.
    agent.wait_for_idle_sync()


def test_a_blocking_sync_hook_does_not_keep_abort_from_ending_the_run(
    faux: pi_agent.FauxProvider,
) -> None:
    release = threading.Event()
    in_hook = threading.Event()

    def blocking_hook(context: Dict[str, Any]) -> None:
        in_hook.set()
        release.wait(HANG_GUARD)  # a hang guard: released after the run

    faux.push([faux_tool_call("tool")])
    faux.push("never used")
    agent = pi_agent.Agent(
        faux.model,
        tools=[pi_agent.Tool("tool", "", {"type": "object"}, lambda: "ran")],
        before_tool_call=blocking_hook,
    )
    aborter = threading.Thread(target=lambda: (in_hook.wait(HANG_GUARD), agent.abort()), daemon=True)
    aborter.start()
    try:
        agent.prompt_sync("go")
        assert not release.is_set() and in_hook.is_set()  # ended while the hook still blocked
    finally:
        release.set()
    result = next(m for m in agent.messages if m["role"] == "toolResult")
    assert result["isError"] and text_of(result) == "Tool execution was aborted"
    assert not agent.is_streaming


# ---------------------------------------------------------------------------------------------
# Issue 9 #10: dropped streams and agents cancel their request


class StalledServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 that answers the headers and one chunk, then
    stalls until the client closes the connection (which it records)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")),
                0,
            )
            while len(body) < length:
                body += connection.recv(65536)
            chunk = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
            connection.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                + f"{len(chunk):x}\r\n".encode()
                + chunk
                + b"\r\n"
            )
            self.accepted.set()
            connection.settimeout(None)
            try:
                while connection.recv(65536):
                    pass
            except OSError:
                pass
            self.closed.set()

    def model(self) -> pi_agent.Model:
        return pi_agent.Model("stalled", base_url=f"http://127.0.0.1:{self.port}/v1")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def stalled() -> Iterator[StalledServer]:
    server = StalledServer()
    yield server
    server.close()


CONTEXT = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


def test_a_collected_stream_closes_its_connection(stalled: StalledServer) -> None:
    events = pi_agent.stream(stalled.model(), CONTEXT, api_key="k", max_retries=0)
    for event in events:  # iterated without `with`
        if event["type"] == "text_delta":
            break
    assert stalled.accepted.wait(HANG_GUARD)
    del events
    gc.collect()
    assert stalled.closed.wait(HANG_GUARD), "the request of a collected stream stayed open"


def test_a_stream_abandoned_mid_read_closes_its_connection(stalled: StalledServer) -> None:
    """`async for` on a loop that is closed while it waits for the next event: the pending
    read, the stream and its request all go once collected."""

    async def start() -> None:
        events = pi_agent.stream(stalled.model(), CONTEXT, api_key="k", max_retries=0)

        async def read_all() -> None:
            async for _ in events:
                pass

        asyncio.ensure_future(read_all())
        await asyncio.get_running_loop().run_in_executor(None, stalled.accepted.wait, HANG_GUARD)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(start())
    loop.close()
    del loop, start
    gc.collect()
    assert stalled.closed.wait(HANG_GUARD), "the request of an abandoned stream stayed open"


def test_a_collected_agent_closes_its_connection(stalled: StalledServer) -> None:
    agent = pi_agent.Agent(stalled.model(), api_key="k", max_retries=0)

    async def start() -> None:
        asyncio.ensure_future(agent.prompt("hi"))
        await asyncio.get_running_loop().run_in_executor(None, stalled.accepted.wait, HANG_GUARD)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(start())
    loop.close()  # the task awaiting prompt() is abandoned
    del agent, loop, start
    gc.collect()
    assert stalled.closed.wait(HANG_GUARD), "the request of a collected agent stayed open"


# ---------------------------------------------------------------------------------------------
# Timeouts in seconds read as Python's own waits read them (they panicked in Rust's Duration)


def test_timeouts_out_of_range_are_read_not_a_panic(tmp_path: Any) -> None:
    aborted = pi_agent.Signal()
    aborted.abort()
    for timeout in (-1.0, float("inf"), 1e300, 0.0):
        assert aborted.wait_sync(timeout) is True
    assert pi_agent.Signal().wait_sync(-1.0) is False  # does not wait
    with pytest.raises(ValueError, match="NaN"):
        pi_agent.Signal().wait_sync(float("nan"))
    (tmp_path / "store.sqlite").touch()  # an empty database (following needs one there)
    follower = pi_agent.Session.follow(str(tmp_path / "store.sqlite"), "nobody")
    assert follower.next(-1.0) is None
    with pytest.raises(ValueError, match="NaN"):
        follower.next(float("nan"))


def test_a_credential_in_the_wrong_place_is_not_quoted_in_the_error() -> None:
    """serde's words quote a string found where another type goes: a key or token given in
    the wrong place was in the error (and from there in logs)."""
    model = pi_agent.Model("m")
    with pytest.raises(ValueError) as options:
        pi_agent.Agent(model, headers="Bearer hdr-SECRET-0123")  # type: ignore[arg-type]
    assert "headers" in str(options.value) and "SECRET" not in str(options.value)
    with pytest.raises(ValueError) as dict_model:
        pi_agent.Model.from_dict({**model.to_dict(), "headers": "Bearer hdr-SECRET-0123"})
    assert "SECRET" not in str(dict_model.value)
    with pytest.raises(ValueError) as replaced:
        model.replace(headers="Bearer hdr-SECRET-0123")
    assert "SECRET" not in str(replaced.value)
