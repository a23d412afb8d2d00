"""The OpenAI-compatible population's stream shapes through Python.

Every fixture of tests/fixtures/openai-compatible (llama.cpp, vLLM, Ollama, LM Studio, LiteLLM,
OpenRouter, DeepSeek, Groq, Together, Fireworks, and shapes any of them may send) is served by
pi-mock-server, whole and in random pieces, and streamed with `pi_agent.stream`: the final
message must be the expected one (the summary of core/tests/support/openai_compatible.rs), with
no call merged, lost, or left with an empty or duplicate id.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, List, Tuple

import pytest

import pi_agent

from conftest import REPO, MockServer

FIXTURES = REPO / "tests" / "fixtures" / "openai-compatible"
CONTEXT: Dict[str, Any] = {
    "messages": [{"role": "user", "content": "Weather?", "timestamp": 0}],
    "tools": [
        {"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}},
        {"name": "get_time", "description": "Time", "parameters": {"type": "object"}},
    ],
}
BLOCK_KEYS = {
    "text": ["text"],
    "thinking": ["thinking", "thinkingSignature"],
    "toolCall": ["id", "name", "arguments", "thoughtSignature"],
}


def _cases() -> List[Tuple[str, pathlib.Path, Dict[str, Any]]]:
    cases = []
    for sse in sorted(FIXTURES.glob("*/*.sse")):
        expected = json.loads(sse.with_name(sse.stem + ".expected.json").read_text())
        expected.pop("_about", None)
        cases.append((f"{sse.parent.name}/{sse.stem}", sse, expected))
    assert len(cases) >= 20
    return cases


def summarise(message: Dict[str, Any], expected: Dict[str, Any]) -> Dict[str, Any]:
    """Mirrors `summarise` in core/tests/support/openai_compatible.rs."""
    out: Dict[str, Any] = {"stopReason": message["stopReason"]}
    for key in ("errorMessage", "errorKind"):
        if key in expected:
            out[key] = message.get(key)
    content = []
    for block in message["content"]:
        keys = BLOCK_KEYS.get(block["type"], [])
        content.append({"type": block["type"], **{k: block[k] for k in keys if k in block}})
    out["content"] = content
    if "usage" in expected:
        out["usage"] = {key: message["usage"][key] for key in expected["usage"]}
    return out


@pytest.mark.parametrize("name,sse,expected", _cases(), ids=[c[0] for c in _cases()])
@pytest.mark.parametrize("shaping", [{}, {"split_random": 23}], ids=["whole", "random"])
def test_family_shape(
    mock_server: MockServer,
    name: str,
    sse: pathlib.Path,
    expected: Dict[str, Any],
    shaping: Dict[str, Any],
) -> None:
    mock_server.push({"sse": sse.read_text(), **shaping})
    model = mock_server.model(id="m", provider="mock")
    with pi_agent.stream(model, CONTEXT, max_retries=0) as events:
        kinds = [event["type"] for event in events]
        message = events.result_sync()
    assert kinds[-1] in ("done", "error"), name
    ids = [block["id"] for block in message["content"] if block["type"] == "toolCall"]
    assert all(ids), f"{name}: empty id in {ids}"
    assert len(set(ids)) == len(ids), f"{name}: duplicate id in {ids}"
    assert summarise(message, expected) == expected, name
