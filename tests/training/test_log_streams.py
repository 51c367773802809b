"""Followed pod logs: the worker that runs a job stores a running pod's lines as the kubelet writes them,
not at the job's next poll, and the lines stored are still exactly what the pods printed."""

from __future__ import annotations

import time

import pytest

from tests.support import wait_until
from training.models import Job
from training.readers.logs import read_pod_log

from .helpers import rest_lines, upload, wait_for_job

pytestmark = [pytest.mark.worker]
POLL = 4.0
LONG_POLL = 60.0


@pytest.fixture
def worker(start_worker, request):
    # The job's running phase reads its state (and the logs of pods without a stream) every POLL
    # seconds (a test may ask for another): lines stored sooner than that came through the followed streams.
    poll = getattr(request, "param", POLL)
    return start_worker(pool="threads", concurrency=4, TRAINING_LOG_POLL_SECONDS=str(poll))


def _submit(admin_api, cluster, settings, name: str) -> str:
    """A two-node PyTorch job of 300 steps over 12,000 simulated seconds (12 s here): its id."""
    settings.TRAINING_POD_ANNOTATIONS = {"sandbox.instantstart.io/run-seconds": "12000"}
    upload(admin_api, cluster, "scripts/train.py", b"print('train')\n")
    body = {
        "name": name,
        "recipe": "pytorch",
        "instance_group": "gpu",
        "nodes": 2,
        "script": "/s3/scripts/train.py",
        "args": ["--max_steps", "300"],
        "hang_detection": [],
    }
    answer = admin_api.post(f"/api/v1/clusters/{cluster.pk}/jobs/", body, format="json")
    assert answer.status_code == 202, answer.json()
    return answer.json()["job"]["id"]


def test_lines_are_stored_between_polls_and_match_the_pod_logs(cluster, admin_api, settings):
    job_id = _submit(admin_api, cluster, settings, "streamed")

    def stored() -> int:
        return Job.objects.filter(pk=job_id).values_list("last_seq", flat=True).get()

    wait_until(lambda: stored() > 0, timeout=60, interval=0.1, message="the first lines stored")
    seen, until = {stored()}, time.monotonic() + POLL * 0.8  # within one poll interval
    while time.monotonic() < until:
        seen.add(stored())
        time.sleep(0.1)
    assert len(seen) >= 5, f"the stored lines moved {len(seen) - 1} times in {POLL * 0.8:.1f} s: {sorted(seen)}"

    done = wait_for_job(admin_api, cluster, job_id, timeout=120)
    assert done["status"] == "succeeded", done["status_message"]
    lines = rest_lines(admin_api, cluster, job_id)
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    for pod in {p["name"] for p in done["pods"]}:
        printed = [text for _, text in read_pod_log(cluster, done["namespace"], pod, None)]
        assert [line["text"] for line in lines if line["pod"] == pod] == printed, pod


@pytest.mark.parametrize("worker", [LONG_POLL], indirect=True)
def test_a_pod_is_followed_from_the_moment_it_runs_not_from_the_next_poll(cluster, admin_api, settings):
    # The running phase polls first as the job is applied, before any of its pods runs, and then not for
    # LONG_POLL seconds: the worker's watch on the job's pods starts each pod's stream when it runs.
    job_id = _submit(admin_api, cluster, settings, "watched")

    def pods_stored() -> set[str]:
        return set(Job.objects.get(pk=job_id).log_cursors)

    wait_until(lambda: len(pods_stored()) == 2, timeout=LONG_POLL / 3, interval=0.1, message="both pods' lines")
    lines = rest_lines(admin_api, cluster, job_id)
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    assert admin_api.delete(f"/api/v1/clusters/{cluster.pk}/jobs/{job_id}/").status_code == 202
    wait_for_job(admin_api, cluster, job_id, statuses=("cancelled",), timeout=60)
