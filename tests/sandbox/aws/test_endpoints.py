"""EKS endpoints as kubectl expects them: the API server at the root of the endpoint, and the same
endpoint after the sandbox restarts (`make run` again), so a recorded `kubectl --server` keeps working."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from sandbox.server import Sandbox
from tests.sandbox.conftest import Account, eks_cluster, hyperpod, wait_for

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def kubectl(endpoint: str, *args: str) -> str:
    res = subprocess.run([KUBECTL, "--server", endpoint, *args], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def cluster_with_nodes(sb: Sandbox) -> tuple[Account, str]:
    acct = Account(sb)
    eks = eks_cluster(acct, "ml")
    hyperpod(acct, "hp", eks, [{"InstanceGroupName": "g", "InstanceType": "ml.g5.xlarge", "InstanceCount": 2}])
    wait_for(lambda: acct.sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"] == "InService")
    wait_for(lambda: kubectl(eks["endpoint"], "get", "nodes", "-o", "name").count("node/") == 2)
    return acct, eks["endpoint"]


def test_kubectl_finds_the_api_at_the_root_of_the_endpoint(sandbox):
    acct, endpoint = cluster_with_nodes(sandbox)
    version = json.loads(kubectl(endpoint, "get", "--raw", "/version"))
    assert version["gitVersion"].startswith("v1.32.")
    assert "v1" in json.loads(kubectl(endpoint, "get", "--raw", "/api"))["versions"]
    assert "deployments" in kubectl(endpoint, "api-resources", "--api-group=apps", "-o", "name")
    # every other cluster has a root of its own
    other = eks_cluster(Account(sandbox), "other")["endpoint"]
    assert other != endpoint and kubectl(other, "get", "nodes", "-o", "name") == ""


def first_run(state: Path) -> tuple[Account, str, int]:
    """A sandbox with a cluster and its nodes, stopped again (Ctrl-C on `make run`)."""
    sb = Sandbox(state, speedup=5000).start()
    try:
        acct, endpoint = cluster_with_nodes(sb)
        return acct, endpoint, sb.port
    finally:
        sb.stop()


def test_recorded_endpoints_keep_working_for_kubectl_after_a_restart(tmp_path: Path):
    state = tmp_path / "state"
    acct, endpoint, port = first_run(state)

    again = Sandbox(state, speedup=5000).start()
    try:
        assert again.port == port  # the sandbox's own address stays too
        assert kubectl(endpoint, "get", "nodes", "-o", "name").count("node/") == 2
        table = kubectl(endpoint, "get", "nodes")
        assert "Ready" in table and "NotReady" not in table
        described = Account(again, account_id=acct.id).eks.describe_cluster(name="ml")["cluster"]
        assert described["endpoint"] == endpoint
    finally:
        again.stop()


def test_a_port_taken_meanwhile_moves_the_cluster_and_describe_cluster_tells_where(tmp_path: Path):
    state = tmp_path / "state"
    acct, endpoint, aws_port = first_run(state)

    squatters = []
    for port in (int(endpoint.rsplit(":", 1)[1]), aws_port):  # another program took both ports
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do; the old port is in TIME_WAIT
        s.bind(("127.0.0.1", port))
        s.listen(1)
        squatters.append(s)
    try:
        again = Sandbox(state, speedup=5000).start()
        try:
            assert again.port != aws_port
            moved = Account(again, account_id=acct.id).eks.describe_cluster(name="ml")["cluster"]["endpoint"]
            assert moved != endpoint
            assert kubectl(moved, "get", "nodes", "-o", "name").count("node/") == 2
        finally:
            again.stop()
    finally:
        for s in squatters:
            s.close()
