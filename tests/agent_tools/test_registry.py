"""The registry: tool listings an agent can use, and definitions that cannot work refused early."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from rest_framework import serializers

from agent_tools.registry import Registry, RegistryError, Tool, registry
from instantstart.operations.api import OperationViewSet
from instantstart.tenancy.api import MembershipViewSet
from tests.mcp_client import MCP

pytestmark = pytest.mark.django_db


def test_listing_carries_schemas_and_hints(member_token):
    tools = {tool.name: tool for tool in MCP(member_token).list_tools()}

    listing = tools["list_operations"].input_schema
    assert listing["properties"]["status"]["enum"] == ["pending", "running", "succeeded", "failed", "cancelled"]
    assert {"kind", "target", "limit", "offset"} <= listing["properties"].keys()
    assert "required" not in listing

    retry = tools["retry_operation"]
    assert retry.input_schema["required"] == ["id"]
    assert "idempotency_key" in retry.input_schema["properties"]
    assert retry.annotations.read_only_hint is False
    assert retry.meta == {"instantstart/statusTool": "get_operation"}
    assert tools["cancel_operation"].annotations.destructive_hint is True

    get = tools["get_operation"]
    assert get.annotations.read_only_hint is True
    assert "idempotency_key" not in get.input_schema["properties"]
    assert all(tool.description and "get_operation" in tool.description for tool in (retry, tools["cancel_operation"]))


def test_unknown_tool_is_a_protocol_error(member_token):
    server = MCP(member_token).server

    async def call_unknown():
        async with Client(server) as client:
            try:
                await client.call_tool("drop_everything", {})
            except MCPError as exc:
                return exc

    error = async_to_sync(call_unknown)()
    assert error is not None and error.code == INVALID_PARAMS
    assert error.message == "Unknown tool: drop_everything"


def test_write_tools_take_the_viewsets_serializer_fields():
    """An action without a request annotation takes the viewset's serializer, as the REST docs say."""
    tool = Tool(
        name="add_member", description="Add a member.", view=MembershipViewSet, action="create", status_tool="whoami"
    )
    assert (tool.contract.method, tool.contract.route_name) == ("post", "api:member-list")
    assert type(tool.contract.body) is MembershipViewSet.serializer_class
    assert {"username", "role", "idempotency_key"} <= tool.input_schema["properties"].keys()
    partial = Tool(
        name="change_member",
        description="Change a member.",
        view=MembershipViewSet,
        action="partial_update",
        status_tool="whoami",
    )
    assert partial.contract.method == "patch"
    assert partial.path_params == {"id": "pk"}
    assert partial.input_schema["required"] == ["id"]  # partial: no body field is required


def test_every_registered_tool_reads_its_rest_call():
    """Route, method, arguments and answer come from each tool's endpoint (the system check runs this too)."""
    assert registry.bind() == []
    listing = registry.get("list_operations")
    assert listing.contract.paginated and listing.contract.query_arguments == {"status", "kind", "target"}
    answer = listing.output_schema
    assert answer["required"] == ["count", "next", "previous", "results"]
    operation = answer["properties"]["results"]["items"]
    assert {"id", "kind", "status", "phases", "status_tool"} <= set(operation["required"])
    # A POST that answers an operation: its schema is the operation's.
    assert registry.get("retry_operation").output_schema["properties"].keys() == operation["properties"].keys()


def test_definitions_that_cannot_work_are_refused():
    with pytest.raises(RegistryError, match="no action"):
        Tool(name="bogus", description="x", view=OperationViewSet, action="explode")
    with pytest.raises(RegistryError, match="status tool"):
        Tool(name="retry2", description="x", view=OperationViewSet, action="retry")
    with pytest.raises(RegistryError, match="twice"):
        registry.register(registry.get("whoami"))
    with pytest.raises(RegistryError, match="describe tools that change state"):
        Tool(name="reads", description="x", view=OperationViewSet, action="list", read_only=True, destructive=True)
    # A GET that does not say it only reads: refused when the tool is bound to its route.
    unread = Tool(name="list2", description="x", view=OperationViewSet, action="list", status_tool="get_operation")
    with pytest.raises(RegistryError, match="declare read_only=True"):
        _ = unread.contract
    unrouted = Tool(name="unrouted", description="x", view=OperationViewSet, action="options", status_tool="x")
    with pytest.raises(RegistryError, match="No URL routes"):
        _ = unrouted.contract

    local = Registry()
    local.register(Tool(name="retry3", description="x", view=OperationViewSet, action="retry", status_tool="nope"))
    with pytest.raises(RegistryError, match="status tool 'nope'"):
        local.check()


def test_schema_of_common_fields():
    class Example(serializers.Serializer):
        name = serializers.CharField(max_length=10, help_text="A name.")
        count = serializers.IntegerField(min_value=1, required=False)
        ratio = serializers.DecimalField(max_digits=4, decimal_places=2, min_value=0)
        tags = serializers.ListField(child=serializers.CharField(), required=False)
        on = serializers.BooleanField(required=False)
        note = serializers.CharField(allow_null=True, required=False)
        created = serializers.DateTimeField(read_only=True)

    from agent_tools.schema import serializer_schema

    schema = serializer_schema(Example())
    assert schema["required"] == ["name", "ratio"]
    assert schema["properties"]["name"] == {"type": "string", "maxLength": 10, "description": "A name."}
    assert schema["properties"]["count"] == {"type": "integer", "minimum": 1}
    assert schema["properties"]["ratio"] == {"type": "number", "minimum": 0.0}
    assert schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert schema["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert "created" not in schema["properties"]
