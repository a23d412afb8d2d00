"""Tools from plain Python functions: the ``@tool`` decorator and the JSON Schema derivation
behind ``Tool.from_function``."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import re
import sys
import types
import typing
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Set,
    Tuple,
    TypeVar,
    Union,
    overload,
)

from ._core import PiTypeError, PiValueError, Tool, ToolContext

if typing.TYPE_CHECKING:
    from typing_extensions import ParamSpec

    _P = ParamSpec("_P")
    _R = TypeVar("_R")

_Convert = Callable[[Any], Any]

__all__ = [
    "tool",
    "function_schema",
    "describe_function",
    "context_parameter",
    "argument_converter",
]

_F = TypeVar("_F", bound=Callable[..., Any])

_UNION_TYPES: Tuple[Any, ...] = (Union,)
if sys.version_info >= (3, 10):
    _UNION_TYPES = (Union, types.UnionType)

_ARRAY_ORIGINS = (
    list,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Set,
    collections.abc.MutableSet,
    collections.abc.Iterable,
)
_OBJECT_ORIGINS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)

_PRIMITIVES: Dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


@overload
def tool(function: Callable[_P, _R], /) -> Tool[_P, _R]: ...


@overload
def tool(
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    parameters: Optional[Mapping[str, Any]] = None,
    label: Optional[str] = None,
    execution_mode: Optional[Literal["sequential", "parallel"]] = None,
    prepare_arguments: Optional[Callable[[Any], Any]] = None,
) -> Callable[[Callable[_P, _R]], Tool[_P, _R]]: ...


def tool(
    function: Optional[Callable[..., Any]] = None,
    /,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    parameters: Optional[Mapping[str, Any]] = None,
    label: Optional[str] = None,
    execution_mode: Optional[Literal["sequential", "parallel"]] = None,
    prepare_arguments: Optional[Callable[[Any], Any]] = None,
) -> Any:
    """Turns a function (sync or ``async def``) into a :class:`Tool`.

    Use bare (``@tool``) or with overrides (``@tool(name="calc", label="Calculator")``). The
    name defaults to the function's name, the description to the first paragraph of its
    docstring, and the parameters' JSON Schema is derived from the signature (see
    :func:`function_schema`). ``label`` is for user interfaces, ``execution_mode="sequential"``
    makes the batch of calls it is in run one at a time, and ``prepare_arguments(raw)`` (pi's
    ``prepareArguments``) rewrites the model's raw arguments before validation. The decorated
    object is still callable like the function.
    """

    def wrap(fn: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            fn,
            name=name,
            description=description,
            parameters=parameters,
            label=label,
            execution_mode=execution_mode,
            prepare_arguments=prepare_arguments,
        )

    if function is not None:
        return wrap(function)
    return wrap


def describe_function(
    function: Callable[..., Any],
    name: Optional[str] = None,
    description: Optional[str] = None,
    parameters: Optional[Mapping[str, Any]] = None,
) -> Tuple[str, str, Dict[str, Any]]:
    """``(name, description, parameters)`` of a tool made from ``function``; explicit values win."""
    if not callable(function):
        raise PiTypeError(f"a tool needs a callable, not {type(function).__name__}", field="function")
    target = inspect.unwrap(function)
    if isinstance(target, type) or not hasattr(target, "__name__"):
        fallback_name = getattr(type(target), "__name__", "tool")
    else:
        fallback_name = target.__name__
    doc = inspect.getdoc(target) or ""
    summary, param_docs = _parse_docstring(doc)
    if parameters is None:
        schema = function_schema(function, param_docs)
    else:
        schema = dict(parameters)
    tool_name = name if name is not None else fallback_name
    _check_name(tool_name, explicit=name is not None)
    return (
        tool_name,
        description if description is not None else summary,
        schema,
    )


# What every provider accepts as a tool name (OpenAI and Anthropic: `^[a-zA-Z0-9_-]{1,64}$`;
# a few also take `.` and `:`).
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def _check_name(name: str, *, explicit: bool) -> None:
    """Refuses a name no model can call, before any request is sent."""
    if _TOOL_NAME.match(name):
        return
    if name == "<lambda>" and not explicit:
        message = "a lambda has no name a model can call: use a def, or pass name=..."
    elif not name:
        message = "a tool name cannot be empty"
    else:
        message = (
            f"tool name {name!r} is not one a model can call: use 1 to 64 letters, digits, "
            "'_' or '-'"
        )
    raise PiValueError(message, field="name")


def function_schema(
    function: Callable[..., Any], descriptions: Optional[Mapping[str, str]] = None
) -> Dict[str, Any]:
    """The JSON Schema (an object) of ``function``'s keyword arguments.

    A parameter annotated with :class:`ToolContext` (see :func:`context_parameter`) is not an
    argument and is left out. Type hints map to JSON types: ``str``, ``int``, ``float``,
    ``bool``, ``None``, ``list[T]``, ``tuple``, ``dict[str, T]``, ``Optional[T]``/``T | None``,
    ``Union``, ``Literal``, ``Enum``, ``TypedDict``, dataclasses, pydantic models,
    ``Annotated[T, "description"]`` and ``Any``. Parameters with a default are not required.
    ``descriptions`` (default: parsed from the docstring's ``Args:`` or ``:param x:`` lines)
    become the properties' descriptions. Pydantic models contribute
    their own schema; their ``$defs`` move to the root of this schema (a name used by two
    different definitions gets a ``_2`` suffix), and a dataclass that contains itself becomes a
    ``$defs`` entry, so every ``$ref`` resolves against the tool schema.
    """
    if descriptions is None:
        _, descriptions = _parse_docstring(inspect.getdoc(inspect.unwrap(function)) or "")
    signature = inspect.signature(function)
    hints = _type_hints(function)
    context = _SchemaContext()
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if _is_tool_context(hints.get(parameter.name, parameter.annotation)):
            continue
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise PiTypeError(
                f"tool parameter `{parameter.name}` is positional-only; tools are called with "
                "keyword arguments",
                field=f"parameters.{parameter.name}",
            )
        annotation = hints.get(parameter.name, parameter.annotation)
        try:
            schema = _schema(annotation, context)
        except TypeError as error:
            raise PiTypeError(
                f"cannot derive a JSON Schema for parameter `{parameter.name}` of "
                f"{getattr(function, '__qualname__', function)!r}: {error}; pass parameters=...",
                field=f"parameters.{parameter.name}",
            ) from None
        description = descriptions.get(parameter.name)
        # The docstring's text for this parameter is more specific than a pydantic model's own
        # docstring (which its schema carries), but not than `Annotated[T, "..."]`.
        own = "description" in schema and not hasattr(annotation, "model_json_schema")
        if description and not own:
            schema = {**schema, "description": description}
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        elif _is_json(parameter.default):
            schema = {**schema, "default": parameter.default}
        properties[parameter.name] = schema
    result: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    # `$ref`s are resolved against the tool schema's root, so every nested `$defs` (pydantic
    # puts one in each model's schema; recursive dataclasses get one) moves there.
    definitions: Dict[str, Any] = {}
    _hoist_definitions(result, definitions)
    if definitions:
        result["$defs"] = definitions
    return result


def context_parameter(function: Callable[..., Any]) -> Optional[str]:
    """The name of ``function``'s parameter annotated with :class:`ToolContext` (or
    ``Optional[ToolContext]``), if any: the agent passes the call's context there, by keyword.

    This is the one rule: the parameter's name does not matter, and a parameter that is not
    annotated so is always a model argument. At most one parameter may be annotated so.
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # builtins without a signature: plain arguments
        return None
    hints = _type_hints(function)
    names = [
        parameter.name
        for parameter in signature.parameters.values()
        if _is_tool_context(hints.get(parameter.name, parameter.annotation))
    ]
    if len(names) > 1:
        raise PiTypeError(f"only one parameter may be annotated with ToolContext, not {names}", field="parameters")
    if names and signature.parameters[names[0]].kind is inspect.Parameter.POSITIONAL_ONLY:
        raise PiTypeError(
            f"the ToolContext parameter `{names[0]}` must not be positional-only",
            field=f"parameters.{names[0]}",
        )
    return names[0] if names else None


def argument_converter(
    function: Callable[..., Any],
) -> Optional[Callable[[Dict[str, Any]], Dict[str, Any]]]:
    """What turns a model call's JSON arguments into the values ``function``'s type hints ask
    for, or ``None`` when they are used as they come (the usual case).

    A parameter annotated with a dataclass gets an instance (nested dataclasses too), an
    ``Enum`` gets the member, a pydantic model gets ``Model.model_validate(value)``; the same
    inside ``Optional``/``Union``, ``list``/``tuple``/``set``/``frozenset`` (converted to that
    container), ``dict[str, T]``, ``TypedDict`` and ``Annotated``. pydantic is only used through
    the model class itself, so it need not be installed for the rest. The returned function
    rewrites the arguments dict in place and returns it; it may raise (the call then fails with
    that message, like a raising tool).
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    hints = _type_hints(function)
    cache: Dict[type, _Convert] = {}
    converters: Dict[str, _Convert] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(parameter.name, parameter.annotation)
        if _is_tool_context(annotation):
            continue
        converter = _converter(annotation, cache)
        if converter is not None:
            converters[parameter.name] = converter
    if not converters:
        return None

    def convert(arguments: Dict[str, Any]) -> Dict[str, Any]:
        for name, converter in converters.items():
            if name in arguments:
                try:
                    arguments[name] = converter(arguments[name])
                except _Mismatch:
                    pass  # not the shape the hint describes (a custom schema): leave it
        return arguments

    return convert


class _Mismatch(Exception):
    """A value does not have the shape a converter handles (a union tries its next member)."""


def _converter(annotation: Any, cache: Dict[type, _Convert]) -> Optional[_Convert]:
    """The conversion of a JSON value to ``annotation``, or ``None`` when there is none to do."""
    if annotation is inspect.Parameter.empty or annotation in (Any, object, None):
        return None
    if isinstance(annotation, str) or annotation in _PRIMITIVES:
        return None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _converter(args[0], cache)
    if origin in _UNION_TYPES:
        return _union_converter(args, cache)
    if origin is typing.Literal:
        return None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_converter(annotation)
    if annotation in (list, tuple, set, frozenset) or origin in _ARRAY_ORIGINS or origin is tuple:
        return _sequence_converter(annotation, origin, args, cache)
    if annotation is dict or origin in _OBJECT_ORIGINS:
        values = _converter(args[1], cache) if len(args) == 2 else None
        if values is None:
            return None

        def convert_mapping(value: Any) -> Any:
            if not isinstance(value, dict):
                raise _Mismatch
            return {key: values(item) for key, item in value.items()}

        return convert_mapping
    if isinstance(annotation, type):
        if _is_typeddict(annotation):
            return _typeddict_converter(annotation, cache)
        if dataclasses.is_dataclass(annotation):
            return _dataclass_converter(annotation, cache)
        validate = getattr(annotation, "model_validate", None)  # pydantic models
        if callable(validate):

            def convert_model(value: Any) -> Any:
                if isinstance(value, annotation):
                    return value
                if not isinstance(value, dict):
                    raise _Mismatch
                return validate(value)

            return convert_model
    return None


def _union_converter(args: Tuple[Any, ...], cache: Dict[type, _Convert]) -> Optional[_Convert]:
    members = [(arg, _converter(arg, cache)) for arg in args]
    if all(converter is None for _, converter in members):
        return None

    def convert_union(value: Any) -> Any:
        # The first member the value fits, in the annotation's order.
        for member, converter in members:
            if converter is None:
                if _fits(member, value):
                    return value
                continue
            try:
                return converter(value)
            except (_Mismatch, TypeError, ValueError):
                continue
        raise _Mismatch

    return convert_union


def _fits(annotation: Any, value: Any) -> bool:
    """Whether a JSON value already is an ``annotation`` that needs no conversion."""
    if annotation is None or annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if annotation in (list, tuple, set, frozenset) or origin in _ARRAY_ORIGINS or origin is tuple:
        return isinstance(value, list)
    if annotation is dict or origin in _OBJECT_ORIGINS or (
        isinstance(annotation, type) and _is_typeddict(annotation)
    ):
        return isinstance(value, dict)
    return True


def _enum_converter(cls: type) -> _Convert:
    def convert_enum(value: Any) -> Any:
        try:
            return cls(value)
        except (ValueError, TypeError):
            raise _Mismatch from None

    return convert_enum


def _sequence_converter(
    annotation: Any, origin: Any, args: Tuple[Any, ...], cache: Dict[type, _Convert]
) -> Optional[_Convert]:
    container = origin if origin in (tuple, set, frozenset) else annotation
    if container not in (tuple, set, frozenset):
        container = list
    item: Optional[_Convert] = None
    if container is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        positional = [_converter(arg, cache) for arg in args]
    else:
        item = _converter(args[0], cache) if args else None
        positional = None
    if container is list and (positional is None and item is None):
        return None

    def convert_sequence(value: Any) -> Any:
        if not isinstance(value, list):
            raise _Mismatch
        if positional is not None:
            items = [
                converter(element) if converter is not None else element
                for element, converter in zip(value, positional)
            ] + value[len(positional) :]
        elif item is not None:
            items = [item(element) for element in value]
        else:
            items = value
        return items if container is list else container(items)

    return convert_sequence


def _typeddict_converter(cls: type, cache: Dict[type, _Convert]) -> Optional[_Convert]:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: Dict[str, _Convert] = {}
    for key, hint in hints.items():
        converter = _converter(hint, cache)
        if converter is not None:
            fields[key] = converter
    if not fields:
        return None

    def convert_typeddict(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _Mismatch
        return {key: fields[key](item) if key in fields else item for key, item in value.items()}

    return convert_typeddict


def _dataclass_converter(cls: type, cache: Dict[type, _Convert]) -> _Convert:
    if cls in cache:  # a dataclass that contains itself: the converter being built
        return cache[cls]
    fields: Dict[str, Optional[_Convert]] = {}

    def convert_dataclass(value: Any) -> Any:
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise _Mismatch
        # Keys the dataclass does not take are dropped (its schema does not forbid them).
        return cls(
            **{
                key: converter(item) if converter is not None else item
                for key, item in value.items()
                if key in fields
                for converter in (fields[key],)
            }
        )

    cache[cls] = convert_dataclass
    hints = typing.get_type_hints(cls, include_extras=True)
    for field in dataclasses.fields(cls):
        if field.init:
            fields[field.name] = _converter(hints.get(field.name, Any), cache)
    return convert_dataclass


def _is_tool_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    if isinstance(annotation, str):  # an annotation that could not be resolved
        return annotation.replace(" ", "") in _CONTEXT_NAMES
    if typing.get_origin(annotation) in _UNION_TYPES:
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return args == [ToolContext]
    return False


_CONTEXT_NAMES = {
    f"{wrapper[0]}{prefix}ToolContext{wrapper[1]}"
    for prefix in ("", "pi_agent.")
    for wrapper in (("", ""), ("Optional[", "]"), ("", "|None"))
}


def _type_hints(function: Callable[..., Any]) -> Dict[str, Any]:
    target = inspect.unwrap(function)
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = getattr(target, "__call__", target)
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        return dict(getattr(target, "__annotations__", {}))


class _SchemaContext:
    """State of one schema derivation: the dataclasses being expanded (to spot recursion) and
    those found to refer to themselves (which become ``$defs`` entries)."""

    def __init__(self) -> None:
        self.expanding: List[type] = []
        self.recursive: Set[type] = set()


def _schema(annotation: Any, context: Optional[_SchemaContext] = None) -> Dict[str, Any]:
    if context is None:
        context = _SchemaContext()
    if annotation is inspect.Parameter.empty or annotation is Any or annotation is object:
        return {}
    if annotation is None:
        return {"type": "null"}
    if isinstance(annotation, str):
        raise TypeError(f"unresolved annotation {annotation!r}")
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        schema = _schema(args[0], context)
        notes = [note for note in args[1:] if isinstance(note, str)]
        if notes and "description" not in schema:
            schema = {**schema, "description": " ".join(notes)}
        return schema
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    if origin in _UNION_TYPES:
        return _union(args, context)
    if origin is typing.Literal:
        return _literal(args)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _literal(tuple(member.value for member in annotation))
    if annotation in (list, tuple, set, frozenset) or origin in _ARRAY_ORIGINS:
        array: Dict[str, Any] = {"type": "array"}
        if args and args[0] is not Any:
            array["items"] = _schema(args[0], context)
        return array
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], context)}
        items = [_schema(arg, context) for arg in args]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if annotation is dict or origin in _OBJECT_ORIGINS:
        mapping: Dict[str, Any] = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            mapping["additionalProperties"] = _schema(args[1], context)
        return mapping
    if isinstance(annotation, type):
        if _is_typeddict(annotation):
            return _object(
                typing.get_type_hints(annotation, include_extras=True),
                getattr(annotation, "__required_keys__", frozenset()),
                context,
            )
        if dataclasses.is_dataclass(annotation):
            return _dataclass(annotation, context)
        schema_method = getattr(annotation, "model_json_schema", None)  # pydantic models
        if callable(schema_method):
            make = typing.cast("typing.Callable[[], Dict[str, Any]]", schema_method)
            return dict(make())
    raise TypeError(f"unsupported type {annotation!r}")


def _dataclass(cls: type, context: _SchemaContext) -> Dict[str, Any]:
    """A dataclass's object schema; one that contains itself becomes a ``$defs`` entry that it
    and its fields refer to."""
    reference = {"$ref": f"#/$defs/{cls.__name__}"}
    if cls in context.expanding:
        context.recursive.add(cls)
        return reference
    context.expanding.append(cls)
    try:
        fields = dataclasses.fields(cls)
        hints = typing.get_type_hints(cls, include_extras=True)
        required = {
            f.name
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        schema = _object({f.name: hints.get(f.name, Any) for f in fields}, required, context)
    finally:
        context.expanding.pop()
    if cls in context.recursive:
        return {**reference, "$defs": {cls.__name__: schema}}
    return schema


def _union(args: Tuple[Any, ...], context: _SchemaContext) -> Dict[str, Any]:
    schemas = [_schema(arg, context) for arg in args]
    if any(schema == {} for schema in schemas):
        return {}
    simple = [schema.get("type") for schema in schemas]
    if all(len(schema) == 1 and isinstance(kind, str) for schema, kind in zip(schemas, simple)):
        return {"type": list(dict.fromkeys(simple))}
    return {"anyOf": schemas}


def _literal(values: Tuple[Any, ...]) -> Dict[str, Any]:
    schema: Dict[str, Any] = {"enum": list(values)}
    kinds = {_PRIMITIVES.get(type(value)) for value in values}
    if len(kinds) == 1 and None not in kinds:
        schema = {"type": kinds.pop(), **schema}
    return schema


def _object(hints: Mapping[str, Any], required: Any, context: _SchemaContext) -> Dict[str, Any]:
    schema: Dict[str, Any] = {
        "type": "object",
        "properties": {key: _schema(value, context) for key, value in hints.items()},
    }
    required = [key for key in hints if key in required]
    if required:
        schema["required"] = required
    return schema


def _hoist_definitions(node: Any, definitions: Dict[str, Any]) -> None:
    """Moves every ``$defs`` below ``node`` into ``definitions``. A name already taken by a
    different schema is renamed (``Inner_2``), with the ``$ref``s of the moved subtree."""
    if isinstance(node, list):
        for item in node:
            _hoist_definitions(item, definitions)
        return
    if not isinstance(node, dict):
        return
    for value in node.values():
        _hoist_definitions(value, definitions)
    local = node.pop("$defs", None)
    if not isinstance(local, dict):
        return
    local = {str(name): schema for name, schema in local.items()}
    renames: Dict[str, str] = {}
    for name, schema in local.items():
        if name in definitions and definitions[name] != schema:
            number = 2
            while f"{name}_{number}" in definitions or f"{name}_{number}" in local:
                number += 1
            renames[name] = f"{name}_{number}"
    if renames:
        _rename_references(node, renames)
        _rename_references(local, renames)
    for name, schema in local.items():
        definitions.setdefault(str(renames.get(name, name)), schema)


def _rename_references(node: Any, renames: Mapping[str, str]) -> None:
    if isinstance(node, list):
        for item in node:
            _rename_references(item, renames)
    elif isinstance(node, dict):
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/$defs/"):
            name = reference[len("#/$defs/") :]
            if name in renames:
                node["$ref"] = f"#/$defs/{renames[name]}"
        for value in node.values():
            _rename_references(value, renames)


def _is_typeddict(annotation: type) -> bool:
    return issubclass(annotation, dict) and hasattr(annotation, "__total__")


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item) for key, item in value.items())
    return False


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments):\s*$")
_GOOGLE_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_NUMPY_ARG = re.compile(r"^(\w+)\s*(?::.*)?$")


def _parse_docstring(doc: str) -> Tuple[str, Dict[str, str]]:
    """(first paragraph, {parameter: description}) of a Google, Sphinx or NumPy docstring."""
    lines = doc.expandtabs().splitlines()
    summary_lines: List[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or _SECTION.match(stripped) or stripped.startswith(":"):
            break
        summary_lines.append(stripped)
    summary = " ".join(summary_lines)
    params: Dict[str, str] = {}
    params.update(_google_params(lines))
    params.update(_sphinx_params(lines))
    params.update(_numpy_params(lines))
    return summary, params


def _google_params(lines: List[str]) -> Dict[str, str]:
    params: Dict[str, str] = {}
    in_section = False
    base_indent = -1
    current: Optional[str] = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if _SECTION.match(stripped):
            in_section, base_indent, current = True, -1, None
            continue
        if not in_section:
            continue
        if not stripped:
            current = None
            continue
        if base_indent < 0:
            base_indent = indent
        if indent < base_indent or (indent == 0 and stripped.endswith(":")):
            in_section = False
            continue
        match = _GOOGLE_ARG.match(stripped) if indent == base_indent else None
        if match:
            name: str = match.group(1).lstrip("*")
            current = name
            params[name] = match.group(3).strip()
        elif current is not None:
            params[current] = (params[current] + " " + stripped).strip()
    return params


def _sphinx_params(lines: List[str]) -> Dict[str, str]:
    params: Dict[str, str] = {}
    current: Optional[str] = None
    for line in lines:
        stripped = line.strip()
        match = _SPHINX_PARAM.match(stripped)
        if match:
            name = match.group(1)
            current = name
            params[name] = match.group(2).strip()
        elif stripped.startswith(":") or not stripped:
            current = None
        elif current is not None:
            params[current] = (params[current] + " " + stripped).strip()
    return params


def _numpy_params(lines: List[str]) -> Dict[str, str]:
    params: Dict[str, str] = {}
    for index, line in enumerate(lines[:-1]):
        if line.strip() == "Parameters" and set(lines[index + 1].strip()) == {"-"}:
            current: Optional[str] = None
            body = lines[index + 2 :]
            for position, entry in enumerate(body):
                stripped = entry.strip()
                if not stripped:
                    continue
                following = body[position + 1].strip() if position + 1 < len(body) else ""
                if following and set(following) == {"-"}:
                    break  # the next section's header
                if entry == entry.lstrip():
                    match = _NUMPY_ARG.match(stripped)
                    if not match:
                        break
                    name = match.group(1)
                    current = name
                    params[name] = ""
                elif current is not None:
                    params[current] = (params[current] + " " + stripped).strip()
            break
    return params
