"""Read-only mode: mutating tools are neither listed nor run."""

from __future__ import annotations

import pytest

from agent_tools.registry import registry
from instantstart.operations.models import AuditEvent, OperationStatus
from tests.mcp_client import MCP, body

pytestmark = pytest.mark.django_db

MUTATING = {"retry_operation", "cancel_operation"}
READS = {"whoami", "list_operations", "get_operation"}


def mutating_tools() -> set[str]:
    """Every registered tool that changes state (apps register more than the core's)."""
    return {tool.name for tool in registry.all() if tool.mutating}


def test_full_mode_lists_every_tool(admin_token):
    names = set(MCP(admin_token, read_only=False).tool_names())
    assert READS | MUTATING <= names
    assert names == {tool.name for tool in registry.all()} | {"wait_for_operation"}


def test_read_only_mode_hides_and_refuses_mutating_tools(member_token, team, member_user, operation_of):
    mcp = MCP(member_token, read_only=True)
    names = set(mcp.tool_names())
    assert READS <= names
    assert not names & mutating_tools()

    operation = operation_of(OperationStatus.FAILED)
    result = mcp.call("retry_operation", {"id": str(operation.pk)})
    assert result.is_error
    assert body(result)["error"]["code"] == "read_only"
    operation.refresh_from_db()
    assert operation.status == OperationStatus.FAILED
    assert not AuditEvent.objects.filter(action="operation.retry").exists()
    # Reads still work.
    assert not mcp.call("get_operation", {"id": str(operation.pk)}).is_error


def test_read_only_follows_the_setting(settings, member_token):
    settings.MCP_READ_ONLY = True
    names = set(MCP(member_token).tool_names())
    assert READS <= names
    assert not names & mutating_tools()
