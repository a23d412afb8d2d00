"""Model: keywords, pi's dict shape, attributes."""

from __future__ import annotations

import pytest

import pi_agent


def test_keywords_and_attributes() -> None:
    model = pi_agent.Model(
        "llama-3",
        api="openai-completions",
        provider="ollama",
        base_url="http://localhost:11434/v1",
        reasoning=True,
        input=["text", "image"],
        cost={"input": 1.5, "output": 2.0},
        context_window=8192,
        max_tokens=2048,
        headers={"X-Team": "pi"},
        compat={"supportsStore": False},
    )
    assert (model.id, model.name, model.api, model.provider) == (
        "llama-3",
        "llama-3",
        "openai-completions",
        "ollama",
    )
    assert model.base_url == "http://localhost:11434/v1"
    assert model.reasoning is True
    assert model.input == ["text", "image"]
    assert model.cost == {"input": 1.5, "output": 2.0, "cacheRead": 0.0, "cacheWrite": 0.0}
    assert (model.context_window, model.max_tokens) == (8192, 2048)
    assert model.headers == {"X-Team": "pi"}
    assert model.compat == {"supportsStore": False}
    assert "llama-3" in repr(model)


def test_dict_round_trip_and_equality() -> None:
    data = {
        "id": "mock-gpt",
        "name": "Mock",
        "api": "openai-completions",
        "provider": "openai",
        "baseUrl": "http://127.0.0.1:9/v1",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0},
        "contextWindow": 1000,
        "maxTokens": 100,
    }
    model = pi_agent.Model.from_dict(data)
    assert model.to_dict() == data
    assert model == pi_agent.Model.from_dict(model.to_dict())
    other = model.replace(base_url="http://elsewhere/v1", max_tokens=5)
    assert (other.base_url, other.max_tokens, other.id) == ("http://elsewhere/v1", 5, "mock-gpt")
    assert other != model and model.base_url == "http://127.0.0.1:9/v1"


def test_defaults_target_openai() -> None:
    model = pi_agent.Model("gpt-4o-mini")
    assert (model.api, model.provider, model.base_url) == (
        "openai-completions",
        "openai",
        "https://api.openai.com/v1",
    )


def test_invalid_dicts_raise_value_error() -> None:
    with pytest.raises(ValueError, match="invalid model: missing field `api`"):
        pi_agent.Model.from_dict({"id": "x", "provider": "p"})
    with pytest.raises(ValueError, match="invalid input"):
        pi_agent.Model("x", input=["smell"])  # type: ignore[list-item]


def test_models_pickle_hash_and_compare_by_value() -> None:
    import copy
    import pickle

    model = pi_agent.Model(
        "m", provider="acme", base_url="http://127.0.0.1:1/v1", compat={"supportsStore": False}
    )
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(model, protocol))
        assert again == model and hash(again) == hash(model)
        assert again.to_dict() == model.to_dict()
    assert copy.deepcopy(model) == model
    catalog = pi_agent.get_model("openai", "gpt-4o-mini")
    assert catalog is not None
    assert pi_agent.get_model("openai", "gpt-4o-mini") == catalog
    assert len({catalog, pi_agent.get_model("openai", "gpt-4o-mini"), model}) == 2
    assert {model: 1}[pickle.loads(pickle.dumps(model))] == 1
    other = model.replace(max_tokens=1)
    assert other != model
