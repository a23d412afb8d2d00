"""A real llama-server (see core/tests/llama_server.rs) through Python, on its three routes.

The binary and model come from PI_LLAMA_SERVER / PI_LLAMA_MODEL, else from
scripts/llama-server/build.sh (which builds and caches them). Skipped only with
PI_LLAMA_SERVER_TESTS=0.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import pi_agent

from conftest import REPO

APIS = ["openai-completions", "openai-responses", "anthropic-messages"]
SLOT_CONTEXT = 512
PREDICTED = "llamacpp:tokens_predicted_total"

pytestmark = pytest.mark.skipif(
    os.environ.get("PI_LLAMA_SERVER_TESTS") == "0",
    reason="PI_LLAMA_SERVER_TESTS=0: the real-server tests are disabled",
)


def _locate() -> Tuple[str, str]:
    server, model = os.environ.get("PI_LLAMA_SERVER"), os.environ.get("PI_LLAMA_MODEL")
    if server and model:
        return server, model
    out = subprocess.run(
        ["bash", str(REPO / "scripts" / "llama-server" / "build.sh")],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return values["PI_LLAMA_SERVER"], values["PI_LLAMA_MODEL"]


class Server:
    def __init__(self, port: int) -> None:
        self.port = port

    def get(self, path: str) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as r:
            return str(r.read().decode())

    def metric(self, name: str) -> float:
        for line in self.get("/metrics").splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"no {name} in /metrics")

    def wait_idle(self, limit: float) -> bool:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if not any(s["is_processing"] for s in json.loads(self.get("/slots"))):
                return True
            time.sleep(0.1)
        return False

    def model(self, api: str) -> pi_agent.Model:
        origin = f"http://127.0.0.1:{self.port}"
        return pi_agent.Model.from_dict(
            {
                "id": "SmolLM2-135M-Instruct",
                "api": api,
                "provider": "llama.cpp",
                "baseUrl": origin if api == "anthropic-messages" else origin + "/v1",
                "contextWindow": SLOT_CONTEXT,
                "maxTokens": 256,
            }
        )


def _serve(*extra: str) -> Iterator[Server]:
    binary, model = _locate()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "2048",
         "--parallel", "4", "--temp", "0", "--top-k", "1", "--seed", "42", "--threads", "2",
         "--threads-http", "24", "--metrics", "--slots", "--no-warmup", *extra],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            assert process.poll() is None, "llama-server exited"
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "llama-server not healthy after 300 s"
                time.sleep(0.2)
        yield Server(port)
    finally:
        process.kill()
        process.wait()
        log.close()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    yield from _serve()


@pytest.fixture(scope="module")
def tool_server() -> Iterator[Server]:
    # A chat template whose call format lets tool_choice "required" force a call (see its
    # comment and core/tests/llama_server_tools.rs).
    template = str(REPO / "scripts" / "llama-server" / "tool-call.jinja")
    yield from _serve("--jinja", "--chat-template-file", template)


def _context(prompt: str) -> Dict[str, Any]:
    return {"messages": [{"role": "user", "content": prompt, "timestamp": 0}]}


def _run(server: Server, api: str, prompt: str, max_tokens: int, **options: Any) -> Dict[str, Any]:
    with pi_agent.stream(
        server.model(api), _context(prompt), api_key="local", max_tokens=max_tokens,
        max_retries=2, **options
    ) as events:
        kinds = [event["type"] for event in events]
        message = events.result_sync()
    message["_kinds"] = kinds
    return message


@pytest.mark.parametrize("api", APIS)
def test_text_ends_done_with_the_servers_usage(server: Server, api: str) -> None:
    before = server.metric(PREDICTED)
    message = _run(server, api, "Say hello.", 12)
    assert message["_kinds"][-1] == "done", message
    assert message["usage"]["output"] == server.metric(PREDICTED) - before
    expected = "stop" if api == "openai-responses" else "length"
    capped = _run(server, api, "Tell me about the sea.", 3)
    assert (capped["stopReason"], capped["usage"]["output"]) == (expected, 3), capped


@pytest.mark.parametrize("api", APIS)
def test_abort_frees_the_servers_slot(server: Server, api: str) -> None:
    with pi_agent.stream(
        server.model(api), _context("Write a very long story."), api_key="local",
        max_tokens=400, max_retries=2,
    ) as events:
        for event in events:
            if event["type"] == "text_delta":
                events.abort()
        message = events.result_sync()
    assert message["stopReason"] == "aborted"
    assert server.wait_idle(120), "still generating after the abort"


@pytest.mark.parametrize("api", APIS)
def test_overlong_prompt_is_context_overflow(server: Server, api: str) -> None:
    message = _run(server, api, "the quick brown fox " * SLOT_CONTEXT, 8)
    assert message["stopReason"] == "error"
    assert message["errorKind"] == "context_overflow", message
    assert pi_agent.is_context_overflow(message, SLOT_CONTEXT)


def test_sixteen_concurrent_streams_complete(server: Server) -> None:
    def one(i: int) -> Dict[str, Any]:
        return _run(server, "openai-completions", f"Count to {i + 2}.", 6)

    with ThreadPoolExecutor(16) as pool:
        results: List[Dict[str, Any]] = list(pool.map(one, range(16)))
    assert all(r["stopReason"] in ("stop", "length") for r in results), results


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses"])
def test_json_schema_answer_validates(server: Server, api: str) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"},
              "population": {"type": "integer"}}, "required": ["city", "population"],
              "additionalProperties": False}

    def on_payload(body: Dict[str, Any], model: Any) -> Optional[Dict[str, Any]]:
        body = dict(body)
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "city", "strict": True, "schema": schema}}
        return body

    message = _run(server, api, "Give the largest city of France and its population as JSON.",
                   64, on_payload=on_payload)
    assert message["stopReason"] == "stop", message
    text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
    answer = json.loads(text)
    assert set(answer) == {"city", "population"}
    assert isinstance(answer["city"], str) and isinstance(answer["population"], int)


def _after_tool_result(api: str, body: Dict[str, Any]) -> bool:
    if api == "openai-completions":
        return bool(body["messages"][-1]["role"] == "tool")
    if api == "openai-responses":
        return bool(body["input"][-1].get("type") == "function_call_output")
    content = body["messages"][-1]["content"]
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


@pytest.mark.parametrize("api", APIS)
def test_an_agent_turn_runs_a_real_tool_call(tool_server: Server, api: str) -> None:
    calls: List[str] = []

    @pi_agent.tool
    def get_weather(city: str) -> str:
        """Get the weather for a city

        Args:
            city: The city.
        """
        calls.append(city)
        return "Sunny, 21 degrees"

    payloads: List[Dict[str, Any]] = []

    def on_payload(body: Dict[str, Any], model: Any) -> Optional[Dict[str, Any]]:
        # A call first (required), then an answer from its result (none: with this template
        # the server reads no text under "auto"; its /v1/messages maps no none: no tools).
        body = dict(body)
        if _after_tool_result(api, body):
            if api == "anthropic-messages":
                body.pop("tools", None)
                body.pop("tool_choice", None)
            else:
                body["tool_choice"] = "none"
        payloads.append(body)
        return body

    agent = pi_agent.Agent(
        tool_server.model(api), tools=[get_weather], api_key="local",
        max_tokens=48, max_retries=2, tool_choice="required", on_payload=on_payload,
    )
    agent.prompt_sync("What is the weather in Paris? Use the tool.")
    messages = agent.messages
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"], (
        messages
    )
    assert messages[1]["stopReason"] == "toolUse", messages[1]
    (call,) = [b for b in messages[1]["content"] if b["type"] == "toolCall"]
    assert call["name"] == "get_weather" and call["id"]
    assert len(calls) == 1 and "paris" in calls[0].lower(), calls
    assert messages[2]["toolCallId"] == call["id"] and messages[2]["isError"] is False
    answer = messages[3]
    assert answer["stopReason"] in ("stop", "length"), answer
    assert not [b for b in answer["content"] if b["type"] == "toolCall"], answer
    assert "".join(b["text"] for b in answer["content"] if b["type"] == "text").strip()
    assert [_after_tool_result(api, p) for p in payloads] == [False, True]
    if api == "openai-completions":
        assert [p["tool_choice"] for p in payloads] == ["required", "none"]
        assert payloads[1]["messages"][-1]["tool_call_id"] == call["id"]
