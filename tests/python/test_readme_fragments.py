"""The READMEs' Python fragments run too (issue 18): every ```python block of ``README.md`` and
``python/README.md`` that is not a whole program (``test_readme_blocks.py`` runs those) is
executed here, offline, inside a prepared scope that defines what the text around it has
already introduced (``model`` — the faux provider's —, ``context``, ``agent``, ``lookup``,
``calculator``, ...), and then checked for what it claims to do.

A fragment is found by its first line. The README's placeholders (``...`` where the reader
fills in a value) are replaced by a name of the scope before it runs; every other character is
the README's. A fragment with no entry fails ``test_every_fragment_is_known``, so a new one
cannot go unexecuted; the few that need a server CI starts elsewhere say which test covers
them and are only compiled here.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pydantic
import pytest

import pi_agent
import pi_agent.mcp

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
PROMPT: Dict[str, Any] = {"role": "user", "content": "Hi", "timestamp": 0}


def fragments() -> List[Tuple[str, str]]:
    found = []
    for readme in ["README.md", "python/README.md"]:
        text = (ROOT / readme).read_text()
        for match in FENCE.finditer(text):
            block = match.group(1)
            if not block.startswith("import "):
                line = text[: match.start()].count("\n") + 2
                found.append((f"{readme}:{line}", block))
    return found


FRAGMENTS = fragments()


@dataclass
class Case:
    """How one fragment runs: ``replace`` turns its placeholders into scope names, ``answers``
    are the faux model's replies (texts; a list is one reply's content blocks), ``check`` looks
    at the namespace afterwards (and may drive what the fragment defined), ``only_compiled``
    names the test that runs it against its server instead."""

    answers: List[Any] = field(default_factory=lambda: ["The answer is 42."])
    replace: List[Tuple[str, str]] = field(default_factory=list)
    check: Optional[Callable[[Dict[str, Any], str], None]] = None
    needs: Optional[str] = None
    only_compiled: Optional[str] = None


def _text(message: Any) -> str:
    return pi_agent.text_of(message)


def check_mcp(ns: Dict[str, Any], printed: str) -> None:
    tools = ns["agent"].tools
    assert any(tool.name == "echo" for tool in tools), [tool.name for tool in tools]


def check_weather(ns: Dict[str, Any], printed: str) -> None:
    weather = ns["weather"]
    assert isinstance(weather, ns["Weather"]) and weather.city == "Paris", weather
    assert ns["agent"].output_type is ns["Weather"]


def check_stream_fns(ns: Dict[str, Any], printed: str) -> None:
    # Each of the three is a working `stream_fn`.
    for name, expected in [("my_stream", "The answer is 42."), ("canned", "hi"), ("relay", "hi")]:
        agent = pi_agent.Agent(ns["model"], stream_fn=ns[name])
        agent.prompt_sync("Hi")
        last = agent.messages[-1]
        assert last["role"] == "assistant" and last.get("stopReason") == "stop", (name, last)
        assert _text(last) == expected, (name, last)


def check_restore(ns: Dict[str, Any], printed: str) -> None:
    agent = ns["agent"]
    roles = [message["role"] for message in agent.messages]
    # The snapshot's transcript, then the queued follow-up and its answer.
    assert roles[:2] == ["user", "assistant"] and len(roles) == 4, roles
    assert _text(agent.messages[-1]) == "The answer is 42."


def check_stepper(ns: Dict[str, Any], printed: str) -> None:
    assert ns["step"]["action"]["type"] == "finished"
    assert any(event["type"] == "agent_end" for event in ns["delivered"]), ns["delivered"]
    assert _text(ns["message"]) == "The answer is 42."


def check_narrowing(ns: Dict[str, Any], printed: str) -> None:
    assert "The answer is 42." in printed, printed
    assert ns["calls"] == [], ns["calls"]


def check_tool_context(ns: Dict[str, Any], printed: str) -> None:
    index = ns["index"]
    assert isinstance(index, pi_agent.Tool) and index.name == "index"
    assert "ctx" not in json.dumps(index.parameters)
    agent = pi_agent.Agent(ns["model"], tools=[index])
    updates: List[Any] = []
    agent.subscribe(lambda event: updates.append(event) if event["type"] == "tool_execution_update" else None)
    agent.prompt_sync("Index /srv")
    results = [m for m in agent.messages if m["role"] == "toolResult"]
    assert len(results) == 1 and "indexed 2 files (call call-1)" == _text(results[0]), results
    assert len(updates) == 2, updates


def check_stream(ns: Dict[str, Any], printed: str) -> None:
    assert "The answer is 42." in printed, printed
    assert _text(ns["message"]) == "The answer is 42."


def check_faux(ns: Dict[str, Any], printed: str) -> None:
    texts = [_text(m) for m in ns["agent"].messages if m["role"] == "assistant"]
    assert texts == ["", "6 * 7 = 42"], texts
    results = [_text(m) for m in ns["agent"].messages if m["role"] == "toolResult"]
    assert results == ["42"], results


CASES: Dict[str, Case] = {
    "# inside an async function, with `model` from the quick start": Case(
        replace=[('"npx", ["-y", "@modelcontextprotocol/server-everything"]', '"node", [everything, "stdio"]')],
        needs="everything",
        check=check_mcp,
    ),
    "from temporalio.client import Client": Case(
        only_compiled="tests/python/test_temporal.py runs the Session workflow on a Temporal dev server"
    ),
    "class Weather(pydantic.BaseModel):   # or a dataclass, a TypedDict, a JSON Schema dict": Case(
        answers=['{"city": "Paris", "celsius": 21}'] * 3, check=check_weather
    ),
    "class Weather(pydantic.BaseModel):": Case(
        answers=['{"city": "Paris", "celsius": 21}'] * 3, check=check_weather
    ),
    "def my_stream(model, context, options):": Case(
        replace=[
            ('"text": "hi"}], ...}', '"text": "hi"}], **whole_message}'),
            ('"usage": {...}}', '"usage": usage}'),
        ],
        check=check_stream_fns,
    ),
    "saved = json.dumps(agent.snapshot())        # transcript, queues, model, settings: plain JSON": Case(
        replace=[("api_key=...", "api_key=api_key")], check=check_restore
    ),
    'stepper, step = pi_agent.AgentStepper.start(system_prompt="...", messages=history, prompts=[prompt])': Case(
        replace=[("elif ...:", "else: step = answer_other(stepper, action)")], check=check_stepper
    ),
    "for message in agent.messages:": Case(check=check_narrowing),
    "@pi_agent.tool": Case(
        answers=[[pi_agent.faux_tool_call("index", {"path": "/srv"}, id="call-1")], "Indexed."],
        check=check_tool_context,
    ),
    'context = {"systemPrompt": "Be brief.", "messages": [{"role": "user", "content": "Hi", "timestamp": 0}]}': Case(
        answers=["The answer is 42."] * 3, check=check_stream
    ),
    "from pi_agent import oauth": Case(
        only_compiled="tests/python/test_oauth.py logs in, saves and refreshes against a local OAuth server"
    ),
    "with pi_agent.FauxProvider(tokens_per_second=None) as faux:": Case(answers=[], check=check_faux),
    "# with `model` from the quick start": Case(
        only_compiled="tests/python/test_session.py opens, kills and resumes sessions on SQLite files"
    ),
}


def case_of(source: str) -> Case:
    first = source.split("\n", 1)[0].rstrip()
    assert first in CASES, f"a README fragment with no entry in CASES: {first!r}"
    return CASES[first]


def test_every_fragment_is_known() -> None:
    assert len(FRAGMENTS) >= 10, FRAGMENTS
    for name, source in FRAGMENTS:
        case = case_of(source)
        for old, _ in case.replace:
            assert old in source, f"{name}: {old!r} is no longer in the fragment"


@pytest.fixture
def everything() -> str:
    found = subprocess.run(
        ["bash", str(ROOT / "tests/mcp/install-everything.sh")], capture_output=True, text=True
    )
    if found.returncode != 0:
        pytest.skip("node/npm not found: the MCP fragment is only compiled")
    return found.stdout.strip().splitlines()[-1]


def calculator(expression: str) -> str:
    """Evaluates an arithmetic expression."""
    return str(eval(expression, {"__builtins__": {}}))


def lookup(city: str) -> str:
    """Looks the weather up."""
    return "21"


def answer_other(stepper: pi_agent.AgentStepper, action: Dict[str, Any]) -> Any:
    """The stepper's other actions, answered as a driver with no queues and no tools would."""
    answers = {
        "poll_steering": {"type": "steering", "messages": []},
        "poll_follow_up": {"type": "follow_up", "messages": []},
    }
    return stepper.resume(answers[action["type"]])


def scope(model: pi_agent.Model, faux: pi_agent.FauxProvider, case: Case, everything: Optional[str]) -> Dict[str, Any]:
    """What the README has introduced before its fragments."""
    context: Dict[str, Any] = {"systemPrompt": "Be brief.", "messages": [PROMPT]}
    agent = pi_agent.Agent(model, tools=[calculator], api_key="faux-key")
    if case.check is check_restore:
        faux.push([pi_agent.faux_text("The answer is 42.")])
        agent.prompt_sync("Hi")
        agent.follow_up("And now?")
    if case.check is check_narrowing:
        faux.push([pi_agent.faux_text("The answer is 42.")])
        agent.prompt_sync("Hi")
    delivered: List[Dict[str, Any]] = []
    usage = {
        "input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    whole_message = {
        "api": model.api, "provider": model.provider, "model": model.id, "usage": usage,
        "stopReason": "stop", "timestamp": 0,
    }
    return {
        "__name__": "readme_fragment",
        "pi_agent": pi_agent,
        "json": json,
        "pydantic": pydantic,
        "asyncio": asyncio,
        "model": model,
        "context": context,
        "agent": agent,
        "calculator": calculator,
        "lookup": lookup,
        "api_key": "faux-key",
        "history": [],
        "prompt": PROMPT,
        "tools": [],
        "deliver": delivered.extend,
        "delivered": delivered,
        "answer_other": answer_other,
        "walk": lambda path: ["a.txt", "b.txt"],
        "usage": usage,
        "whole_message": whole_message,
        "everything": everything,
    }


def run_source(source: str, name: str, namespace: Dict[str, Any]) -> None:
    """Executes ``source`` in ``namespace``; a fragment that awaits runs on a fresh loop (the
    README says it is the body of an async function)."""
    code = compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)


@pytest.mark.parametrize("name,source", FRAGMENTS, ids=[name for name, _ in FRAGMENTS])
def test_a_readme_fragment_runs_offline(
    name: str, source: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    case = case_of(source)
    for old, new in case.replace:
        source = source.replace(old, new)
    if case.only_compiled:
        compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        pytest.skip(f"compiled only: {case.only_compiled}")
    everything = request.getfixturevalue(case.needs) if case.needs else None
    with pi_agent.FauxProvider(tokens_per_second=None) as faux:
        faux.set_responses(
            [[pi_agent.faux_text(a)] if isinstance(a, str) else a for a in case.answers] * 4
        )
        namespace = scope(faux.model, faux, case, everything)
        run_source(source, name, namespace)
        assert case.check is not None, name
        case.check(namespace, capsys.readouterr().out)
