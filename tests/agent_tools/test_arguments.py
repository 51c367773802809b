"""Tool arguments are checked against the declared input schema before anything is dispatched
(issue 15 item 8), and a token's tools/list shows only the tools its role may call."""

from __future__ import annotations

import pytest

from agent_tools.registry import registry
from agent_tools.waiting import INPUT_SCHEMA as WAIT_SCHEMA
from agent_tools.waiting import TOOL_NAME as WAIT_TOOL
from instantstart.operations.models import AuditEvent, Operation
from instantstart.tenancy.roles import Role
from tests.mcp_client import MCP, body

pytestmark = pytest.mark.django_db

# A value of the wrong JSON type for each schema type.
WRONG = {"string": 123, "integer": "seven", "number": "seven", "boolean": "yes", "object": 7, "array": 7}
FIVE = (
    "list_availability_zones",
    "list_instance_types",
    "list_training_plans",
    "preflight_cluster",
    "list_importable_clusters",
)


def schemas() -> dict[str, dict]:
    found = {tool.name: tool.input_schema for tool in registry.all()}
    found[WAIT_TOOL] = WAIT_SCHEMA
    return found


def _type(prop: dict) -> str | None:
    if "type" in prop:
        return prop["type"]
    for branch in prop.get("anyOf", []):
        if branch.get("type") not in (None, "null"):
            return branch["type"]
    return None


def _invalid(result) -> dict:
    assert result.is_error, body(result)
    error = body(result)["error"]
    assert error["code"] == "invalid", error
    return error["fields"]


def test_every_tool_refuses_a_wrong_typed_and_an_unknown_argument(admin_token):
    mcp = MCP(admin_token)
    audited = AuditEvent.objects.count()
    checked = 0
    for name, schema in schemas().items():
        fields = _invalid(mcp.call(name, {"no_such_argument": 1}))
        assert "no_such_argument" in fields, (name, fields)
        typed = [(arg, _type(prop)) for arg, prop in schema["properties"].items() if _type(prop) in WRONG]
        for argument, kind in typed:
            fields = _invalid(mcp.call(name, {argument: WRONG[kind]}))
            assert argument in fields, (name, argument, fields)
            checked += 1
    assert checked >= len(schemas()) - 1  # whoami alone takes no argument
    # Nothing was dispatched: no operation started, nothing audited.
    assert not Operation.objects.exists()
    assert AuditEvent.objects.count() == audited


def test_the_reported_cases(admin_token):
    mcp = MCP(admin_token)
    fields = _invalid(mcp.call("get_operation", {"id": 123}))
    assert fields == {"id": ["Must be a string, not an integer."]}
    fields = _invalid(mcp.call("list_operations", {"limit": 1e20}))
    assert "limit" in fields
    fields = _invalid(mcp.call("get_operation", {}))
    assert fields == {"id": ["This field is required."]}
    fields = _invalid(mcp.call(WAIT_TOOL, {"id": "x", "timeout_seconds": 61}))
    assert "timeout_seconds" in fields


def test_nested_arguments_are_checked(admin_token):
    result = MCP(admin_token).call(
        "preflight_cluster",
        {
            "name": "c1",
            "region": "us-west-2",
            "availability_zone": "us-west-2a",
            "instance_groups": [{"name": "g", "instance_type": "ml.g5.xlarge", "count": "two"}],
        },
    )
    assert "instance_groups.0.count" in _invalid(result)


def test_viewer_lists_no_tool_it_cannot_call(viewer_token, member_token):
    viewer = {tool.name: tool for tool in MCP(viewer_token).list_tools()}
    for name in viewer:
        tool = registry.get(name)
        assert tool is None or tool.required_role == Role.VIEWER, name
    # The only state a viewer may change is its own choice of active cluster.
    mutating = {name for name in viewer if registry.get(name) and registry.get(name).mutating}
    assert mutating <= {"set_active_cluster"}
    assert {"whoami", "get_operation", WAIT_TOOL} <= viewer.keys()
    assert "retry_operation" not in viewer

    member = {tool.name for tool in MCP(member_token).list_tools()}
    assert {"retry_operation", "cancel_operation"} <= member
    assert not any(registry.get(name).required_role == Role.ADMIN for name in member if registry.get(name))


def test_hints_and_parameter_descriptions(admin_token):
    tools = {tool.name: tool for tool in MCP(admin_token).list_tools()}
    for tool in tools.values():
        hints = tool.annotations
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint)
    assert tools["cancel_operation"].annotations.idempotent_hint is True
    assert tools["get_operation"].annotations.idempotent_hint is True
    assert tools["retry_operation"].annotations.idempotent_hint is False

    for name in FIVE:
        properties = tools[name].input_schema["properties"]
        assert [arg for arg, prop in properties.items() if not prop.get("description")] == [], name
