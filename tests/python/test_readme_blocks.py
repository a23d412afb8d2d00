"""The READMEs' Python programs run (issue 18): every ```python block of ``README.md`` and
``python/README.md`` that starts with ``import`` is a whole program; it must pass
``mypy --strict`` and run offline, on the faux provider (the ``Model`` / ``get_model`` it
names are swapped for the faux model, whose every answer is a short text). Blocks that do not
start with ``import`` are fragments of the text around them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, List, Tuple

import pytest

import pi_agent

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def programs() -> List[Tuple[str, str]]:
    found = []
    for readme in ["README.md", "python/README.md"]:
        text = (ROOT / readme).read_text()
        for i, match in enumerate(FENCE.finditer(text)):
            block = match.group(1)
            if block.startswith("import "):
                found.append((f"{readme}#{i}", block))
    return found


PROGRAMS = programs()


def test_the_quick_starts_are_programs() -> None:
    names = [name for name, _ in PROGRAMS]
    assert any(name.startswith("README.md") for name in names), names
    assert any(name.startswith("python/README.md") for name in names), names


@pytest.mark.parametrize("name,source", PROGRAMS, ids=[name for name, _ in PROGRAMS])
def test_a_readme_program_type_checks(name: str, source: str, tmp_path: Path) -> None:
    mypy_api = pytest.importorskip("mypy.api")
    program = tmp_path / "program.py"
    program.write_text(source)
    stdout, stderr, status = mypy_api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(program)]
    )
    assert status == 0, f"{name}:\n{stdout}{stderr}"


@pytest.mark.parametrize("name,source", PROGRAMS, ids=[name for name, _ in PROGRAMS])
def test_a_readme_program_runs_offline(
    name: str, source: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pi_agent.FauxProvider() as faux:
        answer = "The answer is 42."
        faux.set_responses([lambda context, call, model: answer] * 50)
        monkeypatch.setattr(pi_agent, "Model", lambda *args, **kwargs: faux.model)
        monkeypatch.setattr(pi_agent, "get_model", lambda *args, **kwargs: faux.model)
        namespace: dict[str, Any] = {"__name__": "__main__"}
        exec(compile(source, name, "exec"), namespace)
    printed = capsys.readouterr().out
    assert answer in printed, f"{name} printed:\n{printed}"
