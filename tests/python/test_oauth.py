"""OAuth logins (`pi_agent.oauth`) against a local mock authorization server: the Anthropic flow
(authorization code + PKCE, localhost callback or pasted redirect), plain and async callbacks,
cancellation, refresh through `get_oauth_api_key`, the `auth.json` file and the
`python -m pi_agent login` command. Tokens never show in reprs, errors or output."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import http.server
import json
import os
import stat
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterator, List, Optional

import pytest

import pi_agent
import pi_agent.__main__ as cli
from pi_agent import oauth

HANG_GUARD = 30.0


class AuthServer:
    """Anthropic's authorize and token endpoints on 127.0.0.1, with real PKCE checks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.grants: Dict[str, Dict[str, str]] = {}
        self.refresh_tokens: set = set()
        self.issued = 0
        self.token_requests: List[Dict[str, Any]] = []
        self.copilot_requests: List[str] = []
        self.polls = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urllib.parse.urlparse(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                if url.path.endswith("/copilot_internal/v2/token"):
                    # GitHub Copilot: a GitHub token buys a Copilot token.
                    with server.lock:
                        server.copilot_requests.append(url.path)
                        known = self.headers.get("Authorization") == "Bearer gh-secret-token"
                    if not known:
                        self.reply(401, {"message": "Bad credentials"})
                        return
                    self.reply(200, {"token": "tid=1;proxy-ep=proxy.example.com;copilot-secret", "expires_at": 4102444800})
                    return
                if url.path != "/authorize":
                    self.send_error(404)
                    return
                with server.lock:
                    server.issued += 1
                    code = f"code-{server.issued}"
                    server.grants[code] = query
                location = query["redirect_uri"] + "?" + urllib.parse.urlencode({"code": code, "state": query["state"]})
                self.send_response(302)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path.startswith("/gh/"):
                    # GitHub's device flow (form bodies): pending once, then a token.
                    form = dict(urllib.parse.parse_qsl(raw.decode()))
                    with server.lock:
                        server.copilot_requests.append(self.path)
                        if self.path.endswith("/login/device/code"):
                            answer: Any = {"device_code": "device-1", "user_code": "ABCD-1234", "interval": 1,
                                           "verification_uri": "https://github.example/login/device", "expires_in": 900}
                        elif form.get("device_code") != "device-1":
                            answer = {"error": "incorrect_device_code"}
                        elif server.polls == 0:
                            server.polls += 1
                            answer = {"error": "authorization_pending"}
                        else:
                            answer = {"access_token": "gh-secret-token"}
                    self.reply(200, answer)
                    return
                body = json.loads(raw)
                with server.lock:
                    server.token_requests.append(body)
                    answer = server.token(body)
                status, payload = answer
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def token(self, body: Dict[str, Any]) -> Any:
        if body.get("grant_type") == "authorization_code":
            grant = self.grants.pop(body.get("code", ""), None)
            challenge = base64.urlsafe_b64encode(hashlib.sha256(body.get("code_verifier", "").encode()).digest()).rstrip(b"=").decode()
            if grant is None or grant["code_challenge"] != challenge or grant["redirect_uri"] != body.get("redirect_uri"):
                return 400, {"error": "invalid_grant", "error_description": "bad code or verifier"}
        elif body.get("grant_type") == "refresh_token":
            if body.get("refresh_token") not in self.refresh_tokens:
                return 400, {"error": "invalid_grant", "error_description": "refresh token revoked"}
            self.refresh_tokens.discard(body["refresh_token"])
        else:
            return 400, {"error": "unsupported_grant_type"}
        self.issued += 1
        refresh = f"refresh-secret-{self.issued}"
        self.refresh_tokens.add(refresh)
        return 200, {"access_token": f"access-secret-{self.issued}", "refresh_token": refresh, "expires_in": 3600}

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server() -> Iterator[AuthServer]:
    auth = AuthServer()
    oauth.register_provider(
        "anthropic", authorize_url=f"{auth.base}/authorize", token_url=f"{auth.base}/token", callback_port=0
    )
    try:
        yield auth
    finally:
        oauth.reset_providers()
        auth.close()


def open_in_browser(url: str) -> None:
    """What a browser does: follow the redirect to the login's localhost callback."""

    def visit() -> None:
        with urllib.request.urlopen(url, timeout=HANG_GUARD) as page:
            page.read()

    threading.Thread(target=visit, daemon=True).start()


def no_prompt(prompt: Dict[str, Any]) -> str:
    raise AssertionError(f"unexpected prompt {prompt}")


def assert_no_tokens(text: str) -> None:
    assert "secret" not in text, text


def test_login_through_the_browser_callback(server: AuthServer) -> None:
    infos: List[Dict[str, Any]] = []
    progress: List[str] = []

    def on_auth(info: Dict[str, Any]) -> None:
        infos.append(info)
        open_in_browser(info["url"])

    credentials = oauth.login_sync("anthropic", on_auth=on_auth, on_prompt=no_prompt, on_progress=progress.append)
    assert infos[0]["url"].startswith(f"{server.base}/authorize?")
    assert "paste the final redirect URL" in infos[0]["instructions"]
    assert progress == ["Exchanging authorization code for tokens..."]
    assert credentials["access"].startswith("access-secret-") and credentials["refresh"].startswith("refresh-secret-")
    assert isinstance(credentials["expires"], int)
    json.dumps(credentials)  # a plain dict for storage
    assert_no_tokens(repr(credentials))
    assert_no_tokens(str(credentials))
    assert server.token_requests[0]["grant_type"] == "authorization_code"
    assert [p["id"] for p in oauth.providers()] == ["anthropic", "github-copilot", "openai-codex"]


def test_async_login_with_a_pasted_redirect_url(server: AuthServer) -> None:
    """Async callbacks run on the caller's loop; the user pastes the redirect URL."""
    auth_url: "asyncio.Future[str]"

    async def on_auth(info: Dict[str, Any]) -> None:
        auth_url.set_result(info["url"])

    async def on_manual_code_input() -> str:
        url = await auth_url

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any) -> None:
                return None

        def location() -> str:
            try:
                urllib.request.build_opener(NoRedirect).open(url, timeout=HANG_GUARD)
            except urllib.error.HTTPError as redirect:
                return redirect.headers["Location"]
            raise AssertionError("no redirect")

        return await asyncio.get_running_loop().run_in_executor(None, location)

    async def main() -> oauth.OAuthCredentials:
        nonlocal auth_url
        auth_url = asyncio.get_running_loop().create_future()
        return await oauth.login("anthropic", on_auth=on_auth, on_prompt=no_prompt, on_manual_code_input=on_manual_code_input)

    credentials = asyncio.run(asyncio.wait_for(main(), HANG_GUARD))
    assert credentials["access"].startswith("access-secret-")


def test_cancelling_a_login(server: AuthServer) -> None:
    signal = pi_agent.Signal()
    waiting = threading.Event()
    threading.Thread(target=lambda: (waiting.wait(HANG_GUARD), signal.abort()), daemon=True).start()
    with pytest.raises(pi_agent.OAuthError, match="login cancelled"):
        oauth.login_sync("anthropic", on_auth=lambda info: waiting.set(), on_prompt=no_prompt, signal=signal)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        started = asyncio.Event()
        # A plain callback runs on a worker thread: wake the loop thread-safely.
        on_auth = lambda info: loop.call_soon_threadsafe(started.set)  # noqa: E731
        task = asyncio.ensure_future(oauth.login("anthropic", on_auth=on_auth, on_prompt=no_prompt))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), HANG_GUARD))
    # A callback that raises fails the login with a clear message.
    with pytest.raises(pi_agent.OAuthError, match="on_manual_code_input raised ValueError: typo"):
        oauth.login_sync(
            "anthropic",
            on_auth=lambda info: None,
            on_prompt=no_prompt,
            on_manual_code_input=lambda: (_ for _ in ()).throw(ValueError("typo")),
        )
    with pytest.raises(pi_agent.OAuthError, match="unknown OAuth provider `nope`"):
        oauth.login_sync("nope", on_auth=print, on_prompt=no_prompt)


def test_api_key_refresh_and_errors_without_tokens(server: AuthServer) -> None:
    credentials = oauth.login_sync("anthropic", on_auth=lambda info: open_in_browser(info["url"]), on_prompt=no_prompt)
    key = oauth.get_oauth_api_key_sync("anthropic", {"anthropic": credentials})
    assert key is not None and not key["refreshed"] and key["apiKey"] == credentials["access"]
    assert oauth.get_oauth_api_key_sync("anthropic", {}) is None
    # One provider's credentials where the map of them goes: the error never quotes a token.
    with pytest.raises(ValueError) as misplaced:
        oauth.get_oauth_api_key_sync("anthropic", credentials)
    assert "expected struct OAuthCredentials" in str(misplaced.value)
    assert_no_tokens(str(misplaced.value))
    with pytest.raises(ValueError) as wrong_type:
        oauth.get_oauth_api_key_sync("anthropic", {"anthropic": {**credentials, "expires": credentials["access"]}})
    assert_no_tokens(str(wrong_type.value))

    expired = {**credentials, "expires": 0}
    key = oauth.get_oauth_api_key_sync("anthropic", {"anthropic": expired})
    assert key is not None and key["refreshed"]
    assert key["apiKey"] == key["newCredentials"]["access"] != credentials["access"]
    assert_no_tokens(repr(key))
    fresh = asyncio.run(oauth.refresh_oauth_token("anthropic", key["newCredentials"]))
    assert fresh["access"] != key["apiKey"]

    # The first refresh token was used up: refreshing with it fails, without showing it.
    with pytest.raises(pi_agent.OAuthError) as failure:
        asyncio.run(oauth.get_oauth_api_key("anthropic", {"anthropic": expired}))
    assert "failed to refresh OAuth token for `anthropic`" in str(failure.value)
    assert "invalid_grant" in str(failure.value)
    assert_no_tokens(str(failure.value))


def test_login_command_stores_credentials_with_mode_0600(
    server: AuthServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "config" / "auth.json"
    oauth.write_auth_file(str(path), {"openai": {"type": "api_key", "key": "sk-keep-secret"}})
    monkeypatch.setattr(cli, "_open_browser", open_in_browser)
    monkeypatch.setattr(cli, "_on_manual_code_input", None)  # no terminal input in the test
    assert cli.main(["login", "anthropic", "--file", str(path)]) == 0
    output = capsys.readouterr()
    assert_no_tokens(output.out + output.err)
    assert f"credentials saved to {path}" in output.out
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    data = json.loads(path.read_text())
    assert data["openai"] == {"type": "api_key", "key": "sk-keep-secret"}
    assert data["anthropic"]["type"] == "oauth" and data["anthropic"]["access"].startswith("access-secret-")
    stored = oauth.oauth_credentials(oauth.read_auth_file(str(path)))
    assert list(stored) == ["anthropic"] and "type" not in stored["anthropic"]
    assert_no_tokens(repr(oauth.read_auth_file(str(path))))
    assert cli.main(["login", "nope", "--file", str(path)]) == 2


def test_copilot_device_flow_with_an_async_prompt(server: AuthServer) -> None:
    """GitHub Copilot asks (on_prompt, here `async def`) for an enterprise domain, shows the
    device code (on_auth), polls, and trades the GitHub token for a Copilot token."""
    oauth.register_provider(
        "github-copilot",
        github_url=f"{server.base}/gh/{{domain}}",
        github_api_url=f"{server.base}/ghapi/{{domain}}",
        enable_models=False,
        device_flow_second_ms=5,
    )
    prompts: List[Dict[str, Any]] = []
    infos: List[Dict[str, Any]] = []

    async def on_prompt(prompt: Dict[str, Any]) -> str:
        prompts.append(prompt)
        await asyncio.sleep(0)
        return "company.ghe.com"

    async def main() -> oauth.OAuthCredentials:
        return await oauth.login("github-copilot", on_auth=infos.append, on_prompt=on_prompt)

    credentials = asyncio.run(asyncio.wait_for(main(), HANG_GUARD))
    assert prompts == [{"message": "GitHub Enterprise URL/domain (blank for github.com)",
                        "placeholder": "company.ghe.com", "allowEmpty": True}]
    assert infos == [{"url": "https://github.example/login/device", "instructions": "Enter code: ABCD-1234"}]
    assert credentials["refresh"] == "gh-secret-token" and credentials["access"].startswith("tid=1")
    assert credentials["enterpriseUrl"] == "company.ghe.com"
    assert all("company.ghe.com" in path for path in server.copilot_requests)
    assert_no_tokens(repr(credentials))
    # Refreshing trades the stored GitHub token again.
    fresh = oauth.refresh_oauth_token_sync("github-copilot", credentials)
    assert fresh["access"].startswith("tid=1")


def test_register_provider_refuses_unknown_settings() -> None:
    with pytest.raises(TypeError, match="unexpected setting `authorise_url`"):
        oauth.register_provider("anthropic", authorise_url="x")
    with pytest.raises(ValueError, match="not a built-in OAuth flow"):
        oauth.register_provider("nope")
    oauth.reset_providers()


def test_copilot_models_move_to_the_account_api_host() -> None:
    oauth.reset_providers()
    credentials = {
        "refresh": "gh-token",
        "access": "tid=1;exp=9999999999;proxy-ep=proxy.enterprise.githubcopilot.com;sku=x",
        "expires": 9_999_999_999_000,
    }
    copilot = pi_agent.get_models("github-copilot")
    other = pi_agent.Model(
        api="openai-completions", provider="openai", id="gpt-x", base_url="https://api.openai.com/v1"
    )
    models = oauth.modify_models("github-copilot", credentials, [*copilot, other.to_dict()])
    assert len(models) == len(copilot) + 1
    assert all(isinstance(m, pi_agent.Model) for m in models)
    assert {m.base_url for m in models[:-1]} == {"https://api.enterprise.githubcopilot.com"}
    assert [m.id for m in models[:-1]] == [m.id for m in copilot]
    assert models[-1].base_url == "https://api.openai.com/v1"

    # An enterprise login without a proxy endpoint in its token uses the domain's host.
    enterprise = {**credentials, "access": "opaque", "enterpriseUrl": "company.ghe.com"}
    (moved,) = oauth.modify_models("github-copilot", enterprise, copilot[:1])
    assert moved.base_url == "https://copilot-api.company.ghe.com"

    with pytest.raises(oauth.OAuthError, match="nobody"):
        oauth.modify_models("nobody", credentials, copilot)
