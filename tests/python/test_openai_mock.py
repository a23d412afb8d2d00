"""openai-completions through the binding, against pi-mock-server."""

from __future__ import annotations

from typing import Any, Dict

import pytest

import pi_agent

from conftest import MockServer

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


def test_text_reply_through_model_from_dict(mock_server: MockServer) -> None:
    mock_server.push({"text": "Hello from the mock server!"})
    model = mock_server.model()
    with pi_agent.stream(model, CONTEXT, api_key="sk-test", temperature=0.5) as events:
        kinds = [event["type"] for event in events]
        message = events.result_sync()
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert message["content"] == [{"type": "text", "text": "Hello from the mock server!"}]
    assert message["stopReason"] == "stop"
    (request,) = mock_server.requests()
    assert request["path"] == "/v1/chat/completions"
    headers = dict(request["headers"])
    assert headers["authorization"] == "Bearer sk-test"
    assert request["body"]["model"] == "mock-gpt"
    assert request["body"]["stream"] is True
    assert request["body"]["temperature"] == 0.5


def test_streams_one_after_another_share_one_connection(mock_server: MockServer) -> None:
    mock_server.push({"text": "one"}, {"text": "two"}, {"text": "three"})
    before = mock_server.connections()
    model = mock_server.model()
    texts = []
    for _ in range(3):
        with pi_agent.stream(model, CONTEXT, api_key="sk-test") as events:
            texts.append(events.result_sync()["content"][0]["text"])
    assert texts == ["one", "two", "three"]
    # This call's own connection, and at most one for the three streams (none when a
    # connection kept from an earlier test is reused).
    assert mock_server.connections() - before <= 2


def test_agent_with_a_tool_against_the_mock(mock_server: MockServer) -> None:
    mock_server.push(
        {"tool_calls": [{"id": "call_1", "name": "multiply", "arguments": {"a": 6, "b": 7}}]},
        {"text": "6 * 7 = 42"},
    )

    def multiply(a: int, b: int) -> int:
        """Multiplies two integers."""
        return a * b

    agent = pi_agent.Agent(mock_server.model(), api_key="sk-test", tools=[multiply])
    agent.prompt_sync("What is 6 * 7?")
    roles = [m["role"] for m in agent.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    assert agent.messages[2]["content"] == [{"type": "text", "text": "42"}]
    assert agent.messages[3]["content"][0]["text"] == "6 * 7 = 42"
    second = mock_server.requests()[1]["body"]
    assert second["messages"][-1]["role"] == "tool"
    assert second["tools"][0]["function"]["name"] == "multiply"


def test_http_401_is_an_error_message(mock_server: MockServer) -> None:
    mock_server.push(
        {"status": 401, "body": {"error": {"message": "Invalid API key", "type": "auth"}}}
    )
    message = pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key="sk-wrong")
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "401 Invalid API key"
    assert "sk-wrong" not in str(message)


def test_dropped_connection_is_an_error_message(mock_server: MockServer) -> None:
    mock_server.push(
        {
            "text": "This answer will be cut off somewhere in the middle of it.",
            "drop_after_bytes": 400,
        }
    )
    agent = pi_agent.Agent(mock_server.model(), api_key="sk-test")
    events = []
    agent.subscribe(events.append)
    agent.prompt_sync("hi")
    last = agent.messages[-1]
    assert last["stopReason"] == "error"
    assert last["errorMessage"].startswith("Connection error")
    assert agent.error_message == last["errorMessage"]
    assert events[-1]["type"] == "agent_end"


def test_request_hooks_and_options(mock_server: MockServer) -> None:
    mock_server.push({"text": "hooked"})
    seen = {}

    def on_payload(payload, model):
        seen["payload_model"] = payload["model"]
        seen["model"] = model
        return {**payload, "user": "pi-python"}

    def on_response(status, headers, model):
        seen["status"] = status
        seen["content_type"] = headers.get("content-type")

    message = pi_agent.complete_sync(
        mock_server.model(),
        CONTEXT,
        api_key="sk-test",
        max_tokens=77,
        headers={"X-Custom": "yes"},
        max_retries=0,
        on_payload=on_payload,
        on_response=on_response,
    )
    assert message["content"][0]["text"] == "hooked"
    assert seen["payload_model"] == "mock-gpt" and seen["model"].id == "mock-gpt"
    assert seen["status"] == 200 and seen["content_type"].startswith("text/event-stream")
    (request,) = mock_server.requests()
    assert request["body"]["user"] == "pi-python"
    assert dict(request["headers"])["x-custom"] == "yes"
    body = request["body"]
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 77


def test_a_raising_on_payload_fails_the_request_unsent(mock_server: MockServer) -> None:
    # As a raising hook fails its run: the error is the stream's, nothing is sent.
    mock_server.push({"text": "never sent"}, {"text": "agent never sent"})

    def on_payload(payload: Any, model: Any) -> None:
        raise ValueError("no body for you")

    message = pi_agent.complete_sync(
        mock_server.model(), CONTEXT, api_key="sk-test", max_retries=0, on_payload=on_payload
    )
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "on_payload raised ValueError: no body for you"

    agent = pi_agent.Agent(mock_server.model(), api_key="sk-test", on_payload=on_payload)
    agent.prompt_sync("hi")
    assert agent.messages[-1]["stopReason"] == "error"
    assert agent.error_message == "on_payload raised ValueError: no body for you"
    assert mock_server.requests() == []


def test_server_errors_are_retried(mock_server: MockServer) -> None:
    mock_server.push(
        {"status": 500, "body": {"error": {"message": "try again"}}},
        {"text": "second time lucky"},
    )
    message = pi_agent.complete_sync(
        mock_server.model(), CONTEXT, api_key="sk-test", max_retries=1, max_retry_delay_ms=50
    )
    assert message["content"][0]["text"] == "second time lucky"
    assert len(mock_server.requests()) == 2


def test_agent_through_a_proxy(mock_server: MockServer) -> None:
    # pi's proxy protocol: SSE events with deltas and no `partial`; any POST path is served.
    mock_server.push(
        {
            "chunks": [
                {"type": "start"},
                {"type": "text_start", "contentIndex": 0},
                {"type": "text_delta", "contentIndex": 0, "delta": "Hello "},
                {"type": "text_delta", "contentIndex": 0, "delta": "via proxy"},
                {"type": "text_end", "contentIndex": 0},
                {
                    "type": "done",
                    "reason": "stop",
                    "usage": {
                        "input": 5,
                        "output": 3,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 8,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                    },
                },
            ],
            "done": False,
        }
    )
    agent = pi_agent.Agent(
        mock_server.model(),
        system_prompt="Be brief.",
        proxy_url=f"http://127.0.0.1:{mock_server.port}/",
        proxy_token="proxy-secret",
        temperature=0.3,
    )
    deltas = []
    agent.subscribe(
        lambda event: event["type"] == "message_update"
        and event["assistantMessageEvent"]["type"] == "text_delta"
        and deltas.append(event["assistantMessageEvent"]["delta"])
    )
    agent.prompt_sync("hi")

    last = agent.messages[-1]
    assert last["content"] == [{"type": "text", "text": "Hello via proxy"}]
    assert last["stopReason"] == "stop" and last["usage"]["totalTokens"] == 8
    assert deltas == ["Hello ", "via proxy"]
    (request,) = mock_server.requests()
    assert request["path"] == "/api/stream"
    assert dict(request["headers"])["authorization"] == "Bearer proxy-secret"
    assert request["body"]["model"]["id"] == "mock-gpt"
    assert request["body"]["context"]["systemPrompt"] == "Be brief."
    assert request["body"]["options"]["temperature"] == 0.3


def test_proxy_errors_end_the_run(mock_server: MockServer) -> None:
    mock_server.push({"status": 403, "body": {"error": "not allowed"}})
    agent = pi_agent.Agent(mock_server.model(), proxy_url=f"http://127.0.0.1:{mock_server.port}")
    agent.prompt_sync("hi")
    assert agent.error_message == "Proxy error: not allowed"
    with pytest.raises(TypeError, match="`proxy_token` needs `proxy_url`"):
        pi_agent.Agent(mock_server.model(), proxy_token="t")


def test_thinking_budgets_reach_the_request(mock_server: MockServer) -> None:
    model = mock_server.model(
        id="claude-sonnet-4-5", api="anthropic-messages", provider="anthropic", reasoning=True
    )
    mock_server.push({"status": 500, "body": {"error": "just checking the request"}})
    pi_agent.complete_simple_sync(
        model, CONTEXT, api_key="k", reasoning="low", thinking_budgets={"low": 2048}, max_retries=0
    )
    mock_server.push({"status": 500, "body": {"error": "just checking the request"}})
    agent = pi_agent.Agent(
        model, api_key="k", thinking_level="medium", thinking_budgets={"medium": 3000}, max_retries=0
    )
    agent.prompt_sync("hi")
    budgets = [request["body"]["thinking"]["budget_tokens"] for request in mock_server.requests()]
    assert budgets == [2048, 3000]
    with pytest.raises(ValueError, match="invalid option `thinking_budgets`"):
        pi_agent.stream(model, CONTEXT, thinking_budgets={"low": "lots"})
