"""pi_agent.mcp against real servers started here: the official reference server
(@modelcontextprotocol/server-everything, npm, installed into a cache outside the work tree by
tests/mcp/install-everything.sh; stdio and Streamable HTTP) and a misbehaving server written
with the official Python SDK (tests/mcp/failing_server.py). Skipped, saying why, only when
node/npm or the `mcp` package is missing."""

from __future__ import annotations

import asyncio
import os
import pathlib
import socket
import subprocess
import sys
import time
from typing import Any, Dict, Iterator, List

import pytest

import pi_agent
import pi_agent.mcp
from pi_agent import faux_text, faux_tool_call

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def everything() -> str:
    result = subprocess.run(
        ["bash", str(REPO / "tests/mcp/install-everything.sh")], capture_output=True, text=True
    )
    if result.returncode == 2:
        pytest.skip("node/npm not found: the MCP reference server tests are skipped")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture(scope="session")
def mcp_python() -> str:
    python = os.environ.get("PI_MCP_PYTHON", sys.executable)
    ok = subprocess.run([python, "-c", "import mcp"], capture_output=True).returncode == 0
    if not ok:
        pytest.skip(f"no `mcp` package for {python} (set PI_MCP_PYTHON): MCP failure tests skipped")
    return python


@pytest.fixture
def http_url(everything: str) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        ["node", everything, "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the MCP HTTP server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


def text_of(message: Dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message["content"] if b["type"] == "text")


def tool_results(agent: pi_agent.Agent) -> List[Dict[str, Any]]:
    return [m for m in agent.messages if m["role"] == "toolResult"]


def test_async_stdio_server_tools_in_an_agent_end_to_end(
    everything: str, faux: pi_agent.FauxProvider
) -> None:
    async def main() -> None:
        async with pi_agent.mcp.stdio("node", [everything, "stdio"], name="everything") as srv:
            info = srv.info
            assert info is not None and info["name"] and info["protocolVersion"]
            assert "tools" in info["capabilities"]
            listed = await srv.list_tools()
            assert any(t["name"] == "echo" and "inputSchema" in t for t in listed)
            tools = await srv.tools()
            echo = next(t for t in tools if t.name == "echo")
            assert echo.parameters["properties"]["message"]
            faux.push(
                [
                    faux_tool_call("echo", {"message": "from python"}, id="e1"),
                    faux_tool_call("get-tiny-image", {}, id="i1"),
                    faux_tool_call(
                        "trigger-long-running-operation", {"duration": 1, "steps": 2}, id="p1"
                    ),
                ]
            )
            faux.push(faux_text("done"))
            agent = pi_agent.Agent(faux.model, tools=[*tools])
            updates: List[Dict[str, Any]] = []
            agent.subscribe(
                lambda e: updates.append(e) if e["type"] == "tool_execution_update" else None
            )
            await agent.prompt("go")
            echo_result, image_result, progress_result = tool_results(agent)
            assert echo_result["isError"] is False
            assert text_of(echo_result) == "Echo: from python"
            assert echo_result["details"]["mcpServer"] == "everything"
            images = [b for b in image_result["content"] if b["type"] == "image"]
            assert images and images[0]["mimeType"] == "image/png"
            assert progress_result["isError"] is False
            assert any(u["toolCallId"] == "p1" for u in updates), "progress became updates"
            # Calling the tool from Python runs it on the server.
            assert echo(message="direct")["content"] == [{"type": "text", "text": "Echo: direct"}]

    asyncio.run(main())


def test_sync_http_server_with_headers_prefix_and_filter(
    http_url: str, faux: pi_agent.FauxProvider
) -> None:
    with pi_agent.mcp.http(
        http_url,
        name="remote",
        headers={"Authorization": "Bearer py-secret"},
        tool_prefix="r_",
        include_tools=["get-sum"],
    ) as srv:
        tools = srv.tools_sync()
        assert [t.name for t in tools] == ["r_get-sum"]
        faux.push([faux_tool_call("r_get-sum", {"a": 1, "b": 2}, id="s1")])
        faux.push(faux_text("3"))
        agent = pi_agent.Agent(faux.model, tools=tools)
        agent.prompt_sync("sum")
        (result,) = tool_results(agent)
        assert "3" in text_of(result) and result["isError"] is False
    assert "py-secret" not in repr(srv)


def test_failures_are_error_results_and_the_server_restarts(
    mcp_python: str, faux: pi_agent.FauxProvider, tmp_path: pathlib.Path
) -> None:
    server = pi_agent.mcp.stdio(
        mcp_python,
        [str(REPO / "tests/mcp/failing_server.py")],
        name="failing",
        env={"PI_MCP_STATE_DIR": str(tmp_path)},
        call_timeout=2,
    )
    with server as srv:
        faux.push(
            [
                faux_tool_call("crash", {}, id="c1"),
            ]
        )
        faux.push([faux_tool_call("starts", {}, id="c2"), faux_tool_call("hang", {}, id="c3")])
        faux.push([faux_tool_call("rpc_error", {}, id="c4")])
        faux.push(faux_text("done"))
        agent = pi_agent.Agent(faux.model, tools=srv.tools_sync())
        agent.prompt_sync("break things")
        crash, starts, hang, rpc = tool_results(agent)
        assert crash["isError"] and 'MCP server "failing" closed the connection' in text_of(crash)
        assert text_of(starts) == "2", "a new process answered the next call"
        assert hang["isError"] and "did not answer tools/call within 2000 ms" in text_of(hang)
        assert text_of(rpc) == (
            'MCP server "failing" answered tools/call with error -32001: custom rpc failure'
        )
        assert agent.messages[-1]["stopReason"] == "stop"
        with pytest.raises(pi_agent.mcp.McpError, match="custom rpc failure"):
            next(t for t in srv.tools_sync() if t.name == "rpc_error")()


def test_a_server_that_cannot_start_raises_mcp_error(mcp_python: str) -> None:
    with pytest.raises(pi_agent.mcp.McpError, match='"nope" failed to start'):
        with pi_agent.mcp.stdio("/nonexistent/server", name="nope"):
            pass
    assert issubclass(pi_agent.mcp.McpError, pi_agent.PiError)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not yet reaped) is gone for this purpose.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_cancelled_async_connect_ends_the_server_it_was_starting(tmp_path: pathlib.Path) -> None:
    """`await srv.connect()` cancelled (a timeout): a server that never answers `initialize` is
    ended when the wait is cancelled, not when the (long) connect timeout passes on a thread."""
    pid_file = tmp_path / "pid"
    silent = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"

    async def main() -> None:
        server = pi_agent.mcp.stdio(
            sys.executable, ["-c", silent, str(pid_file)], name="silent", connect_timeout=300
        )
        connecting = asyncio.ensure_future(server.connect())
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the server never started"
            await asyncio.sleep(0.05)
        pid = int(pid_file.read_text())
        connecting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await connecting
        while process_alive(pid):
            assert time.monotonic() < deadline, "the server outlived the cancelled connect"
            await asyncio.sleep(0.05)

    asyncio.run(main())


def test_a_stdio_server_inherits_only_what_every_program_needs(
    mcp_python: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host's other variables (an API key) reach a stdio server only with
    ``inherit_env=True``; ``env`` and ``PATH`` always do."""
    monkeypatch.setenv("PI_PY_HOST_MARKER", "host-marker-value")
    assert "PATH" in pi_agent.mcp.INHERITED_ENV
    seen = []
    for inherit in (False, True):
        with pi_agent.mcp.stdio(
            mcp_python,
            [str(REPO / "tests/mcp/failing_server.py")],
            env={"PI_MCP_STATE_DIR": str(tmp_path), "PI_PY_GIVEN": "given-value"},
            inherit_env=inherit,
        ) as srv:
            env = {tool.name: tool for tool in srv.tools_sync()}["env"]
            values = [
                env(name=name)["content"][0]["text"]
                for name in ("PI_PY_HOST_MARKER", "PI_PY_GIVEN")
            ]
            seen.append(values)
            assert env(name="PATH")["content"][0]["text"] != "<unset>"
    assert seen == [["<unset>", "given-value"], ["host-marker-value", "given-value"]]
