"""Typed answers: the model's answer as a pydantic model, a dataclass, or any JSON Schema.

``complete_structured`` asks for the answer in the shape of ``output_type`` (by the provider's
own structured-output mechanism) and returns an instance; ``Agent(..., output_type=...)`` makes
every run end in one, re-asking once when an answer does not validate. Offline, the faux
provider plays the model; set ``PI_MODEL_JSON`` to use a real one.

Run: ``pip install . && python examples/python/structured.py``
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import List

import pydantic

import pi_agent


class Weather(pydantic.BaseModel):
    city: str
    celsius: float


@dataclasses.dataclass
class Forecast:
    city: str
    days: List[float]


def main() -> None:
    faux = None
    if "PI_MODEL_JSON" in os.environ:
        model = pi_agent.Model.from_dict(json.loads(os.environ["PI_MODEL_JSON"]))
    else:
        faux = pi_agent.FauxProvider()
        faux.push('{"city": "Paris", "celsius": 21.5}')
        faux.push('{"city": "Paris"}')  # invalid: the agent re-asks with the report
        faux.push('{"city": "Paris", "days": [21.5, 23, 19]}')
        model = faux.model

    context = {"messages": [{"role": "user", "content": "Weather in Paris?", "timestamp": 0}]}
    weather: Weather = pi_agent.complete_structured_sync(model, context, Weather)
    print(f"{weather.city}: {weather.celsius} °C")

    agent = pi_agent.Agent(model, system_prompt="Answer with a forecast.", output_type=Forecast)
    forecast: Forecast = agent.prompt_output_sync("Three-day forecast for Paris?")
    print(f"{forecast.city}: {forecast.days}")


if __name__ == "__main__":
    main()
