"""A cluster's recorded `eks_endpoint` keeps working for kubectl after the sandbox restarts (as after
Ctrl-C and `make run` again): the sandbox runs here as `make run` starts it, a process with its state
in a directory of its own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from clusters.models import Cluster
from tests.clusters.helpers import cluster_body, wait_for_operation
from tests.support import ROOT, wait_until

KUBECTL = shutil.which("kubectl")
pytestmark = [pytest.mark.worker, pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")]


class SandboxProcess:
    """`python -m sandbox --state DIR`: the first line it prints says where it listens."""

    def __init__(self, state) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sandbox", "--state", str(state), "--speedup", "1000"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self.info = json.loads(self.proc.stdout.readline())

    def stop(self) -> None:
        """Ctrl-C: the sandbox saves its state and exits."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            self.proc.wait(30)


def kubectl(endpoint: str, *args: str) -> str:
    done = subprocess.run([KUBECTL, "--server", endpoint, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def own_sandbox(tmp_path, settings):
    from instantstart.cloud.aws import forget_credentials

    state = tmp_path / "sandbox"
    running = {"process": SandboxProcess(state)}

    def point_at(process: SandboxProcess) -> None:
        settings.SANDBOX_AWS_ENDPOINT = process.info["aws_endpoint"]
        forget_credentials()

    def restart() -> SandboxProcess:
        running["process"].stop()
        running["process"] = SandboxProcess(state)
        point_at(running["process"])
        return running["process"]

    point_at(running["process"])
    settings.OPERATIONS = {
        **settings.OPERATIONS,
        "POLL_SCALE": 0.005,
        "BACKOFF_BASE_SECONDS": 0.05,
        "BACKOFF_MAX_SECONDS": 0.5,
        "LEASE_SECONDS": 20,
    }
    yield restart
    running["process"].stop()
    forget_credentials()


def test_kubectl_reaches_a_cluster_created_before_the_restart(admin_api, start_worker, own_sandbox):
    start_worker()
    body = admin_api.post("/api/v1/clusters/", cluster_body("before"), format="json").json()
    wait_for_operation(body["operation"]["id"], timeout=180)
    cluster = Cluster.objects.get(pk=body["cluster"]["id"])
    endpoint = admin_api.get(f"/api/v1/clusters/{cluster.pk}/").json()["eks_endpoint"]
    assert endpoint == cluster.eks_endpoint and endpoint.startswith("http://127.0.0.1:")
    assert kubectl(endpoint, "get", "nodes", "-o", "name").count("node/") == 2

    own_sandbox()  # Ctrl-C and `make run` again

    # The endpoint recorded before the restart, as the README's kubectl line uses it.
    nodes = wait_until(
        lambda: kubectl(endpoint, "get", "nodes", "-o", "name").count("node/") == 2, message="nodes after restart"
    )
    assert nodes
    assert "Ready" in kubectl(endpoint, "get", "nodes")
    # And the product still reads the cluster.
    listed = admin_api.get(f"/api/v1/clusters/{cluster.pk}/nodes/").json()["results"]
    assert len(listed) == 2
