"""``@tool`` refuses what a model cannot call and keeps what the author wrote (issue 18)."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

import pi_agent


def test_a_lambda_is_refused_with_a_clear_error() -> None:
    with pytest.raises(pi_agent.PiValueError) as raised:
        pi_agent.tool(lambda x: x)
    assert raised.value.field == "name"
    assert "a lambda has no name a model can call" in str(raised.value)
    # With a name it is a tool like any other.
    named = pi_agent.tool(name="double")(lambda x: x * 2)
    assert named.name == "double"
    with pytest.raises(pi_agent.PiValueError):
        pi_agent.Agent(None, tools=[lambda: 1])


def test_names_no_model_accepts_are_refused() -> None:
    def f() -> int:
        """F."""
        return 1

    for bad in ["", "two words", "x" * 65, "<odd>"]:
        with pytest.raises(pi_agent.PiValueError) as raised:
            pi_agent.tool(name=bad)(f)
        assert raised.value.field == "name", bad
    assert pi_agent.tool(name="get_weather-v2")(f).name == "get_weather-v2"


class Place(pydantic.BaseModel):
    """A place on earth (the model's own docstring)."""

    city: str


def test_args_text_describes_a_pydantic_parameter() -> None:
    @pi_agent.tool
    def weather(place: Place, unit: str = "C") -> str:
        """The weather.

        Args:
            place: Where to look the weather up.
            unit: C or F.
        """
        return f"sunny in {place.city}"

    properties: Any = weather.parameters["properties"]
    assert properties["place"]["description"] == "Where to look the weather up."
    assert properties["unit"]["description"] == "C or F."
