"""Tools from Model Context Protocol servers (core's ``pi_agent::mcp``, on the official Rust SDK).

.. code-block:: python

    import pi_agent, pi_agent.mcp

    async with pi_agent.mcp.stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]) as srv:
        agent = pi_agent.Agent(model, tools=[*await srv.tools()])
        await agent.prompt("Echo hello")

    with pi_agent.mcp.http("http://127.0.0.1:3001/mcp", headers={"Authorization": "Bearer ..."}) as srv:
        agent = pi_agent.Agent(model, tools=srv.tools_sync())

A server's tools are ordinary :class:`pi_agent.Tool` objects: the agent validates their arguments
against the server's ``inputSchema``, runs them on the server, and maps the result (text, images
for vision models, placeholders naming audio and binary resources, ``structuredContent`` in the
details). A call that fails (the server exited, hung past ``call_timeout``, answered with an
error) is an error tool result naming the server, and the run goes on; the next call restarts
the server. Aborting the agent sends ``notifications/cancelled``; progress notifications are
``tool_execution_update`` events. Leaving the ``with`` block ends the session (a stdio server's
stdin is closed, then it is terminated).
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any, Mapping, Optional, Sequence, Union

from . import _core
from ._core import McpError, McpServer, Tool

__all__ = ["INHERITED_ENV", "McpError", "McpServer", "Server", "http", "stdio"]

#: The host's environment variables a stdio server gets without ``inherit_env=True`` (core's
#: ``mcp::INHERITED_ENV``).
INHERITED_ENV: tuple[str, ...] = tuple(_core._mcp_inherited_env())


class Server:
    """An MCP server to connect to: an ``async with`` / ``with`` context manager whose value is
    itself, connected. Made by :func:`stdio` and :func:`http`."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._config = dict(config)
        self._server: Optional[McpServer] = None

    @property
    def config(self) -> dict[str, Any]:
        """Core's ``McpServerConfig`` as a dict (camelCase keys)."""
        return dict(self._config)

    @property
    def server(self) -> McpServer:
        """The connected server (raises ``McpError`` before :meth:`connect`)."""
        if self._server is None:
            raise McpError(f'MCP server "{self._config.get("name")}" is not connected')
        return self._server

    # ---------------------------------------------------------------- connecting, closing

    def connect_sync(self) -> Server:
        """Starts the server (or opens the HTTP session) and completes ``initialize``."""
        if self._server is None:
            self._server = McpServer.connect(self._config)
        return self

    async def connect(self) -> Server:
        """:meth:`connect_sync` without blocking the event loop. Cancelling it (a timeout)
        stops the connecting and ends a server being started."""
        if self._server is None:
            self._server = await McpServer.connect_async(self._config)
        return self

    def close_sync(self) -> None:
        """Ends the session."""
        server, self._server = self._server, None
        if server is not None:
            server.close()

    async def close(self) -> None:
        """:meth:`close_sync` without blocking the event loop."""
        server, self._server = self._server, None
        if server is not None:
            await server.close_async()

    def __enter__(self) -> Server:
        return self.connect_sync()

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close_sync()

    async def __aenter__(self) -> Server:
        return await self.connect()

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    # ---------------------------------------------------------------- what it offers

    @property
    def info(self) -> Optional[dict[str, Any]]:
        """What the server said about itself: ``{"name", "version", "protocolVersion",
        "capabilities", "instructions"?}``."""
        info: Optional[dict[str, Any]] = self.server.info()
        return info

    def tools_sync(self) -> list[Tool]:
        """Its tools as :class:`pi_agent.Tool` objects (prefixed and filtered as configured)."""
        return self.server.tools()

    async def tools(self) -> list[Tool]:
        """:meth:`tools_sync` without blocking the event loop."""
        return await self.server.tools_async()

    def list_tools_sync(self) -> list[dict[str, Any]]:
        """Its tools as MCP describes them (``name``, ``description``, ``inputSchema``, ...)."""
        return self.server.list_tools()

    async def list_tools(self) -> list[dict[str, Any]]:
        """:meth:`list_tools_sync` without blocking the event loop."""
        return await self.server.list_tools_async()

    def __repr__(self) -> str:
        state = "connected" if self._server is not None else "not connected"
        return f"Server(name={self._config.get('name')!r}, {state})"


def _options(
    config: dict[str, Any],
    tool_prefix: Optional[str],
    include_tools: Optional[Sequence[str]],
    call_timeout: Optional[float],
    connect_timeout: Optional[float],
) -> dict[str, Any]:
    if tool_prefix is not None:
        config["toolPrefix"] = tool_prefix
    if include_tools is not None:
        config["includeTools"] = list(include_tools)
    if call_timeout is not None:
        config["callTimeoutMs"] = int(call_timeout * 1000)
    if connect_timeout is not None:
        config["connectTimeoutMs"] = int(connect_timeout * 1000)
    return config


def stdio(
    command: str,
    args: Sequence[str] = (),
    *,
    name: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Union[str, "os.PathLike[str]", None] = None,
    tool_prefix: Optional[str] = None,
    include_tools: Optional[Sequence[str]] = None,
    call_timeout: Optional[float] = None,
    connect_timeout: Optional[float] = None,
    inherit_env: bool = False,
) -> Server:
    """A server started as ``command *args`` that speaks MCP on its stdin/stdout. It gets
    ``env`` and, of the host's environment, only what every program needs (``PATH``,
    ``HOME``, the locale, ...; ``pi_agent.mcp.INHERITED_ENV``), as the official MCP SDKs do:
    the host's API keys do not reach it unless given in ``env``, or with ``inherit_env=True``,
    which passes the whole environment. ``name`` (default: the command's file name) is what
    errors call it; ``tool_prefix`` goes in front of its tool names; ``include_tools`` exposes
    only those; ``call_timeout`` (seconds, default 60) limits one call, ``connect_timeout``
    (default 30) the start."""
    config: dict[str, Any] = {
        "name": name if name is not None else os.path.basename(command),
        "transport": "stdio",
        "command": command,
        "args": list(args),
        "env": dict(env or {}),
    }
    if inherit_env:
        config["inheritEnv"] = True
    if cwd is not None:
        config["cwd"] = os.fspath(cwd)
    return Server(_options(config, tool_prefix, include_tools, call_timeout, connect_timeout))


def http(
    url: str,
    *,
    name: Optional[str] = None,
    headers: Optional[Mapping[str, str]] = None,
    tool_prefix: Optional[str] = None,
    include_tools: Optional[Sequence[str]] = None,
    call_timeout: Optional[float] = None,
    connect_timeout: Optional[float] = None,
) -> Server:
    """A Streamable HTTP server at ``url``; ``headers`` (e.g. a bearer token, never shown in
    errors or logs) go with every request. The other options are :func:`stdio`'s."""
    config: dict[str, Any] = {
        "name": name if name is not None else url,
        "transport": "http",
        "url": url,
        "headers": dict(headers or {}),
    }
    return Server(_options(config, tool_prefix, include_tools, call_timeout, connect_timeout))
