"""Tools from functions: JSON Schema derivation from type hints and docstrings.

(No `from __future__ import annotations` here: the tests define annotation types locally.)
"""

import dataclasses
import enum
from typing import Any, Dict, FrozenSet, List, Literal, Optional, Set, Tuple, TypedDict, Union

import pytest

import pi_agent
from pi_agent import Tool, faux_tool_call, function_schema


# Module level, so that the string annotations of the recursive dataclass resolve.
class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


@dataclasses.dataclass
class Inner:
    x: int
    color: Color = Color.RED


@dataclasses.dataclass
class Point:
    inner: Inner
    size: Size
    tags: List[str] = dataclasses.field(default_factory=list)
    computed: int = dataclasses.field(default=0, init=False)


@dataclasses.dataclass
class Node:
    value: int
    children: List["Node"] = dataclasses.field(default_factory=list)


class Shape(TypedDict):
    corners: List[Point]


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


def _references(node: Any) -> List[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _references(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in _references(item)]
    return []


def _assert_references_resolve(schema: Dict[str, Any]) -> None:
    """Every `$ref` points at an entry of the root's `$defs`, and no `$defs` is left below it."""
    definitions = schema.get("$defs", {})
    for reference in _references(schema):
        assert reference.startswith("#/$defs/"), reference
        assert reference[len("#/$defs/") :] in definitions, reference

    def keys(node: Any) -> List[str]:
        if isinstance(node, dict):
            return list(node) + [key for value in node.values() for key in keys(value)]
        if isinstance(node, list):
            return [key for item in node for key in keys(item)]
        return []

    assert "$defs" not in keys(schema["properties"])


def test_recursive_dataclasses_become_definitions() -> None:
    def walk(tree: Node, point: Point) -> None: ...

    schema = function_schema(walk)
    assert schema["properties"]["tree"] == {"$ref": "#/$defs/Node"}
    assert schema["$defs"]["Node"] == {
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
        "required": ["value"],
    }
    # A dataclass that does not contain itself stays inline.
    assert schema["properties"]["point"]["properties"]["inner"]["properties"]["color"] == {
        "type": "string",
        "enum": ["red", "blue"],
    }
    _assert_references_resolve(schema)


def test_pydantic_definitions_move_to_the_tool_schema_root() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Leaf(pydantic.BaseModel):
        x: int

    class Tree(pydantic.BaseModel):
        leaf: Leaf
        leaves: List[Leaf] = []

    def other_leaf() -> Any:
        class Leaf(pydantic.BaseModel):  # same name, different schema
            label: str

        class Bush(pydantic.BaseModel):
            leaf: Leaf

        return Bush

    Bush = other_leaf()

    def plant(tree: Tree, bush: Bush, maybe: Optional[Tree] = None) -> None: ...

    schema = function_schema(plant)
    _assert_references_resolve(schema)
    assert set(schema["$defs"]) == {"Leaf", "Leaf_2"}
    assert schema["properties"]["tree"]["properties"]["leaf"] == {"$ref": "#/$defs/Leaf"}
    assert schema["properties"]["bush"]["properties"]["leaf"] == {"$ref": "#/$defs/Leaf_2"}
    assert schema["$defs"]["Leaf_2"]["properties"] == {"label": {"title": "Label", "type": "string"}}
    assert schema["properties"]["maybe"]["anyOf"][0]["properties"]["leaf"] == {"$ref": "#/$defs/Leaf"}


def _run_one_call(faux: pi_agent.FauxProvider, tool: Tool, arguments: Dict[str, Any]) -> Dict[str, Any]:
    """Runs an agent whose model calls `tool` once; returns the tool result message."""
    faux.push([faux_tool_call(tool.name, arguments, id="call-1")])
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[tool])
    agent.prompt_sync("go")
    (result,) = [m for m in agent.messages if m["role"] == "toolResult"]
    assert agent.messages[-1]["role"] == "assistant"
    return result


def test_dataclass_enum_and_container_parameters_receive_instances(faux: pi_agent.FauxProvider) -> None:
    received: Dict[str, Any] = {}

    @pi_agent.tool
    def draw(
        point: Point,
        color: Color,
        points: List[Point],
        pair: Tuple[int, Color],
        sizes: Set[Size],
        frozen: FrozenSet[str],
        by_name: Dict[str, Inner],
        shape: Shape,
        tree: Node,
        maybe: Optional[Point] = None,
        either: Union[Inner, List[Inner], None] = None,
        plain: List[int] = [],
    ) -> str:
        received.update(locals())
        return "drawn"

    point = {"inner": {"x": 1, "color": "blue"}, "size": 2, "tags": ["a"]}
    result = _run_one_call(
        faux,
        draw,
        {
            "point": point,
            "color": "red",
            "points": [point, {"inner": {"x": 2}, "size": 1}],
            "pair": [7, "blue"],
            "sizes": [1, 2],
            "frozen": ["x"],
            "by_name": {"k": {"x": 3}},
            "shape": {"corners": [point]},
            "tree": {"value": 1, "children": [{"value": 2, "children": []}]},
            "either": [{"x": 4}],
            "plain": [1, 2],
        },
    )
    assert result["isError"] is False, result
    expected_point = Point(inner=Inner(x=1, color=Color.BLUE), size=Size.LARGE, tags=["a"])
    assert received["point"] == expected_point
    assert isinstance(received["point"].inner.color, Color)
    assert received["color"] is Color.RED
    assert received["points"] == [expected_point, Point(inner=Inner(x=2), size=Size.SMALL)]
    assert received["pair"] == (7, Color.BLUE)
    assert received["sizes"] == {Size.SMALL, Size.LARGE}
    assert received["frozen"] == frozenset({"x"})
    assert received["by_name"] == {"k": Inner(x=3)}
    assert received["shape"] == {"corners": [expected_point]}
    assert received["tree"] == Node(value=1, children=[Node(value=2)])
    assert received["maybe"] is None
    assert received["either"] == [Inner(x=4)]
    assert received["plain"] == [1, 2]


def test_optional_dataclass_given_a_value_and_unknown_keys_dropped(faux: pi_agent.FauxProvider) -> None:
    received: Dict[str, Any] = {}

    @pi_agent.tool
    def place(maybe: Optional[Inner] = None, either: Union[int, Inner] = 0) -> str:
        received.update(maybe=maybe, either=either)
        return "ok"

    result = _run_one_call(faux, place, {"maybe": {"x": 5, "extra": True}, "either": {"x": 6}})
    assert result["isError"] is False, result
    assert received == {"maybe": Inner(x=5), "either": Inner(x=6)}


def test_a_conversion_that_fails_is_an_error_result(faux: pi_agent.FauxProvider) -> None:
    @pi_agent.tool(parameters={"type": "object"})  # a custom schema lets anything through
    def place(point: Inner) -> str:
        return "unreachable"

    result = _run_one_call(faux, place, {"point": {"color": "red"}})
    assert result["isError"] is True
    assert "x" in result["content"][0]["text"]  # Inner() missing its required field


def test_pydantic_parameters_receive_models(faux: pi_agent.FauxProvider) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Leaf(pydantic.BaseModel):
        x: int
        color: Color = Color.RED

    class Tree(pydantic.BaseModel):
        leaf: Leaf
        leaves: List[Leaf] = []

    received: Dict[str, Any] = {}

    @pi_agent.tool
    def plant(tree: Tree, maybe: Optional[Tree] = None, trees: List[Tree] = []) -> str:
        received.update(tree=tree, maybe=maybe, trees=trees)
        return "planted"

    tree = {"leaf": {"x": 1, "color": "blue"}, "leaves": [{"x": 2}]}
    result = _run_one_call(faux, plant, {"tree": tree, "maybe": tree, "trees": [tree]})
    assert result["isError"] is False, result
    expected = Tree(leaf=Leaf(x=1, color=Color.BLUE), leaves=[Leaf(x=2)])
    assert received == {"tree": expected, "maybe": expected, "trees": [expected]}
    assert isinstance(received["tree"].leaf, Leaf)

    # Arguments that break the model's own rules get pi's validation report first.
    result = _run_one_call(faux, plant, {"tree": {"leaf": {"x": "many"}}})
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith('Validation failed for tool "plant":\n')


def test_plain_parameters_need_no_conversion() -> None:
    from pi_agent._tools import argument_converter

    def plain(a: int, b: List[str], c: Optional[Dict[str, float]] = None, d: Any = None) -> None: ...

    assert argument_converter(plain) is None
    assert argument_converter(print) is None
