"""Reading a failed message's machine-readable kind (``errorKind``)."""

from __future__ import annotations

import typing
from typing import Any, Mapping, Optional

from .types import ErrorKind

_KINDS = frozenset(typing.get_args(ErrorKind))
_TRANSIENT = frozenset({"rate_limit", "server", "network", "timeout"})


def error_kind(message: Mapping[str, Any]) -> Optional[ErrorKind]:
    """The kind of failure of an assistant message dict (its ``errorKind``: ``"rate_limit"``,
    ``"auth"``, ``"context_overflow"``, ... see :data:`pi_agent.types.ErrorKind`), or ``None``
    when it did not fail, its failure fits no kind, it was saved by pi (which has no such
    field), or it names a kind this version does not know. The text stays in
    ``errorMessage``; ``httpStatus`` and ``retryAfterMs`` are there when known.

    .. code-block:: python

        message = agent.messages[-1]
        if pi_agent.error_kind(message) == "rate_limit":
            time.sleep(message.get("retryAfterMs", 1000) / 1000)
    """
    kind = message.get("errorKind")
    return typing.cast(ErrorKind, kind) if kind in _KINDS else None


def is_transient_error(message: Mapping[str, Any]) -> bool:
    """Whether an assistant message failed in a way the same request may later get past:
    ``rate_limit``, ``server``, ``network`` or ``timeout`` (the library has already retried
    those within ``max_retries``)."""
    return error_kind(message) in _TRANSIENT
