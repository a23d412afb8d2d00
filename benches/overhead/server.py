"""A local OpenAI Chat Completions server for the overhead benchmark: every frame it sends
carries the CLOCK_MONOTONIC nanoseconds read just before it is written, as the delta's text,
so a client on the same machine can tell how long the frame took to reach its user.

    python3 server.py            prints the port on its first line, then serves until killed

The request's `model` says what to send (clients need no other knob):

- ``paced-N-US``: N content frames, one every US microseconds, each delta ``"<ns> "``;
- ``burst-N``: N frames of ``"word "`` written at once (for CPU per frame);

then a ``finish_reason: "stop"`` chunk and ``data: [DONE]``. The body ends with the
connection (``Connection: close``), as many servers stream.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time

HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"connection: close\r\n\r\n"
)
PREFIX = b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"'
SUFFIX = b'"},"finish_reason":null}]}\n\n'
END = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return body


def handle(conn: socket.socket) -> None:
    try:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        body = read_request(conn)
        if not body:
            return
        model = str(json.loads(body).get("model", "paced-10-1000"))
        kind, *args = model.split("-")
        if kind == "burst":
            frames = int(args[0])
            conn.sendall(HEAD + (PREFIX + b"word " + SUFFIX) * frames + END)
            return
        frames, interval = int(args[0]), int(args[1]) / 1e6
        conn.sendall(HEAD)
        monotonic_ns = time.monotonic_ns
        for frame in range(frames):
            if frame:  # the first frame goes at once: time to first event is the client's
                time.sleep(interval)
            conn.sendall(PREFIX + str(monotonic_ns()).encode() + b" " + SUFFIX)
        conn.sendall(END)
    except OSError:
        pass
    finally:
        conn.close()


def main() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    listener.listen(1024)
    print(listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
