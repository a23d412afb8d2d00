"""Tools from functions: JSON Schema derivation from type hints and docstrings.

(No `from __future__ import annotations` here: the tests define annotation types locally.)
"""

import enum
from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

import pytest

import pi_agent
from pi_agent import Tool, function_schema


def test_schema_from_hints_and_google_docstring() -> None:
    def search(
        query: str,
        limit: int = 10,
        threshold: float = 0.5,
        exact: bool = False,
        tags: Optional[List[str]] = None,
        order: Literal["asc", "desc"] = "asc",
        filters: Dict[str, int] = {},
        anything: Any = None,
    ) -> str:
        """Searches the index.

        Finds documents; this second paragraph is not part of the description.

        Args:
            query: What to look for.
            limit (int): At most this many
                results.
            order: Sort order.

        Returns:
            The hits.
        """
        return query

    tool = Tool.from_function(search)
    assert tool.name == "search"
    assert tool.description == "Searches the index."
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {
                "type": "integer",
                "description": "At most this many results.",
                "default": 10,
            },
            "threshold": {"type": "number", "default": 0.5},
            "exact": {"type": "boolean", "default": False},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": None},
            "order": {
                "type": "string",
                "enum": ["asc", "desc"],
                "description": "Sort order.",
                "default": "asc",
            },
            "filters": {
                "type": "object",
                "additionalProperties": {"type": "integer"},
                "default": {},
            },
            "anything": {"default": None},
        },
        "required": ["query"],
    }
    assert tool.to_dict() == {
        "name": "search",
        "description": "Searches the index.",
        "parameters": tool.parameters,
    }


def test_sphinx_docstring_and_optional_scalars() -> None:
    def move(x: int, y: Optional[int], unit: Union[str, None] = None) -> None:
        """Moves the cursor.

        :param x: Column.
        :param int y: Row, or None
            to keep it.
        :returns: nothing
        """

    schema = function_schema(move)
    assert schema["required"] == ["x", "y"]
    assert schema["properties"]["x"] == {"type": "integer", "description": "Column."}
    assert schema["properties"]["y"] == {
        "type": ["integer", "null"],
        "description": "Row, or None to keep it.",
    }
    assert schema["properties"]["unit"] == {"type": ["string", "null"], "default": None}


def test_numpy_docstring_enum_typeddict_and_annotated() -> None:
    from typing import Annotated

    class Color(enum.Enum):
        RED = "red"
        BLUE = "blue"

    class Point(TypedDict):
        x: float
        y: float

    def paint(color: Color, at: Point, note: Annotated[str, "A note for the painter."]) -> str:
        """Paints a point.

        Parameters
        ----------
        color : Color
            The paint.
        at : Point
            Where.

        Returns
        -------
        str
        """
        return ""

    schema = function_schema(paint)
    assert schema["properties"]["color"] == {
        "type": "string",
        "enum": ["red", "blue"],
        "description": "The paint.",
    }
    assert schema["properties"]["at"] == {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"],
        "description": "Where.",
    }
    assert schema["properties"]["note"] == {"type": "string", "description": "A note for the painter."}
    assert "Returns" not in schema["properties"]


def test_decorator_forms_and_explicit_parameters() -> None:
    @pi_agent.tool
    def plain(a: int) -> int:
        """Doubles."""
        return 2 * a

    @pi_agent.tool(name="renamed", description="Custom.", parameters={"type": "object"})
    async def fancy(**kwargs: Any) -> str:
        return "x"

    assert isinstance(plain, Tool) and plain(a=4) == 8 and plain(5) == 10
    assert repr(plain) == 'Tool(name="plain")'
    assert (fancy.name, fancy.description, fancy.parameters) == ("renamed", "Custom.", {"type": "object"})
    assert fancy.label == "renamed"

    explicit = Tool("t", "d", {"type": "object", "properties": {}}, lambda: "r", label="T")
    assert explicit.label == "T" and explicit.function() == "r"
    with pytest.raises(TypeError, match="callable"):
        Tool("t", "d", {}, 42)  # type: ignore[arg-type]


def test_unsupported_annotations_say_what_to_do() -> None:
    class Opaque:
        pass

    def f(x: Opaque) -> None: ...

    with pytest.raises(TypeError, match=r"parameter `x`.*pass parameters="):
        Tool.from_function(f)
    tool = Tool.from_function(f, parameters={"type": "object", "properties": {"x": {}}})
    assert tool.parameters["properties"] == {"x": {}}


def test_plain_functions_in_agent_tools_are_wrapped() -> None:
    def greet(name: str) -> str:
        """Greets someone."""
        return f"hi {name}"

    agent = pi_agent.Agent(tools=[greet])
    (tool,) = agent.tools
    assert isinstance(tool, Tool)
    assert tool.description == "Greets someone."
    assert tool.function is greet
