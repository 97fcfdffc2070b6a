"""FastMCP's MCP proxy in front of an upstream, for `scripts/bench.sh others`.

Usage: fastmcp-proxy.py UPSTREAM_URL PORT [fresh|shared]

FastMCP (https://gofastmcp.com, PyPI `fastmcp`) is a widely used Python MCP framework; its
`create_proxy` serves an upstream's tools over Streamable HTTP, as a gateway does. `fresh`
(the default, FastMCP's own) gives each request a session of its own with the upstream;
`shared` hands `create_proxy` one connected client, whose session every request reuses
(FastMCP warns that requests then share its context). Nothing else is configured: the
address and the path, `/mcp`.
"""

import asyncio
import sys

from fastmcp import Client
from fastmcp.server import create_proxy


async def serve_shared(upstream: str, port: int) -> None:
    async with Client(upstream) as client:
        await create_proxy(client).run_async(
            transport="http", host="127.0.0.1", port=port, path="/mcp", show_banner=False
        )


def main() -> None:
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["fresh"], ["shared"]):
        sys.exit("usage: fastmcp-proxy.py UPSTREAM_URL PORT [fresh|shared]")
    upstream, port = sys.argv[1], int(sys.argv[2])
    if sys.argv[3:] == ["shared"]:
        asyncio.run(serve_shared(upstream, port))
    else:
        create_proxy(upstream).run(
            transport="http", host="127.0.0.1", port=port, path="/mcp", show_banner=False
        )


main()
