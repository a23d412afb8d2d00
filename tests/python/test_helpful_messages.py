"""Messages that help (issue 18): texts name what a Python caller wrote — its method names,
the coroutine it forgot to await, a missing model, a faux provider used after its block, the
host and port that refused a connection — and a failing subscriber is reported once."""

from __future__ import annotations

import gc
import socket
import warnings
from typing import Any, Dict

import pi_agent

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


def test_an_unawaited_prompt_names_the_method() -> None:
    with pi_agent.FauxProvider() as faux:
        agent = pi_agent.Agent(faux.model)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            coroutine = agent.prompt("hi")
            assert getattr(coroutine, "__qualname__") == "Agent.prompt"
            del coroutine
            gc.collect()
        texts = [str(w.message) for w in caught]
        assert any("coroutine 'Agent.prompt' was never awaited" in t for t in texts), texts
        completing = pi_agent.complete(faux.model, CONTEXT)
        assert getattr(completing, "__qualname__") == "complete"
        completing.close()


def test_an_agent_without_a_model_says_so() -> None:
    agent = pi_agent.Agent()
    agent.prompt_sync("hi")
    assert agent.error_message is not None
    assert "the agent has no model" in agent.error_message


def test_a_faux_model_after_its_block_says_so() -> None:
    with pi_agent.FauxProvider() as faux:
        model = faux.model
    message = pi_agent.complete_sync(model, CONTEXT)
    assert "a faux provider that was unregistered" in message.get("errorMessage", "")


def test_a_dead_port_names_host_and_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = pi_agent.Model("m", api="openai-completions", provider="x", base_url=f"http://127.0.0.1:{port}/v1")
    message = pi_agent.complete_sync(model, CONTEXT, api_key="sk-test", max_retries=0)
    assert f"could not connect to the provider at 127.0.0.1:{port}" in message.get("errorMessage", "")
