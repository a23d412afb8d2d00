"""OAuth logins for subscription plans (pi's ``@mariozechner/pi-ai/oauth``): Claude Pro/Max
(``anthropic``), GitHub Copilot (``github-copilot``) and ChatGPT Plus/Pro (``openai-codex``).

A login runs once, interactively, with your callbacks (plain functions or ``async def``)::

    import pi_agent.oauth as oauth

    credentials = oauth.login_sync(
        "anthropic",
        on_auth=lambda info: print("Open", info["url"]),
        on_prompt=lambda prompt: input(prompt["message"] + " "),
    )
    oauth.save_credentials("auth.json", "anthropic", credentials)   # mode 0600

and before each request, :func:`get_oauth_api_key` refreshes expired credentials and gives the
key for ``api_key=``::

    stored = oauth.read_auth_file("auth.json")
    key = oauth.get_oauth_api_key_sync("anthropic", oauth.oauth_credentials(stored))
    if key and key["refreshed"]:
        oauth.save_credentials("auth.json", "anthropic", key["newCredentials"])

``python -m pi_agent login <provider> --file auth.json`` does the login from a terminal.

Credentials are dicts in pi's JSON shape (``{"refresh", "access", "expires", ...}``); their
``repr`` hides the tokens, and no error message holds one.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _core
from ._core import Model, OAuthError, Signal

__all__ = [
    "OAuthCredentials",
    "OAuthApiKey",
    "OAuthError",
    "providers",
    "login",
    "login_sync",
    "get_oauth_api_key",
    "get_oauth_api_key_sync",
    "refresh_oauth_token",
    "refresh_oauth_token_sync",
    "read_auth_file",
    "write_auth_file",
    "save_credentials",
    "oauth_credentials",
    "register_provider",
    "reset_providers",
    "modify_models",
]

_SECRET_KEYS = frozenset({"access", "refresh", "apiKey", "key"})


def _redacted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: ("<redacted>" if k in _SECRET_KEYS else _redacted(v)) for k, v in value.items()}
    return value


class OAuthCredentials(Dict[str, Any]):
    """Credentials from a login or a refresh: a plain dict in pi's shape (``json.dumps`` works),
    whose ``repr`` and ``str`` hide the tokens."""

    def __repr__(self) -> str:
        return f"OAuthCredentials({_redacted(dict(self))!r})"

    __str__ = __repr__


class OAuthApiKey(Dict[str, Any]):
    """What :func:`get_oauth_api_key` returns: ``{"apiKey", "newCredentials", "refreshed"}``
    (store ``newCredentials`` when ``refreshed``); ``repr`` hides the secrets."""

    def __repr__(self) -> str:
        return f"OAuthApiKey({_redacted(dict(self))!r})"

    __str__ = __repr__


Callback = Callable[..., Union[Any, Awaitable[Any]]]


def providers() -> List[Dict[str, Any]]:
    """The registered OAuth flows: ``[{"id", "name", "usesCallbackServer"}]``."""
    return _core.oauth_providers()


async def login(
    provider_id: str,
    *,
    on_auth: Callable[[Dict[str, Any]], Any],
    on_prompt: Callable[[Dict[str, Any]], Union[str, Awaitable[str]]],
    on_progress: Optional[Callable[[str], Any]] = None,
    on_manual_code_input: Optional[Callable[[], Union[str, Awaitable[str]]]] = None,
    on_select: Optional[Callable[[Dict[str, Any]], Union[Optional[str], Awaitable[Optional[str]]]]] = None,
    signal: Optional[Signal] = None,
) -> OAuthCredentials:
    """Runs the login of ``provider_id`` and returns the credentials to store.

    - ``on_auth({"url", "instructions"})``: show the user the URL to open.
    - ``on_prompt({"message", "placeholder", "allowEmpty"})``: ask a question, return the
      answer.
    - ``on_progress(message)``: progress text (optional).
    - ``on_manual_code_input()``: let the user paste the code or redirect URL while the flow
      also waits for the browser (optional; prefer ``async def``: it is cancelled when the
      browser wins).
    - ``on_select({"message", "options": [{"id", "label"}]})``: pick an option id, or
      ``None`` to cancel (optional).

    Callbacks may be plain functions (run on a worker thread) or ``async def`` (run on this
    loop). Cancel with ``signal.abort()`` or by cancelling the awaiting task. Raises
    ``OAuthError`` (``"login cancelled"``, a timeout, an endpoint's error, ...).
    """
    login = _core.oauth_login(
        provider_id,
        on_auth=on_auth,
        on_prompt=on_prompt,
        on_progress=on_progress,
        on_manual_code_input=on_manual_code_input,
        on_select=on_select,
        signal=signal,
    )
    return OAuthCredentials(await login.run())


def login_sync(
    provider_id: str,
    *,
    on_auth: Callable[[Dict[str, Any]], Any],
    on_prompt: Callable[[Dict[str, Any]], Union[str, Awaitable[str]]],
    on_progress: Optional[Callable[[str], Any]] = None,
    on_manual_code_input: Optional[Callable[[], Union[str, Awaitable[str]]]] = None,
    on_select: Optional[Callable[[Dict[str, Any]], Union[Optional[str], Awaitable[Optional[str]]]]] = None,
    signal: Optional[Signal] = None,
) -> OAuthCredentials:
    """:func:`login` that blocks (GIL released; Ctrl-C cancels the login)."""
    credentials = _core.oauth_login(
        provider_id,
        on_auth=on_auth,
        on_prompt=on_prompt,
        on_progress=on_progress,
        on_manual_code_input=on_manual_code_input,
        on_select=on_select,
        signal=signal,
    ).run_sync()
    return OAuthCredentials(credentials)


def _api_key(result: Optional[Dict[str, Any]]) -> Optional[OAuthApiKey]:
    if result is None:
        return None
    result["newCredentials"] = OAuthCredentials(result["newCredentials"])
    return OAuthApiKey(result)


async def get_oauth_api_key(
    provider_id: str, credentials: Mapping[str, Mapping[str, Any]]
) -> Optional[OAuthApiKey]:
    """pi's ``getOAuthApiKey``: the API key of ``provider_id`` from ``credentials`` (provider id
    → credentials), refreshing them first when they expired. ``None`` when ``credentials`` has
    no entry for the provider; ``OAuthError`` when the refresh fails."""
    return _api_key(await _core.oauth_get_api_key(provider_id, credentials))


def get_oauth_api_key_sync(
    provider_id: str, credentials: Mapping[str, Mapping[str, Any]]
) -> Optional[OAuthApiKey]:
    """:func:`get_oauth_api_key` that blocks (GIL released)."""
    return _api_key(_core.oauth_get_api_key_sync(provider_id, credentials))


async def refresh_oauth_token(provider_id: str, credentials: Mapping[str, Any]) -> OAuthCredentials:
    """Exchanges ``credentials`` for fresh ones now (pi's ``refreshOAuthToken``)."""
    return OAuthCredentials(await _core.oauth_refresh(provider_id, credentials))


def refresh_oauth_token_sync(provider_id: str, credentials: Mapping[str, Any]) -> OAuthCredentials:
    """:func:`refresh_oauth_token` that blocks (GIL released)."""
    return OAuthCredentials(_core.oauth_refresh_sync(provider_id, credentials))


def read_auth_file(path: Any) -> Dict[str, Dict[str, Any]]:
    """Reads a pi-style ``auth.json``: provider id → ``{"type": "oauth", ...credentials}`` or
    ``{"type": "api_key", "key": ...}``. A missing file reads as ``{}``."""
    return {provider: OAuthCredentials(entry) for provider, entry in _core.oauth_read_auth_file(path).items()}


def write_auth_file(path: Any, data: Mapping[str, Mapping[str, Any]]) -> None:
    """Writes ``data`` (as :func:`read_auth_file` returns it) to ``path`` atomically, readable
    by its owner only (mode 0600); creates the parent directory (mode 0700) when missing."""
    _core.oauth_write_auth_file(path, data)


def save_credentials(path: Any, provider_id: str, credentials: Mapping[str, Any]) -> None:
    """Stores ``credentials`` of ``provider_id`` in the ``auth.json`` at ``path``, keeping the
    other entries (mode 0600)."""
    data = read_auth_file(path)
    data[provider_id] = {"type": "oauth", **credentials}
    write_auth_file(path, data)


def oauth_credentials(data: Mapping[str, Mapping[str, Any]]) -> Dict[str, OAuthCredentials]:
    """The OAuth entries of an ``auth.json`` (as :func:`read_auth_file` returns it), as
    :func:`get_oauth_api_key` takes them."""
    return {
        provider: OAuthCredentials({k: v for k, v in entry.items() if k != "type"})
        for provider, entry in data.items()
        if entry.get("type") == "oauth"
    }


def register_provider(provider_id: str, **config: Any) -> None:
    """Registers a built-in flow with other endpoints or limits (a company proxy, a test
    server): ``authorize_url``, ``token_url``, ``client_id``, ``callback_port`` (0: any free
    port), ``callback_path``, ``scopes``/``scope``, ``request_timeout_ms``,
    ``login_timeout_ms``; for ``github-copilot``: ``github_url``, ``github_api_url``,
    ``copilot_api_url``, ``enable_models``, ``device_flow_second_ms``."""
    _core.oauth_register_provider(provider_id, **config)


def reset_providers() -> None:
    """Restores the built-in flows with pi's endpoints."""
    _core.oauth_reset_providers()


def modify_models(
    provider_id: str, credentials: Mapping[str, Any], models: Sequence[Union[Model, Mapping[str, Any]]]
) -> List[Model]:
    """pi's ``modifyModels``: ``models`` adjusted for the account of ``credentials``. For
    ``github-copilot`` (Business/Enterprise), every Copilot model moves to the API host of the
    account's token; other providers' models come back unchanged::

        models = oauth.modify_models("github-copilot", creds, pi_agent.get_models("github-copilot"))
    """
    return _core.oauth_modify_models(provider_id, credentials, models)
