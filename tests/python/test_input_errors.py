"""Input errors are `PiError`s that are also the builtin a caller catches, naming the field."""

from __future__ import annotations

import pickle
from typing import Any, Dict

import pytest

import pi_agent

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


def test_a_bad_option_value_is_a_pi_value_error_naming_the_option(faux: pi_agent.FauxProvider) -> None:
    with pytest.raises(pi_agent.PiValueError) as raised:
        pi_agent.complete_sync(faux.model, CONTEXT, temperature="hot")
    error = raised.value
    assert isinstance(error, ValueError) and isinstance(error, pi_agent.PiError)
    assert error.field == "options.temperature"
    # The value is not quoted (options hold credentials): the keyword and the type are named.
    assert str(error) == "invalid option `temperature`: invalid type: string \"…\", expected f64"


def test_an_unknown_option_is_a_pi_type_error(faux: pi_agent.FauxProvider) -> None:
    with pytest.raises(TypeError) as raised:
        pi_agent.Agent(faux.model, tempreature=0.5)
    error = raised.value
    assert isinstance(error, pi_agent.PiTypeError) and isinstance(error, pi_agent.PiError)
    assert error.field == "options.tempreature"
    assert str(error).startswith("unexpected option `tempreature` (options, in snake_case:")


def test_an_option_that_is_not_json_names_the_option(faux: pi_agent.FauxProvider) -> None:
    with pytest.raises(pi_agent.PiTypeError) as raised:
        pi_agent.complete_sync(faux.model, CONTEXT, metadata={"when": object()})
    assert raised.value.field == "options.metadata"
    assert str(raised.value) == "Object of type object is not JSON serializable"


def test_a_malformed_context_names_the_context(faux: pi_agent.FauxProvider) -> None:
    with pytest.raises(pi_agent.PiValueError) as raised:
        pi_agent.complete_sync(faux.model, {"messages": [{"role": "user"}]})
    assert raised.value.field == "context"
    assert str(raised.value).startswith("invalid context: ")


def test_a_deep_object_is_a_value_error_naming_what_was_read(faux: pi_agent.FauxProvider) -> None:
    deep: Any = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(pi_agent.PiValueError) as raised:
        pi_agent.Agent(faux.model).messages = [{"role": "user", "content": deep, "timestamp": 0}]
    assert raised.value.field == "messages"
    assert "nested more than 128 levels deep" in str(raised.value)


def test_settings_model_and_hooks_name_their_field(faux: pi_agent.FauxProvider) -> None:
    with pytest.raises(pi_agent.PiValueError) as value:
        pi_agent.Agent(faux.model, thinking_level="extreme")
    assert value.value.field is not None and "thinking_level" in value.value.field
    with pytest.raises(pi_agent.PiValueError) as model:
        pi_agent.Model.from_dict({"id": "x"})
    assert model.value.field == "model"
    with pytest.raises(pi_agent.PiTypeError) as hook:
        pi_agent.Agent(faux.model, before_tool_call=42)
    assert hook.value.field == "before_tool_call"
    assert str(hook.value) == "before_tool_call must be callable or None, not int"
    with pytest.raises(pi_agent.PiValueError) as ids:
        pi_agent.FauxProvider(model_ids=[])
    assert ids.value.field == "model_ids"


def test_input_errors_can_be_raised_and_pickled() -> None:
    error = pi_agent.PiValueError("bad", field="options.temperature")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is pi_agent.PiValueError
    assert copy.args == ("bad",) and copy.field == "options.temperature"
    assert pi_agent.PiTypeError("x").field is None
    assert issubclass(pi_agent.PiTypeError, TypeError)


def test_hook_results_keep_the_builtin_name_in_messages(faux: pi_agent.FauxProvider) -> None:
    agent = pi_agent.Agent(faux.model, transform_context=lambda messages: [{"role": "user"}])
    agent.prompt_sync("hi")
    assert agent.messages[-1]["errorMessage"].startswith("transform_context raised ValueError: ")


def test_tool_definition_errors_name_the_parameter() -> None:
    class Opaque:
        pass

    def takes_opaque(x: Opaque) -> str:
        return "never"

    with pytest.raises(pi_agent.PiTypeError) as derived:
        pi_agent.tool(takes_opaque)
    assert isinstance(derived.value, TypeError)
    assert derived.value.field == "parameters.x"
    assert "cannot derive a JSON Schema for parameter `x`" in str(derived.value)

    with pytest.raises(pi_agent.PiTypeError) as not_callable:
        pi_agent.tool(42)  # type: ignore[call-overload]
    assert not_callable.value.field == "function"
