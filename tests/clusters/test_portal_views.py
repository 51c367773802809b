"""Portal pages of clusters: list, the create form and its catalog cascade, the cluster page, delete,
activate — against the sandbox account of the team (catalog reads go there)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from clusters.models import ActiveCluster, Cluster, ClusterStatus, ComputeSubnet
from clusters.readers import catalog
from clusters.selectors import operations_of
from instantstart.cloud.aws import team_cloud
from instantstart.operations.models import Operation, OperationStatus
from instantstart.tenancy.roles import Role
from tests.factories import MembershipFactory, OperationFactory
from tests.support import logged_in, make_member

from .helpers import HTMX, efa_checkbox, options, sandbox_calls
from .helpers import cluster_with_group as make_cluster

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sandbox", "no_enqueue")]

FORM = {
    "name": "train",
    "region": "us-west-2",
    "availability_zone": "us-west-2a",
    "kubernetes_version": "1.31",
    "storage": "s3",
    "group_name": "workers",
    "instance_type": "ml.g5.xlarge",
    "count": "2",
    "capacity_type": "on_demand",
}


def give_operation(cluster, kind="cluster.create", status=OperationStatus.RUNNING, **fields) -> Operation:
    """The cluster's operation, its network phase running (or failed), written directly."""
    second = "running" if status == OperationStatus.RUNNING else "failed"
    phases = [("preflight", "succeeded"), ("network", second)]
    return OperationFactory(
        team=cluster.team, target=cluster, kind=kind, via="ui", status=status, phases=phases, **fields
    )


class TestList:
    def test_lists_the_teams_clusters_only_and_hides_deleted(self, viewer_client, team, other_team):
        mine = make_cluster(team, "train", node_summary={"total": 2, "ready": 2, "by_health": {"Schedulable": 2}})
        give_operation(mine, status=OperationStatus.SUCCEEDED)
        make_cluster(team, "gone", status=ClusterStatus.DELETED)
        theirs = make_cluster(other_team, "secret")
        html = viewer_client.get(reverse("portal:clusters")).content.decode()
        assert reverse("portal:cluster", args=[mine.pk]) in html
        assert "us-west-2a" in html and "workers: 2 × <code>ml.g5.xlarge</code>" in html
        assert "2 / 2" in html and "2 Schedulable" in html
        assert "Create cluster</a>" in html and "Succeeded" in html  # the last operation
        assert "★ active" in html  # the team's only cluster is everyone's active one
        assert "gone" not in html and "secret" not in html and str(theirs.pk) not in html
        assert reverse("portal:cluster_new") not in html  # viewers do not create clusters
        assert "Team admins create and delete clusters" in html

    def test_empty_state(self, admin_client, viewer_client):
        html = admin_client.get(reverse("portal:clusters")).content.decode()
        assert "No clusters yet" in html and f'href="{reverse("portal:cluster_new")}"' in html
        html = viewer_client.get(reverse("portal:clusters")).content.decode()
        assert "No clusters yet" in html and "Team admins create clusters" in html

    def test_dashboard_counts_the_teams_clusters(self, viewer_client, team, other_team):
        make_cluster(team, "one")
        make_cluster(team, "gone", status=ClusterStatus.DELETED)
        make_cluster(other_team, "theirs")
        assert viewer_client.get("/").context["clusters"] == 1


class TestCreateForm:
    """One team (one sandbox account) per test: its first catalog reads are the slow ones."""

    def test_regions_without_accelerator_types_are_listed_last_and_labelled(self, admin_client, team, sandbox):
        def offering_reads() -> int:
            return sandbox_calls(sandbox, team.sandbox_account_id).get("ec2:DescribeInstanceTypeOfferings", 0)

        # The page does not wait for the regions' offerings: its region block asks for them once loaded.
        before = offering_reads()
        html = admin_client.get(reverse("portal:cluster_new")).content.decode()
        regions_url = reverse("portal:cluster_form_part", kwargs={"part": "regions"})
        assert f'hx-get="{regions_url}" hx-trigger="load"' in html and "regions-without-accelerators" not in html
        assert offering_reads() - before <= 1  # the chosen zone's types only

        before = offering_reads()
        block = admin_client.get(regions_url, {"region": "us-west-2"}, **HTMX).content.decode()
        regions = options(block, "region")
        assert offering_reads() - before == len(regions)  # one offerings read per region
        assert "<html" not in block and 'hx-trigger="load"' not in block
        group = block[block.index('id="regions-without-accelerators"') : block.index("</optgroup>")]
        assert 'label="No accelerator types offered"' in block
        # The sandbox (moto's offerings data) offers af-south-1 no accelerator type, us-west-2 many.
        assert 'value="af-south-1"' in group and "af-south-1 (no accelerator types offered)" in group
        assert 'value="us-west-2"' not in group and 'value="us-west-2" selected' in block
        assert regions.index("us-west-2") < regions.index("af-south-1") and regions[-1] in group

        # Cached per team: the next page is marked at once, without reading the regions again.
        before = offering_reads()
        html = admin_client.get(reverse("portal:cluster_new")).content.decode()
        assert "af-south-1 (no accelerator types offered)" in html and 'hx-trigger="load"' not in html
        assert offering_reads() - before <= 1

    def test_the_catalog_cascade_offers_only_what_the_cloud_offers(self, admin_client, team):
        html = admin_client.get(reverse("portal:cluster_new")).content.decode()
        assert options(html, "availability_zone") == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
        types = options(html, "instance_type")
        assert "ml.p5.48xlarge" in types and "ml.g5.xlarge" in types
        assert "ml.trn1.2xlarge" not in types  # offered in us-west-2b and d, not in 2a
        assert "disabled" in efa_checkbox(html)  # nothing chosen yet

        # Changing the region re-renders the zones (and what depends on them).
        zones_url = reverse("portal:cluster_form_part", kwargs={"part": "zones"})
        html = admin_client.get(zones_url, {"region": "eu-west-1", "availability_zone": "us-west-2a"}, **HTMX)
        html = html.content.decode()
        assert "<html" not in html and 'id="zone-block"' in html
        assert options(html, "availability_zone") == ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
        assert 'value="eu-west-1a" selected' in html  # the old region's zone is gone: the first is chosen
        assert 'id="type-block"' in html and 'id="capacity-block"' in html

        # Changing the zone re-renders the instance types offered in that zone, and only those.
        types_url = reverse("portal:cluster_form_part", kwargs={"part": "types"})
        cloud = team_cloud(team, "us-west-2")
        html = admin_client.get(types_url, {"region": "us-west-2", "availability_zone": "us-west-2d"}, **HTMX)
        html = html.content.decode()
        offered = sorted(info.instance_type for info in catalog.instance_types(team, "us-west-2", "us-west-2d"))
        assert sorted(options(html, "instance_type")) == offered
        assert "ml.g5.xlarge" not in offered and "ml.trn1.2xlarge" in offered  # us-west-2d has no g5

        # EFA-only is enabled only for a type that allows it.
        query = {"region": "us-west-2", "availability_zone": "us-west-2a"}
        p5 = admin_client.get(types_url, {**query, "instance_type": "ml.p5.48xlarge"}, **HTMX).content.decode()
        assert "disabled" not in efa_checkbox(p5)
        assert "8 × H100, 640 GiB" in p5 and "EFA-only possible" in p5
        g5 = admin_client.get(types_url, {**query, "instance_type": "ml.g5.xlarge"}, **HTMX).content.decode()
        assert "disabled" in efa_checkbox(g5)
        assert "1 × A10G" in g5 and "EFA-only needs several" in g5

        # Training-plan capacity asks for a plan of the region.
        capacity_url = reverse("portal:cluster_form_part", kwargs={"part": "capacity"})
        html = admin_client.get(capacity_url, {"region": "us-west-2", "capacity_type": "training_plan"}, **HTMX)
        assert 'name="training_plan_arn"' in html.content.decode()
        assert "No training plans in us-west-2" in html.content.decode()
        html = admin_client.get(capacity_url, {"region": "us-west-2", "capacity_type": "spot"}, **HTMX)
        assert 'name="training_plan_arn"' not in html.content.decode()
        assert admin_client.get(reverse("portal:cluster_form_part", kwargs={"part": "nope"})).status_code == 404

        # A plan the team bought is offered, and a create with it takes the plan's zone.
        sagemaker = cloud.client("sagemaker")
        offering = sagemaker.search_training_plan_offerings(
            InstanceType="ml.p5.48xlarge", InstanceCount=2, DurationHours=24, TargetResources=["hyperpod-cluster"]
        )["TrainingPlanOfferings"][1]
        arn = sagemaker.create_training_plan(
            TrainingPlanName="march", TrainingPlanOfferingId=offering["TrainingPlanOfferingId"]
        )["TrainingPlanArn"]
        html = admin_client.get(capacity_url, {"region": "us-west-2", "capacity_type": "training_plan"}, **HTMX)
        assert options(html.content.decode(), "training_plan_arn") == [arn]
        assert "march" in html.content.decode() and "ml.p5.48xlarge in us-west-2b" in html.content.decode()
        body = {
            **FORM,
            "instance_type": "ml.p5.48xlarge",
            "count": "1",
            "capacity_type": "training_plan",
            "training_plan_arn": arn,
        }
        assert admin_client.post(reverse("portal:cluster_new"), body).status_code == 302
        group = Cluster.objects.get(team=team, name="train").instance_groups.get()
        assert (group.training_plan_arn, group.availability_zone) == (arn, "us-west-2b")


class TestCreate:
    def test_valid_form_creates_and_opens_the_cluster_page(
        self, admin_client, team, no_enqueue, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(
                reverse("portal:cluster_new"), {**FORM, "deep_health_checks": "InstanceStress"}
            )
        cluster = Cluster.objects.get(team=team, name="train")
        assert response.status_code == 302 and response["Location"] == reverse("portal:cluster", args=[cluster.pk])
        group = cluster.instance_groups.get()
        assert (group.name, group.instance_type, group.count, group.deep_health_checks) == (
            "workers",
            "ml.g5.xlarge",
            2,
            ["InstanceStress"],
        )
        operation = operations_of(cluster).get()
        assert operation.kind == "cluster.create" and operation.via == "ui" and no_enqueue == [operation.pk]
        page = admin_client.get(response["Location"]).content.decode()
        assert "Creating cluster train" in page and 'id="operation-panel"' in page

    def test_bad_input_is_shown_next_to_its_field_and_creates_nothing(self, admin_client):
        for change, field, text in [
            ({"count": "0"}, "count", "greater than or equal to 1"),
            ({"efa_only": "on"}, "efa_only", "EFA-only networking needs"),
            ({"instance_type": "ml.trn1.2xlarge"}, "instance_type", "not offered in us-west-2a"),
            ({"name": "Bad_Name"}, "name", "lowercase letters"),
            ({"availability_zone": "us-west-2z"}, "availability_zone", "not a zone of us-west-2"),
            ({"capacity_type": "training_plan"}, "training_plan_arn", "Required for training-plan capacity"),
        ]:
            response = admin_client.post(reverse("portal:cluster_new"), {**FORM, "name": "keepme", **change})
            html = response.content.decode()
            assert response.status_code == 400
            assert "Cluster not created" in html
            # The message sits in the field's own block, after its input.
            block = re.search(
                rf'<(?:div|fieldset) class="field has-error">(?:(?!class="field).)*?name="{field}"(.*?)</div>',
                html,
                re.S,
            )
            assert block and text in block.group(1), (field, html)
            assert f'value="{change.get("name", "keepme")}"' in html  # what was typed stays
        assert not Cluster.objects.exists() and not Operation.objects.exists()

    def test_preflight_lists_each_check(self, admin_client):
        url = reverse("portal:cluster_preflight")
        html = admin_client.post(url, FORM, **HTMX).content.decode()
        assert "<html" not in html and "All checks passed" in html
        for name in ("role_assumable", "name_free", "quota:ml.g5.xlarge", "offered:workers"):
            assert f"<code>{name}</code>" in html
        html = admin_client.post(url, {**FORM, "instance_type": "ml.p5.48xlarge", "count": "50"}, **HTMX)
        html = html.content.decode()
        assert "Some checks failed" in html and "needs 50" in html and "check-failed" in html
        html = admin_client.post(url, {**FORM, "count": "0"}, **HTMX).content.decode()
        assert "Fix these first" in html and "Count:" in html
        assert not Cluster.objects.exists()


class TestRoles:
    def test_member_and_viewer_cannot_create(self, member_client, viewer_client):
        for client in (member_client, viewer_client):
            page = client.get(reverse("portal:cluster_new"))
            assert page.status_code == 403 and b"This needs the admin role" in page.content
            assert client.post(reverse("portal:cluster_new"), FORM).status_code == 403
            assert client.post(reverse("portal:cluster_preflight"), FORM).status_code == 403
        assert not Cluster.objects.exists()

    def test_member_cannot_delete_or_change_zone(self, member_client, team):
        cluster = make_cluster(team, status=ClusterStatus.FAILED)
        url = reverse("portal:cluster_delete", args=[cluster.pk])
        assert member_client.get(url).status_code == 403
        assert member_client.post(url, {"confirm_name": "train"}).status_code == 403
        zone = reverse("portal:cluster_change_zone", args=[cluster.pk])
        assert member_client.post(zone, {"availability_zone": "us-west-2b"}).status_code == 403
        cluster.refresh_from_db()
        assert cluster.status == ClusterStatus.FAILED and cluster.availability_zone == "us-west-2a"
        page = member_client.get(reverse("portal:cluster", args=[cluster.pk])).content.decode()
        assert "Delete…" not in page and "Try another availability zone" not in page


class TestDelete:
    def test_wrong_name_changes_nothing(self, admin_client, team, no_enqueue):
        cluster = make_cluster(team)
        response = admin_client.post(reverse("portal:cluster_delete", args=[cluster.pk]), {"confirm_name": "trian"})
        assert response.status_code == 400
        assert b"Type the cluster&#x27;s name, train, exactly" in response.content
        assert b'value="trian"' in response.content
        cluster.refresh_from_db()
        assert cluster.status == ClusterStatus.ACTIVE and not operations_of(cluster).exists()

    def test_right_name_starts_the_delete_and_shows_its_panel(self, admin_client, team, no_enqueue):
        cluster = make_cluster(team)
        response = admin_client.post(reverse("portal:cluster_delete", args=[cluster.pk]), {"confirm_name": "train"})
        assert response.status_code == 302 and response["Location"] == reverse("portal:cluster", args=[cluster.pk])
        cluster.refresh_from_db()
        assert cluster.status == ClusterStatus.DELETING
        page = admin_client.get(response["Location"]).content.decode()
        assert "Deleting cluster train" in page and "Delete cluster" in page and 'id="operation-panel"' in page
        assert 'hx-trigger="every 2s"' in page  # the panel and the summary follow the delete

    def test_busy_cluster_needs_force(self, admin_client, team, no_enqueue):
        cluster = make_cluster(team, status=ClusterStatus.CREATING)
        running = give_operation(cluster)
        url = reverse("portal:cluster_delete", args=[cluster.pk])
        response = admin_client.post(url, {"confirm_name": "train"}, follow=True)
        assert b"is still running on this cluster" in response.content
        assert Cluster.objects.get(pk=cluster.pk).status == ClusterStatus.CREATING
        admin_client.post(url, {"confirm_name": "train", "force": "on"})
        assert Cluster.objects.get(pk=cluster.pk).status == ClusterStatus.DELETING
        assert Operation.objects.get(pk=running.pk).cancel_requested


class TestClusterPage:
    def test_tabs_show_overview_network_storage_and_operations(self, viewer_client, team):
        cluster = make_cluster(
            team,
            eks_endpoint="https://eks.example",
            eks_cluster_arn="arn:aws:eks:us-west-2:1:cluster/x",
            node_summary={"total": 2, "ready": 2, "by_health": {"Schedulable": 2}, "by_group": {"workers": 2}},
            network={
                "vpc_id": "vpc-1",
                "vpc_cidr": "10.0.0.0/16",
                "subnets": {"private-0": "subnet-p0"},
                "nat_gateway_id": "nat-1",
                "security_group_id": "sg-1",
                "s3_endpoint_id": "vpce-1",
            },
        )
        ComputeSubnet.objects.create(
            cluster=cluster, availability_zone="us-west-2a", cidr="10.0.16.0/20", subnet_id="subnet-c1"
        )
        operation = give_operation(cluster, status=OperationStatus.SUCCEEDED)
        url = reverse("portal:cluster", args=[cluster.pk])
        overview = viewer_client.get(url).content.decode()
        assert "https://eks.example" in overview and "arn:aws:eks:us-west-2:1:cluster/x" in overview
        assert "2 registered, 2 ready; 2 Schedulable" in overview and "<code>ml.g5.xlarge</code>" in overview
        assert 'id="operation-panel"' in overview
        assert 'hx-trigger="every 2s"' not in overview  # nothing polls once all is settled
        network = viewer_client.get(url, {"tab": "network", "part": "tab"}, **HTMX).content.decode()
        assert "<html" not in network
        for text in ("vpc-1", "subnet-p0", "10.0.8.0/22", "nat-1", "sg-1", "vpce-1", "10.0.16.0/20", "subnet-c1"):
            assert text in network
        storage = viewer_client.get(url, {"tab": "storage"}).content.decode()
        assert "No shared storage" in storage and "<html" in storage
        operations = viewer_client.get(url, {"tab": "operations", "part": "tab"}, **HTMX).content.decode()
        assert reverse("portal:operation", kwargs={"op_id": operation.pk}) in operations

    def test_summary_polls_while_creating_and_stops_when_settled(self, viewer_client, team):
        cluster = make_cluster(team, status=ClusterStatus.CREATING)
        give_operation(cluster)
        url = reverse("portal:cluster", args=[cluster.pk])
        page = viewer_client.get(url).content.decode()
        assert f'hx-get="{url}?part=summary" hx-trigger="every 2s"' in page
        busy = viewer_client.get(url, {"part": "summary"}, **HTMX)
        assert "<html" not in busy.content.decode() and "hx-trigger" in busy.content.decode()
        assert "HX-Trigger" not in busy.headers
        Cluster.objects.filter(pk=cluster.pk).update(status=ClusterStatus.ACTIVE)
        settled = viewer_client.get(url, {"part": "summary"}, **HTMX)
        assert "hx-trigger" not in settled.content.decode() and "Active" in settled.content.decode()
        assert settled.headers["HX-Trigger"] == "cluster-settled"  # the open tab reloads once

    def test_a_deleted_cluster_keeps_its_page_for_history_without_actions(self, admin_client, team):
        cluster = make_cluster(team, status=ClusterStatus.DELETED)
        give_operation(cluster, kind="cluster.delete", status=OperationStatus.SUCCEEDED)
        page = admin_client.get(reverse("portal:cluster", args=[cluster.pk])).content.decode()
        assert "This cluster was deleted" in page and 'id="operation-panel"' in page
        assert "Delete…" not in page and "Make active" not in page
        assert admin_client.get(reverse("portal:cluster_delete", args=[cluster.pk])).status_code == 404

    def test_failed_cluster_offers_the_zone_change_with_the_hint(self, admin_client, team):
        cluster = make_cluster(team, status=ClusterStatus.FAILED)
        give_operation(
            cluster,
            status=OperationStatus.FAILED,
            error_code="InsufficientCapacity",
            error_message="No capacity",
            error_hint="Not enough capacity. Move the instance groups to another zone (PATCH the cluster's "
            "availability_zone) or use a training plan, then retry.",
        )
        url = reverse("portal:cluster", args=[cluster.pk])
        page = admin_client.get(url).content.decode()
        # The portal says it in its own words, next to the form that does it (the API's words stay in REST).
        assert "Try another availability zone" in page and "Not enough capacity for this instance type" in page
        assert "PATCH" not in page
        assert options(page, "availability_zone") == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
        assert "Retry from where it stopped" in page
        zone = reverse("portal:cluster_change_zone", args=[cluster.pk])
        response = admin_client.post(zone, {"availability_zone": "us-west-9q"}, follow=True)
        assert b"Zone not changed" in response.content
        response = admin_client.post(zone, {"availability_zone": "us-west-2b"}, follow=True)
        assert b"Instance groups moved to us-west-2b" in response.content
        cluster.refresh_from_db()
        assert cluster.availability_zone == "us-west-2b"
        assert cluster.instance_groups.get().availability_zone == "us-west-2b"


class TestActivate:
    def test_activate_from_the_list_and_the_header(self, admin_client, admin_user, team):
        first, second = make_cluster(team, "first"), make_cluster(team, "second")
        html = admin_client.get(reverse("portal:clusters")).content.decode()
        assert "none active" in html and "★ active" not in html  # two clusters, none chosen yet
        response = admin_client.post(
            reverse("portal:cluster_activate"), {"cluster": str(second.pk), "next": "/clusters/"}
        )
        assert response.status_code == 302 and response["Location"] == "/clusters/"
        assert ActiveCluster.objects.get(user=admin_user, team=team).cluster == second
        html = admin_client.get(reverse("portal:clusters")).content.decode()
        assert html.count("★ active") == 1
        assert f'<option value="{second.pk}" selected>second</option>' in html  # the header switcher
        admin_client.post(reverse("portal:cluster_activate"), {"cluster": str(first.pk)})
        assert ActiveCluster.objects.get(user=admin_user, team=team).cluster == first

    def test_viewers_may_activate(self, viewer_client, viewer_user, team):
        cluster = make_cluster(team)
        viewer_client.post(reverse("portal:cluster_activate"), {"cluster": str(cluster.pk)})
        assert ActiveCluster.objects.get(user=viewer_user, team=team).cluster == cluster

    def test_deleted_cluster_cannot_be_activated(self, admin_client, team):
        gone = make_cluster(team, status=ClusterStatus.DELETED)
        assert admin_client.post(reverse("portal:cluster_activate"), {"cluster": str(gone.pk)}).status_code == 404
        assert admin_client.post(reverse("portal:cluster_activate"), {"cluster": "nope"}).status_code == 404


class TestOtherTeams:
    def test_another_teams_cluster_is_404_on_every_url(self, outsider_client, team):
        cluster = make_cluster(team, status=ClusterStatus.FAILED)
        give_operation(cluster, status=OperationStatus.FAILED)
        pk = cluster.pk
        detail = reverse("portal:cluster", args=[pk])
        for method, url, data, extra in [
            ("get", detail, {}, {}),
            ("get", detail, {"tab": "network"}, {}),
            ("get", detail, {"part": "summary"}, HTMX),
            ("get", detail, {"tab": "operations", "part": "tab"}, HTMX),
            ("get", reverse("portal:cluster_delete", args=[pk]), {}, {}),
            ("post", reverse("portal:cluster_delete", args=[pk]), {"confirm_name": "train", "force": "on"}, {}),
            ("post", reverse("portal:cluster_change_zone", args=[pk]), {"availability_zone": "us-west-2b"}, {}),
            ("post", reverse("portal:cluster_activate"), {"cluster": str(pk)}, {}),
        ]:
            assert getattr(outsider_client, method)(url, data, **extra).status_code == 404, (method, url, data)
        cluster.refresh_from_db()
        assert cluster.status == ClusterStatus.FAILED and cluster.availability_zone == "us-west-2a"
        assert not ActiveCluster.objects.exists()
        html = outsider_client.get(reverse("portal:clusters")).content.decode()
        assert str(pk) not in html and "No clusters yet" in html

    def test_a_member_of_both_teams_sees_each_teams_clusters_in_its_own_team(self, team, other_team):
        user = make_member(team, "dave", Role.ADMIN)
        MembershipFactory(team=other_team, user=user, role=Role.ADMIN)
        make_cluster(team, "acme-one")
        make_cluster(other_team, "globex-one")
        client = logged_in(user)
        html = client.get(reverse("portal:clusters")).content.decode()
        assert ("acme-one" in html) != ("globex-one" in html)  # one team at a time


class TestOperationsOfTheCluster:
    def test_operations_tab_and_latest_include_group_node_and_storage_operations(self, admin_client, team):
        cluster = make_cluster(team)
        group = cluster.instance_groups.get()
        create = give_operation(cluster, status=OperationStatus.SUCCEEDED)
        node = OperationFactory(
            team=team, target=cluster, kind="node.reboot", status=OperationStatus.SUCCEEDED,
            params={"action": "reboot", "instance_id": "i-0abc", "instance_group": "workers"},
        )  # fmt: skip
        gone = OperationFactory(
            team=team,
            kind="instance_group.delete",
            status=OperationStatus.SUCCEEDED,
            params={"cluster_id": str(cluster.pk)},
        )  # fmt: skip  (the deleted group's row is gone: found by params.cluster_id)
        scale = OperationFactory(
            team=team, target=group, kind="instance_group.scale", status=OperationStatus.SUCCEEDED,
            params={"count": 3, "from_count": 2, "cluster_id": str(cluster.pk)},
        )  # fmt: skip
        other = make_cluster(team, "other")
        elsewhere = give_operation(other, status=OperationStatus.SUCCEEDED)

        tab = admin_client.get(reverse("portal:cluster", args=[cluster.pk]) + "?tab=operations").content.decode()
        for operation in (create, node, gone, scale):
            assert reverse("portal:operation", args=[operation.pk]) in tab
        assert reverse("portal:operation", args=[elsewhere.pk]) not in tab
        page = admin_client.get(reverse("portal:cluster", args=[cluster.pk])).content.decode()
        caption = re.search(r'<p class="panel-caption">(.*?)</p>', page, re.S).group(1)
        assert "Latest operation" in caption and reverse("portal:operation", args=[scale.pk]) in caption

        # The operation page links its target and says what was asked.
        detail = admin_client.get(reverse("portal:operation", args=[scale.pk])).content.decode()
        assert f'href="{reverse("portal:cluster", args=[cluster.pk])}?tab=groups"' in detail
        assert re.search(r"<dt>Count</dt><dd[^>]*>2 → 3</dd>", detail)
        assert "<dt>Cluster id</dt>" not in detail and "<dt>From count</dt>" not in detail
        detail = admin_client.get(reverse("portal:operation", args=[node.pk])).content.decode()
        assert f'href="{reverse("portal:cluster", args=[cluster.pk])}"' in detail and "i-0abc" in detail

    def test_a_running_create_says_how_long_it_takes_on_aws_and_here(self, admin_client, team):
        cluster = make_cluster(team, status=ClusterStatus.CREATING)
        give_operation(cluster)  # running
        page = admin_client.get(reverse("portal:cluster", args=[cluster.pk])).content.decode()
        assert "Usually 25–40 minutes on AWS" in page and "SANDBOX_SPEEDUP" in page
