"""Core's spans as OpenTelemetry spans (``pi_agent.instrument_opentelemetry``).

Core reports each model request (``chat <model>``), agent run (``invoke_agent``), turn and
tool call (``execute_tool <name>``) as a ``tracing`` span with OpenTelemetry's GenAI attribute
names. Once instrumented, the binding records those spans (wall-clock start and end, attributes,
status, parent) without waiting for Python, and one daemon thread here creates them on an
OpenTelemetry tracer: a span's start arrives before its children's, so the OpenTelemetry spans
keep core's parent/child links. When a request or run starts while the caller has a current
OpenTelemetry span, the binding opens core's spans inside a span standing for the caller's
context (``_caller_context``), and they become children of the caller's span.

Only imported when instrumenting: ``import pi_agent`` never imports ``opentelemetry``.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Optional

from opentelemetry import trace
from opentelemetry.context import Context, get_current
from opentelemetry.trace import SpanKind, Status, StatusCode

from . import _core

_KINDS = {
    "client": SpanKind.CLIENT,
    "server": SpanKind.SERVER,
    "producer": SpanKind.PRODUCER,
    "consumer": SpanKind.CONSUMER,
    "internal": SpanKind.INTERNAL,
}

# The longest the thread waits in native code before it looks at its stop flag again.
_WAIT_SECONDS = 1.0


class _Recorder:
    """Turns the binding's span records into OpenTelemetry spans, in their order."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer
        # Taken around each take-and-handle, so records are handled in order whichever
        # thread drains (the daemon thread or `flush`).
        self.lock = threading.Lock()
        self.live: Dict[int, trace.Span] = {}
        # The spans standing for a Python caller's context: their children's parent context.
        self.callers: Dict[int, Context] = {}
        self.thread: Optional[threading.Thread] = None

    def start_thread(self) -> None:
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._run, name="pi_agent-otel", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        while True:
            if _core._otel_wait(_WAIT_SECONDS):
                self.drain()

    def drain(self) -> None:
        with self.lock:
            for record in _core._otel_take():
                try:
                    if record[0] == 0:
                        self._start(*record[1:])
                    else:
                        self._end(*record[1:])
                except Exception:  # a span processor's failure is not the request's
                    pass

    def _start(
        self,
        key: int,
        parent: Optional[int],
        name: str,
        kind: Optional[str],
        start_ns: int,
        attributes: Dict[str, Any],
        caller: Optional[Context],
    ) -> None:
        context = self._context_of(parent)
        if caller is not None:
            # Inside a pi span already (a request made by a tool), that one stays the parent.
            self.callers[key] = context if context is not None else caller
            return
        self.live[key] = self.tracer.start_span(
            name,
            # No enclosing span: a new trace (not the daemon thread's context).
            context=context if context is not None else Context(),
            kind=_KINDS.get(kind or "", SpanKind.INTERNAL),
            attributes=attributes,
            start_time=start_ns,
        )

    def _context_of(self, key: Optional[int]) -> Optional[Context]:
        if key is None:
            return None
        span = self.live.get(key)
        if span is not None:
            return trace.set_span_in_context(span)
        return self.callers.get(key)

    def _end(
        self, key: int, end_ns: int, attributes: Dict[str, Any], status: Optional[str]
    ) -> None:
        self.callers.pop(key, None)
        span = self.live.pop(key, None)
        if span is None:
            return
        if attributes:
            span.set_attributes(attributes)
        error_type = attributes.get("error.type")
        if status == "error" or error_type is not None:
            span.set_status(Status(StatusCode.ERROR, None if error_type is None else str(error_type)))
        elif status == "ok":
            span.set_status(Status(StatusCode.OK))
        span.end(end_time=end_ns)


_recorder: Optional[_Recorder] = None
_registered_exit = False


def instrument(tracer_provider: Optional[trace.TracerProvider] = None) -> None:
    """See ``pi_agent.instrument_opentelemetry``."""
    global _recorder, _registered_exit
    from . import __version__

    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    tracer = provider.get_tracer("pi_agent", __version__)
    if _recorder is None:
        _recorder = _Recorder(tracer)
    else:
        with _recorder.lock:
            _recorder.tracer = tracer
    if not _core._otel_enable(True):
        raise RuntimeError(
            "pi_agent cannot record its spans: another tracing subscriber was installed in "
            "this process before pi_agent's"
        )
    _recorder.start_thread()
    if not _registered_exit:
        import atexit

        # Registered after the tracer provider's own exit hook, so it runs first: the spans
        # core finished reach the provider before it shuts down.
        atexit.register(flush)
        # A forked child has none of the parent's threads: it gets its own.
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _registered_exit = True


def _after_fork_in_child() -> None:
    if _recorder is not None:
        _recorder.lock = threading.Lock()  # the parent's may have been held at the fork
        _recorder.thread = None
        _recorder.start_thread()


def uninstrument() -> None:
    """See ``pi_agent.uninstrument_opentelemetry``."""
    _core._otel_enable(False)
    flush()


def flush() -> None:
    """See ``pi_agent.flush_opentelemetry``."""
    if _recorder is not None:
        _recorder.drain()


def instrument_from_env() -> None:
    """``PI_AGENT_OTEL=1``: instruments with the global tracer provider."""
    instrument()


def _caller_context() -> Optional[Context]:
    """The caller's OpenTelemetry context, if it has a current span (called by the binding
    when a request or run starts, on the caller's thread)."""
    if not trace.get_current_span().get_span_context().is_valid:
        return None
    return get_current()

