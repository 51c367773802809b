"""SageMaker's "for cluster usage" quotas cover the account and region: preflight for a create, a group
add and a scale up subtracts what every HyperPod cluster of the account already runs (InstantStart's
or not), and a create that goes past it anyway stops at its preflight."""

from __future__ import annotations

import pytest

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from tests.clusters.helpers import wait_for_operation

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]

P5 = {"name": "p5", "instance_type": "ml.p5.48xlarge"}  # the sandbox's quota: 4 for cluster usage


def body(name: str, count: int) -> dict:
    return {
        "name": name,
        "region": "us-west-2",
        "availability_zone": "us-west-2a",
        "storage": "none",
        "instance_groups": [{**P5, "count": count}],
    }


def quota_check(result: dict) -> dict:
    return next(c for c in result["checks"] if c["name"] == "quota:ml.p5.48xlarge")


def test_preflight_counts_every_hyperpod_cluster_of_the_account(admin_api, team, start_worker):
    start_worker()
    first = admin_api.post("/api/v1/clusters/", body("first", 4), format="json").json()
    wait_for_operation(first["operation"]["id"])
    # InstantStart forgets it (as if it had been made outside InstantStart): it still runs, and counts.
    Cluster.objects.filter(pk=first["cluster"]["id"]).update(status="deleted")
    hyperpod = team_cloud(team, "us-west-2").client("sagemaker").list_clusters()["ClusterSummaries"]
    assert len(hyperpod) == 1

    result = admin_api.post("/api/v1/preflight/", body("second", 2), format="json").json()
    assert result["ok"] is False
    check = quota_check(result)
    assert check["ok"] is False
    assert "4 of 4 in use; the request needs 2 more" in check["message"]

    # The create goes in, and stops at its preflight phase with the same words (nothing is created).
    created = admin_api.post("/api/v1/clusters/", body("second", 2), format="json").json()
    operation = wait_for_operation(created["operation"]["id"], statuses=("failed",))
    assert operation.error_code == "PreflightFailed"
    assert "4 of 4 in use; the request needs 2 more" in operation.error_message
    assert len(team_cloud(team, "us-west-2").client("sagemaker").list_clusters()["ClusterSummaries"]) == 1


def test_group_add_and_scale_up_count_what_runs_in_other_clusters(admin_api, team, start_worker):
    start_worker()
    first = admin_api.post("/api/v1/clusters/", body("first", 3), format="json").json()
    small = admin_api.post(
        "/api/v1/clusters/",
        {**body("small", 1), "instance_groups": [{"name": "gpu", "instance_type": "ml.g5.xlarge", "count": 1}]},
        format="json",
    ).json()
    wait_for_operation(first["operation"]["id"])
    wait_for_operation(small["operation"]["id"])
    groups = f"/api/v1/clusters/{small['cluster']['id']}/instance-groups/"

    # 3 of 4 run in "first": adding 2 to "small" is refused, naming count; 1 fits.
    refused = admin_api.post(groups, {**P5, "count": 2}, format="json")
    assert refused.status_code == 400
    assert "3 of 4 in use; the request needs 2 more" in " ".join(refused.json()["error"]["fields"]["count"])
    added = admin_api.post(groups, {**P5, "count": 1}, format="json")
    assert added.status_code == 202, added.json()
    wait_for_operation(added.json()["operation"]["id"])

    # Now 4 of 4: scaling "first" up by one is refused; scaling down needs no quota.
    first_group = f"/api/v1/clusters/{first['cluster']['id']}/instance-groups/p5/"
    up = admin_api.patch(first_group, {"count": 4}, format="json")
    assert up.status_code == 400
    assert "4 of 4 in use; the request needs 1 more" in " ".join(up.json()["error"]["fields"]["count"])
    down = admin_api.patch(first_group, {"count": 2}, format="json")
    assert down.status_code == 202, down.json()
