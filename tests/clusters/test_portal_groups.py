"""Portal tabs of instance groups and nodes: the table, the add form (catalog choices, inline errors),
scaling with the explicit diff, the nodes and their health, read-only diagnosis, roles and scoping.

Everything that needs HyperPod (the actual count, nodes, faults, remediation) runs in one flow on one
cluster created by a real worker; the rest runs on clusters written to the database, without a worker.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from clusters.models import Cluster, ClusterStatus
from clusters.readers import catalog
from clusters.serializers import ClusterCreateSerializer
from clusters.services import create_cluster
from instantstart.cloud.aws import team_cloud
from instantstart.operations.models import Operation
from instantstart.tenancy.access import Access, Via
from instantstart.tenancy.roles import Role
from tests.support import logged_in, wait_until

from .helpers import (
    HTMX,
    add_fault,
    cluster_body,
    efa_checkbox,
    field_block,
    options,
    sandbox_calls,
    wait_for_operation,
)
from .helpers import cluster_with_group as make_cluster

pytestmark = pytest.mark.usefixtures("sandbox")

ADD = {
    "name": "more",
    "availability_zone": "us-west-2a",
    "instance_type": "ml.g5.xlarge",
    "count": "1",
    "capacity_type": "on_demand",
    "min_count": "0",
    "ebs_volume_gb": "500",
    "labels": "team=research\n",
}


def tab(client, cluster, name: str, **query) -> str:
    response = client.get(reverse("portal:cluster", args=[cluster.pk]), {"tab": name, **query})
    assert response.status_code == 200
    return response.content.decode()


def new_urls(cluster_id) -> list[tuple[str, str, dict, dict, bool]]:
    """(method, url, data, headers, admins only) of every new page and action on a cluster."""
    node = "i-0123456789abcdef0"
    detail = reverse("portal:cluster", args=[cluster_id])
    return [
        ("get", detail, {"tab": "groups"}, {}, False),
        ("get", detail, {"tab": "nodes", "part": "tab"}, HTMX, False),
        ("get", reverse("portal:cluster_groups", args=[cluster_id]), {}, HTMX, False),
        ("post", reverse("portal:cluster_group_add", args=[cluster_id]), ADD, {}, True),
        ("get", reverse("portal:cluster_group_form_part", args=[cluster_id, "types"]), {}, HTMX, True),
        ("post", reverse("portal:cluster_group_scale", args=[cluster_id, "workers"]), {"count": "5"}, HTMX, True),
        ("get", reverse("portal:cluster_group_delete", args=[cluster_id, "workers"]), {}, {}, True),
        ("post", reverse("portal:cluster_group_delete", args=[cluster_id, "workers"]), {"force": "on"}, {}, True),
        ("get", reverse("portal:cluster_node_action", args=[cluster_id, node, "reboot"]), {}, {}, True),
        ("post", reverse("portal:cluster_node_action", args=[cluster_id, node, "reboot"]), {}, {}, True),
        ("post", reverse("portal:cluster_node_action", args=[cluster_id, node, "replace"]), {}, {}, True),
        ("post", reverse("portal:cluster_node_action", args=[cluster_id, node, "delete"]), {}, {}, True),
        ("get", reverse("portal:cluster_node_diagnosis", args=[cluster_id, node]), {}, HTMX, False),
        ("get", reverse("portal:cluster_diagnosis", args=[cluster_id]), {}, HTMX, False),
    ]


# --- without a worker ---------------------------------------------------------------------------


@pytest.mark.django_db
class TestWithoutHyperPod:
    def test_tabs_render_for_viewers_without_actions(self, viewer_user, team):
        cluster = make_cluster(team)
        client = logged_in(viewer_user)
        groups = tab(client, cluster, "groups")
        assert ">Instance groups</a>" in groups and ">Nodes</a>" in groups
        assert 'id="group-workers"' in groups and "<code>ml.g5.xlarge</code>" in groups
        assert "scale-form" not in groups and 'id="group-form"' not in groups and "Delete…" not in groups
        assert "Team admins add, scale and delete instance groups" in groups
        nodes = client.get(reverse("portal:cluster", args=[cluster.pk]), {"tab": "nodes", "part": "tab"}, **HTMX)
        assert "<html" not in nodes.content.decode() and "No HyperPod cluster yet" in nodes.content.decode()

    def test_add_form_offers_only_the_catalogs_choices(self, admin_user, team):
        cluster = make_cluster(team)
        client = logged_in(admin_user)
        html = tab(client, cluster, "groups")
        assert options(html, "availability_zone") == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
        assert 'value="us-west-2a" selected' in html  # the cluster's zone first
        assert "ml.g5.xlarge" in options(html, "instance_type") and "ml.trn1.2xlarge" not in options(
            html, "instance_type"
        )
        assert options(html, "capacity_type") == ["on_demand", "spot", "training_plan"]
        assert "disabled" in efa_checkbox(html)
        part = reverse("portal:cluster_group_form_part", args=[cluster.pk, "types"])
        zone_d = client.get(part, {"availability_zone": "us-west-2d"}, **HTMX).content.decode()
        assert "ml.trn1.2xlarge" in options(zone_d, "instance_type") and "ml.g5.xlarge" not in zone_d
        assert f'hx-get="{part}"' in zone_d  # the cascade stays on the group form's own URL
        p5 = client.get(part, {"availability_zone": "us-west-2a", "instance_type": "ml.p5.48xlarge"}, **HTMX)
        assert "disabled" not in efa_checkbox(p5.content.decode())

    def test_bad_input_is_shown_at_its_field_and_adds_nothing(self, admin_user, team):
        cluster = make_cluster(team)
        client = logged_in(admin_user)
        url = reverse("portal:cluster_group_add", args=[cluster.pk])
        for change, field, text in [
            ({"efa_only": "on"}, "efa_only", "EFA-only networking needs"),
            ({"name": "workers"}, "name", "already has a group named workers"),
            ({"labels": "team research"}, "labels", "Line 1: write key=value."),
            ({"count": "2", "min_count": "3"}, "min_count", "At most count"),
        ]:
            response = client.post(url, {**ADD, **change})
            html = response.content.decode()
            assert response.status_code == 400, (change, response.status_code)
            assert "Instance group not added" in html and text in field_block(html, field), (field, html)
        assert list(cluster.instance_groups.values_list("name", flat=True)) == ["workers"]
        assert not Operation.objects.exists()

    def test_a_valid_group_starts_its_operation_and_shows_notes(self, admin_user, team, no_enqueue):
        cluster = make_cluster(team, hyperpod_cluster_name="train-hp")
        client = logged_in(admin_user)
        response = client.post(reverse("portal:cluster_group_add", args=[cluster.pk]), ADD)
        operation = Operation.objects.get(kind="instance_group.add")
        assert response.status_code == 302
        page_url = reverse("portal:cluster", args=[cluster.pk])
        assert response["Location"] == f"{page_url}?tab=groups&operation={operation.pk}"
        group = cluster.instance_groups.get(name="more")
        assert (group.labels, group.count, group.status, operation.via) == ({"team": "research"}, 1, "Creating", "ui")
        page = client.get(response["Location"]).content.decode()
        assert "Adding instance group more" in page and 'id="operation-panel"' in page
        assert "Add instance group</a> <code>train/more</code>" in page  # the focused operation's panel
        assert 'hx-get="' + reverse("portal:cluster_groups", args=[cluster.pk]) in page  # the table follows it

    def test_a_training_plan_places_the_group_in_its_zone_and_says_so(self, admin_user, team, no_enqueue):
        cluster = make_cluster(team, hyperpod_cluster_name="train-hp")
        sagemaker = team_cloud(team, "us-west-2").client("sagemaker")
        offering = sagemaker.search_training_plan_offerings(
            InstanceType="ml.p5.48xlarge", InstanceCount=1, DurationHours=24, TargetResources=["hyperpod-cluster"]
        )["TrainingPlanOfferings"][1]
        arn = sagemaker.create_training_plan(
            TrainingPlanName="april", TrainingPlanOfferingId=offering["TrainingPlanOfferingId"]
        )["TrainingPlanArn"]
        wait_until(
            lambda: (
                {p["arn"]: p["status"] for p in catalog.training_plans(team, "us-west-2")}.get(arn)
                in ("Scheduled", "Active")
            ),
            message="the plan to leave Pending",
        )  # a Pending plan fails preflight
        client = logged_in(admin_user)
        part = reverse("portal:cluster_group_form_part", args=[cluster.pk, "capacity"])
        assert arn in options(
            client.get(part, {"capacity_type": "training_plan"}, **HTMX).content.decode(), "training_plan_arn"
        )
        body = {
            **ADD,
            "name": "reserved",
            "instance_type": "ml.p5.48xlarge",
            "capacity_type": "training_plan",
            "training_plan_arn": arn,
        }
        response = client.post(reverse("portal:cluster_group_add", args=[cluster.pk]), body, follow=True)
        assert response.redirect_chain, re.findall(r'<ul class="errorlist">(.*?)</ul>', response.content.decode(), re.S)
        assert cluster.instance_groups.get(name="reserved").availability_zone == "us-west-2b"
        assert "the group is placed there instead of us-west-2a" in response.content.decode()

    def test_groups_and_nodes_change_only_on_an_active_cluster(self, admin_user, team):
        cluster = make_cluster(team, status=ClusterStatus.CREATING)
        client = logged_in(admin_user)
        scale = reverse("portal:cluster_group_scale", args=[cluster.pk, "workers"])
        html = client.post(scale, {"count": "2"}, **HTMX).content.decode()
        assert "The cluster is creating: instance groups and nodes change only once it is active." in html
        for url in (
            reverse("portal:cluster_group_delete", args=[cluster.pk, "workers"]),
            reverse("portal:cluster_node_action", args=[cluster.pk, "i-0123456789abcdef0", "reboot"]),
        ):
            assert b"change only once it is active" in client.post(url, {"force": "on"}, follow=True).content
        assert "Instance groups change only while the cluster is active" in tab(client, cluster, "groups")
        assert list(cluster.instance_groups.values_list("status", flat=True)) == [""]
        assert not Operation.objects.exists()

    def test_members_and_viewers_cannot_change_groups_or_nodes(self, member_user, viewer_user, team):
        cluster = make_cluster(team, hyperpod_cluster_name="train-hp")
        for user in (member_user, viewer_user):
            client = logged_in(user)
            for method, url, data, extra, admins_only in new_urls(cluster.pk):
                if admins_only:
                    assert getattr(client, method)(url, data, **extra).status_code == 403, (user, method, url)
        assert list(cluster.instance_groups.values_list("name", "count")) == [("workers", 2)]
        assert not Operation.objects.exists()

    def test_another_teams_cluster_is_404_on_every_new_url(self, outsider_user, team):
        cluster = make_cluster(team, hyperpod_cluster_name="train-hp")
        client = logged_in(outsider_user)
        for method, url, data, extra, _ in new_urls(cluster.pk):
            assert getattr(client, method)(url, data, **extra).status_code == 404, (method, url)
        assert list(cluster.instance_groups.values_list("name", "count", "status")) == [("workers", 2, "")]
        assert not Operation.objects.exists()


# --- one cluster with HyperPod, driven by a real worker ---------------------------------------


@pytest.mark.worker
def test_scale_nodes_health_diagnosis_and_remediation(start_worker, sandbox, team, admin_user):
    start_worker()
    access = Access(user=admin_user, team=team, role=Role.ADMIN, via=Via.UI)
    serializer = ClusterCreateSerializer(data=cluster_body("fleet"), context={"access": access})
    assert serializer.is_valid(), serializer.errors
    cluster, operation, _ = create_cluster(access=access, data=serializer.validated_data)
    wait_for_operation(operation.pk)
    cluster = Cluster.objects.get(pk=cluster.pk)
    assert cluster.status == ClusterStatus.ACTIVE
    client = logged_in(admin_user)
    scale = reverse("portal:cluster_group_scale", args=[cluster.pk, "gpu"])

    # Scale to the count HyperPod already has: the explicit diff starts nothing.
    operations = Operation.objects.count()
    updates = sandbox_calls(sandbox, team.sandbox_account_id).get("sagemaker:UpdateCluster", 0)
    same = client.post(scale, {"count": "2"}, **HTMX).content.decode()
    assert "Already at 2 — nothing to change." in same and 'hx-swap-oob="true"' in same
    assert 'id="groups-table"' in same and "<html" not in same and 'id="operation-panel"' not in same
    assert Operation.objects.count() == operations
    assert sandbox_calls(sandbox, team.sandbox_account_id).get("sagemaker:UpdateCluster", 0) == updates
    bad = client.post(scale, {"count": "-1"}, **HTMX).content.decode()
    assert "gpu not scaled" in bad and Operation.objects.count() == operations

    # Scale up: the operation's panel takes the page's operation slot, the row shows where it goes.
    up = client.post(scale, {"count": "3"}, **HTMX).content.decode()
    started = Operation.objects.get(kind="instance_group.scale")
    assert "Scaling gpu from 2 to 3" in up and reverse("portal:operation", args=[started.pk]) in up
    assert 'id="cluster-operation" hx-swap-oob="true"' in up and 'id="operation-panel"' in up
    assert "→ 3" in up and 'hx-trigger="every 2s"' in up
    wait_for_operation(started.pk)
    assert "→ 3" not in client.get(reverse("portal:cluster_groups", args=[cluster.pk]), **HTMX).content.decode()

    nodes = tab(client, cluster, "nodes")
    assert nodes.count('class="node-row"') == 3 and nodes.count('class="badge health-ok">Schedulable') == 3
    assert "Diagnose cluster" in nodes and "Reboot…" in nodes
    victim, *others = re.findall(r'id="node-(i-[0-9a-f]+)"', nodes)

    # A failed deep health check: red badge, the filter, and a diagnosis that only reads.
    sandbox.world.speedup = 20  # slow enough to watch HyperPod mark the node before it recovers it
    try:
        add_fault(sandbox, kind="deep_health_fail", instance_id=victim, fault_reason="DcgmDiagnosticLevel4Failed")
        html = wait_until(
            lambda: (h := tab(client, cluster, "nodes")) and "health-bad" in h and h,
            message="the node to turn unhealthy",
        )
        health = re.search(rf'id="node-{victim}" class="node-row" data-health="([A-Za-z]+)"', html).group(1)
        assert health.startswith("Unschedulable") and "DcgmDiagnosticLevel4Failed" in html
        filtered = tab(client, cluster, "nodes", health=health)
        assert re.findall(r'id="node-(i-[0-9a-f]+)"', filtered) == [victim]
        before = sandbox_calls(sandbox, team.sandbox_account_id)
        url = reverse("portal:cluster_node_diagnosis", args=[cluster.pk, victim])
        report = client.get(url, **HTMX).content.decode()
        assert "<html" not in report and "Read-only: nothing was changed" in report
        assert "DcgmDiagnosticLevel4Failed" in report and "Needs attention" in report
        assert re.findall(r'<li data-action="(\w+)"', report) == ["investigate", "reboot", "replace"]
        assert "<code>reboot_node</code>" in report and "Recent events" in report
        whole = client.get(reverse("portal:cluster_diagnosis", args=[cluster.pk]), **HTMX).content.decode()
        assert "1 unhealthy" in whole and f"Node <code>{victim}</code>" in whole
        after = sandbox_calls(sandbox, team.sandbox_account_id)
        assert {
            k
            for k in after
            if after[k] != before.get(k, 0) and not k.split(":")[1].startswith(("Describe", "List", "Get"))
        } == set()
    finally:
        sandbox.world.speedup = 1000

    # HyperPod's automatic recovery replaces the victim; then reboot a node that stayed healthy, confirming first.
    wait_until(
        lambda: tab(client, cluster, "nodes").count('class="badge health-ok">Schedulable') == 3,
        timeout=60,
        message="recovery",
    )
    healthy = others[0]  # not the victim's replacement, which may still be starting
    confirm = reverse("portal:cluster_node_action", args=[cluster.pk, healthy, "reboot"])
    assert f"Reboot node {healthy}?" in client.get(confirm).content.decode()
    response = client.post(confirm)
    reboot = Operation.objects.get(kind="node.reboot")
    assert response["Location"].endswith(f"?tab=nodes&operation={reboot.pk}")
    assert "Reboot of node" in client.get(response["Location"]).content.decode()
    wait_for_operation(reboot.pk)
