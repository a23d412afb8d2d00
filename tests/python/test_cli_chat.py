"""`python -m pi_agent chat` against pi-mock-server, as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import List

from conftest import MockServer


def _chat(arguments: List[str], stdin: str) -> "subprocess.CompletedProcess[str]":
    env = {**os.environ, "OPENAI_API_KEY": "sk-from-env"}
    return subprocess.run(
        [sys.executable, "-m", "pi_agent", "chat", *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_chat_streams_answers_and_keeps_the_conversation(mock_server: MockServer) -> None:
    mock_server.push({"text": "Hello there!"}, {"text": "Second answer."})
    done = _chat(
        ["--model", "openai/mock-gpt", "--base-url", mock_server.url, "--system", "Be brief."],
        "hi\n\nand again\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello there!\nSecond answer.\n"
    first, second = mock_server.requests()
    assert dict(first["headers"])["authorization"] == "Bearer sk-from-env"
    assert first["body"]["messages"][0] == {"role": "system", "content": "Be brief."}
    roles = [message["role"] for message in second["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


def test_chat_reports_a_failed_answer_and_an_unknown_model(mock_server: MockServer) -> None:
    mock_server.push({"status": 401, "body": {"error": {"message": "Invalid API key"}}})
    done = _chat(["--model", "openai/mock-gpt", "--base-url", mock_server.url], "hi\n")
    assert done.returncode == 1
    assert "Invalid API key" in done.stderr
    unknown = _chat(["--model", "nobody/nothing"], "hi\n")
    assert unknown.returncode == 2 and "unknown model" in unknown.stderr
