"""Request options are core's StreamOptions, reached mechanically: every key core has works as
a snake_case keyword, unknown ones are refused by name, and an agent's options can change
after construction."""

from __future__ import annotations

import re
from typing import Any, Dict, List

import pytest

import pi_agent
from pi_agent import _core

from conftest import MockServer

CONTEXT = {"messages": [{"role": "user", "content": "Hi", "timestamp": 0}]}


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def test_every_core_option_is_a_keyword(faux: pi_agent.FauxProvider) -> None:
    """Each of core's keys is known: a value of the wrong type is a ValueError naming it, never
    an unknown-option TypeError."""
    fields = _core._shape_fields("StreamOptions")
    assert {"reasoningEffort", "thinkingEnabled", "thinking", "promptMode", "serviceTier",
            "azureDeploymentName", "region", "maxEventBytes", "bearerToken"} <= set(fields)
    for field in fields:
        try:
            pi_agent.stream(faux.model, CONTEXT, **{snake(field): [[[]]]}).abort()
        except ValueError as error:
            assert f"invalid option `{snake(field)}`" in str(error)
        else:
            raise AssertionError(f"{field} took [[[]]]")


def test_unknown_and_camel_case_options_are_refused_by_name(faux: pi_agent.FauxProvider) -> None:
    with pytest.raises(TypeError, match="unexpected option `temprature`"):
        pi_agent.stream(faux.model, CONTEXT, temprature=0.1)
    with pytest.raises(TypeError, match="unexpected option `maxTokens`"):
        pi_agent.stream(faux.model, CONTEXT, maxTokens=5)
    with pytest.raises(TypeError, match="unexpected option `nope`"):
        pi_agent.Agent(faux.model, nope=1)
    with pytest.raises(TypeError, match="unexpected option `nope`"):
        pi_agent.Agent(faux.model).update_options(nope=1)
    with pytest.raises(ValueError, match="invalid option `max_tokens`"):
        pi_agent.stream(faux.model, CONTEXT, max_tokens="many")
    with pytest.raises(ValueError, match="invalid option `thinking`"):
        pi_agent.stream(faux.model, CONTEXT, thinking={"enabled": True, "budget_tokens": 5})
    with pytest.raises(TypeError, match="signal must be a pi_agent.Signal"):
        pi_agent.stream(faux.model, CONTEXT, signal=True)
    # None means unset, for every keyword.
    pi_agent.stream(faux.model, CONTEXT, temperature=None, on_payload=None).abort()


def test_provider_options_reach_the_request(mock_server: MockServer) -> None:
    def body_of(model: pi_agent.Model, **options: Any) -> Dict[str, Any]:
        mock_server.reset()
        mock_server.push({"status": 500, "body": {"error": "just checking the request"}})
        pi_agent.complete_sync(model, CONTEXT, api_key="k", max_retries=0, **options)
        (request,) = mock_server.requests()
        return request["body"]

    openai = mock_server.model(reasoning=True)
    assert body_of(openai, reasoning_effort="high")["reasoning_effort"] == "high"
    anthropic = mock_server.model(id="claude-sonnet-4-5", api="anthropic-messages", provider="anthropic", reasoning=True)
    body = body_of(anthropic, thinking_enabled=True, thinking_budget_tokens=2048)
    assert body["thinking"]["type"] == "enabled" and body["thinking"]["budget_tokens"] == 2048
    assert "thinking" not in body_of(anthropic)
    mistral = mock_server.model(id="magistral-medium-latest", api="mistral-conversations", provider="mistral", reasoning=True)
    assert body_of(mistral, prompt_mode="reasoning")["prompt_mode"] == "reasoning"
    google = mock_server.model(id="gemini-2.5-flash", api="google-generative-ai", provider="google", reasoning=True)
    config = body_of(google, thinking={"enabled": True, "budgetTokens": 1234})["generationConfig"]
    assert config["thinkingConfig"]["thinkingBudget"] == 1234
    responses = mock_server.model(id="gpt-5", api="openai-responses", reasoning=True)
    assert body_of(responses, service_tier="flex")["service_tier"] == "flex"


def test_limits_are_options_too(mock_server: MockServer) -> None:
    mock_server.push({"text": "a long enough answer that one event exceeds the limit"})
    message = pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key="k", max_event_bytes=16, max_retries=0)
    assert message["stopReason"] == "error"
    assert "max_event_bytes" in message["errorMessage"]


def test_an_agents_options_change_after_construction(mock_server: MockServer) -> None:
    model = mock_server.model(compat={"sendSessionAffinityHeaders": True})
    agent = pi_agent.Agent(model, api_key="first", temperature=0.5, max_retries=0)
    assert agent.options == {"temperature": 0.5, "max_retries": 0}  # no secrets
    mock_server.push({"text": "one"}, {"text": "two"})
    agent.prompt_sync("1")
    agent.update_options(
        api_key="second",
        session_id="s-42",
        headers={"X-Extra": "yes", "X-Api-Key": "header-secret"},
        temperature=None,
    )
    # A header that carries a credential is a secret too.
    assert agent.options == {"max_retries": 0, "session_id": "s-42", "headers": {"X-Extra": "yes"}}
    agent.prompt_sync("2")
    first, second = mock_server.requests()
    headers = [{name.lower(): value for name, value in request["headers"]} for request in (first, second)]
    assert headers[0]["authorization"] == "Bearer first" and headers[1]["authorization"] == "Bearer second"
    assert "session_id" not in headers[0] and headers[1]["session_id"] == "s-42"
    assert headers[1]["x-extra"] == "yes" and headers[1]["x-api-key"] == "header-secret"
    assert first["body"]["temperature"] == 0.5 and "temperature" not in second["body"]
    # Watchdogs change too (checked in test_agent_loop); `reasoning` stays the AI level's.
    with pytest.raises(TypeError, match="thinking_level"):
        agent.update_options(reasoning="high")
    with pytest.raises(TypeError, match="their own signal"):
        pi_agent.Agent(model, signal=pi_agent.Signal())


def test_thinking_level_off_is_accepted_everywhere(faux: pi_agent.FauxProvider) -> None:
    agent = pi_agent.Agent(faux.model, thinking_level="off")
    assert agent.thinking_level == "off"
    agent.thinking_level = "high"
    assert agent.thinking_level == "high"
    agent.thinking_level = "off"
    assert agent.thinking_level == "off"
    agent.thinking_level = None  # the same as "off"
    assert agent.thinking_level == "off"
    assert pi_agent.Agent.restore(agent.snapshot()).thinking_level == "off"
    faux.push("ok")
    assert pi_agent.complete_simple_sync(faux.model, CONTEXT, reasoning="off")["stopReason"] == "stop"
    assert pi_agent.clamp_thinking_level(faux.model, "off") == "off"
    with pytest.raises(ValueError, match="thinking_level"):
        agent.thinking_level = "extreme"


def test_a_stream_function_gets_every_option_back(faux: pi_agent.FauxProvider) -> None:
    """What a stream function receives passes back to `stream_simple` unchanged: secrets,
    callbacks and the signal included."""
    seen: List[Dict[str, Any]] = []
    payloads: List[Any] = []

    def stream_fn(model: pi_agent.Model, context: Dict[str, Any], options: Dict[str, Any]) -> Any:
        seen.append(dict(options))
        return pi_agent.stream_simple(model, context, **options)

    faux.push("streamed")
    agent = pi_agent.Agent(
        faux.model,
        stream_fn=stream_fn,
        api_key="secret-key",
        session_id="s",
        on_payload=lambda payload, model: payloads.append(payload),
    )
    agent.prompt_sync("go")
    (options,) = seen
    assert options["api_key"] == "secret-key" and options["session_id"] == "s"
    assert isinstance(options["signal"], pi_agent.Signal) and not options["signal"].aborted
    assert isinstance(options["on_payload"], pi_agent.OnPayload)
    assert agent.messages[-1]["content"] == [{"type": "text", "text": "streamed"}], (agent.messages[-1], faux.pending, faux.call_count)
