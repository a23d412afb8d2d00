"""The binding after `os.fork()` (multiprocessing's `fork` start method, gunicorn, celery):
the child builds its own runtime, worker pool and connections; the parent is unaffected."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from typing import Any, Dict

import pytest

import pi_agent

from conftest import MockServer

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
    # 3.12+ warns that forking a process with threads may deadlock: what this file tests.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
HANG_GUARD_SECONDS = 120.0


def _use_everything(server_url: str, tag: str) -> str:
    """A mock-server request, an agent prompt with a tool (faux model, Python worker threads)
    and an async stream: what a forked worker does. Returns a summary."""
    model = pi_agent.Model.from_dict(
        {
            "id": "mock-gpt",
            "api": "openai-completions",
            "provider": "openai",
            "baseUrl": server_url,
            "contextWindow": 128000,
            "maxTokens": 4096,
        }
    )
    message = pi_agent.complete_sync(model, CONTEXT, api_key="sk-test")
    text = pi_agent.text_of(message)

    def double(x: int) -> int:
        """Doubles x."""
        return 2 * x

    with pi_agent.FauxProvider() as faux:
        faux.push([pi_agent.faux_tool_call("double", {"x": 21})])
        faux.push(f"{tag} agent done")
        agent = pi_agent.Agent(faux.model, tools=[double])
        agent.prompt_sync("double 21")
        tool_text = pi_agent.text_of(agent.messages[2])
        agent_text = pi_agent.text_of(agent.messages[-1])
    return f"{text}|{tool_text}|{agent_text}"


def _wait_for_child(pid: int) -> int:
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) if sys.version_info >= (3, 9) else status
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")


def test_os_fork_after_the_runtime_was_used(mock_server: MockServer) -> None:
    mock_server.push({"text": "parent before"}, {"text": "child"}, {"text": "parent after"})
    assert _use_everything(mock_server.url, "parent").startswith("parent before|42|")

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's cleanup
        code = 1
        try:
            os.close(read_end)
            summary = _use_everything(mock_server.url, "child")
            os.write(write_end, summary.encode())
            code = 0
        except BaseException as error:  # noqa: BLE001 - reported through the pipe
            os.write(write_end, f"child failed: {error!r}".encode())
        finally:
            os._exit(code)
    os.close(write_end)
    assert _wait_for_child(pid) == 0
    with os.fdopen(read_end, "rb") as reader:
        assert reader.read().decode() == "child|42|child agent done"

    # The parent's runtime, pool and connections still work.
    assert _use_everything(mock_server.url, "parent") == "parent after|42|parent agent done"


def _child_main(server_url: str, results: Any) -> None:
    try:
        results.put(_use_everything(server_url, "worker"))
    except BaseException as error:  # noqa: BLE001 - reported to the parent
        results.put(f"worker failed: {error!r}")


def test_multiprocessing_fork_context(mock_server: MockServer) -> None:
    mock_server.push({"text": "parent"}, {"text": "w1"}, {"text": "w2"})
    assert _use_everything(mock_server.url, "parent").startswith("parent|42|")

    context = multiprocessing.get_context("fork")
    results = context.Queue()
    workers = [
        context.Process(target=_child_main, args=(mock_server.url, results)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    summaries = sorted(results.get(timeout=HANG_GUARD_SECONDS) for _ in workers)
    for worker in workers:
        worker.join(HANG_GUARD_SECONDS)
        assert worker.exitcode == 0
    assert summaries == ["w1|42|worker agent done", "w2|42|worker agent done"]


def test_a_child_of_a_child_gets_its_own_runtime_too(mock_server: MockServer) -> None:
    mock_server.push({"text": "a"}, {"text": "b"}, {"text": "c"})
    _use_everything(mock_server.url, "parent")
    context = multiprocessing.get_context("fork")
    results = context.Queue()

    def nested(url: str, queue: Any) -> None:
        _use_everything(url, "middle")
        inner = context.Process(target=_child_main, args=(url, queue))
        inner.start()
        inner.join(HANG_GUARD_SECONDS)
        queue.put(f"inner exit {inner.exitcode}")

    middle = context.Process(target=nested, args=(mock_server.url, results))
    middle.start()
    got = [results.get(timeout=HANG_GUARD_SECONDS) for _ in range(2)]
    middle.join(HANG_GUARD_SECONDS)
    assert middle.exitcode == 0
    assert got == ["c|42|worker agent done", "inner exit 0"]
