"""Every read-only tool makes no mutating call: no database write, no AWS call that changes anything.

Each read-only tool (of every app, read from the registry) is called as a team admin against one
sandbox-backed team holding a cluster, a group, a storage and operations; the SQL the call runs
and the sandbox's per-account AWS call counters are compared before and after.
"""

from __future__ import annotations

import json
import urllib.request
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent_tools.registry import registry
from agent_tools.waiting import TOOL_NAME as WAIT_TOOL
from instantstart.operations.models import OperationStatus
from tests.factories import ClusterFactory, InstanceGroupFactory, StorageFactory
from tests.mcp_client import MCP

pytestmark = pytest.mark.django_db

READ_VERBS = ("Describe", "List", "Get", "Head", "AssumeRole", "Search", "Lookup", "Query")
# The one write a read may cause: a token's last_used_at, at most once a minute (not a state change).
ALLOWED_WRITES = ('UPDATE "tenancy_apitoken" SET "last_used_at"',)
KNOWN = {
    "region": "us-west-2",
    "availability_zone": "us-west-2a",
    "name": "gpu",
    "node": "i-0123456789abcdef0",
    "instance_groups": [{"name": "gpu", "instance_type": "ml.g5.xlarge", "count": 1}],
}


def aws_calls(sandbox, account: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{sandbox.aws_endpoint}/_sandbox/calls?account={account}", timeout=5) as response:
        return json.loads(response.read())["calls"]


def _value(prop: dict):
    kind = prop.get("type") or next((b.get("type") for b in prop.get("anyOf", []) if b.get("type") != "null"), None)
    if "enum" in prop:
        return prop["enum"][0]
    return {"string": "x", "integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}.get(kind, "x")


def arguments_for(tool, objects: dict[str, str]) -> dict:
    """Required arguments: the team's objects for ids, known decisions, a plain value of the right type otherwise."""
    schema = tool.input_schema
    arguments = {}
    for name in schema.get("required", []):
        if name in objects:
            arguments[name] = objects[name]
        elif name == "id":
            model = getattr(getattr(tool.view, "queryset", None), "model", None)
            found = model.objects.order_by().values_list("pk", flat=True).first() if model is not None else None
            arguments[name] = str(found or uuid.uuid4())
        elif name.endswith("_id"):
            arguments[name] = str(uuid.uuid4())
        elif name in KNOWN:
            arguments[name] = KNOWN[name]
        else:
            arguments[name] = _value(schema["properties"][name])
    return arguments


def test_read_only_tools_make_no_mutating_call(sandbox, team, admin_token, admin_user, operation_of):
    cluster = ClusterFactory(team=team, name="train", hyperpod_cluster_name="train-hp", eks_cluster_name="train-eks")
    InstanceGroupFactory(cluster=cluster, name="gpu", count=1)
    storage = StorageFactory(cluster=cluster, name="data", bucket="acme-data")
    running = operation_of(OperationStatus.RUNNING, by=admin_user)
    objects = {"cluster_id": str(cluster.pk), "storage_id": str(storage.pk)}
    mcp = MCP(admin_token)
    calls = [(tool.name, arguments_for(tool, objects)) for tool in registry if tool.read_only]
    calls.append((WAIT_TOOL, {"id": str(running.pk), "timeout_seconds": 1}))
    assert len(calls) >= 20

    account = team.sandbox_account_id
    reads = 0
    for name, arguments in calls:
        before = aws_calls(sandbox, account)
        with CaptureQueriesContext(connection) as queries:
            mcp.call(name, arguments)  # success or a domain error: either way, nothing may change
        after = aws_calls(sandbox, account)
        writes = [
            q["sql"]
            for q in queries.captured_queries
            if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
            and not q["sql"].startswith(ALLOWED_WRITES)
        ]
        assert writes == [], (name, writes)
        new = {action for action, count in after.items() if count > before.get(action, 0)}
        changing = sorted(action for action in new if not action.split(":", 1)[-1].startswith(READ_VERBS))
        assert changing == [], (name, changing)
        reads += len(new)
    assert reads > 0  # the catalog and cluster reads did reach the (sandbox) cloud
