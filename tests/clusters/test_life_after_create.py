"""After create: import an existing cluster, attach/detach storage, drift and reconcile, active cluster."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from clusters.models import ActiveCluster, Cluster
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from tests.clusters.helpers import cluster_body, creates_in, sandbox_calls, wait_for_operation
from tests.support import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]


@pytest.fixture
def active_cluster(admin_api, start_worker) -> Cluster:
    start_worker()
    body = admin_api.post("/api/v1/clusters/", cluster_body("life"), format="json").json()
    wait_for_operation(body["operation"]["id"])
    return Cluster.objects.get(pk=body["cluster"]["id"])


def test_import_adopts_an_existing_cluster_without_creating_anything(admin_api, team, active_cluster, sandbox):
    # Made outside InstantStart: InstantStart forgets this one, then finds it in the account again.
    Cluster.objects.filter(pk=active_cluster.pk).update(status="deleted")
    listed = admin_api.get("/api/v1/clusters/importable/?region=us-west-2").json()["results"]
    found = next(c for c in listed if c["eks_cluster_name"] == active_cluster.eks_cluster_name)
    assert found["hyperpod_cluster_name"] == active_cluster.hyperpod_cluster_name
    assert found["instance_groups"] == [{"name": "gpu", "instance_type": "ml.g5.xlarge", "count": 2}]

    before = creates_in(sandbox_calls(sandbox, team.sandbox_account_id))
    response = admin_api.post(
        "/api/v1/clusters/import/",
        {
            "name": "adopted",
            "region": "us-west-2",
            "eks_cluster_name": active_cluster.eks_cluster_name,
        },
        format="json",
    )
    assert response.status_code == 202, response.json()
    wait_for_operation(response.json()["operation"]["id"])
    adopted = Cluster.objects.get(pk=response.json()["cluster"]["id"])
    assert adopted.status == "active" and adopted.managed is False
    assert adopted.hyperpod_cluster_arn == active_cluster.hyperpod_cluster_arn
    assert list(adopted.instance_groups.values_list("name", "count", "availability_zone")) == [("gpu", 2, "us-west-2a")]
    assert adopted.node_summary["total"] == 2
    assert creates_in(sandbox_calls(sandbox, team.sandbox_account_id)) == before  # nothing created
    again = admin_api.post(
        "/api/v1/clusters/import/",
        {"name": "twice", "region": "us-west-2", "eks_cluster_name": active_cluster.eks_cluster_name},
        format="json",
    )
    assert again.status_code == 400 and "eks_cluster_name" in again.json()["error"]["fields"]
    # Forgetting an imported cluster leaves the cloud alone.
    assert admin_api.delete(f"/api/v1/clusters/{adopted.pk}/").json()["forgotten"] is True
    cloud = team_cloud(team, "us-west-2")
    assert cloud.client("eks").describe_cluster(name=active_cluster.eks_cluster_name)["cluster"]["status"] == "ACTIVE"


def test_attach_and_detach_an_s3_bucket(admin_api, team, active_cluster):
    cloud = team_cloud(team, "us-west-2")
    cloud.client("s3").create_bucket(
        Bucket="acme-datasets", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    base = f"/api/v1/clusters/{active_cluster.pk}/storage/"
    missing = admin_api.post(base, {"name": "data", "kind": "s3", "bucket": "no-such-bucket"}, format="json")
    assert missing.status_code == 400 and "bucket" in missing.json()["error"]["fields"]
    response = admin_api.post(base, {"name": "datasets", "kind": "s3", "bucket": "acme-datasets"}, format="json")
    assert response.status_code == 202, response.json()
    wait_for_operation(response.json()["operation"]["id"])
    names = {s["name"]: s for s in admin_api.get(base).json()["results"]}
    assert names["datasets"]["status"] == "attached" and names["shared"]["status"] == "attached"
    core = k8s.CoreV1Api(api_client(cloud, active_cluster.eks_cluster_name))
    claim = core.read_namespaced_persistent_volume_claim("datasets", team.slug)
    volume = core.read_persistent_volume(claim.spec.volume_name)
    assert volume.spec.csi.driver == "s3.csi.aws.com" and volume.spec.csi.volume_attributes["bucketName"] == (
        "acme-datasets"
    )

    detached = admin_api.delete(f"{base}{names['datasets']['id']}/")
    assert detached.status_code == 202
    wait_for_operation(detached.json()["id"])
    assert "datasets" not in {s["name"] for s in admin_api.get(base).json()["results"]}
    with pytest.raises(k8s.ApiException) as missing_claim:
        core.read_namespaced_persistent_volume_claim("datasets", team.slug)
    assert missing_claim.value.status == 404
    cloud.client("s3").head_bucket(Bucket="acme-datasets")  # the data stays


def test_drift_shows_and_reconcile_repairs(admin_api, team, active_cluster):
    url = f"/api/v1/clusters/{active_cluster.pk}/"
    assert admin_api.get(f"{url}drift/").json() == {"in_sync": True, "differences": []}
    cloud = team_cloud(team, "us-west-2")
    core = k8s.CoreV1Api(api_client(cloud, active_cluster.eks_cluster_name))
    core.delete_namespaced_persistent_volume_claim("shared", team.slug)  # someone ran kubectl delete
    drift = admin_api.get(f"{url}drift/").json()
    assert drift["in_sync"] is False
    assert {"resource": "storage/shared", "field": "claim", "recorded": "shared", "actual": None} in drift[
        "differences"
    ]
    response = admin_api.post(f"{url}reconcile/")
    assert response.status_code == 202
    wait_for_operation(response.json()["id"])
    wait_until(lambda: admin_api.get(f"{url}drift/").json()["in_sync"], message="drift repaired")
    assert core.read_namespaced_persistent_volume_claim("shared", team.slug)


def test_activate_sets_the_users_active_cluster(admin_api, member_api, admin_user, team, active_cluster):
    assert ActiveCluster.objects.get(user=admin_user, team=team).cluster == active_cluster  # creator's default
    assert member_api.post(f"/api/v1/clusters/{active_cluster.pk}/activate/").status_code == 200
    assert ActiveCluster.objects.filter(team=team, cluster=active_cluster).count() == 2
