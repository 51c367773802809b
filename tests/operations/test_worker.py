"""The engine under real Celery worker processes (Redis broker, PostgreSQL)."""

from __future__ import annotations

import pytest

from instantstart.operations import engine
from instantstart.operations.models import Operation, OperationStatus
from instantstart.operations.queue import enqueue_advance
from instantstart.operations.services import start_operation
from instantstart.tenancy.access import Access, Via
from tests.support import wait_until

pytestmark = pytest.mark.worker


@pytest.fixture
def access(team, member_user):
    return Access(user=member_user, team=team, role="member", via=Via.API)


@pytest.fixture
def quick(settings):
    settings.OPERATIONS = {
        **settings.OPERATIONS,
        "LEASE_SECONDS": 3,
        "BACKOFF_BASE_SECONDS": 0.1,
        "DEFAULT_POLL_SECONDS": 0.2,
        "SWEEP_GRACE_SECONDS": 0.5,
    }


def status_of(op: Operation) -> str:
    return Operation.objects.values_list("status", flat=True).get(pk=op.pk)


def test_a_waiting_operation_does_not_hold_the_worker(access, quick, start_worker):
    """One single-threaded worker: a long wait of one operation does not delay another."""
    start_worker()
    slow, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 1, "interval": 600})
    wait_until(lambda: slow.phases.get(name="wait").state.get("polls") == 1, message="slow op to start waiting")
    fast, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 2, "interval": 0.2})
    wait_until(lambda: status_of(fast) == OperationStatus.SUCCEEDED, message="fast op to finish")
    assert status_of(slow) == OperationStatus.RUNNING
    assert slow.phases.get(name="wait").state == {"polls": 1}  # not polled again meanwhile


def test_two_workers_never_run_one_operation_at_once(access, quick, start_worker, tmp_path):
    journal = tmp_path / "calls.log"
    start_worker()
    start_worker()
    op, _ = start_operation(
        access=access,
        kind="engine.selftest",
        params={"call_seconds": 1.0, "waits": 2, "interval": 0.2, "journal": str(journal)},
    )
    for _ in range(10):  # duplicate messages, as a sweep or a redelivery would send
        enqueue_advance(op.pk)
    wait_until(lambda: status_of(op) == OperationStatus.SUCCEEDED, message="operation to finish")
    assert journal.read_text().splitlines() == ["start", "created"]


def test_a_worker_killed_mid_phase_loses_nothing(access, quick, start_worker, tmp_path):
    journal = tmp_path / "calls.log"
    first = start_worker()
    op, _ = start_operation(
        access=access,
        kind="engine.selftest",
        params={"call_seconds": 3.0, "waits": 1, "interval": 0.2, "journal": str(journal)},
    )
    wait_until(lambda: journal.exists() and "start" in journal.read_text(), message="the slow call to start")
    first.kill()
    assert status_of(op) == OperationStatus.RUNNING
    start_worker()
    # What celery beat does in production: re-enqueue operations whose lease expired.
    wait_until(
        lambda: engine.sweep() >= 0 and status_of(op) == OperationStatus.SUCCEEDED,
        timeout=60,
        interval=0.5,
        message="operation to finish on the new worker",
    )
    op.refresh_from_db()
    assert op.phases.get(name="work").state["resource_id"]
    assert [p.status for p in op.phases.all()] == ["succeeded"] * 3


def test_a_worker_killed_while_an_operation_waits_loses_nothing(access, quick, start_worker):
    first = start_worker()
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 3, "interval": 2})
    wait_until(lambda: op.phases.get(name="wait").state.get("polls", 0) >= 1, message="op to wait")
    first.kill()  # its countdown message dies with it (unacked, redelivered only much later)
    start_worker()
    wait_until(
        lambda: engine.sweep() >= 0 and status_of(op) == OperationStatus.SUCCEEDED,
        timeout=60,
        interval=0.5,
        message="operation to finish after restart",
    )
