"""Fixtures of the inference tests: a real cluster (created through the API by a real worker) with
GPU nodes, and the features an endpoint needs enabled in the sandbox.

The features app is built in parallel; until it lands, features are enabled here as the product
will enable them: EKS add-ons through boto3 (the HyperPod inference add-on with its dependencies)
and KEDA as its Helm-equivalent objects, server-side applied.
"""

from __future__ import annotations

import json

import pytest

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client, apply
from tests.clusters.helpers import wait_for_operation
from tests.support import wait_until

GROUP = {"name": "gpu", "instance_type": "ml.g5.12xlarge", "count": 2}  # 4 GPUs a node
INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference"
INFERENCE_DEPENDENCIES = ("cert-manager", "aws-fsx-csi-driver", "metrics-server")


def cluster_body(name: str) -> dict:
    return {"name": name, "region": "us-west-2", "availability_zone": "us-west-2a", "instance_groups": [GROUP]}


def kube(cluster: Cluster):
    return api_client(team_cloud(cluster.team, cluster.region), cluster.eks_cluster_name, cluster.region)


def _addon_settled(eks, cluster: Cluster, name: str) -> dict:
    def settled():
        addon = eks.describe_addon(clusterName=cluster.eks_cluster_name, addonName=name)["addon"]
        return addon if addon["status"] not in ("CREATING", "UPDATING") else None

    return wait_until(settled, timeout=60, message=f"add-on {name} settled")


def enable_inference_operator(cluster: Cluster) -> None:
    """The HyperPod inference add-on (with its bundled KEDA) and the add-ons it needs."""
    eks = team_cloud(cluster.team, cluster.region).client("eks")
    present = set(eks.list_addons(clusterName=cluster.eks_cluster_name)["addons"])
    for name in INFERENCE_DEPENDENCIES:
        if name not in present:
            eks.create_addon(clusterName=cluster.eks_cluster_name, addonName=name)
    for name in INFERENCE_DEPENDENCIES:
        assert _addon_settled(eks, cluster, name)["status"] == "ACTIVE"
    config = {
        "executionRoleArn": cluster.identity["execution_role_arn"],
        "tlsCertificateS3Bucket": "is-inference-tls",
        "hyperpodClusterArn": cluster.hyperpod_cluster_arn,
        "alb": {"enabled": False},
    }
    eks.create_addon(
        clusterName=cluster.eks_cluster_name, addonName=INFERENCE_ADDON, configurationValues=json.dumps(config)
    )
    assert _addon_settled(eks, cluster, INFERENCE_ADDON)["status"] == "ACTIVE"


def enable_keda(cluster: Cluster) -> None:
    """KEDA alone, as its Helm chart installs it (the objects are spelled out by the sandbox's helm module)."""
    from sandbox.kube.operators.crds import load_crd
    from sandbox.kube.operators.helm import release_objects

    api = kube(cluster)
    for manifest in release_objects("keda"):
        if isinstance(manifest, str):  # a CRD by its upstream file name, applied without its status
            crd = load_crd(manifest)
            manifest = {k: crd[k] for k in ("apiVersion", "kind", "spec")} | {
                "metadata": {"name": crd["metadata"]["name"]}
            }
        apply(api, manifest)


@pytest.fixture
def cluster(admin_api, start_worker) -> Cluster:
    """An active cluster of the admin's team with two 4-GPU nodes and the shared S3 bucket; a worker runs."""
    start_worker()
    body = admin_api.post("/api/v1/clusters/", cluster_body("serve"), format="json").json()
    wait_for_operation(body["operation"]["id"], timeout=180)
    return Cluster.objects.get(pk=body["cluster"]["id"])
