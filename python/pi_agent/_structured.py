"""Typed answers: ``output_type=`` (a pydantic model, a dataclass, a TypedDict, or a JSON Schema
dict) turned into core's ``outputSchema``, and the validated answer turned back into an instance.

Core does the work (the request mapping, the streamed partial objects, the validation, the
re-asks of an agent); this module only converts between Python types and JSON.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Type, TypeVar, Union, overload

from . import _core
from ._core import InvalidOutputError, PiValueError
from ._tools import _converter, _hoist_definitions, _schema, _SchemaContext

T = TypeVar("T")

OutputType = Union[Type[T], Mapping[str, Any]]


class OutputValidationError(InvalidOutputError, PiValueError):
    """The model's answer does not match the requested output type (its message has
    ``errorKind`` ``"invalid_output"`` and the validation report as ``errorMessage``), or the
    request failed. ``message`` is the failed assistant message.

    It is an ``InvalidOutputError`` (a ``ModelError``, what ``raise_on_error=True`` raises for
    an ``invalid_output`` failure) and a ``PiValueError``, so either catch works; ``kind``,
    ``http_status``, ``retry_after`` and ``run_limit`` are the message's, as on every
    ``ModelError``."""

    def __init__(self, text: str, message: Mapping[str, Any]) -> None:
        copied: Dict[str, Any] = dict(message)
        super().__init__(
            text,
            message=copied,  # type: ignore[arg-type]  # a dict with the message's keys
            kind=copied.get("errorKind"),
            http_status=copied.get("httpStatus"),
            retry_after_ms=copied.get("retryAfterMs"),
            run_limit=copied.get("runLimit"),
        )
        self.message: Dict[str, Any] = copied  # type: ignore[assignment]  # a dict, never None
        self.error_kind: Optional[str] = copied.get("errorKind")


def output_schema(output_type: Any, *, strict: bool = False) -> Dict[str, Any]:
    """Core's ``outputSchema`` for ``output_type``: a JSON Schema dict is used as is (an
    ``{"name", "schema", "strict"}`` dict too); a type gets the schema its hints describe (the
    same mapping as tool parameters), named after the type. ``strict=True`` asks for strict
    decoding in every case. A schema that is not an object's (``List[Weather]``, ``str``) is
    sent wrapped as ``{"response": ...}`` and the answer is the value itself."""
    if isinstance(output_type, Mapping):
        schema: Dict[str, Any] = _core._output_schema(dict(output_type))
        if strict:
            schema["strict"] = True
        return schema
    try:
        body = _schema(output_type, _SchemaContext())
    except TypeError as error:
        raise _core.PiTypeError(f"cannot derive a JSON Schema for output_type {output_type!r}: {error}", field="output_type") from None
    definitions: Dict[str, Any] = {}
    _hoist_definitions(body, definitions)
    if definitions:
        body = {**body, "$defs": {**body.get("$defs", {}), **definitions}}
    name = re.sub(r"[^A-Za-z0-9_-]", "", getattr(output_type, "__name__", "output"))[:64] or "output"
    return {"name": name, "schema": body, "strict": strict}


def _text(message: Mapping[str, Any]) -> str:
    return "".join(
        block.get("text", "") for block in message.get("content", []) if block.get("type") == "text"
    )


def answer(output_type: Any, message: Mapping[str, Any]) -> Any:
    """The answer of an assistant message as ``output_type`` (an instance of a dataclass or a
    pydantic model, a dict for a TypedDict or a schema); ``OutputValidationError`` when the
    message failed."""
    if message.get("stopReason") in ("error", "aborted"):
        raise OutputValidationError(str(message.get("errorMessage") or "the request failed"), message)
    if message.get("role") != "assistant" or any(
        block.get("type") == "toolCall" for block in message.get("content", [])
    ):
        raise OutputValidationError("the run did not end in an answer", message)
    value = _core._parse_output(_text(message))
    if isinstance(output_type, Mapping):
        return value
    try:
        convert = _converter(output_type, {})
        return convert(value) if convert is not None else value
    except Exception as error:  # noqa: BLE001 - every way the answer fails to be the type
        # Rules the JSON Schema cannot carry (a pydantic validator, a `__post_init__` check)
        # are checked here only, after the model's answer was accepted: no re-ask is left.
        name = getattr(output_type, "__name__", "the output type")
        raise OutputValidationError(f"the answer is valid JSON for the schema but not a {name}: {error}", message) from error


def run_answer(output_type: Any, new_messages: Sequence[Mapping[str, Any]]) -> Any:
    """The answer of an agent run: its last message as ``output_type``."""
    if not new_messages:
        raise OutputValidationError("the run added no message", {})
    return answer(output_type, new_messages[-1])


@overload
async def complete_structured(model: Any, context: Any, output_type: Type[T], **options: Any) -> T: ...
@overload
async def complete_structured(model: Any, context: Any, output_type: Mapping[str, Any], **options: Any) -> Any: ...
async def complete_structured(model: Any, context: Any, output_type: Any, **options: Any) -> Any:
    """Asks ``model`` for an answer of ``output_type`` (``complete_simple`` with
    ``output_schema`` set) and returns it as an instance."""
    message = await _core.complete_simple(model, context, output_schema=output_schema(output_type), **options)
    return answer(output_type, message)


@overload
def complete_structured_sync(model: Any, context: Any, output_type: Type[T], **options: Any) -> T: ...
@overload
def complete_structured_sync(model: Any, context: Any, output_type: Mapping[str, Any], **options: Any) -> Any: ...
def complete_structured_sync(model: Any, context: Any, output_type: Any, **options: Any) -> Any:
    """``complete_structured`` that blocks (GIL released)."""
    message = _core.complete_simple_sync(model, context, output_schema=output_schema(output_type), **options)
    return answer(output_type, message)


async def prompt_output(agent: Any, input: Any, images: Any = None) -> Any:
    """``agent.prompt(...)``, then the run's answer as the agent's ``output_type``."""
    messages: List[Mapping[str, Any]] = await agent.prompt(input, images)
    return run_answer(agent.output_type, messages)
