"""A small MCP server for golem's tests, on streamable HTTP at 127.0.0.1:<port>/mcp.

Run: python server.py <port>
"""

import asyncio
import re
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

INVALID_PARAMS = -32602

server = MCPServer("golem-test-py")


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


if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
