"""An MCP server (official Python SDK, stdio) that misbehaves on request, for the failure tests
of the Rust, C and Python MCP clients.

Tools: ``ok`` echoes; ``fail`` reports failure (``isError``); ``rpc_error`` answers with a
JSON-RPC error; ``crash`` exits mid-call; ``hang``
never answers; ``freeze`` blocks the server's event loop (it stops reading its stdin); ``env`` says
the value of one of its environment variables; ``garbage`` writes a line that is not JSON-RPC, then never answers;
``add_tool`` registers a tool named by its argument and sends
``notifications/tools/list_changed``; ``starts`` says how many times this server was started
(a file in ``$PI_MCP_STATE_DIR`` counts them, to observe reconnections). It refuses to
start while ``$PI_MCP_FAIL_START`` is set or ``$PI_MCP_STATE_DIR/fail_start`` exists. With
``$PI_MCP_ENDLESS_PAGES`` set, every ``tools/list`` page says that another page follows, with
the same cursor: a listing that never ends; set to ``fresh``, each page gives a new cursor, after
``$PI_MCP_PAGE_DELAY_MS`` (default 0): a listing that never ends and never repeats. With ``$PI_MCP_SLEEPER`` set, it starts a child
process that outlives it unless its process group is killed (as ``npx`` leaves the real server
running), and writes the child's pid to ``$PI_MCP_STATE_DIR/sleeper``.
"""

import asyncio
import os
import sys

try:  # mcp >= 2
    from mcp.server.mcpserver import Context, MCPServer as FastMCP
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP  # type: ignore[no-redef]

ENDLESS_PAGES = os.environ.get("PI_MCP_ENDLESS_PAGES", "")
PAGE_DELAY = int(os.environ.get("PI_MCP_PAGE_DELAY_MS", "0")) / 1000


async def next_cursor(cursor: "str | None") -> str:
    """The cursor that follows ``cursor`` in an endless listing (see the module's text)."""
    if ENDLESS_PAGES != "fresh":
        return "again"
    await asyncio.sleep(PAGE_DELAY)
    return str(int(cursor or "0") + 1)


class Server(FastMCP):  # type: ignore[misc, valid-type]
    """The SDK's server; with ``ENDLESS_PAGES``, its tool pages never end (mcp >= 2)."""

    async def _handle_list_tools(self, ctx, params):  # type: ignore[no-untyped-def]
        result = await super()._handle_list_tools(ctx, params)
        if ENDLESS_PAGES:
            result.next_cursor = await next_cursor(params.cursor if params else None)
        return result


server = Server("pi-failing-server")

if ENDLESS_PAGES and not hasattr(FastMCP, "_handle_list_tools"):  # mcp 1.x
    from mcp import types

    async def _endless_pages(request):  # type: ignore[no-untyped-def]
        tools = await server.list_tools()
        cursor = await next_cursor(request.params.cursor if request.params else None)
        return types.ServerResult(types.ListToolsResult(tools=tools, nextCursor=cursor))

    server._mcp_server.request_handlers[types.ListToolsRequest] = _endless_pages

STATE_DIR = os.environ.get("PI_MCP_STATE_DIR")
if STATE_DIR:
    counter = os.path.join(STATE_DIR, "starts")
    try:
        with open(counter) as f:
            STARTS = int(f.read() or "0") + 1
    except FileNotFoundError:
        STARTS = 1
    with open(counter, "w") as f:
        f.write(str(STARTS))
else:
    STARTS = 1

if os.environ.get("PI_MCP_FAIL_START") or (
    STATE_DIR and os.path.exists(os.path.join(STATE_DIR, "fail_start"))
):
    print("refusing to start: PI_MCP_FAIL_START is set", file=sys.stderr, flush=True)
    sys.exit(3)

if os.environ.get("PI_MCP_SLEEPER") and STATE_DIR:
    import subprocess

    sleeper = subprocess.Popen(
        ["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    with open(os.path.join(STATE_DIR, "sleeper.tmp"), "w") as f:
        f.write(str(sleeper.pid))
    os.replace(os.path.join(STATE_DIR, "sleeper.tmp"), os.path.join(STATE_DIR, "sleeper"))


@server.tool()
def ok(text: str) -> str:
    """Echoes the text."""
    return f"ok: {text}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ValueError(f"refused: {reason}")


@server.tool()
def rpc_error() -> str:
    """Answers the call with a JSON-RPC error (not an isError result)."""
    try:  # mcp >= 2
        from mcp.shared.exceptions import MCPError

        raise MCPError(-32001, "custom rpc failure")
    except ImportError:  # mcp 1.x
        from mcp.shared.exceptions import McpError
        from mcp.types import ErrorData

        raise McpError(ErrorData(code=-32001, message="custom rpc failure"))


@server.tool()
def crash() -> str:
    """Exits the server process in the middle of the call."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(7)


@server.tool()
async def hang() -> str:
    """Never answers; records a cancellation (``notifications/cancelled``) in the state dir."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        if STATE_DIR:
            with open(os.path.join(STATE_DIR, "cancelled"), "w") as f:
                f.write("hang")
        raise
    return "unreachable"


@server.tool()
async def freeze() -> str:
    """Blocks the server's event loop: it stops reading its stdin and answering anything."""
    import time

    time.sleep(3600)
    return "unreachable"


@server.tool()
async def garbage() -> str:
    """Writes a line that is not JSON-RPC to stdout, then never answers."""
    os.write(1, b"this is not json-rpc {{{\n")
    await asyncio.sleep(3600)
    return "unreachable"


@server.tool()
def env(name: str) -> str:
    """The value of the server's environment variable ``name``, or ``<unset>``."""
    return os.environ.get(name, "<unset>")


@server.tool()
def starts() -> str:
    """How many times this server was started."""
    return str(STARTS)


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Adds a tool named `name` and announces the change."""

    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description=f"Added at runtime: {name}")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    server.run("stdio")
