"""cluster.create end to end: REST → operation → a real Celery worker → the sandbox's AWS and Kubernetes."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from kubernetes import client as k8s

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client, eks_token
from tests.clusters.helpers import EXPECTED_CREATES, cluster_body, creates_in, sandbox_calls, wait_for_operation

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]


def test_create_reaches_in_service_with_nodes(admin_api, team, start_worker, sandbox):
    start_worker()
    response = admin_api.post("/api/v1/clusters/", cluster_body(), format="json")
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["operation"]["status_tool"] == "get_operation"
    assert [p["name"] for p in body["operation"]["phases"]] == [
        "preflight",
        "network",
        "identity",
        "eks",
        "dependencies",
        "hyperpod",
        "storage",
        "verify",
    ]
    wait_for_operation(body["operation"]["id"])

    cluster = Cluster.objects.get(pk=body["cluster"]["id"])
    assert cluster.status == "active"
    assert cluster.node_summary["total"] == 2
    detail = admin_api.get(f"/api/v1/clusters/{cluster.pk}/").json()
    # the cluster's API server at the root of its endpoint, a loopback port of its own in the sandbox
    assert detail["hyperpod_cluster_arn"] and re.fullmatch(r"http://127\.0\.0\.1:\d+", detail["eks_endpoint"])
    assert detail["storages"][0]["status"] == "attached"

    # The cluster is real to the Kubernetes client: nodes with HyperPod's labels.
    api = api_client(team_cloud(team, "us-west-2"), cluster.eks_cluster_name)
    nodes = k8s.CoreV1Api(api).list_node().items
    assert len(nodes) == 2
    assert {n.metadata.labels["node.kubernetes.io/instance-type"] for n in nodes} == {"ml.g5.xlarge"}
    claim = k8s.CoreV1Api(api).read_namespaced_persistent_volume_claim("shared", team.slug)
    assert claim.spec.volume_name

    # …and to kubectl, pointed at the endpoint EKS's DescribeCluster returns.
    kubectl = shutil.which("kubectl")
    if kubectl:
        endpoint = (
            team_cloud(team, "us-west-2")
            .client("eks")
            .describe_cluster(name=cluster.eks_cluster_name)["cluster"]["endpoint"]
        )
        token = eks_token(team_cloud(team, "us-west-2"), cluster.eks_cluster_name)
        listed = subprocess.run(
            [
                kubectl,
                "--server",
                endpoint,
                "--token",
                token,
                "--insecure-skip-tls-verify",
                "get",
                "nodes",
                "-o",
                "name",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        assert len(listed.stdout.split()) == 2

    calls = sandbox_calls(sandbox, team.sandbox_account_id)
    assert creates_in(calls) == EXPECTED_CREATES
