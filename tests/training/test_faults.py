"""Fault tolerance as a user sees it: a crashed pod is restarted within the budget and the restart count
shows; a hang is detected by the operator's log monitoring, shown, and the job recovers; cancel stops a
job and keeps its logs."""

from __future__ import annotations

import pytest

from tests.clusters.helpers import add_fault
from tests.support import wait_until

from .helpers import rest_lines, upload, wait_for_job

pytestmark = [pytest.mark.worker]


@pytest.fixture
def long_runs(settings):
    settings.TRAINING_POD_ANNOTATIONS = {"sandbox.instantstart.io/run-seconds": "6000"}


def _submit(api, cluster, name: str, **extra) -> dict:
    upload(api, cluster, "scripts/train.py", b"print('train')\n")
    body = {
        "name": name,
        "recipe": "pytorch",
        "instance_group": "gpu",
        "nodes": 2,
        "script": "/s3/scripts/train.py",
        "args": ["--max_steps", "200"],
        "max_retries": 2,
        "hang_detection": [],
        **extra,
    }
    answer = api.post(f"/api/v1/clusters/{cluster.pk}/jobs/", body, format="json")
    assert answer.status_code == 202, answer.json()
    return answer.json()["job"]


def _get(api, cluster, job) -> dict:
    return api.get(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/").json()


def test_a_crash_restarts_within_budget_the_count_shows_and_cancel_keeps_the_logs(
    cluster, admin_api, sandbox, long_runs
):
    job = _submit(admin_api, cluster, "crashy")
    wait_until(lambda: _get(admin_api, cluster, job)["status"] == "running", timeout=60, message="running")
    wait_until(lambda: len(rest_lines(admin_api, cluster, job["id"])) > 10, timeout=30, message="first lines")
    add_fault(
        sandbox,
        kind="pod_crash",
        account=cluster.team.sandbox_account_id,
        cluster=cluster.eks_cluster_name,
        namespace=job["namespace"],
        name_prefix=f"{job['k8s_name']}-pods-0",
    )
    restarted = wait_until(
        lambda: (j := _get(admin_api, cluster, job))["restarts"]["used"] >= 1 and j, timeout=60, message="a restart"
    )
    assert restarted["restarts"] == {"used": 1, "max": 2}
    assert any(e["reason"] == "Restarting" for e in restarted["events"])
    before = rest_lines(admin_api, cluster, job["id"])
    answer = admin_api.delete(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/")
    assert answer.status_code == 202 and answer.json()["kind"] == "job.cancel"
    # Cancelling again while it runs answers the same operation.
    again = admin_api.delete(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/")
    assert again.status_code == 202 and again.json()["id"] == answer.json()["id"]
    cancelled = wait_for_job(admin_api, cluster, job["id"], statuses=("cancelled",), timeout=60)
    assert cancelled["finished_at"]
    after = rest_lines(admin_api, cluster, job["id"])
    assert after[: len(before)] == before
    assert admin_api.delete(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/").status_code == 409


def test_a_hang_is_detected_shown_and_the_job_restarts_and_succeeds(cluster, admin_api, sandbox):
    rule = {
        "name": "JobHang",
        "logPattern": r".*Batch \d+ Loss: .*",
        "expectedStartCutOffInSeconds": 100000,
        "expectedRecurringFrequencyInSeconds": 1000,
    }
    job = _submit(admin_api, cluster, "hangy", hang_detection=[rule], args=["--max_steps", "50"])
    assert job["manifest"]["spec"]["runPolicy"]["logMonitoringConfiguration"] == [rule]
    add_fault(
        sandbox,
        kind="job_hang",
        account=cluster.team.sandbox_account_id,
        cluster=cluster.eks_cluster_name,
        namespace=job["namespace"],
        job=job["k8s_name"],
        after_steps=3,
    )
    done = wait_for_job(admin_api, cluster, job["id"], timeout=120)
    assert done["hang_detected"] is True
    assert done["restarts"]["used"] >= 1
    assert any("LogStateHanging_JobHang" in (e["message"] or "") for e in done["events"])
    assert done["status"] == "succeeded", (
        done["status_message"],
        [e["message"] for e in done["events"] if e["reason"] in ("Restarting", "JobFailed")],
    )
