"""Google Vertex AI with Application Default Credentials through the Python binding: a service
account JSON file (``tests/fixtures/google-vertex/service_account.json``) whose token endpoint is
pi-mock-server, then pi's recorded Vertex transcript ``text_then_tool_call``.

pi's recording was made with an API key; here the same model, context and options (without the
key) must give pi's events, final message and request body, with the access token the mock's
token endpoint handed out as the bearer token in place of pi's ``x-goog-api-key``. The
comparison is the pi fixture replay's (``test_pi_fixtures.compare``), rule for rule.
"""

from __future__ import annotations

import base64
import http.server
import threading
import json
import os
import pathlib
import urllib.parse
import uuid
from typing import Any, Dict

import pytest

import pi_agent

from conftest import MockServer
from test_pi_fixtures import FIXTURES, Fixture, compare, keyword_options, requests_json, unmock

SERVICE_ACCOUNT = FIXTURES.parent / "google-vertex" / "service_account.json"
ACCESS_TOKEN = "ya29.pi-python-adc-token-0123456789"


def jwt_part(jwt: str, index: int) -> Dict[str, Any]:
    part = jwt.split(".")[index]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_service_account_adc_replays_pis_vertex_transcript(
    mock_server: MockServer, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    name = "google-vertex/text_then_tool_call"
    data = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    origin = f"http://127.0.0.1:{mock_server.port}"

    # A service account of its own (the token cache is per credential, process-wide) whose
    # token endpoint is the mock server.
    account = json.loads(SERVICE_ACCOUNT.read_text(encoding="utf-8"))
    email = f"py-{uuid.uuid4().hex[:12]}@pi-test.iam.gserviceaccount.com"
    account["client_email"] = email
    account["token_uri"] = f"{origin}/token"
    credentials = tmp_path / "service_account.json"
    credentials.write_text(json.dumps(account), encoding="utf-8")
    for variable in list(os.environ):
        if variable.startswith(("GOOGLE_", "GCLOUD_")):
            monkeypatch.delenv(variable)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(credentials))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "pi-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")

    token_reply = {"body": {"access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer"}}
    mock_server.push(token_reply, *data["replies"])
    options = {k: v for k, v in data["options"].items() if k != "apiKey"}
    events = []
    fixture = Fixture(name, data)
    with pi_agent.stream(pi_agent.Model.from_dict(fixture.model(origin)), data["context"], **keyword_options(options)) as stream:
        for event in stream:
            events.append(event)
        result = stream.result_sync()

    log = mock_server.requests()
    assert [r["path"] for r in log] == ["/token", data["requests"][0]["path"]]
    token_request, request = log

    # The token exchange: a JWT bearer grant signed with the service account's key.
    assert dict(token_request["headers"]).get("content-type") == "application/x-www-form-urlencoded"
    form = dict(urllib.parse.parse_qsl(token_request["body"]))
    assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert jwt_part(form["assertion"], 0)["alg"] == "RS256"
    claims = jwt_part(form["assertion"], 1)
    assert claims["iss"] == email
    assert claims["aud"] == f"{origin}/token"
    assert claims["scope"] == "https://www.googleapis.com/auth/cloud-platform"
    assert claims["exp"] - claims["iat"] == 3600
    assert account["private_key"] not in json.dumps(log)

    # pi's request with the access token in place of the key.
    expected = json.loads(json.dumps(data))
    headers = expected["requests"][0]["headers"]
    assert headers.pop("x-goog-api-key") == "test-key"
    headers["authorization"] = f"Bearer {ACCESS_TOKEN}"
    observed = unmock({"events": events, "result": result, "requests": requests_json([request], origin)}, origin)
    assert compare(Fixture(name, expected), observed) == []
    assert result["stopReason"] == "toolUse"


def test_metadata_server_token_signs_the_vertex_request(
    mock_server: MockServer, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """On GCE/GKE/Cloud Run (no credentials file): the metadata server (the mock, named by
    ``GCE_METADATA_HOST``) gives the token, asked with ``Metadata-Flavor: Google``."""
    name = "google-vertex/text_then_tool_call"
    data = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    origin = f"http://127.0.0.1:{mock_server.port}"
    for variable in list(os.environ):
        if variable.startswith(("GOOGLE_", "GCLOUD_", "GCE_")):
            monkeypatch.delenv(variable)
    monkeypatch.setenv("HOME", str(tmp_path))
    token = "ya29.metadata-python-SECRET"
    seen: list = []

    class Metadata(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("metadata-flavor")))
            data = json.dumps({"access_token": token, "expires_in": 3599, "token_type": "Bearer"}).encode()
            self.send_response(200 if self.headers.get("metadata-flavor") == "Google" else 403)
            self.send_header("metadata-flavor", "Google")
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    metadata = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
    threading.Thread(target=metadata.serve_forever, daemon=True).start()
    monkeypatch.setenv("GCE_METADATA_HOST", f"127.0.0.1:{metadata.server_address[1]}")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "pi-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    assert pi_agent.get_env_api_key("google-vertex") == "<authenticated>"

    mock_server.push(*data["replies"])
    options = {k: v for k, v in data["options"].items() if k != "apiKey"}
    fixture = Fixture(name, data)
    try:
        message = pi_agent.complete_sync(
            pi_agent.Model.from_dict(fixture.model(origin)), data["context"], **keyword_options(options)
        )
    finally:
        metadata.shutdown()
        metadata.server_close()
    assert message["stopReason"] != "error", message.get("errorMessage")
    (request,) = mock_server.requests()
    ((path, flavor),) = seen
    assert path.startswith("/computeMetadata/v1/instance/service-accounts/default/token")
    assert flavor == "Google"
    assert dict(request["headers"]).get("authorization") == f"Bearer {token}"
    assert token not in json.dumps(message)
