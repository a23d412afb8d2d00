"""Amazon Bedrock (``bedrock-converse-stream``) through the Python binding, against
pi-mock-server serving binary ``application/vnd.amazon.eventstream`` bodies.

``tests/fixtures/bedrock/<case>.eventstream`` is what the mock server sends (encoded by the AWS
SDK's codec); ``<case>.pi.json`` is what pi 0.73.1 emitted and sent for it, with the model, the
AWS variables, the call, the context and the options it was given (``record-pi.mjs``). The
dicts Python receives and the final message must be pi's after the normalisation the Rust replay
(``core/tests/bedrock.rs``) applies; the request must be pi's (path, JSON body) and signed the
way pi signed it, without ever carrying the secret key.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import struct
from typing import Any, Dict, List, Optional, Tuple

import pytest

import pi_agent

from conftest import MockServer

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "bedrock"
CASES = ["thinking_text_tool_use", "text_max_tokens", "throttled_mid_stream"]
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


def recording(case: str) -> Dict[str, Any]:
    return json.loads((FIXTURES / f"{case}.pi.json").read_text(encoding="utf-8"))


def body(case: str) -> bytes:
    return (FIXTURES / f"{case}.eventstream").read_bytes()


def reply(data: bytes, **shaping: Any) -> Dict[str, Any]:
    return {
        "bytes_b64": [base64.b64encode(data).decode()],
        "headers": {"content-type": "application/vnd.amazon.eventstream"},
        **shaping,
    }


def aws_environment(monkeypatch: pytest.MonkeyPatch, variables: Dict[str, str]) -> None:
    """Exactly ``variables`` as the AWS environment: no ambient ``AWS_*`` variable, no
    ``~/.aws`` files."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", "/nonexistent-home")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def keyword_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """pi's option names as pi_agent keywords (``maxTokens`` -> ``max_tokens``)."""
    out = {}
    for key, value in options.items():
        out["".join("_" + c.lower() if c.isupper() else c for c in key)] = value
    return out


def catalog_model(model_id: str, server: MockServer) -> pi_agent.Model:
    model = pi_agent.get_model("amazon-bedrock", model_id)
    assert model is not None, model_id
    # An explicit Bedrock endpoint: the mock server's origin, no `/v1`.
    return model.replace(base_url=f"http://127.0.0.1:{server.port}")


def run(
    server: MockServer, pi: Dict[str, Any], served: Dict[str, Any]
) -> Tuple[List[Dict[str, Any]], Dict[str, Any], List[Dict[str, Any]]]:
    """Streams pi's call against ``served``; returns the event dicts, the final message and the
    requests the mock server received."""
    server.push(served)
    open_stream = pi_agent.stream_simple if pi["call"] == "streamSimple" else pi_agent.stream
    events = []
    with open_stream(catalog_model(pi["model"], server), pi["context"], **keyword_options(pi["options"])) as stream:
        for event in stream:
            events.append(event)
        result = stream.result_sync()
    return events, result, server.requests()


# What pi's recordings leave out (record-pi.mjs), and our documented additions (README,
# "Differences from pi", difference 1), as `normalise` in core/tests/support/pi_fixtures.rs.
EVENT_SNAPSHOTS = ("partial", "message", "error")
OUR_EVENT_EXTRAS = {
    "toolcall_start": ("id", "toolName"),
    "text_end": ("contentSignature",),
    "thinking_end": ("contentSignature",),
}


def comparable_event(event: Dict[str, Any]) -> Dict[str, Any]:
    kept = {k: v for k, v in event.items() if k not in EVENT_SNAPSHOTS}
    for key in OUR_EVENT_EXTRAS.get(event["type"], ()):
        kept.pop(key, None)
    return kept


def comparable_message(message: Dict[str, Any]) -> Dict[str, Any]:
    """Our message without what pi's recording cannot compare: the wall-clock ``timestamp``
    (the recorder dropped pi's), the measured ``timing`` and the machine-readable ``errorKind``,
    ``httpStatus``, ``retryAfterMs`` (pi has none)."""
    ours_only = ("timestamp", "timing", "errorKind", "httpStatus", "retryAfterMs")
    return {k: v for k, v in message.items() if k not in ours_only}


def assert_same_json(ours: Any, pi: Any, where: str) -> None:
    """Equal as JSON (``0`` and ``0.0`` are the same number), objects with pi's key order."""
    if isinstance(pi, dict):
        assert isinstance(ours, dict), f"{where}: {ours!r} vs {pi!r}"
        assert list(ours) == list(pi), f"{where}: keys {list(ours)} vs pi's {list(pi)}"
        for key in pi:
            assert_same_json(ours[key], pi[key], f"{where}/{key}")
    elif isinstance(pi, list):
        assert isinstance(ours, list) and len(ours) == len(pi), f"{where}: {ours!r} vs {pi!r}"
        for i, (a, b) in enumerate(zip(ours, pi)):
            assert_same_json(a, b, f"{where}/{i}")
    elif isinstance(pi, (int, float)) and not isinstance(pi, bool):
        assert isinstance(ours, (int, float)) and not isinstance(ours, bool), f"{where}: {ours!r} vs {pi!r}"
        assert float(ours) == float(pi), f"{where}: {ours!r} vs {pi!r}"
    else:
        assert type(ours) is type(pi) and ours == pi, f"{where}: {ours!r} vs {pi!r}"


def header(request: Dict[str, Any], name: str) -> Optional[str]:
    values = [value for key, value in request["headers"] if key.lower() == name]
    return ", ".join(values) if values else None


def credential_scope(authorization: str) -> List[str]:
    """``AKID/<date>/<region>/bedrock/aws4_request`` with the date (the day of the request)
    left out."""
    credential = authorization.split("Credential=")[1].split(",")[0]
    parts = credential.split("/")
    return [parts[0]] + parts[2:]


def with_alternating_roles(body: Dict[str, Any]) -> Dict[str, Any]:
    """pi's request with each run of same-role messages joined into one, as ours are (Converse
    refuses roles that do not alternate: README "Differences from pi", item 43)."""
    joined: List[Dict[str, Any]] = []
    for message in body.get("messages", []):
        if joined and joined[-1]["role"] == message["role"]:
            joined[-1] = {**joined[-1], "content": joined[-1]["content"] + message["content"]}
        else:
            joined.append(message)
    return {**body, "messages": joined}


def assert_request_like_pis(request: Dict[str, Any], pi: Dict[str, Any], case: str) -> None:
    expected = pi["request"]
    assert request["method"] == "POST"
    assert request["path"] == expected["path"], case
    assert request["body"] == with_alternating_roles(expected["body"]), case
    assert header(request, "content-type") == expected["contentType"], case
    authorization = header(request, "authorization")
    assert authorization is not None, case
    if expected["authorization"].startswith("Bearer "):
        assert authorization == expected["authorization"], case
    else:
        # SigV4 with the example access key id, for pi's region; our signed header set is
        # smaller than the JS SDK's (no SDK bookkeeping headers), the signature is hex.
        assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), authorization
        assert credential_scope(authorization) == credential_scope(expected["authorization"]), case
        signature = authorization.rsplit("Signature=", 1)[1]
        assert len(signature) == 64 and all(c in "0123456789abcdef" for c in signature), authorization
        assert header(request, "x-amz-date") is not None
        assert len(header(request, "x-amz-content-sha256") or "") == 64
        session = pi["env"].get("AWS_SESSION_TOKEN")
        assert header(request, "x-amz-security-token") == session, case
        assert ("x-amz-security-token" in expected["signedHeaders"]) == (session is not None)
    # The secret key signs; it is never sent.
    for name, value in request["headers"]:
        assert SECRET_KEY not in value, f"{case}: {name}"
    assert SECRET_KEY not in json.dumps(request["body"])


@pytest.mark.parametrize("case", CASES)
def test_same_events_message_and_request_as_pi(
    case: str, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pi = recording(case)
    aws_environment(monkeypatch, pi["env"])
    events, result, requests = run(mock_server, pi, reply(body(case)))
    assert [e["type"] for e in events] == [e["type"] for e in pi["events"]], case
    for i, (ours, theirs) in enumerate(zip(events, pi["events"])):
        assert_same_json(comparable_event(ours), theirs, f"{case} /events/{i}")
    # The terminal event carries the final message, as pi's does.
    terminal = events[-1]["message" if events[-1]["type"] == "done" else "error"]
    assert terminal == result
    assert_same_json(comparable_message(result), pi["message"], f"{case} /message")
    assert len(requests) == 1, case
    assert_request_like_pis(requests[0], pi, case)
    assert SECRET_KEY not in json.dumps([events, result])


def test_any_chunk_boundaries_give_the_same_events(mock_server: MockServer, monkeypatch: pytest.MonkeyPatch) -> None:
    case = "thinking_text_tool_use"
    pi = recording(case)
    aws_environment(monkeypatch, pi["env"])
    for shaping in ({"split": 1}, {"split_random": 7}):
        mock_server.reset()
        events, result, _ = run(mock_server, pi, reply(body(case), **shaping))
        assert_same_json([comparable_event(e) for e in events], pi["events"], f"{case} {shaping}")
        assert_same_json(comparable_message(result), pi["message"], f"{case} {shaping}")


def frames(data: bytes) -> List[bytes]:
    """Splits an eventstream body into its frames (each starts with its total length)."""
    out = []
    while data:
        (length,) = struct.unpack(">I", data[:4])
        out.append(data[:length])
        data = data[length:]
    return out


def test_a_corrupted_frame_is_an_error_event_keeping_partial_text(
    mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = "text_max_tokens"
    pi = recording(case)
    aws_environment(monkeypatch, pi["env"])
    parts = frames(body(case))
    # Frame 2 is the second text delta: flip one payload bit, so its message CRC no longer
    # matches (the prelude, and so the framing, stays intact).
    bad = bytearray(parts[2])
    bad[-8] ^= 0x20
    corrupted = b"".join(parts[:2]) + bytes(bad) + b"".join(parts[3:])
    events, result, _ = run(mock_server, pi, reply(corrupted, split_random=11))
    assert [e["type"] for e in events] == ["start", "text_start", "text_delta", "error"]
    assert events[2]["delta"] == "Nova here: "
    assert events[-1]["reason"] == "error"
    assert events[-1]["error"] == result
    assert result["stopReason"] == "error"
    assert result["content"] == [{"type": "text", "text": "Nova here: "}]
    assert result["errorMessage"].startswith("corrupted eventstream frame: message CRC mismatch"), result


IMDS_TOKEN = "imds-session-token-SECRET-py"
IMDS_SECRET = "imds/secret/KEY+5555555555555555555555"


class _Imds:
    """An EC2 instance metadata stand-in (IMDSv2: session token, then role, then keys) on
    127.0.0.1."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.seen: List[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def answer(self, status: int, text: str, headers: Optional[Dict[str, str]] = None) -> None:
                data = text.encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self) -> None:
                outer.seen.append("PUT " + self.path)
                if self.path == "/latest/api/token" and self.headers.get("x-aws-ec2-metadata-token-ttl-seconds"):
                    self.answer(200, IMDS_TOKEN, {"x-aws-ec2-metadata-token-ttl-seconds": "21600"})
                else:
                    self.answer(400, "")

            def do_GET(self) -> None:
                outer.seen.append("GET " + self.path)
                if self.headers.get("x-aws-ec2-metadata-token") != IMDS_TOKEN:
                    self.answer(401, "")
                elif self.path == "/latest/meta-data/iam/security-credentials/":
                    self.answer(200, "py-role")
                elif self.path == "/latest/meta-data/iam/security-credentials/py-role":
                    self.answer(
                        200,
                        json.dumps(
                            {
                                "Code": "Success",
                                "Type": "AWS-HMAC",
                                "AccessKeyId": "ASIAIMDSPY",
                                "SecretAccessKey": IMDS_SECRET,
                                "Token": "imds-py-session",
                                "Expiration": "2099-01-01T00:00:00Z",
                                "LastUpdated": "2026-01-01T00:00:00Z",
                            }
                        ),
                    )
                else:
                    self.answer(404, "")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_instance_metadata_credentials_sign_the_request(
    mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The AWS credential chain through Python: on EC2, IMDSv2 (a local stand-in) gives the
    credentials the request is signed with; with no source the message is an ``auth`` error
    naming the sources tried, never holding a secret."""
    server = mock_server
    imds = _Imds()
    try:
        aws_environment(
            monkeypatch,
            {"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.url},
        )
        # Instance metadata cannot be known without asking it: no marker.
        assert pi_agent.get_env_api_key("amazon-bedrock") is None
        server.push(reply(body("text_max_tokens")))
        model = catalog_model("amazon.nova-lite-v1:0", server)
        message = pi_agent.complete_sync(model, {"messages": [{"role": "user", "content": "hi", "timestamp": 1}]}, max_retries=0)
        assert message["stopReason"] == "length", message
        (request,) = server.requests()
        authorization = header(request, "authorization") or ""
        assert authorization.startswith("AWS4-HMAC-SHA256 Credential=ASIAIMDSPY/"), authorization
        assert header(request, "x-amz-security-token") == "imds-py-session"
        assert "PUT /latest/api/token" in imds.seen
        assert IMDS_SECRET not in json.dumps(message) and IMDS_TOKEN not in json.dumps(message)

        # No source: IMDS switched off, nothing else configured.
        server.reset()
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        failed = pi_agent.complete_sync(model, {"messages": [{"role": "user", "content": "hi", "timestamp": 1}]}, max_retries=0)
        assert failed["stopReason"] == "error"
        assert failed["errorKind"] == "auth", failed
        for source in ("environment", "profile `default`", "web identity", "ECS container endpoint", "EC2 instance metadata"):
            assert source in failed["errorMessage"], failed["errorMessage"]
        assert server.requests() == []
    finally:
        imds.close()


WEB_TOKEN = "eyJhbGciOi.web-identity-SECRET-py.jwt"
STS_SECRET = "sts/secret/KEY+7777777777777777777777"
BASE_SECRET = "base/secret/KEY+8888888888888888888888"


class _Sts:
    """An STS stand-in on 127.0.0.1 answering ``AssumeRoleWithWebIdentity`` (for the token in
    ``WEB_TOKEN``) and ``AssumeRole`` (signed with the source profile's key ``AKIABASEPY``)."""

    def __init__(self) -> None:
        import http.server
        import threading
        import urllib.parse

        self.actions: List[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                action = form.get("Action", "")
                outer.actions.append(action)
                if action == "AssumeRoleWithWebIdentity" and form.get("WebIdentityToken") == WEB_TOKEN:
                    key, token = "ASIAWEBPY", "web-py-session"
                elif action == "AssumeRole" and "Credential=AKIABASEPY/" in (self.headers.get("authorization") or ""):
                    key, token = "ASIAROLEPY", "role-py-session"
                else:
                    self.send_response(403)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                data = (
                    f'<{action}Response xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><{action}Result>'
                    f"<Credentials><AccessKeyId>{key}</AccessKeyId><SecretAccessKey>{STS_SECRET}</SecretAccessKey>"
                    f"<SessionToken>{token}</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>"
                    "<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn>"
                    "<AssumedRoleId>AROAEXAMPLE:s</AssumedRoleId></AssumedRoleUser>"
                    f"</{action}Result></{action}Response>"
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "text/xml")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_web_identity_and_assume_role_sign_the_request(
    mock_server: MockServer, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """Web identity (EKS IRSA: a token file exchanged at STS) and an assume-role profile chain
    (``role_arn`` + ``source_profile``) through Python, against an STS stand-in; the second
    takes its region from the profile (no ``AWS_REGION``: the SDK's profile region provider).
    No secret reaches the message."""
    server = mock_server
    sts = _Sts()
    model = catalog_model("amazon.nova-lite-v1:0", server)
    context: Dict[str, Any] = {"messages": [{"role": "user", "content": "hi", "timestamp": 1}]}
    try:
        token_file = tmp_path / "web-identity-token"
        token_file.write_text(WEB_TOKEN)
        aws_environment(
            monkeypatch,
            {
                "AWS_REGION": "us-east-1",
                "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_WEB_IDENTITY_TOKEN_FILE": str(token_file),
                "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/web",
                "AWS_ROLE_SESSION_NAME": "pi-agent-py",
                "AWS_ENDPOINT_URL_STS": sts.url,
            },
        )
        assert pi_agent.get_env_api_key("amazon-bedrock") == "<authenticated>"
        server.push(reply(body("text_max_tokens")))
        message = pi_agent.complete_sync(model, context, max_retries=0)
        assert message["stopReason"] == "length", message
        (request,) = server.requests()
        authorization = header(request, "authorization") or ""
        assert authorization.startswith("AWS4-HMAC-SHA256 Credential=ASIAWEBPY/"), authorization
        assert "/us-east-1/bedrock/aws4_request" in authorization
        assert header(request, "x-amz-security-token") == "web-py-session"

        config = tmp_path / "config"
        config.write_text(
            "[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/dev\nsource_profile = base\n"
            "region = eu-west-3\n\n"
            f"[profile base]\naws_access_key_id = AKIABASEPY\naws_secret_access_key = {BASE_SECRET}\n"
        )
        server.reset()
        aws_environment(
            monkeypatch,
            {
                "AWS_PROFILE": "dev",
                "AWS_CONFIG_FILE": str(config),
                "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_ENDPOINT_URL_STS": sts.url,
            },
        )
        assert pi_agent.get_env_api_key("amazon-bedrock") == "<authenticated>"
        server.push(reply(body("text_max_tokens")))
        message = pi_agent.complete_sync(model, context, max_retries=0)
        assert message["stopReason"] == "length", message
        (request,) = server.requests()
        authorization = header(request, "authorization") or ""
        assert authorization.startswith("AWS4-HMAC-SHA256 Credential=ASIAROLEPY/"), authorization
        assert "/eu-west-3/bedrock/aws4_request" in authorization, authorization
        assert header(request, "x-amz-security-token") == "role-py-session"
        assert sts.actions == ["AssumeRoleWithWebIdentity", "AssumeRole"]
        for secret in (WEB_TOKEN, STS_SECRET, BASE_SECRET):
            assert secret not in json.dumps(message)
    finally:
        sts.close()
