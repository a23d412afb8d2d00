"""Replays every recorded pi transcript (tests/fixtures/pi, see scripts/pi-fixtures/README.md)
through the Python binding against pi-mock-server: ``pi_agent.stream`` for AI-level fixtures,
``pi_agent.Agent`` for agent fixtures. The dicts Python receives, the final message (or
transcript) and the requests we sent are compared with pi's.

The normalisation and the comparison mirror ``core/tests/support/pi_fixtures.rs`` rule for rule
(see ``normalise`` there for why each rule exists); the remaining differences must be exactly
those listed for layer ``python`` in ``tests/fixtures/pi/known_gaps.json``, shared with the Rust
and C replays.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

import pi_agent

from conftest import MockServer

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "pi"
LAYER = "python"

Mismatch = Tuple[str, Any, Any]  # (path, pi's value or ABSENT, ours or ABSENT)
ABSENT = object()


# ---------------------------------------------------------------------------------------------
# Fixtures and observations


class Fixture:
    def __init__(self, name: str, data: Dict[str, Any]) -> None:
        self.name = name
        self.json = data

    @property
    def kind(self) -> str:
        return self.json["kind"]

    @property
    def scenario(self) -> str:
        return self.json["scenario"]

    def model(self, origin: str) -> Dict[str, Any]:
        model = dict(self.json["model"])
        model["baseUrl"] = model["baseUrl"].replace("{MOCK}", origin)
        return model

    def pi_observation(self) -> Dict[str, Any]:
        last = "messages" if self.kind == "agent" else "result"
        return {"events": self.json["events"], last: self.json[last], "requests": self.json["requests"]}


def load_all() -> List[Fixture]:
    fixtures = []
    for api in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        for path in sorted(api.glob("*.json")):
            fixtures.append(Fixture(f"{api.name}/{path.stem}", json.loads(path.read_text(encoding="utf-8"))))
    assert fixtures, f"no fixtures under {FIXTURES}"
    return fixtures


IGNORED_HEADERS = {
    "host",
    "content-length",
    "connection",
    "accept-encoding",
    "accept-language",
    "user-agent",
    "cookie",
    "sec-fetch-mode",
    "x-goog-api-client",
}


def ignored_header(name: str, value: str) -> bool:
    """Transport and client-identification headers, and ``accept: */*`` (as in the recorder)."""
    return name in IGNORED_HEADERS or name.startswith("x-stainless-") or (name == "accept" and value == "*/*")


def unmock(value: Any, origin: str) -> Any:
    if isinstance(value, str):
        return value.replace(origin, "{MOCK}")
    if isinstance(value, list):
        return [unmock(v, origin) for v in value]
    if isinstance(value, dict):
        return {k: unmock(v, origin) for k, v in value.items()}
    return value


def requests_json(log: List[Dict[str, Any]], origin: str) -> List[Dict[str, Any]]:
    out = []
    for request in log:
        kept: Dict[str, str] = {}
        for name, value in request["headers"]:
            name = name.lower()
            if ignored_header(name, value):
                continue
            kept[name] = f"{kept[name]}, {value}" if name in kept else value
        out.append({"method": request["method"], "path": request["path"], "headers": kept, "body": request["body"]})
    return unmock(out, origin)


# ---------------------------------------------------------------------------------------------
# Normalisation (mirror of `normalise` in core/tests/support/pi_fixtures.rs)

ENDED_EARLY = {"dropped_mid_stream", "truncated_stream"}


def _walk(value: Any, on_object: Callable[[Dict[str, Any]], None]) -> None:
    if isinstance(value, list):
        for item in value:
            _walk(item, on_object)
    elif isinstance(value, dict):
        on_object(value)
        for item in list(value.values()):
            _walk(item, on_object)


def _number(x: float) -> Any:
    return int(x) if float(x).is_integer() and abs(x) < 9e15 else x


def normalise(observation: Dict[str, Any], side: str, fixture: Fixture, pi: Dict[str, Any]) -> Dict[str, Any]:
    value = json.loads(json.dumps(observation))

    def common(obj: Dict[str, Any]) -> None:
        # Rule 1: timestamps; rule 4: errorMessage wording.
        if isinstance(obj.get("timestamp"), (int, float)) and not isinstance(obj.get("timestamp"), bool):
            obj["timestamp"] = 0
        if isinstance(obj.get("errorMessage"), str):
            obj["errorMessage"] = "<errorMessage>"

    _walk(value, common)
    # Rule 8: runs of tool_execution_end sorted by toolCallId.
    events = value.get("events") or []
    i = 0
    while i < len(events):
        if events[i].get("type") != "tool_execution_end":
            i += 1
            continue
        j = i
        while j < len(events) and events[j].get("type") == "tool_execution_end":
            j += 1
        events[i:j] = sorted(events[i:j], key=lambda e: e.get("toolCallId") or "")
        i = j

    if side == "pi":

        def total(obj: Dict[str, Any]) -> None:
            # Rule 5: totalTokens is the sum.
            fields = ("input", "output", "cacheRead", "cacheWrite")
            if "totalTokens" in obj and all(f in obj for f in fields):
                obj["totalTokens"] = _number(sum(obj[f] for f in fields))

        _walk(value, total)
        return value

    def ours(obj: Dict[str, Any]) -> None:
        if obj.get("role") in ("assistant", "toolResult"):  # measured timing (pi has none)
            obj.pop("timing", None)
        if obj.get("role") == "assistant":  # machine-readable error fields (pi has none)
            for key in ("errorKind", "httpStatus", "retryAfterMs"):
                obj.pop(key, None)
        kind = obj.get("type")
        if kind == "start" and len(obj) <= 2:  # rule 2
            obj.pop("partial", None)
        if kind == "message_update" and "assistantMessageEvent" in obj:  # rule 2
            obj.pop("message", None)
        if kind == "toolcall_start" and "contentIndex" in obj:  # rule 3
            obj.pop("id", None)
            obj.pop("toolName", None)
        if kind in ("text_end", "thinking_end") and "contentIndex" in obj:  # rule 3
            obj.pop("contentSignature", None)
        if isinstance(obj.get("diagnostics"), list):  # rule 6
            obj["diagnostics"] = [d for d in obj["diagnostics"] if d.get("type") != "retry"]
            if not obj["diagnostics"]:
                del obj["diagnostics"]

    _walk(value, ours)
    if fixture.scenario in ENDED_EARLY:  # rule 7
        _ended_early_as_done(value, pi)
    return value


def _ended_early_as_done(ours: Dict[str, Any], pi: Dict[str, Any]) -> None:
    pi_events = pi.get("events") or []
    events = ours.get("events") or []
    if not pi_events or pi_events[-1].get("type") != "done" or not events:
        return
    last = events[-1]
    if last.get("type") != "error" or last.get("reason") != "error":
        return
    reason = pi_events[-1]["reason"]

    def as_done(message: Any) -> Any:
        message = dict(message)
        message["stopReason"] = reason
        message.pop("errorMessage", None)
        return message

    events[-1] = {"type": "done", "reason": reason, "message": as_done(last["error"])}
    if isinstance(ours.get("result"), dict) and ours["result"].get("stopReason") == "error":
        ours["result"] = as_done(ours["result"])


# ---------------------------------------------------------------------------------------------
# Comparison (mirror of `diff` and `path_matches`)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def diff(pi: Any, ours: Any, path: str = "") -> List[Mismatch]:
    out: List[Mismatch] = []
    if isinstance(pi, dict) and isinstance(ours, dict):
        for key, va in pi.items():
            sub = f"{path}/{_escape(key)}"
            if key in ours:
                out += diff(va, ours[key], sub)
            else:
                out.append((sub, va, ABSENT))
        for key, vb in ours.items():
            if key not in pi:
                out.append((f"{path}/{_escape(key)}", ABSENT, vb))
        if set(pi) == set(ours) and not path.startswith("/requests") and list(pi) != list(ours):
            out.append((f"{path}/@order", list(pi), list(ours)))
    elif isinstance(pi, list) and isinstance(ours, list):
        if len(pi) == len(ours):
            for i, (va, vb) in enumerate(zip(pi, ours)):
                out += diff(va, vb, f"{path}/{i}")
        else:
            out.append((f"{path}/length", len(pi), len(ours)))
            for i in range(min(len(pi), len(ours))):
                sub = diff(pi[i], ours[i], f"{path}/{i}")
                if sub:
                    out += sub
                    break
    elif _is_number(pi) and _is_number(ours):
        if float(pi) != float(ours):
            out.append((path, pi, ours))
    elif type(pi) is not type(ours) or pi != ours:
        out.append((path, pi, ours))
    return out


def path_matches(pattern: str, path: str) -> bool:
    a, b = pattern.split("/"), path.split("/")
    return len(a) == len(b) and all(x == "*" or x == y for x, y in zip(a, b))


def compare(fixture: Fixture, ours: Dict[str, Any]) -> List[Mismatch]:
    pi_raw = fixture.pi_observation()
    return diff(normalise(pi_raw, "pi", fixture, pi_raw), normalise(ours, "ours", fixture, pi_raw))


def _short(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:160] + "…"


def check_against_known_gaps(outcomes: List[Tuple[str, List[Mismatch]]]) -> None:
    gaps = json.loads((FIXTURES / "known_gaps.json").read_text(encoding="utf-8"))["gaps"]
    expected: Dict[str, set] = {}
    for gap in gaps:
        if LAYER in gap["layers"]:
            for name in gap["fixtures"]:
                expected.setdefault(name, set()).update(gap["paths"])
    problems: List[str] = []
    per_api: Dict[str, List[int]] = {}
    for name, mismatches in outcomes:
        counts = per_api.setdefault(name.split("/")[0], [0, 0])
        counts[1] += 1
        counts[0] += not mismatches
        listed = expected.pop(name, set())
        new = [m for m in mismatches if not any(path_matches(p, m[0]) for p in listed)]
        gone = sorted(p for p in listed if not any(path_matches(p, m[0]) for m in mismatches))
        if new or gone:
            problems.append(f"\n{name} [{LAYER}]")
            for path, pi, ours in new:
                problems.append(f"  NEW   {path}\n        pi:   {_short(pi)}\n        ours: {_short(ours)}")
            for path in gone:
                problems.append(f"  FIXED {path} (listed in known_gaps.json, no longer differs: remove it there)")
    for name, paths in expected.items():
        problems.append(f"\n{name} [{LAYER}]: known_gaps.json lists {sorted(paths)} but the fixture did not run")
    print(f"pi fixtures through {LAYER}: exact matches per api")
    for api, (exact, total) in sorted(per_api.items()):
        print(f"  {api:<24} {exact:>3}/{total}")
    report = os.environ.get("PI_FIXTURES_REPORT")
    if report:
        pathlib.Path(report).write_text(
            json.dumps(
                [
                    {
                        "fixture": name,
                        "layer": LAYER,
                        "mismatches": [
                            {"path": p, "pi": None if a is ABSENT else a, "ours": None if b is ABSENT else b}
                            for p, a, b in mismatches
                        ],
                    }
                    for name, mismatches in outcomes
                ],
                indent=2,
                ensure_ascii=False,
            )
        )
    assert not problems, "pi fixture replay through python differs from known_gaps.json:\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# Replays

def keyword_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """The fixture's options (exactly what pi got) as pi_agent keyword options: pi's names in
    snake_case (``maxTokens`` -> ``max_tokens``)."""
    return {re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key).lower(): value for key, value in options.items()}


def refused_options(fixture: Fixture, error: Exception) -> List[Mismatch]:
    """A layer that refused pi's options: one mismatch at ``/options`` (as in the Rust support)."""
    return [("/options", fixture.json["options"], f"{type(error).__name__}: {error}")]


def replay_stream(server: MockServer, fixture: Fixture) -> Dict[str, Any]:
    server.reset()
    server.push(*fixture.json["replies"])
    origin = f"http://127.0.0.1:{server.port}"
    # Abort where pi stopped: after its last event that is not a consequence of the abort (the
    # `*_end`s and the terminal event).
    abort_at = None
    if fixture.json.get("abortAfter"):
        consequences = {"text_end", "thinking_end", "toolcall_end", "error", "done"}
        kinds = [event["type"] for event in fixture.json["events"]]
        abort_at = max(i for i, kind in enumerate(kinds) if kind not in consequences) + 1
    events = []
    open_stream = pi_agent.stream_simple if fixture.json.get("call") == "streamSimple" else pi_agent.stream
    with open_stream(
        pi_agent.Model.from_dict(fixture.model(origin)),
        fixture.json["context"],
        **keyword_options(fixture.json["options"]),
    ) as stream:
        for event in stream:
            events.append(event)
            if len(events) == abort_at:
                stream.abort()
        result = stream.result_sync()
    observed = {"events": events, "result": result, "requests": requests_json(server.requests(), origin)}
    return unmock(observed, origin)


def _fixture_tool(spec: Dict[str, Any]) -> pi_agent.Tool:
    results: Dict[str, Any] = spec["results"]

    def run(ctx: pi_agent.ToolContext, **arguments: Any) -> Any:
        if ctx.tool_call_id not in results:
            raise RuntimeError(f"fixture: {spec['name']} has no result for {ctx.tool_call_id}")
        return json.loads(json.dumps(results[ctx.tool_call_id]))

    return pi_agent.Tool(spec["name"], spec["description"], spec["parameters"], run, label=spec["label"])


def replay_agent(server: MockServer, fixture: Fixture) -> Dict[str, Any]:
    server.reset()
    server.push(*fixture.json["replies"])
    origin = f"http://127.0.0.1:{server.port}"
    spec = fixture.json["agent"]
    agent = pi_agent.Agent(
        pi_agent.Model.from_dict(fixture.model(origin)),
        system_prompt=spec["systemPrompt"],
        tools=[_fixture_tool(tool) for tool in fixture.json["tools"]],
        tool_execution=spec["toolExecution"],
        thinking_level=spec["thinkingLevel"],  # pi's value, "off" included
        **keyword_options(fixture.json["options"]),
    )
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)
    for prompt in fixture.json["prompts"]:
        agent.prompt_sync(prompt)
    observed = {"events": events, "messages": agent.messages, "requests": requests_json(server.requests(), origin)}
    return unmock(observed, origin)


def test_pi_fixtures_replay_through_python(mock_server: MockServer) -> None:
    outcomes = []
    for fixture in load_all():
        try:
            observed = replay_agent(mock_server, fixture) if fixture.kind == "agent" else replay_stream(mock_server, fixture)
        except TypeError as error:
            if "unexpected option" not in str(error):
                raise
            outcomes.append((fixture.name, refused_options(fixture, error)))  # a name it does not take
            continue
        outcomes.append((fixture.name, compare(fixture, observed)))
    assert {name.split("/")[0] for name, _ in outcomes} >= {"openai-completions", "anthropic-messages"}
    check_against_known_gaps(outcomes)


def test_the_comparison_detects_differences() -> None:
    fixture = next(f for f in load_all() if f.name == "openai-completions/plain_text")
    pi = fixture.pi_observation()
    assert compare(fixture, pi) == []
    changed = json.loads(json.dumps(pi))
    changed["events"][2]["delta"] = "Hallo! "
    del changed["events"][4]
    changed["requests"][0]["body"]["temperature"] = 0.7
    usage = changed["result"].pop("usage")
    changed["result"]["usage"] = usage
    assert [m[0] for m in compare(fixture, changed)] == [
        "/events/length",
        "/events/2/delta",
        "/result/@order",
        "/requests/0/body/temperature",
    ]
    normalised = json.loads(json.dumps(pi))
    normalised["events"][0]["partial"] = {}
    normalised["result"]["timestamp"] = 1
    normalised["result"]["usage"]["totalTokens"] = 999
    assert [m[0] for m in compare(fixture, normalised)] == ["/result/usage/totalTokens"]
