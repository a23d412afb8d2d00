"""Core's log events reach Python's `logging` under `pi_agent`, without secrets."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from typing import Any, Dict

import pytest

import pi_agent

from conftest import MockServer

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
SECRET = "sk-very-secret-key-0123456789"


def test_requests_are_logged_at_debug_without_the_key(
    mock_server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    mock_server.push({"text": "hello"})
    with caplog.at_level(logging.DEBUG, logger="pi_agent"):
        message = pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key=SECRET)
    assert message["stopReason"] == "stop"
    records = [record for record in caplog.records if record.name.startswith("pi_agent")]
    sending = [record for record in records if record.getMessage().startswith("sending request")]
    assert len(sending) == 1
    assert sending[0].name == "pi_agent.http" and sending[0].levelno == logging.DEBUG
    assert sending[0].pi_fields["url.path"] == "/v1/chat/completions"  # type: ignore[attr-defined]
    assert any(r.getMessage().startswith("response headers") for r in records)
    for record in records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.__dict__)


def test_retries_are_warnings(mock_server: MockServer, caplog: pytest.LogCaptureFixture) -> None:
    mock_server.push(
        {"status": 500, "body": {"error": {"message": "boom"}}, "headers": {"retry-after-ms": "1"}},
        {"text": "recovered"},
    )
    with caplog.at_level(logging.DEBUG, logger="pi_agent"):
        message = pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key=SECRET, max_retries=2)
    assert pi_agent.text_of(message) == "recovered"
    retries = [record for record in caplog.records if record.name == "pi_agent.retry"]
    assert len(retries) == 1 and retries[0].levelno == logging.INFO
    assert retries[0].getMessage().startswith("retrying the request")
    assert all(SECRET not in repr(record.__dict__) for record in caplog.records)


def test_nothing_is_emitted_above_the_loggers_level(
    mock_server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    mock_server.push({"text": "quiet"})
    with caplog.at_level(logging.INFO, logger="pi_agent"):
        pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key=SECRET)
    assert not [record for record in caplog.records if record.name.startswith("pi_agent")]


def test_a_level_set_between_requests_applies_to_the_next(
    mock_server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    # The binding keeps each target's logger after its first record: the logger's level is
    # still read at every record, so a level set later applies at once, either way.
    def sending() -> int:
        return len([r for r in caplog.records if r.getMessage().startswith("sending request")])

    for level, expected in [(logging.INFO, 0), (logging.DEBUG, 1), (logging.INFO, 1)]:
        mock_server.push({"text": "again"})
        with caplog.at_level(level, logger="pi_agent"):
            pi_agent.complete_sync(mock_server.model(), CONTEXT, api_key=SECRET)
        assert sending() == expected, level


def test_a_ctrl_c_in_a_log_handler_reaches_the_main_thread(mock_server: MockServer) -> None:
    """The binding calls `logging` where it cannot raise (inside a request): a Ctrl-C that
    lands in a handler is put back, and raised in the caller's code, not dropped."""

    class Interrupted(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("sending request"):
                raise KeyboardInterrupt

    mock_server.push({"text": "hello"})
    logger = logging.getLogger("pi_agent.http")
    handler = Interrupted(logging.DEBUG)
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    # Python's own Ctrl-C handler, also where the suite runs with SIGINT ignored (a background
    # job): a Ctrl-C is put back only for a process that takes them.
    previous_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with pi_agent.stream(mock_server.model(), CONTEXT, api_key=SECRET) as events:
                for _ in events:
                    pass
            for _ in range(10_000):  # where a Ctrl-C put back lands, at the latest
                pass
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        logger.removeHandler(handler)
        logger.setLevel(previous)


def test_pi_agent_log_env_writes_to_stderr(mock_server: MockServer) -> None:
    mock_server.push({"text": "from a subprocess"})
    script = (
        "import pi_agent, sys\n"
        "model = pi_agent.Model('mock-gpt', base_url=sys.argv[1])\n"
        "m = pi_agent.complete_sync(model, {'messages': [{'role': 'user', 'content': 'hi',"
        " 'timestamp': 0}]}, api_key=sys.argv[2])\n"
        "print(pi_agent.text_of(m))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, mock_server.url, SECRET],
        env={**os.environ, "PI_AGENT_LOG": "debug"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "from a subprocess"
    assert "pi_agent DEBUG pi_agent.http: sending request" in done.stderr
    assert SECRET not in done.stderr
