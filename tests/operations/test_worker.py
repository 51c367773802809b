"""The engine under real Celery worker processes (Redis broker, PostgreSQL)."""

from __future__ import annotations

import time

import pytest

from instantstart.operations import engine
from instantstart.operations.models import Operation, OperationStatus
from instantstart.operations.queue import enqueue_advance
from instantstart.operations.services import start_operation
from tests.support import wait_until

pytestmark = pytest.mark.worker


@pytest.fixture
def quick(settings):
    settings.OPERATIONS = {
        **settings.OPERATIONS,
        "LEASE_SECONDS": 3,
        "BACKOFF_BASE_SECONDS": 0.1,
        "DEFAULT_POLL_SECONDS": 0.2,
        # A killed worker is known dead after 4.5 heartbeats: the sweep then resends what it held.
        "HEARTBEAT_SECONDS": 0.5,
        "WORKER_STALE_SECONDS": 2.25,
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


@pytest.mark.parametrize("pool", ["solo", "threads"])
def test_two_workers_never_run_one_operation_at_once(access, quick, start_worker, tmp_path, pool):
    journal = tmp_path / "calls.log"
    start_worker(pool=pool, concurrency=4 if pool == "threads" else 1)
    start_worker(pool=pool, concurrency=4 if pool == "threads" else 1)
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


def test_a_wait_longer_than_the_brokers_visibility_timeout_is_delivered_once(access, quick, settings, start_worker):
    """Redis gives a message a worker holds unacknowledged to another worker after its visibility
    timeout; a countdown longer than that would run twice. Here the timeout is 3 s and the wait 8 s."""
    settings.CELERY_VISIBILITY_TIMEOUT = 3
    settings.OPERATIONS = {**settings.OPERATIONS, "MAX_COUNTDOWN_SECONDS": 1.5, "SWEEP_INTERVAL_SECONDS": 0.5}
    worker = start_worker()
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 1, "interval": 8})
    wait_until(lambda: op.phases.get(name="wait").state.get("polls") == 1, message="the long wait to start")
    # What celery beat does in production: the sweep sends the message when the wait comes due.
    wait_until(
        lambda: engine.sweep() >= 0 and status_of(op) == OperationStatus.SUCCEEDED,
        timeout=40,
        interval=0.5,
        message="the long wait to end",
    )
    time.sleep(4)  # time for a redelivery of a held message to arrive, had there been one
    tasks = worker.advance_outcomes()
    assert tasks == ["wait", "succeeded"], tasks  # no duplicate came
    op.refresh_from_db()
    assert op.advance_count == 4  # work, wait (poll), wait (done), finish


def test_work_in_progress_is_not_stuck_behind_a_backlog_of_new_operations(access, quick, queue, start_worker):
    under_way, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 0})
    queue.clear()  # as if a worker had taken its first message and is now handing off past its budget
    backlog = [start_operation(access=access, kind="engine.selftest", params={"waits": 0})[0] for _ in range(5)]
    enqueue_advance(under_way.pk)  # what a hand-off past the budget, a due poll or the sweep sends
    assert len(queue) == 6
    start_worker()
    everything = [under_way, *backlog]
    wait_until(lambda: all(status_of(op) == OperationStatus.SUCCEEDED for op in everything), message="all to finish")
    started = {op.pk: op.phases.get(name="work").started_at for op in everything}
    assert started[under_way.pk] < min(started[op.pk] for op in backlog)


def _sessions() -> int:
    """Connections ever opened to this test database (PostgreSQL counts them)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


@pytest.mark.parametrize("kept", [True, False])
def test_a_worker_keeps_its_database_connections_from_advance_to_advance(access, quick, start_worker, kept):
    worker = start_worker(OPERATION_HOLD_SECONDS="600" if kept else "0")
    warm, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 1, "interval": 0.05})
    wait_until(lambda: status_of(warm) == OperationStatus.SUCCEEDED, message="a first operation")
    tasks_before, before = len(worker.advance_outcomes()), _sessions()
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 12, "interval": 0.05})
    wait_until(lambda: status_of(op) == OperationStatus.SUCCEEDED, message="twelve polls")
    op.refresh_from_db()
    assert op.advance_count == 15  # work, 12 polls, the wait's end, finish
    tasks = len(worker.advance_outcomes()) - tasks_before
    if kept:
        # The worker ran the polls itself: one message started the operation, none per poll.
        assert tasks == 1, tasks
    else:
        assert tasks >= 13, tasks
    # Celery's Django fixup would open one per task; the worker keeps the ones it has.
    assert _sessions() - before <= 1


def test_a_kept_operation_is_cancelled_at_once(access, quick, start_worker):
    from instantstart.operations.services import cancel_operation

    start_worker()
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 1, "interval": 300})
    wait_until(lambda: op.phases.get(name="wait").state.get("polls") == 1, message="the wait to start")
    op.refresh_from_db()
    assert op.lease_token is not None and op.enqueued_at is None  # kept by the worker, no message
    cancel_operation(access=access, operation=op)
    wait_until(lambda: status_of(op) == OperationStatus.CANCELLED, timeout=15, message="the cancel to apply")
    assert op.phases.get(name="wait").state == {"polls": 1}  # not polled again


def test_a_worker_that_stops_gives_back_what_it_kept(access, quick, start_worker):
    first = start_worker()
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 2, "interval": 3})
    wait_until(lambda: op.phases.get(name="wait").state.get("polls") == 1, message="the wait to start")
    first.stop()  # a clean shutdown (SIGTERM): no lease left to run out
    op.refresh_from_db()
    assert op.lease_token is None and op.enqueued_at is not None  # given back with its message
    start_worker()
    # No sweep here: the message it sent when it stopped is what resumes the operation.
    wait_until(lambda: status_of(op) == OperationStatus.SUCCEEDED, timeout=30, message="the next worker to finish it")
    assert op.phases.get(name="wait").state["polls"] == 2
