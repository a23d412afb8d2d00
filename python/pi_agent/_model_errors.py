"""The model-error classes of pi_agent._core (imported by the extension; not a public module).

Raised only when a program asks (``pi_agent.raise_for_error(message)``,
``complete_sync(..., raise_on_error=True)``, ``agent.prompt_sync(..., raise_on_error=True)``,
``run.result(raise_on_error=True)``); by default a failure is a message, as in pi. Some also
subclass the builtin a caller already catches (``TimeoutError``, ``ConnectionError``), which a
Rust-defined exception cannot do (one base only).
"""

from __future__ import annotations

# No `typing` at run time: `import pi_agent` stays cheap (see tests/python/test_import.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def make(base: type[Exception]) -> dict[str, type[Exception]]:
    class ModelError(base):  # type: ignore[valid-type,misc]
        """A model call or an agent run failed: the failed assistant message as an exception.

        ``message`` is that message (a dict), ``kind`` its ``errorKind`` (or ``None``),
        ``http_status`` its ``httpStatus``, ``retry_after`` the delay the server asked for in
        seconds (``retryAfterMs / 1000``), ``run_limit`` the run limit that ended the run."""

        def __init__(
            self,
            *args: Any,
            message: dict[str, Any] | None = None,
            kind: str | None = None,
            http_status: int | None = None,
            retry_after_ms: float | None = None,
            run_limit: str | None = None,
        ) -> None:
            super().__init__(*args)
            self.message = message
            self.kind = kind
            self.http_status = http_status
            self.retry_after_ms = retry_after_ms
            self.retry_after = None if retry_after_ms is None else retry_after_ms / 1000
            self.run_limit = run_limit

    def sub(name: str, doc: str, *bases: type[Exception]) -> type[Exception]:
        return type(name, (ModelError, *bases), {"__doc__": doc})

    classes: dict[str, type[Exception]] = {
        "ModelError": ModelError,
        "RateLimitError": sub(
            "RateLimitError",
            "Too many requests or tokens (HTTP 429): wait ``retry_after`` seconds when set.",
        ),
        "AuthenticationError": sub(
            "AuthenticationError",
            "The credentials were refused (HTTP 401/403) or none were found.",
        ),
        "NotFoundError": sub(
            "NotFoundError", "The model or endpoint does not exist (HTTP 404)."
        ),
        "BadRequestError": sub(
            "BadRequestError",
            "The provider refused the request as malformed (HTTP 400/422); a retry won't help.",
        ),
        "ServerError": sub(
            "ServerError", "The provider failed or is overloaded (HTTP 5xx, 529)."
        ),
        "NetworkError": sub(
            "NetworkError",
            "The connection could not be made, was reset, or the body was cut off (also a "
            "``ConnectionError``).",
            ConnectionError,
        ),
        "ModelTimeoutError": sub(
            "ModelTimeoutError",
            "A time limit ran out: response headers, a silent stream, an agent watchdog (also "
            "a ``TimeoutError``).",
            TimeoutError,
        ),
        "DecodeError": sub(
            "DecodeError", "The response could not be read as its protocol says."
        ),
        "AbortedError": sub("AbortedError", "The request or run was aborted."),
        "ContextOverflowError": sub(
            "ContextOverflowError",
            "The prompt does not fit the model's context window: compact and retry.",
        ),
        "RefusalError": sub(
            "RefusalError", "The model or the provider's filter declined to answer."
        ),
        "RunLimitExceeded": sub(
            "RunLimitExceeded",
            "The agent ended the run at one of its run limits; ``run_limit`` names it "
            "(``\"maxTurns\"``, ``\"maxToolCalls\"``, ...).",
        ),
        "InvalidOutputError": sub(
            "InvalidOutputError",
            "The answer does not match the requested output schema (``errorKind`` "
            "``\"invalid_output\"``); ``pi_agent.OutputValidationError`` derives from it.",
        ),
    }
    for cls in classes.values():
        cls.__module__ = "pi_agent"
        cls.__qualname__ = cls.__name__
    return classes
