"""Types that narrow (issue 18): code a user writes from the READMEs passes ``mypy --strict`` and
pyright (strict):
message and event unions narrow on their tag, ``timestamp`` may be left out of the messages
a program builds, ``pi_agent.types`` is reachable after ``import pi_agent``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

import pytest

mypy_api = pytest.importorskip("mypy.api")

PROGRAM = '''
from typing import List

import pi_agent


def tool_results(messages: List[pi_agent.types.AgentMessage]) -> List[str]:
    ids: List[str] = []
    for message in messages:
        if message["role"] == "toolResult":
            ids.append(message["toolCallId"])
        elif message["role"] == "assistant":
            print(message["stopReason"], message.get("errorKind"), message.get("runLimit"))
    return ids


def deltas(events: List[pi_agent.types.AgentEvent]) -> str:
    out = ""
    for event in events:
        if event["type"] == "message_update":
            update = event["assistantMessageEvent"]
            if update["type"] == "text_delta":
                out += update["delta"]
    return out


prompt: pi_agent.types.UserMessage = {"role": "user", "content": "hi"}
limits: pi_agent.types.RunLimits = {"maxTurns": 5, "maxCostUsd": 0.25}
agent = pi_agent.Agent(None, limits=limits, messages=[prompt, {"role": "note", "text": "x"}])


@pi_agent.tool
def add(a: float, b: float) -> float:
    """Adds."""
    return a + b


total: float = add(1.0, 2.0)     # the decorated tool keeps the function's signature
plain: pi_agent.Tool = add       # and is still a Tool
'''

WRONG = '''
import pi_agent


@pi_agent.tool
def add(a: float, b: float) -> float:
    """Adds."""
    return a + b


add("one", 2.0)
'''


def test_user_code_narrows_under_mypy_strict(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    stdout, stderr, status = mypy_api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(program)]
    )
    assert status == 0, stdout + stderr


def test_a_tool_call_with_wrong_arguments_fails_mypy(tmp_path: Path) -> None:
    program = tmp_path / "wrong.py"
    program.write_text(WRONG)
    stdout, _, status = mypy_api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(program)]
    )
    assert status == 1 and '"__call__" of "Tool" has incompatible type "str"' in stdout, stdout


def _pyright(tmp_path: Path, programs: Dict[str, str], mode: str = "strict") -> Tuple[int, str]:
    """Runs pyright (``mode``: strict, standard) over ``programs`` (file name -> source) with the interpreter of
    this test, so it sees the installed ``pi_agent`` and its stubs; skipped without pyright
    (``pip install pyright``; it fetches its own Node.js package from npm once)."""
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if pyright is None:
        pytest.skip("pyright is not installed")
    for name, source in programs.items():
        (tmp_path / name).write_text(source)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": mode}))
    done = subprocess.run(
        [pyright, "--pythonpath", sys.executable, *programs],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout + done.stderr


def test_user_code_narrows_under_pyright_strict(tmp_path: Path) -> None:
    status, output = _pyright(tmp_path, {"program.py": PROGRAM})
    assert status == 0, output


def test_the_readme_programs_pass_pyright(tmp_path: Path) -> None:
    # Standard mode: strict mode also wants the quick starts' `lambda event: ...` subscribers
    # annotated (a `Subscriber` takes one or two arguments, so pyright cannot infer them).
    from test_readme_blocks import PROGRAMS

    programs = {f"readme_{i}.py": source for i, (_, source) in enumerate(PROGRAMS)}
    status, output = _pyright(tmp_path, programs, mode="standard")
    assert status == 0, output


def test_a_tool_call_with_wrong_arguments_fails_pyright(tmp_path: Path) -> None:
    status, output = _pyright(tmp_path, {"wrong.py": WRONG})
    assert status == 1 and 'cannot be assigned to parameter "a" of type "float"' in output, output
