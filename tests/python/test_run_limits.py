"""Run limits and errors a program can raise (issue 18), offline on the faux provider and the
mock server: a model that calls a tool forever is stopped by the default turn guard and by each
limit; failures raise their ``ModelError`` subclass only when asked."""

from __future__ import annotations

import asyncio
import typing
from typing import Any, Dict, List

import pytest

import pi_agent
from pi_agent import types as t

from conftest import MockServer

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


def tool_loop(faux: pi_agent.FauxProvider) -> None:
    """Every request is answered with one call of ``tick``, forever."""

    def respond(context: t.Context, call: int, model: pi_agent.Model) -> Any:
        return [pi_agent.faux_tool_call("tick", {}, id=f"c{call}")]

    faux.set_responses([respond] * 300)


def agent_with_loop(faux: pi_agent.FauxProvider, calls: List[int], **kwargs: Any) -> pi_agent.Agent:
    def tick() -> str:
        """Counts."""
        calls.append(1)
        return "tick"

    tool_loop(faux)
    return pi_agent.Agent(faux.model, tools=[tick], **kwargs)


def test_the_default_turn_guard_stops_a_tool_loop() -> None:
    with pi_agent.FauxProvider() as faux:
        calls: List[int] = []
        agent = agent_with_loop(faux, calls)
        assert agent.limits == {"maxTurns": 100}
        new = agent.prompt_sync("loop")
        assert faux.call_count == 100 and len(calls) == 100
        last = new[-1]
        assert last["role"] == "assistant"
        assert last["stopReason"] == "error"
        assert last.get("errorKind") == "run_limit" and last.get("runLimit") == "maxTurns"
        assert last.get("errorMessage") == "The run reached its limit of 100 turns (maxTurns)"
        assert agent.error_message == last.get("errorMessage")


def test_each_limit_names_itself_and_raises_when_asked() -> None:
    cases: List[tuple[t.RunLimits, str]] = [
        ({"maxTurns": 2}, "maxTurns"),
        ({"maxTurns": None, "maxToolCalls": 3}, "maxToolCalls"),
        ({"maxInputTokens": 1}, "maxInputTokens"),
        ({"maxOutputTokens": 1}, "maxOutputTokens"),
        ({"maxTotalTokens": 1}, "maxTotalTokens"),
    ]
    for limits, name in cases:
        with pi_agent.FauxProvider() as faux:
            calls: List[int] = []
            agent = agent_with_loop(faux, calls, limits=limits)
            with pytest.raises(pi_agent.RunLimitExceeded) as raised:
                agent.prompt_sync("loop", raise_on_error=True)
            error = raised.value
            assert isinstance(error, pi_agent.ModelError) and isinstance(error, pi_agent.PiError)
            assert error.run_limit == name and error.kind == "run_limit", name
            assert name in str(error)
            assert error.message is not None and error.message.get("runLimit") == name
            # The transcript keeps the message either way.
            assert agent.messages[-1].get("runLimit") == name


def test_limits_can_be_changed_and_turned_off() -> None:
    with pi_agent.FauxProvider() as faux:
        calls: List[int] = []
        agent = agent_with_loop(faux, calls)
        agent.limits = {"maxTurns": 3, "maxCostUsd": 0.5}
        assert agent.limits == {"maxTurns": 3, "maxCostUsd": 0.5}
        agent.prompt_sync("loop")
        assert faux.call_count == 3
        assert agent.snapshot()["settings"].get("limits") == {"maxTurns": 3, "maxCostUsd": 0.5}
        agent.limits = {"maxTurns": None}
        assert agent.limits == {"maxTurns": None}
        agent.limits = None
        assert agent.limits == {"maxTurns": 100}
        with pytest.raises(pi_agent.PiValueError) as raised:
            agent.limits = {"maxTurn": 3}  # type: ignore[assignment]
        assert "maxTurn" in str(raised.value)


def test_an_awaited_run_raises_its_limit() -> None:
    async def main() -> None:
        with pi_agent.FauxProvider() as faux:
            agent = agent_with_loop(faux, [], limits={"maxTurns": 1})
            with pytest.raises(pi_agent.RunLimitExceeded):
                await agent.prompt("loop", raise_on_error=True)
            # Without the opt-in, failures stay data.
            new = await agent.prompt("again")
            assert new[-1].get("errorKind") == "run_limit"
            run = agent.run("once more")
            with pytest.raises(pi_agent.RunLimitExceeded):
                await run.result(raise_on_error=True)

    asyncio.run(main())


def test_a_successful_run_does_not_raise() -> None:
    with pi_agent.FauxProvider() as faux:
        faux.set_responses(["fine"])
        agent = pi_agent.Agent(faux.model)
        new = agent.prompt_sync("hi", raise_on_error=True)
        assert new[-1]["role"] == "assistant"


def test_complete_raises_the_class_of_its_kind(mock_server: MockServer) -> None:
    cases = [
        ({"status": 429, "body": {"error": {"message": "slow"}}, "headers": {"retry-after": "3"}}, pi_agent.RateLimitError),
        ({"status": 401, "body": {"error": {"message": "no"}}}, pi_agent.AuthenticationError),
        ({"status": 404, "body": {"error": {"message": "no"}}}, pi_agent.NotFoundError),
        ({"status": 400, "body": {"error": {"message": "bad"}}}, pi_agent.BadRequestError),
        ({"status": 503, "body": {"error": {"message": "down"}}}, pi_agent.ServerError),
        (
            {"status": 400, "body": {"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum"}}},
            pi_agent.ContextOverflowError,
        ),
    ]
    for reply, cls in cases:
        mock_server.push(reply)
        with pytest.raises(cls) as raised:
            pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key="sk-test", max_retries=0, raise_on_error=True)
        assert type(raised.value) is cls
        assert raised.value.http_status == reply["status"]
    mock_server.push(cases[0][0])
    with pytest.raises(pi_agent.RateLimitError) as limited:
        pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key="sk-test", max_retries=0, raise_on_error=True)
    assert limited.value.retry_after == 3.0 and limited.value.retry_after_ms == 3000
    # The default is pi's: failures are data.
    mock_server.push(cases[0][0])
    message = pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key="sk-test", max_retries=0)
    assert message["stopReason"] == "error"
    with pytest.raises(pi_agent.RateLimitError):
        pi_agent.raise_for_error(message)


def test_raise_for_error_passes_good_messages_and_names_builtin_bases(mock_server: MockServer) -> None:
    mock_server.push({"text": "hello"})
    message = pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key="sk-test")
    assert pi_agent.raise_for_error(message) is message
    assert issubclass(pi_agent.ModelTimeoutError, TimeoutError)
    assert issubclass(pi_agent.NetworkError, ConnectionError)
    assert pi_agent.ModelError.__module__ == "pi_agent"
    aborted: t.AssistantMessage = {
        "role": "assistant",
        "content": [],
        "api": "x",
        "provider": "x",
        "model": "x",
        "usage": message["usage"],
        "stopReason": "aborted",
        "timestamp": 0,
    }
    with pytest.raises(pi_agent.AbortedError) as raised:
        pi_agent.raise_for_error(aborted)
    assert raised.value.kind == "aborted"
    with pytest.raises(pi_agent.PiValueError):
        pi_agent.raise_for_error({"role": "user"})


def test_async_complete_raises(mock_server: MockServer) -> None:
    async def main() -> None:
        mock_server.push({"status": 401, "body": {"error": {"message": "no"}}})
        with pytest.raises(pi_agent.AuthenticationError):
            await pi_agent.complete(mock_server.model(), CONTEXT, api_key="sk-test", max_retries=0, raise_on_error=True)
        mock_server.push({"status": 401, "body": {"error": {"message": "no"}}})
        stream = pi_agent.stream(mock_server.model(), CONTEXT, api_key="sk-test", max_retries=0)
        with pytest.raises(pi_agent.AuthenticationError):
            await stream.result(raise_on_error=True)

    asyncio.run(main())


def test_types_is_an_attribute_after_import() -> None:
    import importlib

    module = importlib.import_module("pi_agent")
    assert module.types.RunLimits is t.RunLimits
    assert set(typing.get_args(t.RunLimit)) == set(pi_agent._core._shape_fields("RunLimit"))
