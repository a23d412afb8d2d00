"""Durable sessions from Python (``pi_agent.Session``): journal records and cursors, request
ids, and a child process killed with SIGKILL mid-tool and mid-stream, then resumed."""

from __future__ import annotations

import json
import pathlib
import signal
import subprocess
import sys
import textwrap
from typing import Any, Dict, List

import pytest

import pi_agent

from conftest import MockServer

# The child: opens the session, prompts "r1", prints each record; its tool prints
# TOOL_STARTED and sleeps (the parent kills it there).
CHILD = textwrap.dedent(
    """
    import json, sys, time
    import pi_agent

    db, url = sys.argv[1], sys.argv[2]
    model = pi_agent.Model.from_dict({"id": "mock-gpt", "api": "openai-completions",
                                      "provider": "openai", "baseUrl": url})

    def out(line: str) -> None:
        # one write per line: print() writes the text and the newline apart, and the tool's
        # thread and the main one print at once
        sys.stdout.write(line + "\\n")
        sys.stdout.flush()

    def wait() -> str:
        out("TOOL_STARTED")
        time.sleep(60)
        return "waited"

    tool = pi_agent.Tool("wait", "Waits", {"type": "object"}, wait)
    session = pi_agent.Session(db, "py-session", model, tools=[tool],
                               settings={"streamOptions": {"apiKey": "test-key"}})
    records = session.subscribe(0)
    session.prompt("r1", "hello")
    for record in records:
        out("RECORD " + json.dumps(record))
    """
)


def start_and_kill(db: pathlib.Path, url: str, done: Any) -> List[Dict[str, Any]]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), url], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    records: List[Dict[str, Any]] = []
    lines: List[str] = []
    try:
        for line in child.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if line.startswith("RECORD "):
                records.append(json.loads(line[len("RECORD ") :]))
            if done(lines, records):
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    return records


def resume(db: pathlib.Path, model: pi_agent.Model, replay_safe: bool) -> pi_agent.Session:
    tool = pi_agent.Tool(
        "wait", "Waits", {"type": "object"}, lambda: "ran again", replay_safe=replay_safe
    )
    return pi_agent.Session(
        db,
        "py-session",
        model,
        tools=[tool],
        settings={"streamOptions": {"apiKey": "test-key"}},
    )


def drain(subscription: pi_agent.SessionSubscription, until: int) -> List[Dict[str, Any]]:
    out = []
    while subscription.cursor < until:
        record = subscription.next(timeout=30)
        assert record is not None
        out.append(record)
    return out


def test_records_have_the_shared_shape_and_requests_apply_once(
    mock_server: MockServer, tmp_path: pathlib.Path
) -> None:
    mock_server.push({"text": "Hello there"})
    model = mock_server.model()
    settings = {"streamOptions": {"apiKey": "test-key"}}
    with pi_agent.Session(tmp_path / "s.db", "s", model, settings=settings) as session:
        first = session.prompt("r1", "hi")
        assert first == {"requestId": "r1", "kind": "prompt", "seq": 0}
        assert session.prompt("r1", "hi") == first
        assert session.wait_idle(timeout=30)
        records = drain(session.subscribe(0), session.last_seq)
        assert records[0] == {"seq": 1, "attempt": 0, "event": {"type": "agent_start"}}
        kinds = [r["event"]["type"] for r in records]
        assert "message_update" in kinds and kinds[-1] == "agent_end"
        assert drain(session.subscribe(3), session.last_seq) == records[3:]
        transcript = session.transcript()
        assert [m["role"] for m in transcript] == ["user", "assistant"]
        # A record's event (raw JSON in the journal) arrives as the dict it was written as,
        # nested values and key order included.
        ends = [r["event"] for r in records if r["event"]["type"] == "message_end"]
        assert [end["message"] for end in ends] == transcript
        assert all(isinstance(r["event"], dict) for r in records)
        assert list(ends[-1]["message"]) == list(transcript[-1])
        assert json.dumps(ends[-1]) == json.dumps({"type": "message_end", "message": transcript[-1]})
        with pytest.raises(pi_agent.SessionError):
            session.steer("r1", "x")
        with pytest.raises(ValueError):
            session.prompt("", "x")
    assert len(mock_server.requests()) == 1


def test_a_tool_that_waits_for_its_own_session_is_refused(
    mock_server: MockServer, tmp_path: pathlib.Path
) -> None:
    mock_server.push(
        {"tool_calls": [{"id": "call-1", "name": "wait_for_me", "arguments": {}}]},
        {"text": "done"},
    )
    sessions: List[pi_agent.Session] = []
    refused: List[str] = []

    def wait_for_me() -> str:
        for what in (lambda: sessions[0].wait_idle(timeout=30), sessions[0].compact):
            try:
                what()
            except pi_agent.PiError as error:
                refused.append(str(error))
        return "asked"

    tool = pi_agent.Tool("wait_for_me", "Waits for its own session", {"type": "object"}, wait_for_me)
    settings = {"streamOptions": {"apiKey": "test-key"}}
    with pi_agent.Session(tmp_path / "s.db", "s", mock_server.model(), tools=[tool], settings=settings) as session:
        sessions.append(session)
        session.prompt("r1", "hi")
        assert session.wait_idle(timeout=60)
        assert [m["role"] for m in session.transcript()] == ["user", "assistant", "toolResult", "assistant"]
    assert len(refused) == 2, refused
    assert all("inside the session's own run" in text for text in refused), refused


@pytest.mark.parametrize("replay_safe", [False, True])
def test_killed_mid_tool_resumes(
    mock_server: MockServer, tmp_path: pathlib.Path, replay_safe: bool
) -> None:
    mock_server.push(
        {"tool_calls": [{"id": "call-1", "name": "wait", "arguments": {}}]},
        {"text": "after the tool"},
    )
    db = tmp_path / "tool.db"
    seen = start_and_kill(
        db,
        mock_server.url,
        lambda lines, records: "TOOL_STARTED" in lines
        and any(r["event"]["type"] == "tool_execution_start" for r in records),
    )
    cursor = seen[-1]["seq"]
    session = resume(db, mock_server.model(), replay_safe)
    assert session.prompt("r1", "hello")["seq"] == 0  # the first receipt: no second run
    assert session.wait_idle(timeout=60)
    records = drain(session.subscribe(cursor), session.last_seq)
    assert records[0]["seq"] == cursor + 1
    transcript = session.transcript()
    assert [m["role"] for m in transcript] == ["user", "assistant", "toolResult", "assistant"]
    result = transcript[2]
    if replay_safe:
        assert result["isError"] is False
        assert result["content"][0]["text"] == "ran again"
    else:
        assert result["isError"] is True
        assert result["content"][0]["text"].startswith("Tool execution was interrupted")
        assert result["details"] == {"interrupted": True}
    assert transcript[3]["content"][0]["text"] == "after the tool"
    session.close()


def test_killed_mid_stream_is_redone_as_the_next_attempt(
    mock_server: MockServer, tmp_path: pathlib.Path
) -> None:
    mock_server.push(
        {"text": "token " * 100, "delta_size": 6, "delay_ms": 30},
        {"text": "the whole answer"},
    )
    db = tmp_path / "stream.db"
    seen = start_and_kill(
        db,
        mock_server.url,
        lambda lines, records: sum(r["event"]["type"] == "message_update" for r in records) >= 5,
    )
    cursor = seen[-1]["seq"]
    # Another reader follows the file from where the killed client was.
    follower = pi_agent.Session.follow(db, "py-session", cursor)
    session = resume(db, mock_server.model(), False)
    assert session.wait_idle(timeout=60)
    records = drain(follower, session.last_seq)
    assert records[0]["seq"] == cursor + 1
    assert records[0]["event"]["type"] == "message_start"
    assert records[0]["attempt"] == 1
    assert all(r["attempt"] == 0 for r in seen)
    transcript = session.transcript()
    assert len(transcript) == 2
    assert transcript[1]["content"][0]["text"] == "the whole answer"
    session.close()


def test_a_session_open_in_one_handle_is_refused_in_another(
    mock_server: MockServer, tmp_path: pathlib.Path
) -> None:
    """One handle drives a session at a time: a second `Session` on the same file and id is
    refused (it would resume a tool call the first is still running); other ids are free, and
    closing the first frees it."""
    model = mock_server.model()
    db = tmp_path / "s.db"
    with pi_agent.Session(db, "one", model) as first:
        with pytest.raises(pi_agent.SessionInUseError, match="is open in another handle"):
            pi_agent.Session(db, "one", model)
        with pi_agent.Session(db, "two", model):
            pass
        first.close()
        with pi_agent.Session(db, "one", model):
            pass


def test_a_session_is_listed_and_deleted(mock_server: MockServer, tmp_path: pathlib.Path) -> None:
    """`Session.sessions` lists a file's sessions; `Session.delete` is refused while a handle
    has the session open, then its journal goes and the id opens as a new session."""
    mock_server.push({"text": "Hello there"})
    model = mock_server.model()
    settings = {"streamOptions": {"apiKey": "test-key"}}
    db = tmp_path / "s.db"
    with pi_agent.Session(db, "doomed", model, settings=settings) as session:
        session.prompt("r1", "hi")
        assert session.wait_idle(timeout=30)
        assert pi_agent.Session.sessions(db) == ["doomed"]
        with pytest.raises(pi_agent.SessionInUseError, match="is open in another handle"):
            pi_agent.Session.delete(db, "doomed")
        assert isinstance(pi_agent.SessionInUseError("x"), pi_agent.SessionError)
    assert pi_agent.Session.delete(str(db), "doomed") is True
    assert pi_agent.Session.sessions(db) == []
    assert pi_agent.Session.delete(db, "doomed") is False
    with pytest.raises(ValueError):
        pi_agent.Session.delete(db, "")
    with pytest.raises(pi_agent.SessionError, match="no session database"):
        pi_agent.Session.sessions(tmp_path / "typo.db")
    with pi_agent.Session(db, "doomed", model, settings=settings) as fresh:
        assert fresh.transcript() == [] and fresh.last_seq == 0


def test_following_a_database_that_is_not_there_is_an_error(tmp_path: pathlib.Path) -> None:
    """A mistyped path is an error, not a new empty database followed for ever."""
    missing = tmp_path / "typo.db"
    with pytest.raises(pi_agent.SessionError, match="no session database"):
        pi_agent.Session.follow(missing, "s")
    assert not missing.exists()


def test_a_database_of_a_later_schema_is_refused(mock_server: MockServer, tmp_path: pathlib.Path) -> None:
    """A session file written by a later pi-agent (its `user_version`) is refused, not misread."""
    import sqlite3

    db = tmp_path / "later.db"
    with pi_agent.Session(db, "s", mock_server.model()):
        pass
    connection = sqlite3.connect(db)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == 1
    connection.execute("PRAGMA user_version = 2")
    connection.commit()
    connection.close()
    with pytest.raises(pi_agent.SessionError, match="written by a later pi-agent"):
        pi_agent.Session(db, "s", mock_server.model())
