"""Issue 17 through Python: nonsense tool schemas, faux options and list-shaped options are
refused naming the field; snapshots keep no secret header; deep tool arguments get an error
result; a lone surrogate escape and a path-hostile model id against the mock server."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

import pi_agent
from pi_agent import faux_tool_call

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


def noop() -> str:
    return "ran"


def test_tool_parameters_must_be_a_schema_object() -> None:
    with pytest.raises(pi_agent.PiTypeError) as raised:
        pi_agent.Tool("t", "d", 5, noop)
    assert raised.value.field == "parameters"
    assert "must be a JSON Schema object, not a number" in str(raised.value)
    with pytest.raises(pi_agent.PiValueError) as bad_type:
        pi_agent.Tool("t", "d", {"type": 12}, noop)
    assert bad_type.value.field == "parameters.type"
    with pytest.raises(pi_agent.PiValueError) as nested:
        pi_agent.Tool("t", "d", {"type": "object", "properties": {"a": {"type": "strin"}}}, noop)
    assert nested.value.field == "parameters.properties.a.type"
    pi_agent.Tool("t", "d", {"type": "object", "properties": {"a": {"type": ["string", "null"]}}}, noop)


@pytest.mark.parametrize(
    "keywords, field",
    [
        ({"tokens_per_second": -1.0}, "tokens_per_second"),
        ({"tokens_per_second": float("nan")}, "tokens_per_second"),
        ({"token_size": (5, 3)}, "token_size"),
        ({"token_size": (0, 0)}, "token_size"),
        ({"model_ids": ["a", "a"]}, "model_ids"),
        ({"model_ids": [""]}, "model_ids"),
        ({"provider": ""}, "provider"),
    ],
)
def test_nonsense_faux_options_are_refused(keywords: Dict[str, Any], field: str) -> None:
    with pytest.raises(pi_agent.PiValueError) as raised:
        pi_agent.FauxProvider(**keywords)
    assert raised.value.field == field
    assert str(raised.value).startswith("invalid faux option `")


def test_a_list_is_not_an_options_object(faux: pi_agent.FauxProvider) -> None:
    with pytest.raises(pi_agent.PiValueError) as raised:
        pi_agent.complete_sync(faux.model, CONTEXT, thinking_budgets=[1, 2])
    assert raised.value.field == "options.thinking_budgets"
    assert "expected a JSON object, got an array" in str(raised.value)


def test_a_snapshot_keeps_no_header_that_may_be_a_secret(faux: pi_agent.FauxProvider) -> None:
    faux.push("one")
    model = faux.model.replace(headers={"X-Auth-Key": "py-model-secret-1", "User-Agent": "pi-py"})
    agent = pi_agent.Agent(model, headers={"X-Custom-Auth": "py-option-secret-2", "anthropic-beta": "b"})
    agent.prompt_sync("hi")
    saved = json.dumps(agent.snapshot())
    assert "py-model-secret-1" not in saved and "py-option-secret-2" not in saved
    snapshot = json.loads(saved)
    assert snapshot["model"]["headers"] == {"User-Agent": "pi-py"}
    assert snapshot["settings"]["streamOptions"]["headers"] == {"anthropic-beta": "b"}


def nested(depth: int) -> Dict[str, Any]:
    value: Any = 1
    for _ in range(depth - 1):
        value = [value]
    return {"v": value}


@pytest.mark.parametrize("depth, runs", [(64, True), (100, False)])
def test_deep_arguments_get_an_error_result(faux: pi_agent.FauxProvider, depth: int, runs: bool) -> None:
    calls: List[Any] = []

    def deep(**arguments: Any) -> str:
        calls.append(arguments)
        return "ran"

    faux.push([faux_tool_call("deep", nested(depth))])
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[pi_agent.Tool("deep", "d", {"type": "object"}, deep)])
    agent.prompt_sync("go")
    results = [m for m in agent.messages if m["role"] == "toolResult"]
    assert len(results) == 1
    assert bool(calls) == runs
    assert results[0]["isError"] == (not runs)
    if not runs:
        assert "nested more than 64 levels deep" in results[0]["content"][0]["text"]


def google_model(mock_server: Any, model_id: str) -> pi_agent.Model:
    return mock_server.model(id=model_id, api="google-generative-ai", provider="mock")


def test_a_lone_surrogate_costs_one_character(mock_server: Any) -> None:
    chunk = (
        '{"candidates":[{"content":{"parts":[{"text":"h\\ud800i"}],"role":"model"},'
        '"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2}}'
    )
    mock_server.push({"sse": f"data: {chunk}\n\n"})
    message = pi_agent.complete_sync(google_model(mock_server, "gemini"), CONTEXT, api_key="k" * 12, max_retries=0)
    assert message["stopReason"] == "stop", message
    assert message["content"][0]["text"] == "h\ufffdi"


def test_a_hostile_model_id_stays_one_path_segment(mock_server: Any) -> None:
    chunk = (
        '{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},'
        '"finishReason":"STOP","index":0}]}'
    )
    mock_server.push({"sse": f"data: {chunk}\n\n"})
    model = google_model(mock_server, "../../../admin/delete?all=1#")
    message = pi_agent.complete_sync(model, CONTEXT, api_key="hostile-key-123", max_retries=0)
    assert message["stopReason"] == "stop", message
    (request,) = mock_server.requests()
    assert request["path"] == (
        "/v1/models/..%2F..%2F..%2Fadmin%2Fdelete%3Fall%3D1%23:streamGenerateContent?alt=sse"
    )
