"""The EKS endpoint the AWS half returns serves the Kubernetes half, with HyperPod nodes on it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from sandbox.server import _NullKube
from tests.sandbox.conftest import eks_cluster, eks_token, hyperpod, wait_for


def _get(url: str, token: str) -> dict:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def test_hyperpod_nodes_appear_in_kubernetes(sandbox, account):
    if isinstance(sandbox.kube, _NullKube):
        pytest.skip("sandbox.kube not available")
    eks = eks_cluster(account, "ml")
    hyperpod(account, "hp", eks)
    wait_for(lambda: account.sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"] == "InService")
    token = eks_token(account, "ml")

    def nodes():
        try:
            return _get(eks["endpoint"] + "/api/v1/nodes", token)["items"]
        except urllib.error.HTTPError:
            return []

    items = wait_for(lambda: len(nodes()) == 2 and nodes())
    ids = {n["InstanceId"] for n in account.sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"]}
    assert {i["metadata"]["name"] for i in items} == {f"hyperpod-{i}" for i in ids}
    labels = items[0]["metadata"]["labels"]
    assert labels["node.kubernetes.io/instance-type"] == "ml.p5.48xlarge"
    assert labels["sagemaker.amazonaws.com/instance-group-name"] == "gpu"
    assert items[0]["status"]["capacity"]["nvidia.com/gpu"] == "8"
    # deleting the HyperPod node takes it off Kubernetes
    victim = sorted(ids)[0]
    account.sagemaker.batch_delete_cluster_nodes(ClusterName="hp", NodeIds=[victim])
    wait_for(lambda: {i["metadata"]["name"] for i in nodes()} == {f"hyperpod-{i}" for i in ids - {victim}})
