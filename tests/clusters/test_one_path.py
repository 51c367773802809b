"""One path: a rule that REST, MCP and the portal share gives the same answer on all three faces —
the same status and the same message — and changes nothing when it refuses.

Rules that need no HyperPod run on clusters written to the database (the catalog reads go to the
sandbox); the explicit diff of a scale, unknown nodes of a live cluster and the workload guard run
in one flow on one cluster created by a real worker, with a real pod on one of its nodes.
"""

from __future__ import annotations

import html

import pytest
from django.urls import reverse
from kubernetes import client as k8s

from clusters.models import Cluster, ClusterStatus, InstanceGroupStatus
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from instantstart.operations.models import AuditEvent, Operation
from instantstart.tenancy.roles import Role
from tests.mcp_client import MCP, assert_same
from tests.support import client_with, logged_in, token_for, wait_until

from .helpers import HTMX, cluster_body, recorded_cluster, wait_for_operation

pytestmark = pytest.mark.usefixtures("sandbox")

NODE = "i-0123456789abcdef0"


def faces(team, user):
    """REST, MCP and the portal, as the same admin."""
    token = token_for(team, user, Role.ADMIN)
    return client_with(token), MCP(token), logged_in(user)


def page_text(response) -> str:
    return html.unescape(response.content.decode())


def refusal(response) -> tuple[int, str]:
    """(status, message) of a REST refusal."""
    return response.status_code, response.json()["error"]["message"]


def assert_nothing_started(before: int) -> None:
    assert Operation.objects.count() == before


@pytest.mark.django_db
def test_a_cluster_still_creating_refuses_group_and_node_changes_alike(team, admin_user):
    rest, mcp, portal = faces(team, admin_user)
    cluster = recorded_cluster(team, admin_user)  # its create is pending: status creating
    before = Operation.objects.count()
    base = f"/api/v1/clusters/{cluster.pk}/"

    scale = rest.patch(base + "instance-groups/gpu/", {"count": 2}, format="json")
    status, message = refusal(scale)
    assert (status, message) == (
        409,
        "The cluster is creating: instance groups and nodes change only once it is active.",
    )
    assert_same(mcp.call("scale_instance_group", {"cluster_id": str(cluster.pk), "name": "gpu", "count": 2}), scale)
    page = portal.post(reverse("portal:cluster_group_scale", args=[cluster.pk, "gpu"]), {"count": "2"}, **HTMX)
    assert page.status_code == 409 and message in page_text(page)

    reboot = rest.post(f"{base}nodes/{NODE}/reboot/")
    assert refusal(reboot) == (409, message)
    assert_same(mcp.call("reboot_node", {"cluster_id": str(cluster.pk), "node": NODE}), reboot)
    page = portal.post(reverse("portal:cluster_node_action", args=[cluster.pk, NODE, "reboot"]))
    assert page.status_code == 409 and message in page_text(page)
    assert_nothing_started(before)


@pytest.mark.django_db
def test_an_active_cluster_without_its_hyperpod_name_says_so_not_that_it_is_inactive(team, admin_user):
    rest, mcp, portal = faces(team, admin_user)
    cluster = recorded_cluster(team, admin_user, settled=True)
    Cluster.objects.filter(pk=cluster.pk).update(hyperpod_cluster_name="")
    before = Operation.objects.count()
    base = f"/api/v1/clusters/{cluster.pk}/"
    message = "The cluster has no HyperPod cluster recorded: reconcile it first."

    for tool, arguments, call, url, data in (
        (
            "scale_instance_group",
            {"name": "gpu", "count": 2},
            lambda: rest.patch(base + "instance-groups/gpu/", {"count": 2}, format="json"),
            reverse("portal:cluster_group_scale", args=[cluster.pk, "gpu"]),
            {"count": "2"},
        ),
        (
            "delete_instance_group",
            {"name": "gpu", "force": True},
            lambda: rest.delete(base + "instance-groups/gpu/?force=true"),
            reverse("portal:cluster_group_delete", args=[cluster.pk, "gpu"]),
            {"force": "on"},
        ),
        (
            "reboot_node",
            {"node": NODE},
            lambda: rest.post(f"{base}nodes/{NODE}/reboot/"),
            reverse("portal:cluster_node_action", args=[cluster.pk, NODE, "reboot"]),
            {},
        ),
    ):
        response = call()
        assert refusal(response) == (409, message), tool
        assert_same(mcp.call(tool, {"cluster_id": str(cluster.pk), **arguments}), response)
        page = portal.post(url, data, **HTMX)
        assert page.status_code == 409 and message in page_text(page), tool
    assert_nothing_started(before)
    assert list(cluster.instance_groups.values_list("status", flat=True)) == [InstanceGroupStatus.CREATING]


@pytest.mark.django_db
def test_an_unknown_node_is_404_everywhere_also_before_hyperpod_exists(team, admin_user, viewer_user):
    rest, mcp, portal = faces(team, admin_user)
    cluster = recorded_cluster(team, admin_user)  # no HyperPod cluster yet: it has no node at all
    message = f"No node {NODE} in cluster {cluster.name}."
    url = f"/api/v1/clusters/{cluster.pk}/nodes/{NODE}/"
    for response, tool in ((rest.get(url), None), (rest.get(url + "diagnosis/"), "diagnose_node")):
        assert refusal(response) == (404, message)
        if tool:
            assert_same(mcp.call(tool, {"cluster_id": str(cluster.pk), "node": NODE}), response)
    page = logged_in(viewer_user).get(reverse("portal:cluster_node_diagnosis", args=[cluster.pk, NODE]), **HTMX)
    assert page.status_code == 404 and message in page_text(page)


@pytest.mark.django_db
def test_the_zone_a_cluster_already_has_changes_nothing_and_another_needs_a_failed_cluster(team, admin_user):
    rest, mcp, portal = faces(team, admin_user)
    cluster = recorded_cluster(team, admin_user, settled=True)
    url = f"/api/v1/clusters/{cluster.pk}/"
    zone_page = reverse("portal:cluster_change_zone", args=[cluster.pk])

    same = rest.patch(url, {"availability_zone": "us-west-2a"}, format="json")
    assert same.status_code == 200 and same.json()["changed"] is False
    assert_same(mcp.call("change_cluster_zone", {"id": str(cluster.pk), "availability_zone": "us-west-2a"}), same)
    page = portal.post(zone_page, {"availability_zone": "us-west-2a"}, follow=True)
    assert "already is in us-west-2a: nothing changed" in page_text(page)

    moved = rest.patch(url, {"availability_zone": "us-west-2b"}, format="json")
    assert refusal(moved) == (409, "The zone can change only while the cluster's creation has failed.")
    assert_same(mcp.call("change_cluster_zone", {"id": str(cluster.pk), "availability_zone": "us-west-2b"}), moved)
    page = portal.post(zone_page, {"availability_zone": "us-west-2b"})
    assert page.status_code == 409 and moved.json()["error"]["message"] in page_text(page)

    cluster.refresh_from_db()
    assert cluster.availability_zone == "us-west-2a"
    assert not AuditEvent.objects.filter(action="cluster.change_zone").exists()


@pytest.mark.django_db
def test_invalid_input_is_the_same_400_naming_the_field(team, admin_user):
    rest, mcp, portal = faces(team, admin_user)
    cluster = recorded_cluster(team, admin_user, settled=True)
    before = Operation.objects.count()
    response = rest.patch(f"/api/v1/clusters/{cluster.pk}/instance-groups/gpu/", {"count": -1}, format="json")
    assert response.status_code == 400
    field_message = response.json()["error"]["fields"]["count"][0]
    assert field_message == "Ensure this value is greater than or equal to 0."
    assert_same(mcp.call("scale_instance_group", {"cluster_id": str(cluster.pk), "name": "gpu", "count": -1}), response)
    page = portal.post(reverse("portal:cluster_group_scale", args=[cluster.pk, "gpu"]), {"count": "-1"}, **HTMX)
    assert page.status_code == 400 and field_message in page_text(page)
    assert_nothing_started(before)


# --- on a live cluster: the explicit diff, unknown nodes, the workload guard -------------------


def run_pod_on(team, cluster: Cluster, node_name: str) -> str:
    """A workload pod bound to the node, as a training job's pod would be; its namespace/name."""
    core = k8s.CoreV1Api(api_client(team_cloud(team, cluster.region), cluster.eks_cluster_name))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train-0", "namespace": "default"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1d"]}],
        },
    }
    core.create_namespaced_pod("default", pod)
    return "default/train-0"


@pytest.mark.worker
def test_live_cluster_answers_the_same_on_every_face(start_worker, sandbox, team, admin_user):
    rest, mcp, portal = faces(team, admin_user)
    start_worker()
    created = rest.post("/api/v1/clusters/", cluster_body("fleet"), format="json").json()
    wait_for_operation(created["operation"]["id"])
    cluster = Cluster.objects.get(pk=created["cluster"]["id"])
    assert cluster.status == ClusterStatus.ACTIVE
    base = f"/api/v1/clusters/{cluster.pk}/"
    cid = {"cluster_id": str(cluster.pk)}

    # Scale to the count HyperPod already has: unchanged everywhere, nothing starts.
    before = Operation.objects.count()
    same = rest.patch(base + "instance-groups/gpu/", {"count": 2}, format="json")
    assert same.status_code == 200 and same.json()["changed"] is False
    assert_same(mcp.call("scale_instance_group", {**cid, "name": "gpu", "count": 2}), same)
    page = portal.post(reverse("portal:cluster_group_scale", args=[cluster.pk, "gpu"]), {"count": "2"}, **HTMX)
    assert page.status_code == 200 and "Already at 2 — nothing to change." in page_text(page)
    assert Operation.objects.count() == before

    # A node the cluster does not have: 404 with the same message for reads and changes.
    ghost = "i-0000000000000dead"
    message = f"No node {ghost} in cluster {cluster.name}."
    for tool, response in (
        ("diagnose_node", rest.get(f"{base}nodes/{ghost}/diagnosis/")),
        ("reboot_node", rest.post(f"{base}nodes/{ghost}/reboot/")),
    ):
        assert refusal(response) == (404, message), tool
        assert_same(mcp.call(tool, {**cid, "node": ghost}), response)
    for page in (
        portal.get(reverse("portal:cluster_node_diagnosis", args=[cluster.pk, ghost]), **HTMX),
        portal.post(reverse("portal:cluster_node_action", args=[cluster.pk, ghost, "reboot"])),
    ):
        assert page.status_code == 404 and message in page_text(page)

    # A workload runs on one of the group's nodes: the delete is refused alike, and nothing changes.
    node = rest.get(base + "nodes/").json()["results"][0]
    workload = run_pod_on(team, cluster, node["name"])
    wait_until(
        lambda: any(
            f"{p['namespace']}/{p['name']}" == workload and p["phase"] in ("Pending", "Running")
            for n in rest.get(base + "nodes/").json()["results"]
            for p in n["pods"]
        ),
        message="the pod on the node",
    )
    refused = rest.delete(base + "instance-groups/gpu/")
    status, message = refusal(refused)
    assert (status, message) == (409, f"Workloads run on gpu: {workload}; stop them first, or delete with force=true.")
    assert_same(mcp.call("delete_instance_group", {**cid, "name": "gpu"}), refused)
    delete_page = reverse("portal:cluster_group_delete", args=[cluster.pk, "gpu"])
    confirm = page_text(portal.get(delete_page))
    assert workload in confirm and 'name="force"' in confirm
    page = portal.post(delete_page, {})
    assert page.status_code == 409 and message in page_text(page)
    assert not Operation.objects.filter(kind="instance_group.delete").exists()
    assert cluster.instance_groups.get(name="gpu").status == InstanceGroupStatus.IN_SERVICE

    # force lets it through (here from the portal; REST and MCP send force=true).
    done = portal.post(delete_page, {"force": "on"})
    assert done.status_code == 302
    deletion = Operation.objects.get(kind="instance_group.delete")
    assert deletion.via == "ui" and cluster.instance_groups.get(name="gpu").status == InstanceGroupStatus.DELETING
    wait_for_operation(deletion.pk)
    assert not cluster.instance_groups.filter(name="gpu").exists()
