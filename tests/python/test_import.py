"""`import pi_agent` stays cheap: the heavy standard-library modules load on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_import_defers_heavy_modules() -> None:
    script = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "import pi_agent\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PI_AGENT_LOG"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    heavy = {"typing", "inspect", "dataclasses", "asyncio", "logging", "re", "enum"}
    assert not loaded & heavy, sorted(loaded & heavy)
    assert "pi_agent._core" in loaded


def test_lazy_names_resolve() -> None:
    import pi_agent

    assert callable(pi_agent.tool) and callable(pi_agent.function_schema)
    assert pi_agent.oauth.login_sync is not None
    from pi_agent import function_schema, oauth, tool

    assert tool is pi_agent.tool and oauth is pi_agent.oauth and function_schema is not None
    try:
        pi_agent.no_such_name  # type: ignore[attr-defined]
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("expected AttributeError")
