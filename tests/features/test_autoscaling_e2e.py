"""Managed autoscaling (real worker, sandbox): the feature's ClusterRole and HyperPod AutoScaling, a group
opted in with min 0 scales up for pending pods and back down when idle; the 400s that say why not."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from features.rules import elastic_problems
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from tests.clusters.helpers import GROUP as GPU
from tests.clusters.helpers import wait_for_operation
from tests.features.helpers import active_cluster, features_of, leftovers
from tests.support import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"


def _gpu_deployment(replicas: int) -> dict:
    labels = {"app": "burst"}
    container = {
        "name": "work",
        "image": "busybox",
        "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "burst"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"node.kubernetes.io/instance-type": "ml.g5.xlarge"},
                    "containers": [container],
                },
            },
        },
    }


def test_a_group_with_min_zero_scales_up_for_pending_pods_and_down_when_idle(admin_api, team, start_worker):
    start_worker()
    spot = {"name": "cheap", "instance_type": "ml.g5.xlarge", "count": 1, "capacity_type": "spot"}
    cluster = active_cluster(admin_api, "elastic", instance_groups=[GPU, spot])
    url = f"/api/v1/clusters/{cluster.pk}/features/"
    group_url = f"/api/v1/clusters/{cluster.pk}/instance-groups/gpu/"
    early = admin_api.patch(group_url, {"autoscaling": {"min": 0, "max": 3}}, format="json")
    assert early.status_code == 400 and "not enabled" in str(early.json()["error"]["fields"]["autoscaling"])

    response = admin_api.patch(url, {"autoscaling": True}, format="json")
    assert response.status_code == 202, response.json()
    wait_for_operation(response.json()["operation"]["id"])
    assert features_of(admin_api, cluster)["autoscaling"]["status"] == "enabled"
    described = (
        team_cloud(team, "us-west-2").client("sagemaker").describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    )
    assert described["AutoScaling"]["Status"] == "InService" and described["NodeProvisioningMode"] == "Continuous"
    assert described["ClusterRole"].endswith("-karpenter")

    bad = admin_api.patch(group_url, {"autoscaling": {"min": 4, "max": 3}}, format="json")
    assert bad.status_code == 400
    spot_url = f"/api/v1/clusters/{cluster.pk}/instance-groups/cheap/"
    refused = admin_api.patch(spot_url, {"autoscaling": {"min": 0, "max": 2}}, format="json")
    assert refused.status_code == 400 and "on-demand" in str(refused.json()["error"]["fields"]["autoscaling"])
    # The training rule: no elastic job on Spot capacity.
    assert "Spot" in elastic_problems(cluster, "cheap")[0]
    assert elastic_problems(cluster, "gpu") == []
    opted = admin_api.patch(group_url, {"autoscaling": {"min": 0, "max": 3}}, format="json")
    assert opted.status_code == 202, opted.json()
    wait_for_operation(opted.json()["operation"]["id"])
    same = admin_api.patch(group_url, {"autoscaling": {"min": 0, "max": 3}}, format="json")
    assert same.status_code == 200 and same.json() == {"changed": False, "autoscaling": {"min": 0, "max": 3}}

    api = api_client(team_cloud(team, "us-west-2"), cluster.eks_cluster_name)
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)

    def group_nodes() -> int:
        return len(core.list_node(label_selector=f"{GROUP_LABEL}=gpu").items)

    # Four one-GPU pods on one-GPU nodes: the pool brings nodes up to its max (3); one pod waits.
    apps.create_namespaced_deployment(team.slug, _gpu_deployment(4))
    wait_until(lambda: group_nodes() == 3, timeout=90, message="pending pods bring nodes up to max 3")
    apps.delete_namespaced_deployment("burst", team.slug)
    # Idle, the nodes go back (the system pods of the add-ons keep the last node busy: real Karpenter
    # does not give back a node whose pods fit nowhere else).
    wait_until(lambda: group_nodes() < 2, timeout=90, message="idle brings them back down")

    # Autoscaling off removes the pools, HyperPod's AutoScaling and the ClusterRole.
    off = admin_api.patch(url, {"autoscaling": False}, format="json")
    assert off.status_code == 202
    wait_for_operation(off.json()["operation"]["id"])
    assert leftovers(team, cluster) == {}
    described = (
        team_cloud(team, "us-west-2").client("sagemaker").describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    )
    assert "AutoScaling" not in described
