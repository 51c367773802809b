"""The clusters MCP tools answer exactly what their REST endpoints answer, for the same token.

Calls into the sandbox cost seconds each, so clusters that need no cloud check are written through
the service (as the REST create would after validation) and only the parity that involves the cloud
goes through it. No worker runs: operations stay pending, which is all these tests need.
"""

from __future__ import annotations

import uuid

import pytest

from agent_tools.registry import registry
from clusters.models import ActiveCluster, Cluster, ClusterStatus, Storage
from instantstart.cloud.aws import team_cloud
from instantstart.operations.models import AuditEvent, Operation
from instantstart.tenancy.roles import Role
from tests.mcp_client import MCP, assert_same, body
from tests.support import client_with, token_for, wait_until

from .helpers import GROUP, cluster_body
from .helpers import recorded_cluster as make_cluster

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sandbox")]

READS = {
    "list_clusters",
    "get_cluster",
    "list_availability_zones",
    "list_instance_types",
    "list_training_plans",
    "preflight_cluster",
    "list_importable_clusters",
    "list_storage",
    "get_cluster_drift",
}
MUTATING = {
    "change_cluster_zone",
    "create_cluster",
    "delete_cluster",
    "set_active_cluster",
    "import_cluster",
    "attach_storage",
    "detach_storage",
    "reconcile_cluster",
}
REGION = {"region": "us-west-2"}


# --- the listing ---------------------------------------------------------------------------


def test_listing_schemas_and_status_tools(admin_token):
    tools = {tool.name: tool for tool in MCP(admin_token, read_only=False).list_tools()}
    assert READS | MUTATING <= tools.keys()

    create = tools["create_cluster"]
    assert create.input_schema["required"] == ["name", "region", "availability_zone", "instance_groups"]
    group = create.input_schema["properties"]["instance_groups"]["items"]
    assert group["properties"]["count"] == {"type": "integer", "minimum": 1, "maximum": 1000}
    assert group["properties"]["capacity_type"]["enum"] == ["on_demand", "spot", "training_plan"]

    delete = tools["delete_cluster"]
    assert delete.input_schema["required"] == ["id"]
    assert delete.input_schema["properties"]["force"]["type"] == "boolean"
    assert tools["detach_storage"].input_schema["required"] == ["cluster_id", "storage_id"]
    assert tools["attach_storage"].input_schema["required"] == ["cluster_id", "name", "kind"]
    assert tools["import_cluster"].input_schema["required"] == ["name", "region", "eks_cluster_name"]
    assert tools["list_importable_clusters"].input_schema["properties"].keys() == {"region"}

    for name in MUTATING:
        assert "idempotency_key" in tools[name].input_schema["properties"], name
        assert tools[name].annotations.read_only_hint is False, name
        if name not in ("set_active_cluster", "change_cluster_zone"):  # at once: no operation to poll
            assert tools[name].meta == {"instantstart/statusTool": "get_operation"}, name
            assert "get_operation" in tools[name].description, name
    assert tools["set_active_cluster"].meta == {"instantstart/statusTool": "get_cluster"}
    assert tools["change_cluster_zone"].meta == {"instantstart/statusTool": "get_cluster"}
    # Repeating these with the same arguments changes nothing more; the others may start a second operation.
    assert {name for name in MUTATING if tools[name].annotations.idempotent_hint} == {
        "change_cluster_zone",
        "delete_cluster",
        "set_active_cluster",
    }
    assert {tools[name].annotations.open_world_hint for name in READS | MUTATING} == {False}
    # The answer's schema is the response serializer's: a cluster, and create's {cluster, operation}.
    cluster_fields = tools["get_cluster"].output_schema["required"]
    assert {"id", "status", "instance_groups", "storages", "last_operation"} <= set(cluster_fields)
    # ...or, held by the human gate for an agent token, {approval} (agent_tools.approvals).
    assert [answer["required"] for answer in create.output_schema["anyOf"]] == [["cluster", "operation"], ["approval"]]
    assert tools["delete_cluster"].output_schema["anyOf"][0]["required"] == ["forgotten", "cluster"]
    assert {name for name in MUTATING if tools[name].annotations.destructive_hint} == {
        "delete_cluster",
        "detach_storage",
    }
    for name in READS:
        assert tools[name].annotations.read_only_hint is True, name
        assert "idempotency_key" not in tools[name].input_schema["properties"], name
    assert tools["preflight_cluster"].input_schema["required"] == create.input_schema["required"]
    for name in ("list_availability_zones", "list_instance_types", "list_training_plans"):
        assert tools[name].input_schema["required"] == ["region"]
    assert "reconcile_cluster" in tools["get_cluster_drift"].description


def test_read_only_mode_hides_mutations_and_keeps_reads(admin_token, team, admin_user):
    cluster = make_cluster(team, admin_user)
    mcp = MCP(admin_token, read_only=True)
    names = set(mcp.tool_names())
    assert READS <= names
    assert not MUTATING & names

    for tool, arguments in (
        ("create_cluster", cluster_body("other")),
        ("delete_cluster", {"id": str(cluster.pk)}),
        ("reconcile_cluster", {"id": str(cluster.pk)}),
        ("attach_storage", {"cluster_id": str(cluster.pk), "name": "data", "kind": "s3", "bucket": "b"}),
    ):
        result = mcp.call(tool, arguments)
        assert result.is_error and body(result)["error"]["code"] == "read_only", tool
    assert list(Cluster.objects.values_list("name", "status")) == [("train", "creating")]
    assert Operation.objects.count() == 1

    # Reads run, preflight included: it is a POST that only reads (here its validation answers).
    assert body(mcp.call("get_cluster_drift", {"id": str(cluster.pk)})) == {"in_sync": True, "differences": []}
    assert body(mcp.call("list_storage", {"cluster_id": str(cluster.pk)}))["count"] == 1
    invalid = mcp.call("preflight_cluster", cluster_body(instance_groups=[{**GROUP, "count": 0}]))
    assert body(invalid)["error"]["code"] == "invalid"


# --- reads: the same JSON as REST ----------------------------------------------------------


def test_list_and_get_cluster(admin_token, viewer_token, rest):
    created = rest.post("/api/v1/clusters/", cluster_body(), format="json")
    assert created.status_code == 202, created.json()
    created = created.json()
    cluster_id = created["cluster"]["id"]
    assert created["operation"]["status"] == "pending"  # no worker: the operation just waits

    for token in (admin_token, viewer_token):
        mcp, client = MCP(token), client_with(token)
        assert_same(mcp.call("list_clusters"), client.get("/api/v1/clusters/"))
        assert_same(mcp.call("list_clusters", {"limit": 1}), client.get("/api/v1/clusters/", {"limit": 1}))
        result = mcp.call("get_cluster", {"id": cluster_id})
        assert_same(result, client.get(f"/api/v1/clusters/{cluster_id}/"))
    assert result.structured_content["last_operation"]["id"] == created["operation"]["id"]


def test_catalog_tools(viewer_token):
    mcp, client = MCP(viewer_token), client_with(viewer_token)
    for tool, path, arguments in (
        ("list_availability_zones", "availability-zones", REGION),
        ("list_instance_types", "instance-types", {**REGION, "availability_zone": "us-west-2a"}),
        ("list_training_plans", "training-plans", REGION),
        ("list_instance_types", "instance-types", {"region": "mars-1"}),
    ):
        assert_same(mcp.call(tool, arguments), client.get(f"/api/v1/catalog/{path}/", arguments))
    zones = mcp.call("list_availability_zones", REGION).structured_content["results"]
    assert "us-west-2a" in [zone["name"] for zone in zones]
    assert "region" in body(mcp.call("list_training_plans", {"region": "mars-1"}))["error"]["fields"]


def test_preflight(admin_mcp, rest, viewer_token):
    result = admin_mcp.call("preflight_cluster", cluster_body())
    assert_same(result, rest.post("/api/v1/preflight/", cluster_body(), format="json"))
    assert result.structured_content["ok"] is True

    # Preflight needs the member role, over MCP as over REST.
    denied = MCP(viewer_token).call("preflight_cluster", cluster_body())
    response = client_with(viewer_token).post("/api/v1/preflight/", cluster_body(), format="json")
    assert response.status_code == 403
    assert_same(denied, response)
    assert not Cluster.objects.exists()
    assert not Operation.objects.exists()


# --- errors: the same as REST, and nothing changes -----------------------------------------


def test_another_teams_cluster_is_the_same_404(admin_mcp, rest, team, admin_user, theirs):
    mine = make_cluster(team, admin_user, settled=True)
    their_storage = theirs.storages.get()
    url = f"/api/v1/clusters/{theirs.pk}/"
    attach = {"name": "data", "kind": "s3", "bucket": "globex-data"}
    for tool, arguments, method, path, data in (
        ("get_cluster", {"id": theirs.pk}, "get", url, None),
        ("delete_cluster", {"id": theirs.pk}, "delete", url, None),
        ("delete_cluster", {"id": theirs.pk, "force": True}, "delete", url + "?force=true", None),
        ("set_active_cluster", {"id": theirs.pk}, "post", url + "activate/", None),
        ("get_cluster_drift", {"id": theirs.pk}, "get", url + "drift/", None),
        ("reconcile_cluster", {"id": theirs.pk}, "post", url + "reconcile/", None),
        ("list_storage", {"cluster_id": theirs.pk}, "get", url + "storage/", None),
        ("attach_storage", {"cluster_id": theirs.pk, **attach}, "post", url + "storage/", attach),
        (
            "detach_storage",
            {"cluster_id": theirs.pk, "storage_id": their_storage.pk},
            "delete",
            f"{url}storage/{their_storage.pk}/",
            None,
        ),
        # Their storage under my cluster is not found either.
        (
            "detach_storage",
            {"cluster_id": mine.pk, "storage_id": their_storage.pk},
            "delete",
            f"/api/v1/clusters/{mine.pk}/storage/{their_storage.pk}/",
            None,
        ),
    ):
        arguments = {name: str(value) if isinstance(value, uuid.UUID) else value for name, value in arguments.items()}
        result = admin_mcp.call(tool, arguments)
        response = getattr(rest, method)(path, data, format="json") if data else getattr(rest, method)(path)
        assert response.status_code == 404, (tool, response.json())
        assert_same(result, response)
    theirs.refresh_from_db()
    their_storage.refresh_from_db()
    assert (theirs.status, their_storage.status) == (ClusterStatus.ACTIVE, "attached")
    assert not Operation.objects.filter(team=theirs.team).exists()
    assert Operation.objects.filter(team=team).count() == 1  # mine's create, nothing else
    assert not ActiveCluster.objects.filter(cluster=theirs).exists()


@pytest.mark.parametrize("role", [Role.VIEWER, Role.MEMBER])
def test_cluster_changes_need_the_admin_role(team, admin_user, member_user, viewer_user, role):
    cluster = make_cluster(team, admin_user, settled=True)
    token = token_for(team, viewer_user if role == Role.VIEWER else member_user, role)
    mcp, client = MCP(token), client_with(token)
    url = f"/api/v1/clusters/{cluster.pk}/"
    imported = {"name": "adopted", "region": "us-west-2", "eks_cluster_name": "outside"}
    attach = {"name": "data", "kind": "s3", "bucket": "acme-data"}
    for tool, arguments, method, path, data in (
        ("create_cluster", cluster_body("other"), "post", "/api/v1/clusters/", cluster_body("other")),
        ("delete_cluster", {"id": str(cluster.pk)}, "delete", url, None),
        ("import_cluster", imported, "post", "/api/v1/clusters/import/", imported),
        ("reconcile_cluster", {"id": str(cluster.pk)}, "post", url + "reconcile/", None),
        ("attach_storage", {"cluster_id": str(cluster.pk), **attach}, "post", url + "storage/", attach),
    ):
        result = mcp.call(tool, arguments)
        response = getattr(client, method)(path, data, format="json") if data else getattr(client, method)(path)
        assert response.status_code == 403, (tool, response.json())
        assert_same(result, response)
        assert "admin role" in body(result)["error"]["message"]
    assert list(Cluster.objects.values_list("name", "status")) == [("train", "active")]
    assert Operation.objects.count() == 1
    assert Storage.objects.filter(cluster=cluster).count() == 1


@pytest.mark.parametrize(
    ("group", "field", "message"),
    [
        ({"name": "g", "instance_type": "ml.g5.xlarge", "count": 0}, "count", "greater than or equal to 1"),
        (
            {"name": "g", "instance_type": "ml.g5.xlarge", "count": 1, "efa_only": True},
            "efa_only",
            "EFA-only networking needs",
        ),
    ],
)
def test_bad_input_is_the_same_400_and_creates_nothing(admin_mcp, rest, group, field, message):
    arguments = cluster_body("bad", instance_groups=[group])
    result = admin_mcp.call("create_cluster", {**arguments, "idempotency_key": "bad-1"})
    response = rest.post("/api/v1/clusters/", arguments, format="json")
    assert response.status_code == 400
    assert_same(result, response)
    errors = body(result)["error"]["fields"]["instance_groups"]["0"][field]
    assert message in errors[0]
    assert not Cluster.objects.exists()
    assert not Operation.objects.exists()
    assert not AuditEvent.objects.filter(action="cluster.create").exists()


# --- mutations over MCP --------------------------------------------------------------------


def test_create_twice_with_one_key_is_one_cluster_and_one_operation(admin_mcp):
    arguments = {**cluster_body(), "idempotency_key": "create-train-1"}
    first = admin_mcp.call("create_cluster", arguments)
    second = admin_mcp.call("create_cluster", arguments)

    assert not first.is_error and not second.is_error, body(first)
    assert body(second) == body(first)
    answer = first.structured_content
    assert answer["operation"]["status_tool"] == "get_operation"
    assert answer["cluster"]["status"] == "creating"
    assert Cluster.objects.count() == 1
    assert Operation.objects.filter(kind="cluster.create").count() == 1
    events = AuditEvent.objects.filter(action="cluster.create")
    assert list(events.values_list("via", "actor__username", "target_id")) == [
        ("mcp", "alice", answer["cluster"]["id"])
    ]
    # The operation it names is what get_operation shows.
    status = admin_mcp.call("get_operation", {"id": answer["operation"]["id"]})
    assert status.structured_content["kind"] == "cluster.create"


def test_delete_passes_force_as_the_query_parameter(admin_mcp, rest, team, admin_user):
    cluster_id = str(make_cluster(team, admin_user).pk)

    # The create operation is still pending: without force, the same 409 as REST.
    refused = admin_mcp.call("delete_cluster", {"id": cluster_id})
    response = rest.delete(f"/api/v1/clusters/{cluster_id}/")
    assert response.status_code == 409
    assert_same(refused, response)
    assert body(admin_mcp.call("delete_cluster", {"id": cluster_id, "force": False}))["error"]["code"] == "conflict"

    deleted = admin_mcp.call("delete_cluster", {"id": cluster_id, "force": True, "idempotency_key": "del-1"})
    assert not deleted.is_error, body(deleted)
    answer = deleted.structured_content
    assert (answer["operation"]["kind"], answer["cluster"]["status"]) == ("cluster.delete", "deleting")
    assert Operation.objects.get(kind="cluster.create").cancel_requested is True
    event = AuditEvent.objects.get(action="cluster.delete")
    assert (event.via, event.summary["force"]) == ("mcp", True)
    # The key replays over REST: the tool call was DELETE /api/v1/clusters/{id}/.
    replay = rest.delete(f"/api/v1/clusters/{cluster_id}/?force=true", HTTP_IDEMPOTENCY_KEY="del-1")
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.json() == answer
    assert Operation.objects.filter(kind="cluster.delete").count() == 1


def test_set_active_cluster(viewer_token, viewer_user, team, admin_user):
    first, second = (str(make_cluster(team, admin_user, name).pk) for name in ("first", "second"))
    mcp = MCP(viewer_token)  # any role may choose its own active cluster

    result = mcp.call("set_active_cluster", {"id": second})
    assert not result.is_error, body(result)
    assert str(ActiveCluster.objects.get(user=viewer_user, team=team).cluster_id) == second
    assert_same(result, client_with(viewer_token).post(f"/api/v1/clusters/{second}/activate/"))
    assert mcp.call("set_active_cluster", {"id": first}).structured_content["id"] == first
    assert str(ActiveCluster.objects.get(user=viewer_user, team=team).cluster_id) == first


def test_import_a_cluster_made_outside(admin_mcp, rest, team):
    cloud = team_cloud(team, "us-west-2")
    eks = cloud.client("eks")
    eks.create_cluster(
        name="outside", roleArn=f"arn:aws:iam::{cloud.account_id}:role/eks", resourcesVpcConfig={"subnetIds": []}
    )
    # Settled, so the two listings compare equal (the sandbox moves it from CREATING on its own).
    wait_until(lambda: eks.describe_cluster(name="outside")["cluster"]["status"] == "ACTIVE", message="EKS active")
    listed = admin_mcp.call("list_importable_clusters", REGION)
    assert_same(listed, rest.get("/api/v1/clusters/importable/", REGION))
    assert [c["eks_cluster_name"] for c in listed.structured_content["results"]] == ["outside"]

    unknown = {"name": "adopted", "region": "us-west-2", "eks_cluster_name": "nowhere"}
    result = admin_mcp.call("import_cluster", unknown)
    assert_same(result, rest.post("/api/v1/clusters/import/", unknown, format="json"))
    assert "No EKS cluster named nowhere" in body(result)["error"]["fields"]["eks_cluster_name"][0]
    assert not Cluster.objects.exists()

    arguments = {"name": "adopted", "region": "us-west-2", "eks_cluster_name": "outside", "idempotency_key": "imp-1"}
    first, second = admin_mcp.call("import_cluster", arguments), admin_mcp.call("import_cluster", arguments)
    assert not first.is_error, body(first)
    assert body(second) == body(first)
    answer = first.structured_content
    assert (answer["operation"]["kind"], answer["cluster"]["managed"]) == ("cluster.import", False)
    assert Cluster.objects.count() == 1 and Operation.objects.count() == 1
    assert list(AuditEvent.objects.filter(action="cluster.import").values_list("via", flat=True)) == ["mcp"]

    # Deleting an imported cluster only forgets it: at once, no operation.
    forgotten = admin_mcp.call("delete_cluster", {"id": answer["cluster"]["id"]})
    assert body(forgotten) == {"forgotten": True, "cluster": answer["cluster"]["id"]}
    assert Operation.objects.count() == 1


def test_attach_list_and_detach_storage(admin_mcp, rest, team, admin_user):
    cluster = make_cluster(team, admin_user, settled=True)
    bucket = f"acme-data-{uuid.uuid4().hex[:8]}"
    team_cloud(team, "us-west-2").client("s3").create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    url = f"/api/v1/clusters/{cluster.pk}/storage/"

    missing = {"name": "data", "kind": "s3", "bucket": f"{bucket}-missing"}
    result = admin_mcp.call("attach_storage", {"cluster_id": str(cluster.pk), **missing})
    assert_same(result, rest.post(url, missing, format="json"))
    assert "bucket" in body(result)["error"]["fields"]

    arguments = {"cluster_id": str(cluster.pk), "name": "data", "kind": "s3", "bucket": bucket, "idempotency_key": "a1"}
    first, second = admin_mcp.call("attach_storage", arguments), admin_mcp.call("attach_storage", arguments)
    assert not first.is_error, body(first)
    assert body(second) == body(first)
    answer = first.structured_content
    assert (answer["storage"]["bucket"], answer["operation"]["kind"]) == (bucket, "storage.attach")
    assert Operation.objects.filter(kind="storage.attach").count() == 1

    listed = admin_mcp.call("list_storage", {"cluster_id": str(cluster.pk)})
    assert_same(listed, rest.get(url))
    assert sorted(s["name"] for s in listed.structured_content["results"]) == ["data", "shared"]

    detached = admin_mcp.call("detach_storage", {"cluster_id": str(cluster.pk), "storage_id": answer["storage"]["id"]})
    assert not detached.is_error, body(detached)
    assert detached.structured_content["kind"] == "storage.detach"
    assert Storage.objects.get(pk=answer["storage"]["id"]).status == "detaching"
    assert sorted(AuditEvent.objects.filter(action__startswith="storage.").values_list("action", "via")) == [
        ("storage.attach", "mcp"),
        ("storage.detach", "mcp"),
    ]


def test_drift_and_reconcile(admin_mcp, rest, viewer_token, team, admin_user):
    cluster = make_cluster(team, admin_user, settled=True)  # its EKS cluster does not exist
    url = f"/api/v1/clusters/{cluster.pk}/"
    drift = MCP(viewer_token).call("get_cluster_drift", {"id": str(cluster.pk)})
    assert_same(drift, client_with(viewer_token).get(url + "drift/"))
    assert drift.structured_content == {
        "in_sync": False,
        "differences": [{"resource": "eks", "field": "exists", "recorded": True, "actual": False}],
    }

    arguments = {"id": str(cluster.pk), "idempotency_key": "rec-1"}
    first, second = admin_mcp.call("reconcile_cluster", arguments), admin_mcp.call("reconcile_cluster", arguments)
    assert not first.is_error, body(first)
    assert body(second) == body(first)
    assert (first.structured_content["kind"], first.structured_content["status_tool"]) == (
        "cluster.reconcile",
        "get_operation",
    )
    assert Operation.objects.filter(kind="cluster.reconcile").count() == 1
    assert list(AuditEvent.objects.filter(action="cluster.reconcile").values_list("via", flat=True)) == ["mcp"]
    # A second reconcile while the first is pending: the same 409 as REST.
    assert_same(admin_mcp.call("reconcile_cluster", {"id": str(cluster.pk)}), rest.post(url + "reconcile/"))


# --- what the tools read from their REST endpoints ---------------------------------------


def test_a_query_parameter_of_a_delete_travels_in_the_query_string():
    """delete_cluster's force is DELETE …/clusters/{id}/?force=: read from the view's extend_schema."""
    contract = registry.get("delete_cluster").contract
    assert (contract.method, contract.route_name, contract.path_params) == (
        "delete",
        "api:cluster-detail",
        {"id": "pk"},
    )
    assert contract.query_arguments == {"force"} and contract.body is None
    assert registry.get("delete_instance_group").contract.query_arguments == {"force"}
    # A GET's arguments are its query: the catalog takes a region, optionally a zone.
    assert registry.get("list_instance_types").contract.query_arguments == {"region", "availability_zone"}
