"""cluster.create under trouble: killed workers, capacity faults, throttling, repeated requests."""

from __future__ import annotations

import random
import time

import pytest

from clusters.models import Cluster
from instantstart.operations import engine
from instantstart.operations.models import Operation
from tests.clusters.helpers import (
    EXPECTED_CREATES,
    add_fault,
    cluster_body,
    creates_in,
    sandbox_calls,
    wait_for_operation,
)
from tests.support import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]


def test_workers_killed_again_and_again_never_create_anything_twice(admin_api, team, start_worker, sandbox, settings):
    # One worker at a time, so a short lease only shortens the wait after each kill.
    settings.OPERATIONS = {**settings.OPERATIONS, "LEASE_SECONDS": 4}
    response = admin_api.post("/api/v1/clusters/", cluster_body("chaos"), format="json")
    operation_id = response.json()["operation"]["id"]
    interrupted: list[str] = []
    rng = random.Random(7)
    deadline = time.monotonic() + 300

    def advances() -> int:
        return Operation.objects.values_list("advance_count", flat=True).get(pk=operation_id)

    while not Operation.objects.get(pk=operation_id).is_terminal:
        assert time.monotonic() < deadline, f"not finished; interrupted in {interrupted}"
        before = advances()
        worker = start_worker()
        # Each worker finishes at least one step (so every cycle makes progress, however slow the
        # machine), then dies at a random moment: often in the middle of the next step.

        def progressed(before=before) -> bool:
            engine.sweep()  # what beat does: hand an operation whose worker died to the live one
            return advances() >= before + 2 or Operation.objects.get(pk=operation_id).is_terminal

        wait_until(progressed, timeout=120, interval=0.5, message="the worker to advance the operation")
        time.sleep(rng.uniform(0.0, 1.0))
        phase = Operation.objects.get(pk=operation_id).current_phase()
        worker.kill()
        interrupted.append(phase.name if phase else "-")
    op = wait_for_operation(operation_id)
    assert len(interrupted) >= 3, interrupted
    assert creates_in(sandbox_calls(sandbox, team.sandbox_account_id)) == EXPECTED_CREATES, interrupted
    assert Cluster.objects.get(pk=op.target_id).status == "active"


def test_insufficient_capacity_fails_hyperpod_then_a_zone_change_and_retry_succeed(
    admin_api, team, start_worker, sandbox
):
    add_fault(sandbox, kind="insufficient_capacity", instance_type="ml.g5.xlarge", availability_zone="us-west-2b")
    start_worker()
    body = admin_api.post("/api/v1/clusters/", cluster_body("capacity", zone="us-west-2b"), format="json").json()
    op = wait_for_operation(body["operation"]["id"], statuses=("failed",))
    failed = op.phases.get(status="failed")
    assert failed.name == "hyperpod"
    assert "ml.g5.xlarge" in op.error_message and "us-west-2b" in op.error_message
    assert "another zone" in op.error_hint
    cluster_id = body["cluster"]["id"]
    assert admin_api.get(f"/api/v1/clusters/{cluster_id}/").json()["status"] == "failed"

    moved = admin_api.patch(f"/api/v1/clusters/{cluster_id}/", {"availability_zone": "us-west-2c"}, format="json")
    assert moved.status_code == 200, moved.json()
    assert {g["availability_zone"] for g in moved.json()["instance_groups"]} == {"us-west-2c"}
    before = {p.name: p.attempts for p in op.phases.all()}
    assert admin_api.post(f"/api/v1/operations/{op.pk}/retry/").status_code == 202
    op = wait_for_operation(op.pk)
    after = {p.name: p.attempts for p in op.phases.all()}
    for name in ("preflight", "network", "identity", "eks", "dependencies"):
        assert after[name] == before[name], name  # finished phases were not redone
    creates = creates_in(sandbox_calls(sandbox, team.sandbox_account_id))
    assert creates["eks:CreateCluster"] == 1 and creates["ec2:CreateVpc"] == 1
    assert creates["sagemaker:CreateCluster"] == 2  # the failed one, then the one in us-west-2c
    assert creates["ec2:CreateSubnet"] == 6  # a new /20 compute subnet for us-west-2c
    assert Cluster.objects.get(pk=cluster_id).status == "active"


def test_throttling_is_absorbed_by_retries(admin_api, team, start_worker, sandbox):
    add_fault(sandbox, kind="throttle", service="ec2", action="CreateVpc", count=3, account=team.sandbox_account_id)
    add_fault(
        sandbox,
        kind="throttle",
        service="sagemaker",
        action="DescribeCluster",
        count=5,
        account=team.sandbox_account_id,
    )
    start_worker()
    body = admin_api.post("/api/v1/clusters/", cluster_body("throttled"), format="json").json()
    wait_for_operation(body["operation"]["id"])
    calls = sandbox_calls(sandbox, team.sandbox_account_id)
    assert calls["ec2:CreateVpc"] >= 2  # throttled answers were retried…
    assert creates_in(calls)["ec2:CreateVpc"] >= 1
    assert len([v for v in Cluster.objects.filter(team=team)]) == 1  # …and made one cluster


def test_the_same_idempotency_key_creates_one_cluster(admin_api, team):
    first = admin_api.post("/api/v1/clusters/", cluster_body("idem"), format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    second = admin_api.post("/api/v1/clusters/", cluster_body("idem"), format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    assert first.status_code == second.status_code == 202
    assert first.json()["operation"]["id"] == second.json()["operation"]["id"]
    assert Cluster.objects.filter(team=team).count() == 1
    assert Operation.objects.filter(team=team, kind="cluster.create").count() == 1
