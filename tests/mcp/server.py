"""A small MCP server for golem's tests, on streamable HTTP at 127.0.0.1:<port>/mcp.

It lists its tools two per page, so a client must follow `nextCursor`, and `unlock` adds a
tool and announces `notifications/tools/list_changed`. With `--looping-pages`, the last page
points back to the first, as a server with a broken cursor does.

Run: python server.py <port> [--looping-pages]
"""

import asyncio
import re
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import ListToolsResult

INVALID_PARAMS = -32602
PAGE = 2
LOOPING_PAGES = "--looping-pages" in sys.argv[2:]


class PagedServer(MCPServer):
    """Lists its tools `PAGE` at a time; the cursor is the next tool's index."""

    pages_served = 0

    async def _handle_list_tools(self, ctx, params):
        PagedServer.pages_served += 1
        tools = await self.list_tools()
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE
        if end < len(tools):
            next_cursor = str(end)
        else:
            next_cursor = "0" if LOOPING_PAGES else None
        return ListToolsResult(tools=tools[start:end], next_cursor=next_cursor)


server = PagedServer("golem-test-py")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def divide(a: float, b: float) -> float:
    """Divide a by b; b must not be zero."""
    if b == 0:
        raise ToolError("b must not be zero; pick another divisor")
    return a / b


@server.tool()
def weekday(date: str) -> str:
    """The weekday of a date written YYYY-MM-DD."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        # A JSON-RPC error rather than an isError result.
        raise MCPError(code=INVALID_PARAMS, message=f"date must be written YYYY-MM-DD, got {date!r}")
    import datetime

    return datetime.date.fromisoformat(date).strftime("%A")


@server.tool()
def inventory() -> str:
    """The warehouse's stock."""
    raise MCPError(code=-32000, message="the inventory database is down")


@server.tool()
async def slow(seconds: float) -> str:
    """Wait for `seconds`, then answer."""
    await asyncio.sleep(seconds)
    return f"waited {seconds}s"


@server.tool()
def pages_served() -> int:
    """How many pages of `tools/list` this server has answered."""
    return PagedServer.pages_served


def secret() -> str:
    """The secret, once unlocked."""
    return "open sesame"


@server.tool()
async def unlock(ctx: Context) -> str:
    """Adds the `secret` tool."""
    server.add_tool(secret)
    await ctx.session.send_tool_list_changed()
    return "unlocked"


if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
