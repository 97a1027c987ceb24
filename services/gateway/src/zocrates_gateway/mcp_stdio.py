"""`zocrates mcp`: the gateway's MCP tools over stdio, for MCP clients that start a command.

A thin relay: it lists and calls the tools of a running gateway's `/mcp` endpoint with the
user's token, so the tools, their tenancy and their answers are the gateway's, one owner.

    zocrates mcp [--url URL] [--token TOKEN]

`--url` defaults to `ZOCRATES_URL` (else http://127.0.0.1:8000), `--token` to `ZOCRATES_TOKEN`
(the access token `make run` prints, or one from `zocrates token create`).
"""

from __future__ import annotations

import argparse
import os
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from zocrates_gateway.mcp import PATH

DEFAULT_URL = "http://127.0.0.1:8000"
#: An `ask_library` call waits for a whole turn (retrieval, writing, verification).
CALL_TIMEOUT_S = 300.0


def relay(remote: Client) -> Server:
    """A stdio-side server whose tools are `remote`'s."""

    async def list_tools(ctx, params):
        return await remote.list_tools(cursor=params.cursor if params else None)

    async def call_tool(ctx, params):
        return await remote.call_tool(params.name, params.arguments or {})

    return Server(
        "zocrates",
        instructions=remote.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(url: str, token: str) -> None:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30.0, read=CALL_TIMEOUT_S),
    )
    async with (
        http,
        Client(streamable_http_client(url.rstrip("/") + PATH, http_client=http)) as remote,
    ):
        server = relay(remote)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None, prog: str = "zocrates mcp") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("ZOCRATES_URL", DEFAULT_URL), help="the gateway's URL")
    parser.add_argument("--token", default=os.environ.get("ZOCRATES_TOKEN", ""), help="your access token")
    args = parser.parse_args(argv)
    if not args.token:
        print(
            "error: no access token: set ZOCRATES_TOKEN or pass --token "
            "(`make run` prints one; a lab admin creates one with `zocrates token create`).",
            file=sys.stderr,
        )
        return 2
    try:
        anyio.run(serve, args.url, args.token)
    except Exception as exc:  # noqa: BLE001 - the MCP client shows stderr: say what failed, briefly
        while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]  # anyio's task groups wrap the one error that stopped them
        print(f"error: the gateway's MCP endpoint at {args.url}{PATH} failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
