"""Shared fixtures: a faux provider per test, and one pi-mock-server process per session."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import urllib.request
from typing import Any, Dict, Iterator, List

import pytest

import pi_agent

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def faux() -> Iterator[pi_agent.FauxProvider]:
    """A fresh faux provider (its own api id), unregistered after the test."""
    with pi_agent.FauxProvider() as provider:
        yield provider


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Ctrl-C (SIGINT) raises `KeyboardInterrupt` in the main thread, as in a terminal, even
    when the test run inherited SIGINT ignored (a background job, `nohup`): Python leaves an
    ignored SIGINT alone, and `_thread.interrupt_main` then does nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    """Records what `sys.unraisablehook` receives (instead of pytest's warning)."""
    seen: List[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


def _mock_server_binary() -> pathlib.Path:
    explicit = os.environ.get("PI_MOCK_SERVER")
    if explicit:
        return pathlib.Path(explicit)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    if not target.is_absolute():
        target = REPO / target
    binary = target / "debug" / "pi-mock-server"
    if not binary.exists():
        subprocess.run(
            ["cargo", "build", "-p", "pi-mock-server"],
            cwd=REPO,
            check=True,
        )
    return binary


class MockServer:
    """Client of a running `pi-mock-server` (see tests/mock_server/src/lib.rs for replies)."""

    def __init__(self, process: subprocess.Popen, url: str, port: int) -> None:
        self.process = process
        self.url = url
        self.port = port

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"null")

    def push(self, *replies: Dict[str, Any]) -> None:
        self._call("POST", "/_mock/replies", list(replies))

    def requests(self) -> List[Dict[str, Any]]:
        return self._call("GET", "/_mock/requests")

    def reset(self) -> None:
        self._call("POST", "/_mock/reset", {})

    def connections(self) -> int:
        """Connections the server accepted, this call's own (urllib opens one per call) included."""
        return self._call("GET", "/_mock/connections")["connections"]

    def model(self, **overrides: Any) -> pi_agent.Model:
        """An openai-completions model served by this mock, built from pi's JSON shape."""
        data = {
            "id": "mock-gpt",
            "name": "Mock GPT",
            "api": "openai-completions",
            "provider": "openai",
            "baseUrl": self.url,
            "reasoning": False,
            "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 128000,
            "maxTokens": 4096,
        }
        data.update(overrides)
        return pi_agent.Model.from_dict(data)


@pytest.fixture(scope="session")
def mock_server_process() -> Iterator[MockServer]:
    binary = _mock_server_binary()
    process = subprocess.Popen(
        [str(binary)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    line = process.stdout.readline()
    info = json.loads(line)
    server = MockServer(process, info["url"], info["port"])
    try:
        yield server
    finally:
        process.stdin.close()  # the server exits at EOF on stdin
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


@pytest.fixture
def mock_server(mock_server_process: MockServer) -> MockServer:
    """The session's mock server, with an empty script and request log."""
    mock_server_process.reset()
    return mock_server_process
