"""The Python examples run offline (faux provider) and succeed."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[2] / "examples" / "python").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_example_runs_offline(example: pathlib.Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "PI_MODEL_JSON")}
    done = subprocess.run(
        [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout


EXIT_SCRIPT = """
import asyncio, pi_agent

async def main():
    with pi_agent.FauxProvider() as faux:
        faux.push("hello")
        agent = pi_agent.Agent(faux.model)
        await agent.prompt("go")          # the result arrives from a runtime thread...
        faux.push("again")
        async for _ in pi_agent.stream(faux.model, {"messages": []}):
            pass

asyncio.run(main())                       # ...racing the interpreter's exit
"""


def test_asyncio_programs_exit_cleanly() -> None:
    # A runtime thread still inside Python when the interpreter finalizes aborts the process
    # (CPython kills it with pthread_exit); this used to happen in about 1 run of 10.
    processes = [
        subprocess.Popen([sys.executable, "-c", EXIT_SCRIPT], stderr=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
