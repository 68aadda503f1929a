"""A small MCP server for golem's tests, on streamable HTTP at 127.0.0.1:<port>/mcp.

Run: python server.py <port>
"""

import asyncio
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("golem-test-py")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def divide(a: float, b: float) -> float:
    """Divide a by b; b must not be zero."""
    if b == 0:
        raise ValueError("b must not be zero; pick another divisor")
    return a / b


@server.tool()
async def slow(seconds: float) -> str:
    """Wait for `seconds`, then answer."""
    await asyncio.sleep(seconds)
    return f"waited {seconds}s"


if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
