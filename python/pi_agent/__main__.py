"""``python -m pi_agent``: try a model, or log in, from a terminal.

``python -m pi_agent chat --model provider/model-id`` reads prompts from stdin, one per line,
and streams each answer to stdout (one agent, so the conversation continues). The API key
comes from the provider's environment variable, as in pi (``OPENAI_API_KEY``, ...);
``--base-url`` points the model elsewhere (a gateway, a local server), ``--system`` sets a
system prompt.

``python -m pi_agent login <provider> --file auth.json`` runs an OAuth login: opens (or
prints) the authorization URL, accepts the browser's redirect or a pasted code, and stores the
credentials in the file you name (pi's ``auth.json`` shape, mode 0600). Tokens are never
printed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import webbrowser
from typing import Any, Dict, List, Optional

from . import oauth
from ._core import Agent, Model, resolve_model


def _chat_model(spec: str, base_url: Optional[str], api: str) -> Optional[Model]:
    """The catalog model `provider/id` (at `base_url` if given); with `base_url`, any id."""
    model = resolve_model(spec)
    if model is not None:
        return model if base_url is None else model.replace(base_url=base_url)
    provider, _, model_id = spec.partition("/")
    if base_url is None or not model_id:
        return None
    return Model(model_id, api=api, provider=provider, base_url=base_url)


def chat(spec: str, base_url: Optional[str], api: str, system: Optional[str]) -> int:
    model = _chat_model(spec, base_url, api)
    if model is None:
        print(
            f"unknown model {spec!r}: give provider/model-id from the catalog, or --base-url",
            file=sys.stderr,
        )
        return 2
    agent = Agent(model, system_prompt=system or "")
    interactive = sys.stdin.isatty()
    status = 0
    while True:
        if interactive:
            print("> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            return status
        prompt = line.strip()
        if not prompt:
            continue
        try:
            with agent.run(prompt) as run:
                for event in run:
                    if event["type"] != "message_update":
                        continue
                    update = event["assistantMessageEvent"]
                    if update["type"] == "text_delta":
                        print(update["delta"], end="", flush=True)
        except KeyboardInterrupt:
            print("\n(aborted)", file=sys.stderr)
            return 130
        print(flush=True)
        last = agent.messages[-1]
        if last.get("stopReason") in ("error", "aborted"):
            print(f"error: {last.get('errorMessage') or last.get('stopReason')}", file=sys.stderr)
            status = 1


def _open_browser(url: str) -> None:
    """Opens `url` in a browser if there is one (the URL is printed either way)."""
    try:
        webbrowser.open(url)
    except Exception:  # noqa: BLE001 - no browser: the printed URL is enough
        pass


def _on_auth(info: Dict[str, Any]) -> None:
    print(f"Open this URL to log in:\n\n  {info['url']}\n", flush=True)
    if info.get("instructions"):
        print(info["instructions"], flush=True)
    _open_browser(info["url"])


def _on_prompt(prompt: Dict[str, Any]) -> str:
    return input(f"{prompt['message']} ")


def _on_progress(message: str) -> None:
    print(message, flush=True)


async def _on_manual_code_input() -> str:
    """Reads a pasted code or redirect URL on a daemon thread, while the browser may win."""
    loop = asyncio.get_running_loop()
    answer: "asyncio.Future[str]" = loop.create_future()

    def read() -> None:
        try:
            line = sys.stdin.readline()
        except Exception as error:  # noqa: BLE001 - handed to the waiting coroutine
            loop.call_soon_threadsafe(_settle, answer, None, error)
            return
        loop.call_soon_threadsafe(_settle, answer, line.strip(), None)

    threading.Thread(target=read, daemon=True).start()
    return await answer


def _settle(
    answer: "asyncio.Future[str]", line: Optional[str], error: Optional[BaseException]
) -> None:
    # The browser may have won already: a settled future is left as it is.
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(line or "")


def _on_select(prompt: Dict[str, Any]) -> Optional[str]:
    print(prompt["message"])
    for number, option in enumerate(prompt["options"], 1):
        print(f"  {number}. {option['label']}")
    choice = input("Choose a number (empty to cancel): ").strip()
    if not choice:
        return None
    chosen: str = prompt["options"][int(choice) - 1]["id"]
    return chosen


def login(provider_id: str, path: str) -> int:
    known = [provider["id"] for provider in oauth.providers()]
    if provider_id not in known:
        print(f"unknown provider {provider_id!r} (one of: {', '.join(known)})", file=sys.stderr)
        return 2
    try:
        credentials = oauth.login_sync(
            provider_id,
            on_auth=_on_auth,
            on_prompt=_on_prompt,
            on_progress=_on_progress,
            on_manual_code_input=_on_manual_code_input,
            on_select=_on_select,
        )
        oauth.save_credentials(path, provider_id, credentials)
    except oauth.OAuthError as error:
        print(f"login failed: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("login cancelled", file=sys.stderr)
        return 130
    print(f"Logged in to {provider_id}; credentials saved to {path}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pi_agent", description=(__doc__ or "pi_agent").splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    chat_parser = commands.add_parser("chat", help="chat with a model, streaming (prompts from stdin)")
    chat_parser.add_argument("--model", required=True, help="provider/model-id, e.g. openai/gpt-4o-mini")
    chat_parser.add_argument("--base-url", help="send the requests here instead")
    chat_parser.add_argument(
        "--api",
        default="openai-completions",
        help="wire API of a model not in the catalog (with --base-url); default openai-completions",
    )
    chat_parser.add_argument("--system", help="system prompt")
    login_parser = commands.add_parser("login", help="log in with OAuth and store the credentials")
    login_parser.add_argument("provider", help="anthropic, github-copilot or openai-codex")
    login_parser.add_argument("--file", required=True, help="the auth.json to store the credentials in")
    arguments = parser.parse_args(argv)
    if arguments.command == "chat":
        return chat(arguments.model, arguments.base_url, arguments.api, arguments.system)
    return login(arguments.provider, arguments.file)


if __name__ == "__main__":
    sys.exit(main())
