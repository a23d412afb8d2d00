"""``pi_agent.release_memory`` hands the memory the allocator keeps back to the system (issue
23): memory freed under a live block (which glibc cannot trim from the top of its heap by
itself) is returned, and streams keep working after the call."""

from __future__ import annotations

import platform
from typing import Any, Dict

import pi_agent
from conftest import MockServer

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


def test_release_memory_returns_freed_memory_and_streams_go_on(mock_server: MockServer) -> None:
    mock_server.push({"text": "before"}, {"text": "after"})
    model = mock_server.model()
    assert pi_agent.complete_sync(model, CONTEXT, api_key="sk-test")["stopReason"] == "stop"

    # 8 MiB in 8 KiB blocks (above pymalloc's sizes: they come from malloc), freed while a
    # later block stays alive.
    blocks = [bytes([1]) * 8192 for _ in range(1024)]
    guard = bytes([2]) * 4096
    del blocks
    released = pi_agent.release_memory()
    assert isinstance(released, bool)
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert released, "glibc returned nothing of 8 MiB freed"
    del guard

    assert pi_agent.complete_sync(model, CONTEXT, api_key="sk-test")["stopReason"] == "stop"
    assert len(mock_server.requests()) == 2
