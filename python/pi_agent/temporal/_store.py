"""The session store a worker keeps beside Temporal: what must not travel by value through a
workflow's history. One SQLite file (WAL, so worker processes and clients on one machine share
it; on several machines, a shared volume or your own ``Store``):

- **blobs**: the large parts of messages (a text, thinking or image block, a tool call's
  arguments over ``inline_limit`` bytes), content-addressed. A workflow, its history and its
  queries hold the *slim* message: the block's text becomes a reference
  (``"\\x00pi-agent-ref:sha256:<hex>:<bytes>"``) that ``expand`` turns back.
- **transcripts**: versions of a session's (slim) transcript as a chain: each version is its
  parent's key plus the messages added since, so a model call's input is a key and a delta,
  and history grows with what is new, never with the whole transcript.
- **events**: a session's live events, numbered ``seq`` 1, 2, ... in the order they were
  appended, each with the ``attempt`` of the step that produced it; an append names its
  origin, so a step that runs again (a replayed local activity) does not add its events twice.

No Temporal import: the worker's activities and the client-side handle both use it."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import sqlite3
import threading
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

REF_PREFIX = "\x00pi-agent-ref:sha256:"
DEFAULT_INLINE_LIMIT = 16 * 1024
"""Blocks (and tool-call arguments) larger than this many bytes go to the blob table."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS blobs (key TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS transcripts (
    key TEXT PRIMARY KEY, parent TEXT, messages TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL, seq INTEGER NOT NULL, attempt INTEGER NOT NULL,
    origin TEXT NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (session, seq), UNIQUE (session, origin));
"""

_ARGS_KEY = "__piAgentRef"

# Seconds a statement waits for another connection's lock (sqlite3's busy timeout).
_BUSY_TIMEOUT = 60.0


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another connection holds the lock it needs.

    Processes that open a new store at once (the workers of one task queue) each switch the
    file from rollback to WAL mode; SQLite answers "database is locked" at once, without its
    busy timeout, to the one that would otherwise wait in a deadlock (in one round of four
    openers in 13). Once the file is in WAL mode the pragma changes nothing and takes no lock.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT
    pause = 0.001
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def default_store_path() -> pathlib.Path:
    """``$PI_AGENT_TEMPORAL_STORE``, else ``$XDG_STATE_HOME/pi-agent/temporal.sqlite``
    (``~/.local/state/...``)."""
    explicit = os.environ.get("PI_AGENT_TEMPORAL_STORE")
    if explicit:
        return pathlib.Path(explicit)
    state = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(state) / "pi-agent" / "temporal.sqlite"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class StoreError(Exception):
    """A reference the store cannot resolve (a blob or transcript version it does not hold:
    the worker and the client do not share one store)."""


class SessionStore:
    """A SQLite session store (see the module docstring); thread-safe, one connection."""

    def __init__(self, path: Union[str, "os.PathLike[str]", None] = None, *, inline_limit: int = DEFAULT_INLINE_LIMIT) -> None:
        self.path = pathlib.Path(path) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            # Transcripts are private: the file is the owner's only.
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        self.inline_limit = inline_limit
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=_BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        try:
            _switch_to_wal(self._db)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        """Closes the connection."""
        with self._lock:
            self._db.close()

    # -- blobs ----------------------------------------------------------------------------------

    def _put_blob(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO blobs (key, data) VALUES (?, ?)", (digest, data))
        return f"{REF_PREFIX}{digest}:{len(data)}"

    def _get_blob(self, ref: str) -> bytes:
        digest = ref[len(REF_PREFIX):].split(":", 1)[0]
        with self._lock:
            row = self._db.execute("SELECT data FROM blobs WHERE key = ?", (digest,)).fetchone()
        if row is None:
            raise StoreError(f"blob {digest} is not in the session store {self.path}")
        return bytes(row[0])

    def _slim_text(self, text: str) -> str:
        data = text.encode("utf-8")
        return self._put_blob(data) if len(data) > self.inline_limit else text

    def _expand_text(self, text: str) -> str:
        return self._get_blob(text).decode("utf-8") if is_ref(text) else text

    def slim(self, message: Dict[str, Any]) -> Dict[str, Any]:
        """``message`` with its large blocks stored here and replaced by references (a new dict;
        small messages come back equal)."""
        content = message.get("content")
        if not isinstance(content, list):
            if isinstance(content, str) and len(content) > self.inline_limit:
                return {**message, "content": self._slim_text(content)}
            return message
        blocks = [self._slim_block(block) for block in content]
        return {**message, "content": blocks}

    def _slim_block(self, block: Dict[str, Any]) -> Dict[str, Any]:
        kind = block.get("type")
        field = {"text": "text", "thinking": "thinking", "image": "data"}.get(str(kind))
        if field is not None and isinstance(block.get(field), str):
            return {**block, field: self._slim_text(block[field])}
        if kind == "toolCall" and "arguments" in block:
            return {**block, "arguments": self.slim_json(block["arguments"])}
        return block

    def slim_json(self, value: Any) -> Any:
        """A JSON value (tool arguments), or a reference to it when it is large
        (``expand_value`` turns it back)."""
        encoded = _dumps(value)
        if len(encoded.encode("utf-8")) > self.inline_limit:
            return {_ARGS_KEY: self._put_blob(encoded.encode("utf-8"))}
        return value

    def expand(self, message: Dict[str, Any]) -> Dict[str, Any]:
        """The full message of a slim one (references resolved)."""
        content = message.get("content")
        if isinstance(content, str):
            return {**message, "content": self._expand_text(content)} if is_ref(content) else message
        if not isinstance(content, list):
            return message
        return {**message, "content": [self._expand_block(block) for block in content]}

    def _expand_block(self, block: Dict[str, Any]) -> Dict[str, Any]:
        kind = block.get("type")
        field = {"text": "text", "thinking": "thinking", "image": "data"}.get(str(kind))
        if field is not None and is_ref(block.get(field)):
            return {**block, field: self._expand_text(block[field])}
        arguments = block.get("arguments")
        if kind == "toolCall" and isinstance(arguments, dict) and set(arguments) == {_ARGS_KEY}:
            return {**block, "arguments": json.loads(self._expand_text(arguments[_ARGS_KEY]))}
        return block

    def expand_value(self, value: Any) -> Any:
        """``value`` (an event, a list of messages, ...) with every message in it expanded."""
        if isinstance(value, list):
            return [self.expand_value(item) for item in value]
        if isinstance(value, dict):
            if set(value) == {_ARGS_KEY} and is_ref(value[_ARGS_KEY]):
                return json.loads(self._expand_text(value[_ARGS_KEY]))
            if "role" in value and "content" in value:
                return self.expand(value)
            if value.get("type") in ("text", "thinking", "image", "toolCall"):
                # A content block outside a message: a tool result's in `tool_execution_end`.
                return self._expand_block(value)
            return {key: self.expand_value(item) for key, item in value.items()}
        return value

    # -- transcripts ----------------------------------------------------------------------------

    def save_version(self, key: str, parent: Optional[str], messages: List[Dict[str, Any]]) -> None:
        """Records transcript version ``key``: ``parent``'s messages, then ``messages`` (slim).
        Idempotent: a version is written once and never changes."""
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO transcripts (key, parent, messages) VALUES (?, ?, ?)",
                (key, parent, _dumps(messages)),
            )

    def load_version(self, key: Optional[str]) -> List[Dict[str, Any]]:
        """The slim transcript of version ``key`` (``None``: empty)."""
        chunks: List[List[Dict[str, Any]]] = []
        with self._lock:
            while key is not None:
                row = self._db.execute("SELECT parent, messages FROM transcripts WHERE key = ?", (key,)).fetchone()
                if row is None:
                    raise StoreError(f"transcript version {key} is not in the session store {self.path}")
                chunks.append(json.loads(row[1]))
                key = row[0]
        return [message for chunk in reversed(chunks) for message in chunk]

    # -- events ---------------------------------------------------------------------------------

    def append_events(self, session: str, origin: str, attempt: int, events: Iterable[Dict[str, Any]]) -> None:
        """Appends ``events`` to ``session``'s log, numbered after its last; ``origin`` names
        the batch (each event gets ``origin:index``), so appending the same batch twice adds
        nothing."""
        rows = [(f"{origin}:{index}", _dumps(event)) for index, event in enumerate(events)]
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                (last,) = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session = ?", (session,)).fetchone()
                for row_origin, event in rows:
                    inserted = self._db.execute(
                        "INSERT OR IGNORE INTO events (session, seq, attempt, origin, event) VALUES (?, ?, ?, ?, ?)",
                        (session, last + 1, attempt, row_origin, event),
                    ).rowcount
                    last += inserted
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def read_events(self, session: str, after: int = 0, limit: int = 1000) -> List[Dict[str, Any]]:
        """``session``'s events with ``seq > after``, in order, as ``{"seq", "attempt",
        "event"}`` (the event slim: see ``expand_value``)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, attempt, event FROM events WHERE session = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session, after, limit),
            ).fetchall()
        return [{"seq": seq, "attempt": attempt, "event": json.loads(event)} for seq, attempt, event in rows]


def is_ref(value: Any) -> bool:
    """Whether ``value`` is a blob reference."""
    return isinstance(value, str) and value.startswith(REF_PREFIX)


__all__: Tuple[str, ...] = ("SessionStore", "StoreError", "default_store_path", "is_ref")
