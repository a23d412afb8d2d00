"""The input-error classes of pi_agent._core (compiled into the extension; not a public module).

They subclass both ``PiError`` and the builtin a caller already catches (``ValueError`` /
``TypeError``), which a Rust-defined exception cannot do (one base only).
"""


def make(base):
    class PiValueError(base, ValueError):
        """A value pi_agent cannot use (a bad option value, a malformed message dict, ...).

        ``field`` names what was wrong (``"options.temperature"``, ``"context"``), or is
        ``None``."""

        def __init__(self, *args, field=None):
            super().__init__(*args)
            self.field = field

    class PiTypeError(base, TypeError):
        """An argument of the wrong kind (an unknown option, a non-callable hook, ...).

        ``field`` names the argument (``"options.foo"``, ``"before_tool_call"``), or is
        ``None``."""

        def __init__(self, *args, field=None):
            super().__init__(*args)
            self.field = field

    for cls in (PiValueError, PiTypeError):
        cls.__module__ = "pi_agent"
        cls.__qualname__ = cls.__name__
    return PiValueError, PiTypeError
