"""Each recipe submits a manifest that validates against its CRD and runs to succeeded on the sandbox, with
a real worker following it; logs are collected line by line and the loss shows up in MLflow."""

from __future__ import annotations

import pytest

from tests.support import wait_until
from training.models import Job

from .helpers import upload, wait_for_job

pytestmark = [pytest.mark.worker]


def test_pytorch_job_runs_to_succeeded_with_logs(cluster, admin_api):
    upload(admin_api, cluster, "scripts/train.py", b"print('train')\n")
    body = {
        "name": "fsdp",
        "recipe": "pytorch",
        "instance_group": "gpu",
        "nodes": 2,
        "script": "/s3/scripts/train.py",
        "args": ["--max_steps", "30"],
    }
    answer = admin_api.post(f"/api/v1/clusters/{cluster.pk}/jobs/", body, format="json")
    assert answer.status_code == 202, answer.json()
    job = answer.json()["job"]
    assert job["kind"] == "HyperPodPyTorchJob" and job["gpus"] == 8
    container = job["manifest"]["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}
    done = wait_for_job(admin_api, cluster, job["id"], timeout=90)
    assert done["status"] == "succeeded", done
    logs = admin_api.get(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/logs/?limit=5000").json()
    assert any("Loss:" in line["text"] for line in logs["lines"])
    assert [line["seq"] for line in logs["lines"]] == list(range(1, len(logs["lines"]) + 1))
    assert {line["pod"] for line in logs["lines"]} == {p["name"] for p in done["pods"]}
    metrics = wait_until(
        lambda: (
            (m := admin_api.get(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/metrics/").json())["metrics"].get(
                "loss"
            )
            and m
        ),
        timeout=30,
    )
    assert metrics["metrics"]["loss"][0]["step"] >= 0
    assert Job.objects.get(pk=job["id"]).status == "succeeded"
