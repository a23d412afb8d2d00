"""Typed answers through the binding, against pi-mock-server (openai-completions): the request
mapping of ``tool_choice`` and ``output_type``, streamed partial objects, invalid output, the
agent's re-ask, and instances of pydantic models, dataclasses, TypedDicts and schema dicts."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Dict, List

import pydantic
import pytest
from typing_extensions import TypedDict

import pi_agent

from conftest import MockServer

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "Weather?", "timestamp": 0}]}
TOOLS: List[Dict[str, Any]] = [
    {"name": "lookup", "description": "Looks it up", "parameters": {"type": "object"}}
]


class Weather(pydantic.BaseModel):
    city: str
    celsius: float


@dataclasses.dataclass
class WeatherData:
    city: str
    celsius: float


class WeatherDict(TypedDict):
    city: str
    celsius: float


def test_tool_choice_is_one_option(mock_server: MockServer) -> None:
    mock_server.push({"text": "ok"}, {"text": "ok"})
    context = {**CONTEXT, "tools": TOOLS}
    model = mock_server.model()
    pi_agent.complete_sync(model, context, api_key="k", tool_choice="required")
    pi_agent.complete_sync(model, context, api_key="k", tool_choice={"type": "tool", "name": "lookup"})
    first, second = mock_server.requests()
    assert first["body"]["tool_choice"] == "required"
    assert second["body"]["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    with pytest.raises(ValueError, match="unknown tool choice"):
        pi_agent.complete_sync(model, context, api_key="k", tool_choice="requird")
    message = pi_agent.complete_sync(
        model, context, api_key="k", tool_choice={"type": "tool", "name": "nope"}
    )
    assert message["stopReason"] == "error"
    assert "toolChoice names tool \"nope\"" in message["errorMessage"]


@pytest.mark.parametrize(
    "output_type, expected",
    [
        (Weather, Weather(city="Paris", celsius=21.5)),
        (WeatherData, WeatherData(city="Paris", celsius=21.5)),
        (WeatherDict, {"city": "Paris", "celsius": 21.5}),
        (
            {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            {"city": "Paris", "celsius": 21.5},
        ),
    ],
)
def test_complete_structured_returns_an_instance(
    mock_server: MockServer, output_type: Any, expected: Any
) -> None:
    mock_server.push({"text": '{"city": "Paris", "celsius": 21.5}'})
    value = pi_agent.complete_structured_sync(mock_server.model(), CONTEXT, output_type, api_key="k")
    assert value == expected
    assert type(value) is type(expected)
    (request,) = mock_server.requests()
    response_format = request["body"]["response_format"]
    assert response_format["type"] == "json_schema"
    schema = response_format["json_schema"]["schema"]
    assert schema["properties"]["city"] == {"type": "string"} or "city" in schema["properties"]
    if isinstance(output_type, type):
        assert response_format["json_schema"]["name"] == output_type.__name__


def test_a_list_travels_wrapped_and_comes_back_as_the_list(mock_server: MockServer) -> None:
    """`output_type=List[Weather]`: the model is asked for `{"response": [...]}` (OpenAI takes
    only object schemas), and the caller sees the list: its text deltas, partial objects, final
    text and value."""
    answer = '{"response": [{"city": "Oslo", "celsius": -3}, {"city": "Rome", "celsius": 30}]}'
    mock_server.push({"text": answer, "delta_size": 5}, {"text": answer})
    model = mock_server.model()
    schema = pi_agent.output_schema(List[Weather])
    with pi_agent.stream(model, CONTEXT, api_key="k", output_schema=schema) as events:
        seen = list(events)
    text = "".join(event["delta"] for event in seen if event["type"] == "text_delta")
    assert text == '[{"city": "Oslo", "celsius": -3}, {"city": "Rome", "celsius": 30}]'
    assert seen[-1]["message"]["content"][0]["text"] == text
    objects = [event["object"] for event in seen if event["type"] == "object_delta"]
    assert [{"city": "Oslo", "celsius": -3}] in objects
    value = pi_agent.complete_structured_sync(model, CONTEXT, List[Weather], api_key="k")
    assert value == [Weather(city="Oslo", celsius=-3), Weather(city="Rome", celsius=30)]
    sent = mock_server.requests()[0]["body"]["response_format"]["json_schema"]["schema"]
    assert sent["type"] == "object" and sent["required"] == ["response"]
    assert sent["properties"]["response"]["type"] == "array"


def test_complete_structured_async_and_invalid_output(mock_server: MockServer) -> None:
    mock_server.push({"text": '{"city": "Oslo", "celsius": -3}'}, {"text": '{"city": "Oslo"}'})
    model = mock_server.model()
    value = asyncio.run(pi_agent.complete_structured(model, CONTEXT, Weather, api_key="k"))
    assert value == Weather(city="Oslo", celsius=-3)
    with pytest.raises(pi_agent.OutputValidationError) as raised:
        pi_agent.complete_structured_sync(model, CONTEXT, Weather, api_key="k")
    assert raised.value.error_kind == "invalid_output"
    assert "must have required properties celsius" in str(raised.value)
    assert raised.value.message["errorKind"] == "invalid_output"
    assert pi_agent.error_kind(raised.value.message) == "invalid_output"


def test_the_stream_carries_partial_objects(mock_server: MockServer) -> None:
    mock_server.push({"text": '{"city": "Paris", "celsius": 21.5}', "delta_size": 6})
    schema = pi_agent.output_schema(Weather)
    with pi_agent.stream(mock_server.model(), CONTEXT, api_key="k", output_schema=schema) as events:
        objects = [event["object"] for event in events if event["type"] == "object_delta"]
    assert len(objects) > 2
    assert objects[-1] == {"city": "Paris", "celsius": 21.5}
    assert {"city": "Paris"} in objects


def test_an_agent_ends_in_a_value_after_one_re_ask(mock_server: MockServer) -> None:
    mock_server.push(
        {"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"city": "Rome"}}]},
        {"text": '{"city": "Rome"}'},
        {"text": '{"city": "Rome", "celsius": 30}'},
    )

    def lookup(city: str) -> str:
        """Looks the temperature up."""
        return "30"

    agent = pi_agent.Agent(mock_server.model(), tools=[lookup], output_type=Weather, api_key="k")
    assert agent.output_type is Weather
    value = agent.prompt_output_sync("Weather in Rome?")
    assert value == Weather(city="Rome", celsius=30)
    requests = mock_server.requests()
    assert len(requests) == 3
    assert all(r["body"]["response_format"]["json_schema"]["name"] == "Weather" for r in requests)
    assert "must have required properties celsius" in str(requests[2]["body"]["messages"])


def test_an_agent_that_never_validates_raises(mock_server: MockServer) -> None:
    mock_server.push({"text": "no"}, {"text": "still no"}, {"text": "never"})
    agent = pi_agent.Agent(
        mock_server.model(), output_type=WeatherData, output_retries=2, api_key="k"
    )
    with pytest.raises(pi_agent.OutputValidationError, match="not JSON"):
        asyncio.run(agent.prompt_output("Weather?"))
    assert len(mock_server.requests()) == 3


def test_an_agents_own_stream_function_is_held_to_the_output_type() -> None:
    """A `stream_fn` does not go through `pi_agent.stream`: the agent validates its answer and
    re-asks, as on the default path."""
    answers = ['{"city": 5}', '{"city": "Oslo", "celsius": -3}']
    seen: List[int] = []

    def answer(model: pi_agent.Model, context: Dict[str, Any], options: Dict[str, Any]) -> Any:
        seen.append(len(context["messages"]))
        return {"role": "assistant", "content": [{"type": "text", "text": answers.pop(0)}],
                "api": model.api, "provider": model.provider, "model": model.id,
                "stopReason": "stop", "timestamp": 1,
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}

    agent = pi_agent.Agent(pi_agent.Model("custom", api="custom-api"), stream_fn=answer, output_type=Weather)
    assert agent.prompt_output_sync("Weather in Oslo?") == Weather(city="Oslo", celsius=-3)
    assert seen == [1, 3]  # the re-ask carried the rejected answer and the report

    answers[:] = ["no"] * 2
    with pytest.raises(pi_agent.OutputValidationError, match="not JSON"):
        agent.prompt_output_sync("Again?")


class Checked(pydantic.BaseModel):
    city: str

    @pydantic.field_validator("city")
    @classmethod
    def known(cls, city: str) -> str:
        if city != "Oslo":
            raise ValueError("unknown city")
        return city


def test_a_value_the_types_own_validators_refuse_is_an_output_validation_error(mock_server: MockServer) -> None:
    """The schema cannot carry a pydantic validator: the answer passes core's check and fails
    when it becomes the type, which is still an `OutputValidationError`."""
    mock_server.push({"text": '{"city": "Atlantis"}'}, {"text": '{"city": "Atlantis"}'})
    with pytest.raises(pi_agent.OutputValidationError, match="(?s)not a Checked: .*unknown city"):
        pi_agent.complete_structured_sync(mock_server.model(), CONTEXT, Checked, api_key="k")
    agent = pi_agent.Agent(mock_server.model(), output_type=Checked, api_key="k")
    with pytest.raises(pi_agent.OutputValidationError, match="unknown city") as raised:
        agent.prompt_output_sync("Where?")
    assert raised.value.message["role"] == "assistant"


@pytest.mark.parametrize(
    "api, base, pointer, expected",
    [
        ("anthropic-messages", "root", ["output_config", "format", "type"], "json_schema"),
        ("openai-responses", "v1", ["text", "format", "name"], "Weather"),
        ("google-generative-ai", "v1", ["generationConfig", "responseMimeType"], "application/json"),
        ("mistral-conversations", "root", ["response_format", "json_schema", "name"], "Weather"),
    ],
)
def test_output_type_maps_onto_each_api(
    mock_server: MockServer, api: str, base: str, pointer: List[str], expected: str
) -> None:
    mock_server.push({"status": 400, "body": {"error": {"message": "mapped"}}})
    root = f"http://127.0.0.1:{mock_server.port}"
    model = mock_server.model(
        api=api, id="claude-sonnet-4-5", baseUrl=root if base == "root" else mock_server.url
    )
    with pytest.raises(pi_agent.OutputValidationError) as raised:
        pi_agent.complete_structured_sync(model, CONTEXT, Weather, api_key="k", max_retries=0)
    assert raised.value.error_kind == "bad_request"
    (request,) = mock_server.requests()
    value: Any = request["body"]
    for key in pointer:
        value = value[key]
    assert value == expected


def test_invalid_output_raises_the_same_class_both_ways(mock_server: MockServer) -> None:
    # `raise_on_error=True` and `complete_structured` raise for the same failure: the first an
    # `InvalidOutputError` (a `ModelError`), the second an `OutputValidationError`, which is
    # one too (and still a `PiValueError`), so one `except` clause fits both call styles.
    mock_server.push({"text": '{"city": "Oslo"}'}, {"text": '{"city": "Oslo"}'})
    model = mock_server.model()
    schema = pi_agent.output_schema(Weather)
    with pytest.raises(pi_agent.InvalidOutputError) as raw:
        pi_agent.complete_sync(model, CONTEXT, api_key="k", output_schema=schema, raise_on_error=True)
    assert type(raw.value) is pi_agent.InvalidOutputError
    assert raw.value.kind == "invalid_output"
    with pytest.raises(pi_agent.InvalidOutputError) as typed:
        pi_agent.complete_structured_sync(model, CONTEXT, Weather, api_key="k")
    error = typed.value
    assert isinstance(error, pi_agent.OutputValidationError)
    assert isinstance(error, pi_agent.ModelError)
    assert isinstance(error, pi_agent.PiValueError) and isinstance(error, ValueError)
    assert error.kind == error.error_kind == "invalid_output"
    assert error.message is not None and error.message["errorKind"] == "invalid_output"
    assert str(error) == str(raw.value)
    assert issubclass(pi_agent.InvalidOutputError, pi_agent.ModelError)


def test_strict_applies_to_a_schema_given_as_a_dict() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert pi_agent.output_schema(schema, strict=True)["strict"] is True
    assert pi_agent.output_schema(schema)["strict"] is False
    assert pi_agent.output_schema(Weather, strict=True)["strict"] is True
