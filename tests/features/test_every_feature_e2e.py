"""Every feature enabled, then every feature disabled (real worker, sandbox): the operators' CRDs are
served while on, and nothing tagged or labelled with a feature remains in IAM, EKS pod identity,
add-ons or Kubernetes afterwards; the cluster create's add-ons stay."""

from __future__ import annotations

import pytest

from features.gate import FEATURE_CRDS, has_feature
from features.rules import ElasticNotAllowed, check_elastic, elastic_problems
from instantstart.cloud.aws import team_cloud
from tests.clusters.helpers import wait_for_operation
from tests.features.helpers import active_cluster, features_of, leftovers

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]

EVERY = (
    "training_operator",
    "inference_operator",
    "tiered_checkpointing",
    "autoscaling",
    "kuberay",
    "keda",
    "observability",
)


def test_enable_then_disable_every_feature_leaves_nothing_behind(admin_api, team, start_worker):
    start_worker()
    cluster = active_cluster(admin_api, "every")
    url = f"/api/v1/clusters/{cluster.pk}/features/"
    request = {name: True for name in EVERY}
    request["tiered_checkpointing"] = {"enabled": True, "memory_percent": 30}
    response = admin_api.patch(url, request, format="json")
    assert response.status_code == 202, response.json()
    order = [a["feature"] for a in response.json()["plan"]]
    # dependencies first; the storage driver of an S3 cluster and the pod identity agent are there already
    assert order[:3] == ["cert_manager", "fsx_csi", "metrics_server"]
    assert set(order[3:]) == set(EVERY)
    wait_for_operation(response.json()["operation"]["id"], timeout=240)

    on = features_of(admin_api, cluster)
    assert {n: on[n]["status"] for n in EVERY} == {n: "enabled" for n in EVERY}
    assert on["tiered_checkpointing"]["settings"] == {"memory_percent": 30}
    for feature in FEATURE_CRDS:
        assert has_feature(cluster, feature), feature
    described = (
        team_cloud(team, "us-west-2").client("sagemaker").describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    )
    assert described["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 30}
    assert leftovers(team, cluster)  # the listing sees what the features made
    # The training rule: no elastic job while tiered checkpointing is on.
    assert "tiered checkpointing" in " ".join(elastic_problems(cluster, "gpu"))
    with pytest.raises(ElasticNotAllowed):
        check_elastic(cluster, "gpu")

    # A setting alone is an update of that feature only.
    update = admin_api.patch(url, {"tiered_checkpointing": {"memory_percent": 40}}, format="json")
    assert update.status_code == 202, update.json()
    assert [(a["feature"], a["action"]) for a in update.json()["plan"]] == [("tiered_checkpointing", "update")]
    wait_for_operation(update.json()["operation"]["id"])
    assert features_of(admin_api, cluster)["tiered_checkpointing"]["settings"] == {"memory_percent": 40}

    off = admin_api.patch(url, {name: False for name in EVERY}, format="json")
    assert off.status_code == 202, off.json()
    order = [a["feature"] for a in off.json()["plan"]]
    assert set(order[: len(EVERY)]) == set(EVERY)  # dependents first
    assert order[len(EVERY) :] == ["metrics_server", "fsx_csi", "cert_manager"]
    wait_for_operation(off.json()["operation"]["id"], timeout=240)

    assert leftovers(team, cluster) == {}
    final = features_of(admin_api, cluster)
    assert not any(final[n]["enabled"] for n in EVERY)
    assert final["pod_identity_agent"]["enabled"] and final["s3_csi"]["enabled"]  # the create's add-ons stay
    for feature in FEATURE_CRDS:
        assert not has_feature(cluster, feature), feature
    check_elastic(cluster, "gpu")  # on-demand and no tiered checkpointing: elastic is fine
