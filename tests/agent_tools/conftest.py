"""MCP test helpers: an in-process MCP client per token, operations in chosen states, REST twins."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone
from mcp import Client

from agent_tools.server import build_server
from instantstart.operations.models import Operation, OperationStatus, PhaseStatus
from instantstart.operations.services import start_operation
from instantstart.tenancy.roles import Role
from instantstart.tenancy.services import system_access
from tests.conftest import token_for

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


def make_operation(team, user, status: str = OperationStatus.FAILED) -> Operation:
    """An engine.selftest operation of ``team`` put directly into ``status``."""
    operation, _ = start_operation(access=system_access(team, user), kind="engine.selftest", params={"waits": 0})
    now = timezone.now()
    fields: dict[str, Any] = {"status": status}
    if status != OperationStatus.PENDING:
        fields["started_at"] = now
    if status in (OperationStatus.FAILED, OperationStatus.SUCCEEDED, OperationStatus.CANCELLED):
        fields["finished_at"] = now
    if status == OperationStatus.FAILED:
        fields.update(error_code="SimulatedFailure", error_message="simulated failure in work", error_hint="Retry.")
        operation.phases.filter(index=0).update(status=PhaseStatus.FAILED, message="simulated failure in work")
    Operation.objects.filter(pk=operation.pk).update(**fields)
    operation.refresh_from_db()
    return operation


@pytest.fixture
def member_token(team, member_user) -> str:
    return token_for(team, member_user, Role.MEMBER)


@pytest.fixture
def viewer_token(team, viewer_user) -> str:
    return token_for(team, viewer_user, Role.VIEWER)


@pytest.fixture
def member_mcp(member_token) -> MCP:
    return MCP(member_token)


@pytest.fixture
def viewer_mcp(viewer_token) -> MCP:
    return MCP(viewer_token)
