"""An agent with a calculator tool answers "What is 6 * 7?" by calling it.

Model selection:
- ``PI_MODEL_JSON='{"id":..,"api":"openai-completions","provider":..,"baseUrl":..}'`` uses that
  model (with its provider's key from the environment, if it needs one);
- else ``OPENAI_API_KEY`` uses ``gpt-4o-mini`` on api.openai.com;
- else the built-in faux provider plays the model (it calls the calculator, then answers with
  what the tool returned), so the example works offline.

Run: ``pip install . && python examples/python/agent.py``
"""

from __future__ import annotations

import ast
import json
import operator
import os
import sys
from typing import Any, Callable, Dict, Mapping, Union

import pi_agent
from pi_agent.types import AgentEvent, Context

QUESTION = "What is 6 * 7? Use the calculator."

_OPERATORS: Dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _evaluate(node: ast.AST) -> Union[int, float]:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        result: Union[int, float] = _OPERATORS[type(node.op)](
            _evaluate(node.left), _evaluate(node.right)
        )
        return result
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        negated: Union[int, float] = _OPERATORS[type(node.op)](_evaluate(node.operand))
        return negated
    raise ValueError(f"unsupported expression: {ast.unparse(node)}")


@pi_agent.tool
def calculator(expression: str) -> Dict[str, Any]:
    """Evaluates an arithmetic expression with + - * / and parentheses.

    Args:
        expression: The expression, e.g. "6 * 7".
    """
    value = _evaluate(ast.parse(expression, mode="eval"))  # errors reach the model as text
    return {"content": str(value), "details": {"value": value}}


def text_of(message: Mapping[str, Any]) -> str:
    """The text blocks of a message, joined."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block["type"] == "text")


def offline_model() -> pi_agent.Model:
    """A faux model that calls the calculator, then reports what the tool returned."""
    faux = pi_agent.FauxProvider()
    faux.push([pi_agent.faux_tool_call("calculator", {"expression": "6 * 7"})])

    def answer(context: Context, call: int, model: pi_agent.Model) -> str:
        results = [m for m in context["messages"] if m["role"] == "toolResult"]
        return f"6 * 7 = {text_of(results[-1])}" if results else "I could not compute it."

    faux.push(answer)
    return faux.model


def choose_model() -> pi_agent.Model:
    spec = os.environ.get("PI_MODEL_JSON")
    if spec:
        return pi_agent.Model.from_dict(json.loads(spec))
    if os.environ.get("OPENAI_API_KEY"):
        return pi_agent.Model(
            "gpt-4o-mini",
            api="openai-completions",
            provider="openai",
            base_url="https://api.openai.com/v1",
        )
    return offline_model()


def main() -> int:
    model = choose_model()
    print(f"model: {model.provider}/{model.id}")
    agent = pi_agent.Agent(
        model,
        system_prompt="You answer arithmetic questions with the calculator tool.",
        tools=[calculator],
    )

    def show(event: AgentEvent) -> None:
        if event["type"] == "tool_execution_start":
            print(f"→ {event['toolName']}({json.dumps(event['args'])})")
        elif event["type"] == "tool_execution_end":
            status = "error" if event["isError"] else "ok"
            print(f"← {status} {json.dumps(event['result']['content'])}")

    agent.subscribe(show)
    agent.prompt_sync(QUESTION)  # or, in async code: await agent.prompt(QUESTION)

    answer: Mapping[str, Any] = agent.messages[-1]
    if answer["role"] != "assistant":
        print("no answer", file=sys.stderr)
        return 1
    failure = answer.get("errorMessage")
    if failure:
        print(f"the model failed: {failure}", file=sys.stderr)
        return 1
    print(text_of(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
