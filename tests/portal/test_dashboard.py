"""The dashboard: GPUs by type in use, nodes by health, running operations, recent failures, an
estimated cost per hour per cluster (labelled as an estimate), and a first-cluster prompt when empty."""

from __future__ import annotations

import re

import pytest

from instantstart.operations.models import OperationStatus
from tests.factories import ClusterFactory, InstanceGroupFactory, OperationFactory

pytestmark = pytest.mark.django_db


def test_an_empty_team_is_prompted_to_create_its_first_cluster(admin_client, viewer_client):
    page = admin_client.get("/").content.decode()
    assert "Create your first cluster" in page and 'href="/clusters/new/"' in page
    assert "needs the admin role" in viewer_client.get("/").content.decode()


@pytest.mark.usefixtures("sandbox")
def test_fleet_figures_from_the_teams_clusters(admin_client, team, other_team):
    train = ClusterFactory(
        team=team, name="train", node_summary={"total": 3, "ready": 2, "by_health": {"Schedulable": 2, "Unknown": 1}}
    )
    InstanceGroupFactory(cluster=train, name="gpu", instance_type="ml.g5.xlarge", count=2)
    InstanceGroupFactory(cluster=train, name="big", instance_type="ml.p5.48xlarge", count=1)
    theirs = ClusterFactory(team=other_team, name="theirs")
    InstanceGroupFactory(cluster=theirs, name="gpu", instance_type="ml.p5.48xlarge", count=8)
    running = OperationFactory(team=team, target=train, kind="instance_group.scale", status=OperationStatus.RUNNING)
    failed = OperationFactory(team=team, target=train, kind="node.reboot", status=OperationStatus.FAILED)

    page = admin_client.get("/").content.decode()
    assert "Create your first cluster" not in page
    cards = {
        label: int(number)
        for number, label in re.findall(
            r'<span class="card-number">(\d+)</span><span class="card-label">([^<]+)</span>', page
        )
    }
    assert cards["H100 in use"] == 8  # one p5.48xlarge; the other team's eight are not ours
    assert cards["A10G in use"] == 2
    assert cards["Nodes Schedulable"] == 2 and cards["Nodes Unknown"] == 1
    fleet = page[page.index('id="fleet"') :]
    assert "~ $66.12" in fleet  # 2 × 1.41 + 63.30, from the shipped price table
    assert "estimate" in fleet
    assert f"/operations/{running.pk}/" in page[page.index('id="running"') :]
    assert f"/operations/{failed.pk}/" in page[page.index('id="failures"') :]
