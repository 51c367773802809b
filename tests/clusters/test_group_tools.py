"""The instance group, node and diagnosis MCP tools answer exactly what their REST endpoints answer.

Validation, role and scoping parity run on clusters written through the service (no worker, no
HyperPod cluster: every answer there comes before the cloud is asked). What needs HyperPod — the
explicit diff of a scale, nodes, diagnosis, remediation — runs in one flow on one cluster created
by a real worker, to keep the time down. A 202 is compared with REST by replaying its
Idempotency-Key over REST: the same key on the same path returns the tool's answer.
"""

from __future__ import annotations

import pytest

from clusters.models import InstanceGroup
from instantstart.operations.models import AuditEvent, Operation
from instantstart.tenancy.roles import Role
from tests.mcp_client import MCP, assert_same, body
from tests.support import client_with, token_for

from .helpers import cluster_body, sandbox_calls, wait_for_operation
from .helpers import recorded_cluster as make_cluster

pytestmark = pytest.mark.usefixtures("sandbox")

READS = {"list_instance_groups", "list_nodes", "diagnose_node", "diagnose_cluster"}
MUTATING = {
    "add_instance_group",
    "scale_instance_group",
    "delete_instance_group",
    "reboot_node",
    "replace_node",
    "delete_node",
}
NODE = "i-0123456789abcdef0"


def group_calls(cluster_id) -> list[tuple[str, dict, str, str, dict | None]]:
    """(tool, arguments, method, REST path, REST body) for every new tool on ``cluster_id``."""
    base = f"/api/v1/clusters/{cluster_id}/"
    cid = str(cluster_id)
    add = {"name": "more", "instance_type": "ml.g5.xlarge", "count": 1}
    return [
        ("list_instance_groups", {"cluster_id": cid}, "get", base + "instance-groups/", None),
        ("add_instance_group", {"cluster_id": cid, **add}, "post", base + "instance-groups/", add),
        (
            "scale_instance_group",
            {"cluster_id": cid, "name": "gpu", "count": 5},
            "patch",
            base + "instance-groups/gpu/",
            {"count": 5},
        ),
        ("delete_instance_group", {"cluster_id": cid, "name": "gpu"}, "delete", base + "instance-groups/gpu/", None),
        (
            "delete_instance_group",
            {"cluster_id": cid, "name": "gpu", "force": True},
            "delete",
            base + "instance-groups/gpu/?force=true",
            None,
        ),
        ("list_nodes", {"cluster_id": cid}, "get", base + "nodes/", None),
        ("diagnose_node", {"cluster_id": cid, "node": NODE}, "get", f"{base}nodes/{NODE}/diagnosis/", None),
        ("reboot_node", {"cluster_id": cid, "node": NODE}, "post", f"{base}nodes/{NODE}/reboot/", None),
        ("replace_node", {"cluster_id": cid, "node": NODE}, "post", f"{base}nodes/{NODE}/replace/", None),
        ("delete_node", {"cluster_id": cid, "node": NODE}, "post", f"{base}nodes/{NODE}/delete/", None),
        ("diagnose_cluster", {"cluster_id": cid}, "get", base + "diagnosis/", None),
    ]


def rest_call(client, method: str, path: str, data: dict | None, **headers):
    if data is None:
        return getattr(client, method)(path, **headers)
    return getattr(client, method)(path, data, format="json", **headers)


# --- the listing ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_listing_schemas_and_status_tools(admin_token):
    tools = {tool.name: tool for tool in MCP(admin_token, read_only=False).list_tools()}
    assert READS | MUTATING <= tools.keys()

    schema = {name: tools[name].input_schema for name in READS | MUTATING}
    for name in READS | MUTATING:
        assert schema[name]["properties"]["cluster_id"] == {"type": "string", "description": "The cluster's id."}
    assert schema["list_instance_groups"]["required"] == ["cluster_id"]
    assert schema["add_instance_group"]["required"] == ["cluster_id", "name", "instance_type", "count"]
    assert schema["add_instance_group"]["properties"]["capacity_type"]["enum"] == ["on_demand", "spot", "training_plan"]
    scale = schema["scale_instance_group"]
    assert scale["required"] == ["cluster_id", "name"]
    assert scale["properties"]["name"]["description"] == "The instance group's name."
    # Only the count can change: the schema offers nothing else (and REST refuses anything else).
    assert scale["properties"].keys() == {
        "cluster_id",
        "name",
        "count",
        "min_count",
        "autoscaling",  # the features app's managed autoscaling of the group
        "idempotency_key",
    }
    assert scale["additionalProperties"] is False
    assert schema["delete_instance_group"]["properties"]["force"]["type"] == "boolean"
    assert schema["list_nodes"]["properties"]["health"]["enum"][0] == "Schedulable"
    # The node list and the cluster diagnosis are not paged: no limit/offset to misuse.
    assert schema["list_nodes"]["properties"].keys() == {"cluster_id", "health"}
    assert schema["diagnose_cluster"]["properties"].keys() == {"cluster_id"}
    for name in ("diagnose_node", "reboot_node", "replace_node", "delete_node"):
        assert schema[name]["required"] == ["cluster_id", "node"], name

    for name in MUTATING:
        assert "idempotency_key" in schema[name]["properties"], name
        assert tools[name].annotations.read_only_hint is False, name
        assert tools[name].meta == {"instantstart/statusTool": "get_operation"}, name
        assert "get_operation" in tools[name].description, name
    assert {name for name in MUTATING if tools[name].annotations.destructive_hint} == {
        "delete_instance_group",
        "reboot_node",
        "replace_node",
        "delete_node",
    }
    assert {name for name in MUTATING if tools[name].annotations.idempotent_hint} == {"scale_instance_group"}
    for name in READS:
        assert tools[name].annotations.read_only_hint is True, name
        assert tools[name].annotations.destructive_hint is False, name  # all four hints, always said
        assert "idempotency_key" not in schema[name]["properties"], name
    # Scaling answers {changed, instance_group} or {changed, operation}: both shapes are in its schema
    # (and {approval} when the human gate holds an agent's costly scale-up).
    assert [answer["required"] for answer in tools["scale_instance_group"].output_schema["anyOf"]] == [
        ["changed", "instance_group"],
        ["changed", "operation"],
        ["approval"],
    ]
    assert "notes" in tools["add_instance_group"].description
    assert "changed: false" in tools["scale_instance_group"].description
    for name in ("diagnose_node", "diagnose_cluster"):
        description = tools[name].description
        assert "never acts" in description and "reboot_node" in description and "replace_node" in description


@pytest.mark.django_db
def test_read_only_mode_keeps_diagnosis_and_hides_changes(admin_token, team, admin_user):
    cluster = make_cluster(team, admin_user, settled=True)
    mcp = MCP(admin_token, read_only=True)
    names = set(mcp.tool_names())
    assert READS <= names
    assert not MUTATING & names

    for tool, arguments, *_ in group_calls(cluster.pk):
        if tool in MUTATING:
            result = mcp.call(tool, arguments)
            assert result.is_error and body(result)["error"]["code"] == "read_only", tool
    assert list(cluster.instance_groups.values_list("name", "count", "status")) == [("gpu", 2, "Creating")]
    assert Operation.objects.count() == 1  # the cluster's create
    assert_same(
        mcp.call("list_instance_groups", {"cluster_id": str(cluster.pk)}),
        client_with(admin_token).get(f"/api/v1/clusters/{cluster.pk}/instance-groups/"),
    )


# --- errors: the same as REST, and nothing changes -----------------------------------------


@pytest.mark.django_db
def test_another_teams_cluster_is_the_same_404_on_every_tool(admin_mcp, rest, theirs):
    calls = group_calls(theirs.pk)
    assert {tool for tool, *_ in calls} == READS | MUTATING
    for tool, arguments, method, path, data in calls:
        result = admin_mcp.call(tool, arguments)
        response = rest_call(rest, method, path, data)
        assert response.status_code == 404, (tool, response.json())
        assert_same(result, response)
    assert list(theirs.instance_groups.values_list("name", "count")) == [("gpu", 1)]
    assert not Operation.objects.exists()
    assert not AuditEvent.objects.filter(action__regex=r"^(instance_group|node)\.").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("role", [Role.VIEWER, Role.MEMBER])
def test_group_and_node_changes_need_the_admin_role(team, admin_user, member_user, viewer_user, role):
    cluster = make_cluster(team, admin_user, settled=True)
    token = token_for(team, viewer_user if role == Role.VIEWER else member_user, role)
    mcp, client = MCP(token), client_with(token)
    for tool, arguments, method, path, data in group_calls(cluster.pk):
        if tool not in MUTATING:
            continue
        result = mcp.call(tool, arguments)
        response = rest_call(client, method, path, data)
        assert response.status_code == 403, (tool, response.json())
        assert_same(result, response)
    assert list(cluster.instance_groups.values_list("name", "count")) == [("gpu", 2)]
    assert Operation.objects.count() == 1


@pytest.mark.django_db
def test_efa_only_on_a_g5_is_the_same_400_and_creates_nothing(admin_mcp, rest, team, admin_user):
    cluster = make_cluster(team, admin_user, settled=True)
    group = {"name": "small", "instance_type": "ml.g5.xlarge", "count": 1, "efa_only": True}
    result = admin_mcp.call("add_instance_group", {"cluster_id": str(cluster.pk), **group, "idempotency_key": "efa"})
    response = rest.post(f"/api/v1/clusters/{cluster.pk}/instance-groups/", group, format="json")
    assert response.status_code == 400
    assert_same(result, response)
    assert "efa_only" in body(result)["error"]["fields"]
    assert list(cluster.instance_groups.values_list("name", flat=True)) == ["gpu"]
    assert Operation.objects.count() == 1
    assert not AuditEvent.objects.filter(action="instance_group.add").exists()


@pytest.mark.django_db
def test_add_a_group_answers_the_operation_and_notes(admin_mcp, rest, team, admin_user):
    cluster = make_cluster(team, admin_user, settled=True)
    group = {"name": "more", "instance_type": "ml.g5.xlarge", "count": 1, "capacity_type": "spot"}
    result = admin_mcp.call("add_instance_group", {"cluster_id": str(cluster.pk), **group, "idempotency_key": "add-1"})
    assert not result.is_error, body(result)
    answer = result.structured_content
    assert answer.keys() == {"instance_group", "operation", "notes"}
    assert answer["notes"] == []  # placed where asked
    assert (answer["instance_group"]["capacity_type"], answer["instance_group"]["availability_zone"]) == (
        "spot",
        "us-west-2a",
    )
    assert (answer["operation"]["kind"], answer["operation"]["status_tool"]) == ("instance_group.add", "get_operation")
    # The tool call was POST /api/v1/clusters/{id}/instance-groups/: its key replays over REST.
    replay = rest.post(
        f"/api/v1/clusters/{cluster.pk}/instance-groups/", group, format="json", HTTP_IDEMPOTENCY_KEY="add-1"
    )
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.json() == answer
    assert Operation.objects.filter(kind="instance_group.add").count() == 1
    assert list(AuditEvent.objects.filter(action="instance_group.add").values_list("via", flat=True)) == ["mcp"]


@pytest.mark.django_db
def test_scale_takes_only_the_count(admin_mcp, rest, team, admin_user):
    """Unknown and immutable arguments are not ignored: the tool sends them, REST refuses them by name."""
    cluster = make_cluster(team, admin_user, settled=True)
    url = f"/api/v1/clusters/{cluster.pk}/instance-groups/gpu/"
    target = {"cluster_id": str(cluster.pk), "name": "gpu"}
    for data, field in (
        ({"capacity_type": "spot"}, "capacity_type"),
        ({"count": 3, "capacity_type": "spot"}, "capacity_type"),
        ({"efa_only": True}, "efa_only"),
        ({"instance_type": "ml.p5.48xlarge"}, "instance_type"),
        ({"count": 3, "colour": "blue"}, "colour"),
        ({"count": 1, "min_count": 2}, "min_count"),
    ):
        result = admin_mcp.call("scale_instance_group", {**target, **data})
        response = rest.patch(url, data, format="json")
        assert response.status_code == 400, (data, response.json())
        assert field in response.json()["error"]["fields"], data
        # The tool checks its declared schema first (issue 15 item 8): the same field, refused before dispatch.
        assert result.is_error and body(result)["error"]["code"] == "invalid", data
        assert field in body(result)["error"]["fields"], data
    assert (
        "capacity"
        in rest.patch(url, {"capacity_type": "spot"}, format="json").json()["error"]["fields"]["capacity_type"][0]
    )
    nothing = admin_mcp.call("scale_instance_group", target)
    assert_same(nothing, rest.patch(url, {}, format="json"))
    assert body(nothing)["error"]["code"] == "invalid"
    assert list(cluster.instance_groups.values_list("count", "capacity_type", "efa_only")) == [(2, "on_demand", False)]
    assert Operation.objects.count() == 1
    # A group the cluster does not have: the same 404.
    missing = {"cluster_id": str(cluster.pk), "name": "nope", "count": 1}
    assert_same(
        admin_mcp.call("scale_instance_group", missing),
        rest.patch(f"/api/v1/clusters/{cluster.pk}/instance-groups/nope/", {"count": 1}, format="json"),
    )


@pytest.mark.django_db
def test_delete_group_passes_force_as_the_query_parameter(admin_mcp, rest, team, admin_user):
    cluster = make_cluster(team, admin_user, settled=True)
    result = admin_mcp.call(
        "delete_instance_group",
        {"cluster_id": str(cluster.pk), "name": "gpu", "force": True, "idempotency_key": "dg-1"},
    )
    assert not result.is_error, body(result)
    assert result.structured_content["kind"] == "instance_group.delete"
    assert InstanceGroup.objects.get(cluster=cluster, name="gpu").status == "Deleting"
    replay = rest.delete(f"/api/v1/clusters/{cluster.pk}/instance-groups/gpu/?force=true", HTTP_IDEMPOTENCY_KEY="dg-1")
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.json() == body(result)
    assert Operation.objects.filter(kind="instance_group.delete").count() == 1
    assert list(AuditEvent.objects.filter(action="instance_group.delete").values_list("via", flat=True)) == ["mcp"]


# --- on a live cluster: explicit diff, nodes, diagnosis, remediation -----------------------


def mutating_calls(sandbox, team) -> dict[str, int]:
    return {
        name: n
        for name, n in sandbox_calls(sandbox, team.sandbox_account_id).items()
        if not name.split(":")[1].startswith(("Describe", "List", "Get"))
    }


@pytest.mark.worker
def test_live_cluster_flow(start_worker, sandbox, team, admin_user, viewer_user):
    admin_token, viewer_token = token_for(team, admin_user, Role.ADMIN), token_for(team, viewer_user, Role.VIEWER)
    mcp, rest = MCP(admin_token), client_with(admin_token)
    viewer_mcp, viewer_rest = MCP(viewer_token), client_with(viewer_token)
    start_worker()
    created = rest.post("/api/v1/clusters/", cluster_body("fleet"), format="json").json()
    wait_for_operation(created["operation"]["id"])
    cluster_id = created["cluster"]["id"]
    base = f"/api/v1/clusters/{cluster_id}/"
    cid = {"cluster_id": cluster_id}

    # Reads, for any role.
    for tool_mcp, client in ((mcp, rest), (viewer_mcp, viewer_rest)):
        assert_same(tool_mcp.call("list_instance_groups", cid), client.get(base + "instance-groups/"))
    nodes = mcp.call("list_nodes", cid)
    assert_same(nodes, rest.get(base + "nodes/"))
    nodes = nodes.structured_content["results"]
    assert len(nodes) == 2 and {n["health"] for n in nodes} == {"Schedulable"}
    first, second = nodes[0], nodes[1]
    for health, expected in (("Schedulable", 2), ("Unschedulable", 0)):
        filtered = viewer_mcp.call("list_nodes", {**cid, "health": health})
        assert_same(filtered, viewer_rest.get(base + "nodes/", {"health": health}))
        assert len(filtered.structured_content["results"]) == expected

    # Scaling to the count HyperPod already has: 200 changed false, no operation, no UpdateCluster.
    operations, calls = Operation.objects.count(), mutating_calls(sandbox, team)
    same = mcp.call("scale_instance_group", {**cid, "name": "gpu", "count": 2, "idempotency_key": "same-2"})
    assert not same.is_error, body(same)
    assert same.structured_content["changed"] is False and "operation" not in same.structured_content
    assert_same(same, rest.patch(base + "instance-groups/gpu/", {"count": 2}, format="json"))

    # Diagnosis only reads: by instance id or node name, as REST answers it.
    for node in (first["instance_id"], second["name"]):
        report = viewer_mcp.call("diagnose_node", {**cid, "node": node})
        assert_same(report, viewer_rest.get(f"{base}nodes/{node}/diagnosis/"))
        assert report.structured_content["healthy"] is True
    report = viewer_mcp.call("diagnose_cluster", cid)
    assert_same(report, viewer_rest.get(base + "diagnosis/"))
    assert report.structured_content["nodes"] == {"total": 2, "unhealthy": 0}
    assert Operation.objects.count() == operations
    assert mutating_calls(sandbox, team) == calls

    # A node the cluster does not have: the same 404 for reads and changes.
    ghost = {**cid, "node": "i-0000000000000dead"}
    assert_same(mcp.call("diagnose_node", ghost), rest.get(f"{base}nodes/{ghost['node']}/diagnosis/"))
    refused = mcp.call("reboot_node", ghost)
    assert_same(refused, rest.post(f"{base}nodes/{ghost['node']}/reboot/"))
    assert body(refused)["error"]["code"] == "not_found"

    # Remediation: reboot answers the operation; its key replays over REST.
    reboot = mcp.call("reboot_node", {**cid, "node": first["instance_id"], "idempotency_key": "reboot-1"})
    assert not reboot.is_error, body(reboot)
    assert reboot.structured_content["kind"] == "node.reboot"
    replay = rest.post(f"{base}nodes/{first['instance_id']}/reboot/", HTTP_IDEMPOTENCY_KEY="reboot-1")
    assert replay["Idempotent-Replayed"] == "true" and replay.json() == body(reboot)
    wait_for_operation(reboot.structured_content["id"])

    # Scale up: 202 changed true with the operation; then the same count again is no change.
    up = mcp.call("scale_instance_group", {**cid, "name": "gpu", "count": 3})
    assert not up.is_error, body(up)
    assert up.structured_content["changed"] is True
    assert up.structured_content["operation"]["kind"] == "instance_group.scale"
    wait_for_operation(up.structured_content["operation"]["id"])
    again = mcp.call("scale_instance_group", {**cid, "name": "gpu", "count": 3})
    assert again.structured_content["changed"] is False
    assert Operation.objects.filter(kind="instance_group.scale").count() == 1

    replace = mcp.call("replace_node", {**cid, "node": first["name"]})
    delete = mcp.call("delete_node", {**cid, "node": second["instance_id"]})
    assert (body(replace)["kind"], body(delete)["kind"]) == ("node.replace", "node.delete")
    assert {op.params["instance_id"] for op in Operation.objects.filter(kind__in=["node.replace", "node.delete"])} == {
        first["instance_id"],
        second["instance_id"],
    }
    removed = mcp.call("delete_instance_group", {**cid, "name": "gpu", "idempotency_key": "dg-live"})
    assert not removed.is_error, body(removed)
    assert body(removed)["kind"] == "instance_group.delete"
    replay = rest.delete(base + "instance-groups/gpu/", HTTP_IDEMPOTENCY_KEY="dg-live")
    assert replay["Idempotent-Replayed"] == "true" and replay.json() == body(removed)
    assert sorted(AuditEvent.objects.filter(via="mcp").values_list("action", flat=True)) == sorted(
        ["node.reboot", "instance_group.scale", "node.replace", "node.delete", "instance_group.delete"]
    )
