"""Errors a program can act on: failed messages carry pi's ``errorMessage`` and our
``errorKind`` (plus ``httpStatus``/``retryAfterMs`` when known), read with
``pi_agent.error_kind``; against the mock server and the faux provider (no network)."""

from __future__ import annotations

import socket
import typing
from typing import Any, Dict

import pi_agent
from pi_agent import types as t

from conftest import MockServer

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


def fail(mock_server: MockServer, reply: Dict[str, Any], **options: Any) -> Dict[str, Any]:
    mock_server.push(reply)
    message = pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key="sk-test", max_retries=0, **options)
    assert message["stopReason"] in ("error", "aborted"), message
    return message


def test_the_literal_is_cores_list_of_kinds() -> None:
    assert set(typing.get_args(t.ErrorKind)) == set(pi_agent._core._shape_fields("ErrorKind"))


def test_rate_limit_carries_status_and_delay(mock_server: MockServer) -> None:
    message = fail(
        mock_server,
        {"status": 429, "body": {"error": {"message": "slow down"}}, "headers": {"retry-after": "3"}},
    )
    assert message["errorMessage"] == "429 slow down"
    assert pi_agent.error_kind(message) == "rate_limit"
    assert message["httpStatus"] == 429 and message["retryAfterMs"] == 3000
    assert pi_agent.is_transient_error(message)
    keys = list(message)
    assert keys.index("errorMessage") < keys.index("errorKind") < keys.index("httpStatus")


def test_statuses_and_overflow_name_their_kind(mock_server: MockServer) -> None:
    for status, kind in ((401, "auth"), (404, "not_found"), (400, "bad_request"), (503, "server")):
        message = fail(mock_server, {"status": status, "body": {"error": {"message": "no"}}})
        assert (pi_agent.error_kind(message), message["httpStatus"]) == (kind, status)
        assert "retryAfterMs" not in message
    overflow = "prompt is too long: 210000 tokens > 200000 maximum"
    message = fail(mock_server, {"status": 400, "body": {"error": {"message": overflow}}})
    assert pi_agent.error_kind(message) == "context_overflow"
    assert not pi_agent.is_transient_error(message)


def test_network_timeout_and_abort(mock_server: MockServer) -> None:
    message = fail(mock_server, {"text": "cut off in the middle", "delta_size": 2, "drop_after_bytes": 60})
    assert pi_agent.error_kind(message) == "network"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    closed = mock_server.model(baseUrl=f"http://127.0.0.1:{port}/v1")
    message = pi_agent.complete_sync(closed, CONTEXT, api_key="sk-test", max_retries=0)
    assert pi_agent.error_kind(message) == "network"
    message = fail(mock_server, {"text": "late", "head_stall_ms": 60000}, request_timeout_ms=200)
    assert pi_agent.error_kind(message) == "timeout"
    signal = pi_agent.Signal()
    signal.abort()
    message = fail(mock_server, {"text": "never"}, signal=signal)
    assert message["stopReason"] == "aborted" and pi_agent.error_kind(message) == "aborted"


def test_faux_scripts_and_unknown_kinds(faux: pi_agent.FauxProvider) -> None:
    faux.push({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "429 later",
               "errorKind": "rate_limit", "httpStatus": 429, "retryAfterMs": 1500})
    agent = pi_agent.Agent(faux.model)
    agent.prompt_sync("go")
    last = agent.messages[-1]
    assert (pi_agent.error_kind(last), last["httpStatus"], last["retryAfterMs"]) == ("rate_limit", 429, 1500)
    assert pi_agent.error_kind({"role": "assistant", "errorKind": "from_the_future"}) is None
    assert pi_agent.error_kind({"role": "assistant", "stopReason": "stop"}) is None
