"""The agent loop driven by hand with ``pi_agent.AgentStepper``, the way a durable workflow
engine would: every effect (model call, tools, queues) is the driver's, and the loop's state is
stored as JSON after every step, then resumed from the stored copy.

Offline: the faux provider plays the model (it calls the calculator, then answers).

Run: ``pip install . && python examples/python/stepper.py``
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List

import pi_agent

TOOLS = [
    {
        "name": "multiply",
        "description": "Multiplies two numbers",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    }
]


def run_tool(call: Dict[str, Any]) -> Dict[str, Any]:
    """An activity: validates the call's arguments and runs the tool."""
    try:
        arguments = pi_agent.validate_tool_call(TOOLS, call)
        text, is_error = str(arguments["a"] * arguments["b"]), False
    except pi_agent.ToolValidationError as error:
        text, is_error = str(error), True
    return {
        "message": {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "content": [{"type": "text", "text": text}],
            "isError": is_error,
            "timestamp": 0,
        }
    }


def main() -> int:
    with pi_agent.FauxProvider() as faux:
        faux.push([pi_agent.faux_tool_call("multiply", {"a": 6, "b": 7})])
        faux.push("6 * 7 = 42")
        model = faux.model

        prompt = {"role": "user", "content": "What is 6 * 7?", "timestamp": 0}
        stepper, step = pi_agent.AgentStepper.start(system_prompt="Use the tool.", prompts=[prompt])
        history: List[str] = []  # what a workflow engine would persist
        while True:
            for event in step["events"]:
                print("event:", event["type"])
            history.append(json.dumps(stepper.to_dict()))
            stepper = pi_agent.AgentStepper.from_dict(json.loads(history[-1]))
            action = step["action"]
            print("action:", action["type"])
            if action["type"] == "finished":
                break
            if action["type"] == "poll_steering":
                step = stepper.resume({"type": "steering", "messages": []})
            elif action["type"] == "poll_follow_up":
                step = stepper.resume({"type": "follow_up", "messages": []})
            elif action["type"] == "call_model":
                context = {
                    "systemPrompt": stepper.system_prompt,
                    "messages": pi_agent.default_convert_to_llm(stepper.messages),
                    "tools": TOOLS,
                }
                message = pi_agent.complete_simple_sync(model, context)  # an activity
                step = stepper.resume({"type": "model_result", "message": message})
            elif action["type"] == "execute_tools":
                outcomes = [run_tool(call) for call in action["toolCalls"]]
                step = stepper.resume({"type": "tool_results", "outcomes": outcomes})
            else:
                print(f"unexpected action {action['type']}", file=sys.stderr)
                return 1

        answer: Dict[str, Any] = dict(stepper.messages[-1])
        text = "".join(block.get("text", "") for block in answer["content"])
        print("answer:", text, f"({len(history)} stored states)")
        return 0 if text == "6 * 7 = 42" else 1


if __name__ == "__main__":
    sys.exit(main())
