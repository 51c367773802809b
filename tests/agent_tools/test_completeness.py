"""Issue 12 item 1: every public REST action is a tool (or listed as not for agents, with why),
every tool is annotated, and every mutating tool's result names what to wait on."""

from __future__ import annotations

import pytest

from agent_tools.completeness import NOT_FOR_AGENTS, stale_exemptions, uncovered
from agent_tools.registry import registry
from agent_tools.results import followup
from instantstart.operations.serializers import STATUS_TOOL
from tests.mcp_client import MCP


def test_every_public_rest_action_has_a_tool():
    assert uncovered() == [], "add a Tool in the app's tools.py, or a reason in agent_tools.completeness.NOT_FOR_AGENTS"


def test_every_exemption_names_a_routed_action_and_says_why():
    assert stale_exemptions() == []
    assert all(len(reason) > 30 for reason in NOT_FOR_AGENTS.values())


def test_core_tools_exist():
    names = {tool.name for tool in registry}
    assert {
        "whoami",
        "list_operations",
        "get_operation",
        "retry_operation",
        "cancel_operation",
        "list_audit_events",
        "get_audit_event",
        "get_team_settings",
        "list_tokens",
        "revoke_token",
        "list_members",
    } <= names


def _answers(schema: dict | None) -> list[dict]:
    if not schema:
        return []
    return schema.get("anyOf", [schema])


def test_every_operation_answer_is_followed_by_wait_for_operation():
    """A mutating tool polled through get_operation answers an operation, which its result's next names."""
    for tool in registry:
        if not tool.mutating or tool.status_tool != STATUS_TOOL:
            continue
        shapes = [answer.get("properties", {}) for answer in _answers(tool.output_schema)]
        assert any("operation" in shape or "phases" in shape for shape in shapes), tool.name
    assert followup({"operation": {"id": "op-1"}, "cluster": {}}) == {
        "next": "wait_for_operation",
        "operation_id": "op-1",
    }
    assert followup({"id": "op-2", "kind": "cluster.create", "phases": []})["operation_id"] == "op-2"
    assert followup({"approval": {"id": "ap-1", "status": "pending"}})["operation_id"] == "ap-1"
    assert followup({"changed": False}) is None


@pytest.mark.django_db
def test_tool_count_and_annotations(admin_token):
    tools = MCP(admin_token).list_tools()
    for tool in tools:
        hints = tool.annotations
        assert isinstance(hints.read_only_hint, bool) and isinstance(hints.destructive_hint, bool), tool.name
        assert isinstance(hints.idempotent_hint, bool) and isinstance(hints.open_world_hint, bool), tool.name
        if hints.read_only_hint:
            assert not hints.destructive_hint, tool.name
            assert "idempotency_key" not in tool.input_schema["properties"], tool.name
        else:
            assert "idempotency_key" in tool.input_schema["properties"], tool.name
    print(f"{len(tools)} tools")  # issue 12 asks for 50 or more once every app is merged
