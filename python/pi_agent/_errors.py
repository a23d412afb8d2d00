"""The input-error classes of pi_agent._core (imported by the extension; not a public module).

They subclass both ``PiError`` and the builtin a caller already catches (``ValueError`` /
``TypeError``), which a Rust-defined exception cannot do (one base only).
"""

from __future__ import annotations

# No `typing` at run time: `import pi_agent` stays cheap (see tests/python/test_import.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def make(base: type[Exception]) -> tuple[type[Exception], type[Exception]]:
    class PiValueError(base, ValueError):  # type: ignore[valid-type,misc]
        """A value pi_agent cannot use (a bad option value, a malformed message dict, ...).

        ``field`` names what was wrong (``"options.temperature"``, ``"context"``), or is
        ``None``."""

        def __init__(self, *args: Any, field: str | None = None) -> None:
            super().__init__(*args)
            self.field = field

    class PiTypeError(base, TypeError):  # type: ignore[valid-type,misc]
        """An argument of the wrong kind (an unknown option, a non-callable hook, ...).

        ``field`` names the argument (``"options.foo"``, ``"before_tool_call"``), or is
        ``None``."""

        def __init__(self, *args: Any, field: str | None = None) -> None:
            super().__init__(*args)
            self.field = field

    for cls in (PiValueError, PiTypeError):
        cls.__module__ = "pi_agent"
        cls.__qualname__ = cls.__name__
    return PiValueError, PiTypeError
