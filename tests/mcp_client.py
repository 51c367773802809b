"""An in-process MCP client for tests: the real server and the SDK's client, connected in memory."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync
from mcp import Client

from agent_tools.server import build_server

# The REST test client's host: MCP answers are built for the same site so links compare equal.
SITE = ("http", "testserver")


class MCP:
    """Calls tools through a real MCP server and client connected in process.

    The client runs under async_to_sync from the test's thread, so the server's ORM work (which
    goes through sync_to_async(thread_sensitive=True)) runs on this thread, inside the test's
    transaction.
    """

    def __init__(self, token: str | None, *, read_only: bool | None = None) -> None:
        authorization = f"Bearer {token}" if token else None
        self.server = build_server(read_only=read_only, authorization=authorization, site=SITE)

    def call(self, name: str, arguments: dict[str, Any] | None = None):
        async def run():
            async with Client(self.server) as client:
                return await client.call_tool(name, arguments or {})

        return async_to_sync(run)()

    def tool_names(self) -> list[str]:
        async def run():
            async with Client(self.server) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

        return async_to_sync(run)()

    def list_tools(self):
        async def run():
            async with Client(self.server) as client:
                return (await client.list_tools()).tools

        return async_to_sync(run)()


def body(result) -> Any:
    """The JSON a tool answered with (its text content, which is the REST body)."""
    return json.loads(result.content[0].text)


def assert_same(result, response) -> None:
    """The tool result and the REST response carry the same JSON and the same success."""
    assert result.is_error == (response.status_code >= 300), body(result)
    assert body(result) == response.json()
