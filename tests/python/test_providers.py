"""Every wire API through the binding: the recorded-style fixtures in tests/fixtures/ replayed
by pi-mock-server, streamed with pi_agent.stream, sync and async."""

from __future__ import annotations

import asyncio
import pathlib
from typing import Any, Dict, List

import pytest

import pi_agent

from conftest import MockServer

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"

CONTEXT: Dict[str, Any] = {
    "systemPrompt": "Use the calculator.",
    "messages": [{"role": "user", "content": "What is 6 * 7?", "timestamp": 0}],
    "tools": [
        {
            "name": "calculator",
            "description": "Evaluates arithmetic",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
        }
    ],
}

# (api, provider, model id, base-url suffix, fixture, expected block kinds)
CASES = [
    (
        "anthropic-messages",
        "anthropic",
        "claude-sonnet-4-5",
        "",
        "anthropic/thinking_text_tool_use.sse",
        ["thinking", "text", "toolCall"],
    ),
    (
        "openai-responses",
        "openai",
        "gpt-5-mini",
        "/v1",
        "openai-responses/reasoning_text_function_call.sse",
        ["thinking", "text", "toolCall"],
    ),
    (
        "google-generative-ai",
        "google",
        "gemini-2.5-flash",
        "/v1beta",
        "google/thinking_text_function_call.sse",
        ["thinking", "text", "toolCall"],
    ),
]


def _model(server: MockServer, api: str, provider: str, model_id: str, suffix: str) -> pi_agent.Model:
    return server.model(
        id=model_id,
        api=api,
        provider=provider,
        baseUrl=f"http://127.0.0.1:{server.port}{suffix}",
        reasoning=True,
        maxTokens=8192,
    )


@pytest.mark.parametrize("api,provider,model_id,suffix,fixture,kinds", CASES)
def test_recorded_stream_sync(
    mock_server: MockServer, api: str, provider: str, model_id: str, suffix: str, fixture: str, kinds: List[str]
) -> None:
    mock_server.push({"sse": (FIXTURES / fixture).read_text(), "split_random": 3})
    model = _model(mock_server, api, provider, model_id, suffix)
    with pi_agent.stream(model, CONTEXT, api_key="test-key", max_retries=0) as events:
        seen = [event["type"] for event in events]
        message = events.result_sync()
    assert seen[0] == "start" and seen[-1] == "done", seen
    assert message["stopReason"] == "toolUse", message.get("errorMessage")
    assert [block["type"] for block in message["content"]] == kinds
    call = message["content"][-1]
    assert call["name"] == "calculator" and isinstance(call["arguments"], dict)
    assert message["usage"]["totalTokens"] > 0
    assert mock_server.requests()[0]["body"], "a request body was sent"


@pytest.mark.parametrize("api,provider,model_id,suffix,fixture,kinds", CASES)
def test_recorded_stream_async(
    mock_server: MockServer, api: str, provider: str, model_id: str, suffix: str, fixture: str, kinds: List[str]
) -> None:
    mock_server.push({"sse": (FIXTURES / fixture).read_text(), "split": 7})
    model = _model(mock_server, api, provider, model_id, suffix)

    async def run() -> Dict[str, Any]:
        async with pi_agent.stream(model, CONTEXT, api_key="test-key", max_retries=0) as events:
            async for _ in events:
                pass
            return await events.result()

    message = asyncio.run(run())
    assert [block["type"] for block in message["content"]] == kinds


@pytest.mark.parametrize("api,provider,model_id,suffix", [case[:4] for case in CASES])
def test_provider_error_bodies_are_kept(
    mock_server: MockServer, api: str, provider: str, model_id: str, suffix: str
) -> None:
    mock_server.push({"status": 400, "body": {"error": {"message": "bad tool schema", "type": "invalid_request_error"}}})
    message = pi_agent.complete_sync(
        _model(mock_server, api, provider, model_id, suffix), CONTEXT, api_key="test-key", max_retries=0
    )
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("400 ")
    assert "bad tool schema" in message["errorMessage"]


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    model = pi_agent.get_model("anthropic", "claude-opus-4-7")
    assert model is not None
    message = pi_agent.complete_sync(model, CONTEXT)
    assert message["stopReason"] == "error"
    assert "ANTHROPIC_API_KEY" in message["errorMessage"]
