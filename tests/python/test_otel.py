"""Core's spans reach OpenTelemetry's SDK (`pi_agent.instrument_opentelemetry`), without secrets."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Sequence

import pytest

import pi_agent
from pi_agent import faux_tool_call, text_of

from conftest import MockServer

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
SECRET = "sk-otel-secret-0123456789"

Spans = Sequence[ReadableSpan]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Core's spans go to an in-memory exporter for the test, and stop going afterwards."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    pi_agent.instrument_opentelemetry(provider)
    try:
        yield memory
    finally:
        pi_agent.uninstrument_opentelemetry()
        provider.shutdown()


def finished(exporter: InMemorySpanExporter, done: Callable[[Spans], bool]) -> Spans:
    """The exported spans once `done` holds (a span ends in core shortly after the call that
    caused it returns; the deadline only guards against a hang)."""
    deadline = time.monotonic() + 60
    while True:
        pi_agent.flush_opentelemetry()
        spans = exporter.get_finished_spans()
        if done(spans):
            return spans
        if time.monotonic() > deadline:
            raise AssertionError(f"spans never completed: {[span.name for span in spans]}")
        time.sleep(0.01)


def named(spans: Spans, name: str) -> List[ReadableSpan]:
    return [span for span in spans if span.name == name]


def everything(spans: Spans) -> str:
    return "".join(span.to_json() for span in spans)


def test_a_request_is_a_client_chat_span_with_genai_attributes_and_no_key(
    mock_server: MockServer, exporter: InMemorySpanExporter
) -> None:
    mock_server.push({"text": "hello"})
    before = time.time_ns()
    message = pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key=SECRET)
    after = time.time_ns()
    assert message["stopReason"] == "stop"

    spans = finished(exporter, lambda spans: bool(named(spans, "chat mock-gpt")))
    (chat,) = named(spans, "chat mock-gpt")
    assert chat.kind == SpanKind.CLIENT
    assert chat.parent is None
    assert chat.instrumentation_scope is not None
    assert chat.instrumentation_scope.name == "pi_agent"
    assert chat.start_time is not None and chat.end_time is not None
    assert before <= chat.start_time <= chat.end_time
    assert chat.start_time <= after
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "mock-gpt"
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["http.response.status_code"] == 200
    assert str(attributes["gen_ai.response.id"]).startswith("chatcmpl-mock-")
    assert attributes["gen_ai.response.finish_reasons"] == "stop"
    assert isinstance(attributes["gen_ai.usage.output_tokens"], int)
    assert "error.type" not in attributes
    assert "gen_ai.output.messages" not in attributes, "content is opt-in"
    assert not any(key.startswith("otel.") for key in attributes)
    assert chat.status.status_code == StatusCode.UNSET
    assert SECRET not in everything(spans)


def test_a_failed_request_has_status_error_and_error_type(
    mock_server: MockServer, exporter: InMemorySpanExporter
) -> None:
    mock_server.push({"status": 401, "body": {"error": {"message": f"bad key {SECRET}"}}})
    message = pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key=SECRET)
    assert message["stopReason"] == "error"

    spans = finished(exporter, lambda spans: bool(named(spans, "chat mock-gpt")))
    (chat,) = named(spans, "chat mock-gpt")
    assert chat.status.status_code == StatusCode.ERROR
    attributes = dict(chat.attributes or {})
    assert attributes["error.type"] == "error"
    assert attributes["http.response.status_code"] == 401
    assert SECRET not in everything(spans)


def test_an_agent_run_is_a_tree_of_agent_turn_chat_and_tool_spans(
    faux: pi_agent.FauxProvider, exporter: InMemorySpanExporter
) -> None:
    @pi_agent.tool
    def echo(text: str) -> str:
        """Echoes.

        Args:
            text: What to echo.
        """
        return text

    faux.push([faux_tool_call("echo", {"text": "hi"}, id="call-1")])
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[echo])
    agent.prompt_sync("go")

    spans = finished(
        exporter,
        lambda spans: bool(named(spans, "invoke_agent")) and len(named(spans, "turn")) == 2,
    )
    (run,) = named(spans, "invoke_agent")
    assert run.parent is None
    attributes = dict(run.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.request.model"] == faux.model.id
    trace_id = run.context.trace_id
    turns = named(spans, "turn")
    for turn in turns:
        assert turn.parent is not None and turn.parent.span_id == run.context.span_id
        assert turn.context.trace_id == trace_id
    turn_ids = {turn.context.span_id for turn in turns}
    chats = named(spans, f"chat {faux.model.id}")
    assert len(chats) == 2
    for chat in chats:
        assert chat.kind == SpanKind.CLIENT
        assert chat.parent is not None and chat.parent.span_id in turn_ids
        assert chat.context.trace_id == trace_id
    (tool,) = named(spans, "execute_tool echo")
    assert tool.parent is not None and tool.parent.span_id in turn_ids
    assert tool.context.trace_id == trace_id
    tool_attributes = dict(tool.attributes or {})
    assert tool_attributes["gen_ai.tool.name"] == "echo"
    assert tool_attributes["gen_ai.tool.call.id"] == "call-1"
    assert tool.status.status_code == StatusCode.UNSET
    # Children end before their parents, and inside them.
    for child in [*turns, *chats, tool]:
        parent = next(
            span for span in spans if child.parent and span.context.span_id == child.parent.span_id
        )
        assert parent.start_time is not None and parent.end_time is not None
        assert child.start_time is not None and child.end_time is not None
        assert parent.start_time <= child.start_time <= child.end_time <= parent.end_time


def test_a_provider_request_of_an_agent_run_is_a_child_of_its_turn(
    mock_server: MockServer, exporter: InMemorySpanExporter
) -> None:
    # Providers send their request from a task of their own; the chat span still belongs to
    # the turn that made it.
    mock_server.push({"text": "from the server"})
    agent = pi_agent.Agent(mock_server.model(), get_api_key=lambda provider: SECRET)
    agent.prompt_sync("go")
    assert text_of(agent.messages[-1]) == "from the server"

    spans = finished(exporter, lambda spans: bool(named(spans, "invoke_agent")))
    (run,) = named(spans, "invoke_agent")
    (turn,) = named(spans, "turn")
    (chat,) = named(spans, "chat mock-gpt")
    assert turn.parent is not None and turn.parent.span_id == run.context.span_id
    assert chat.parent is not None and chat.parent.span_id == turn.context.span_id
    assert chat.context.trace_id == run.context.trace_id
    assert dict(chat.attributes or {})["server.address"] == "127.0.0.1"
    assert SECRET not in everything(spans)


def test_requests_and_runs_are_children_of_the_callers_current_span(
    mock_server: MockServer, faux: pi_agent.FauxProvider, exporter: InMemorySpanExporter
) -> None:
    from pi_agent import _otel

    mock_server.push({"text": "one"}, {"text": "two"})
    faux.push("three")
    # The caller's span, from a provider of its own (only its context matters).
    with TracerProvider().get_tracer("test").start_as_current_span("outer") as outer:
        pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key=SECRET)

        async def in_a_task() -> None:
            await pi_agent.complete(mock_server.model(), CONTEXT, api_key=SECRET)

        asyncio.run(in_a_task())
        pi_agent.Agent(faux.model).prompt_sync("go")
    # Outside any span: a new trace.
    faux.push("four")
    pi_agent.complete_sync(faux.model, CONTEXT)

    spans = finished(
        exporter,
        lambda spans: len(named(spans, "chat mock-gpt")) == 2
        and bool(named(spans, "invoke_agent"))
        and len(named(spans, f"chat {faux.model.id}")) == 2,
    )
    outer_id = outer.get_span_context().span_id
    trace_id = outer.get_span_context().trace_id
    for chat in named(spans, "chat mock-gpt"):
        assert chat.parent is not None and chat.parent.span_id == outer_id
        assert chat.context.trace_id == trace_id
    (run,) = named(spans, "invoke_agent")
    assert run.parent is not None and run.parent.span_id == outer_id
    in_run, alone = sorted(
        named(spans, f"chat {faux.model.id}"), key=lambda span: span.start_time or 0
    )
    assert in_run.context.trace_id == trace_id
    assert alone.parent is None and alone.context.trace_id != trace_id
    assert not [span for span in spans if span.name == "python_context"]
    # The spans standing for the caller's context are forgotten once they end.
    recorder = _otel._recorder
    assert recorder is not None
    deadline = time.monotonic() + 60
    while (recorder.callers or recorder.live) and time.monotonic() < deadline:
        pi_agent.flush_opentelemetry()
        time.sleep(0.01)
    assert not recorder.callers and not recorder.live


def test_a_durable_drivers_tool_calls_are_children_of_its_step_span(
    faux: pi_agent.FauxProvider, exporter: InMemorySpanExporter
) -> None:
    @pi_agent.tool
    def echo(text: str) -> str:
        """Echoes.

        Args:
            text: What to echo.
        """
        return text

    faux.push([faux_tool_call("echo", {"text": "hi"}, id="call-1")])
    stepper, _ = pi_agent.AgentStepper.start(
        prompts=[{"role": "user", "content": "go", "timestamp": 0}]
    )
    stepper.resume({"type": "steering", "messages": []})
    context = {"messages": pi_agent.default_convert_to_llm(stepper.messages)}
    message = pi_agent.complete_simple_sync(faux.model, context)
    step = stepper.resume({"type": "model_result", "message": message})
    with TracerProvider().get_tracer("test").start_as_current_span("step") as outer:
        pi_agent.execute_tool_calls_sync(step["action"], [echo])

    spans = finished(exporter, lambda spans: bool(named(spans, "execute_tool echo")))
    (tool,) = named(spans, "execute_tool echo")
    assert tool.parent is not None
    assert tool.parent.span_id == outer.get_span_context().span_id


def test_a_failing_tool_has_status_error(
    faux: pi_agent.FauxProvider, exporter: InMemorySpanExporter
) -> None:
    def broken(path: str) -> str:
        raise FileNotFoundError(f"no such file: {path}")

    faux.push([faux_tool_call("read_file", {"path": "/nope"})])
    faux.push("sorry")
    agent = pi_agent.Agent(faux.model, tools=[pi_agent.Tool.from_function(broken, name="read_file")])
    agent.prompt_sync("read /nope")

    spans = finished(exporter, lambda spans: bool(named(spans, "invoke_agent")))
    (tool,) = named(spans, "execute_tool read_file")
    assert tool.status.status_code == StatusCode.ERROR
    assert dict(tool.attributes or {})["error.type"] == "tool_error"


def test_spans_are_dropped_not_queued_without_bound_when_python_is_behind(
    faux: pi_agent.FauxProvider, exporter: InMemorySpanExporter
) -> None:
    from pi_agent import _otel

    recorder = _otel._recorder
    assert recorder is not None
    _, seen_before, dropped_before = pi_agent._core._otel_stats()
    # Holding the recorder's lock stalls the thread that hands spans to OpenTelemetry; the
    # requests go on regardless, and beyond the queue's bound their spans are dropped.
    with recorder.lock:
        for _ in range(4200):
            faux.push("x")
            pi_agent.complete_sync(faux.model, CONTEXT)
        _, seen, dropped = pi_agent._core._otel_stats()
    assert seen - seen_before == 4200
    assert dropped - dropped_before >= 4200 - 4096
    accepted = 4200 - (dropped - dropped_before)
    # Every span that was queued ends in OpenTelemetry; none stays open.
    spans = finished(exporter, lambda spans: len(spans) >= accepted)
    assert len(spans) == accepted
    assert not recorder.live


def test_uninstrumenting_stops_the_recording(
    faux: pi_agent.FauxProvider, exporter: InMemorySpanExporter
) -> None:
    pi_agent.uninstrument_opentelemetry()
    seen = pi_agent._core._otel_stats()[1]
    faux.push("quiet")
    pi_agent.complete_sync(faux.model, CONTEXT)
    pi_agent.flush_opentelemetry()
    assert pi_agent._core._otel_stats()[:2] == (False, seen)
    assert not exporter.get_finished_spans()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_reports_its_spans() -> None:
    script = (
        "import json, os, sys, time\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import"
        " InMemorySpanExporter\n"
        "import pi_agent\n"
        "memory = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(memory))\n"
        "pi_agent.instrument_opentelemetry(provider)\n"
        "faux = pi_agent.FauxProvider()\n"
        "context = {'messages': [{'role': 'user', 'content': 'hi', 'timestamp': 0}]}\n"
        "faux.push('parent'); pi_agent.complete_sync(faux.model, context)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    memory.clear()\n"
        "    faux.push('child'); pi_agent.complete_sync(faux.model, context)\n"
        # Only the child's own thread hands spans over here: no explicit flush.
        "    deadline = time.monotonic() + 60\n"
        "    while not memory.get_finished_spans() and time.monotonic() < deadline:\n"
        "        time.sleep(0.01)\n"
        "    os._exit(0 if memory.get_finished_spans() else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(json.dumps({'child': os.waitstatus_to_exitcode(status)}))\n"
    )
    assert _run(script, _env()) == {"child": 0}


def _run(script: str, env: Dict[str, str], *args: str) -> Dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: Dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _env(**extra: str) -> Dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PI_AGENT_OTEL", "PI_AGENT_TRACE_CONTENT", "PI_AGENT_LOG")
    }
    env.update(extra)
    return env


def test_without_instrumenting_no_span_is_recorded(mock_server: MockServer) -> None:
    mock_server.push({"text": "untraced"})
    script = (
        "import json, sys, pi_agent\n"
        "model = pi_agent.Model('mock-gpt', base_url=sys.argv[1])\n"
        "m = pi_agent.complete_sync(model, {'messages': [{'role': 'user', 'content': 'hi',"
        " 'timestamp': 0}]}, api_key='k')\n"
        "enabled, seen, dropped = pi_agent._core._otel_stats()\n"
        "print(json.dumps({'text': pi_agent.text_of(m), 'enabled': enabled, 'seen': seen,"
        " 'otel': any(name.startswith('opentelemetry') for name in sys.modules)}))\n"
    )
    result = _run(script, _env(), mock_server.url)
    assert result == {"text": "untraced", "enabled": False, "seen": 0, "otel": False}


def test_pi_agent_otel_env_instruments_the_global_provider_with_content_opt_in(
    mock_server: MockServer,
) -> None:
    mock_server.push({"text": "traced content"})
    script = (
        "import json, sys\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import"
        " InMemorySpanExporter\n"
        "import pi_agent\n"
        # The global provider set after the import: the tracer is the API's proxy.
        "memory = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(memory))\n"
        "trace.set_tracer_provider(provider)\n"
        "model = pi_agent.Model('mock-gpt', base_url=sys.argv[1])\n"
        "pi_agent.complete_sync(model, {'messages': [{'role': 'user', 'content': 'hi',"
        " 'timestamp': 0}]}, api_key=sys.argv[2])\n"
        "import time\n"
        "deadline = time.monotonic() + 60\n"
        "while not memory.get_finished_spans() and time.monotonic() < deadline:\n"
        "    pi_agent.flush_opentelemetry(); time.sleep(0.01)\n"
        "spans = memory.get_finished_spans()\n"
        "print(json.dumps({'names': [s.name for s in spans],"
        " 'content': [s.attributes.get('gen_ai.output.messages') for s in spans],"
        " 'all': ''.join(s.to_json() for s in spans)}))\n"
    )
    result = _run(
        script, _env(PI_AGENT_OTEL="1", PI_AGENT_TRACE_CONTENT="1"), mock_server.url, SECRET
    )
    assert result["names"] == ["chat mock-gpt"]
    assert "traced content" in result["content"][0]
    assert SECRET not in result["all"]
