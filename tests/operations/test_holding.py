"""Operations a worker keeps leased between polls (holding.py), driven by hand in-process."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from instantstart.operations import engine, holding
from instantstart.operations.models import Operation, OperationStatus
from instantstart.operations.services import cancel_operation, start_operation


@pytest.fixture
def holder(settings):
    settings.OPERATIONS = {**settings.OPERATIONS, "BACKOFF_BASE_SECONDS": 0.0, "HOLD_LEASE_SECONDS": 30.0}
    kept = holding.Holder(1, engine.advance_kept, run_threads=False)
    with holding.use(kept):
        yield kept


def _started(access, **params) -> Operation:
    op, _ = start_operation(access=access, kind="engine.selftest", params=params)
    return op


def _run_due(holder: holding.Holder, after: float = 0.0) -> list[str]:
    return [holder.run(pk, token).action for pk, token in holder.due(time.time() + after)]


def test_a_short_wait_keeps_the_lease_and_sends_no_message(access, holder, queue):
    op = _started(access, waits=2, interval=5)
    queue.clear()  # the start's message, taken by the advance below
    assert engine.advance(op.pk).action == "wait"
    op.refresh_from_db()
    assert op.lease_token is not None and holder.token_of(op.pk) == op.lease_token
    assert op.enqueued_at is None and op.lease_until > op.wake_at  # lasts past the wake-up
    assert len(queue) == 0
    assert _run_due(holder) == []  # not due yet
    assert _run_due(holder, after=6) == ["wait"]
    assert op.phases.get(name="wait").state == {"polls": 2}


def test_a_kept_poll_is_one_read_and_one_write(access, holder):
    op = _started(access, waits=3, interval=0)
    engine.advance(op.pk)
    with CaptureQueriesContext(connection) as captured:
        assert _run_due(holder) == ["wait"]
    statements = [q["sql"].lstrip()[:6].upper() for q in captured.captured_queries]
    assert statements == ["SELECT", "WITH O"], statements  # no claim: the lease is already this worker's
    op.refresh_from_db()
    assert op.advance_count == 3  # work, poll 1 (the claimed advance), poll 2 (counted by its write)


def test_kept_polls_run_the_operation_to_the_end(access, holder):
    op = _started(access, waits=3, interval=0)
    engine.advance(op.pk)
    actions = []
    while len(holder):
        actions += _run_due(holder, after=1)
    assert actions == ["wait", "wait", "succeeded"]
    op.refresh_from_db()
    assert op.status == OperationStatus.SUCCEEDED and op.advance_count == 6
    assert op.lease_token is None and op.lease_until is None


def test_a_kept_operation_taken_over_is_not_run_twice(access, holder):
    op = _started(access, waits=2, interval=0)
    engine.advance(op.pk)
    # Its lease ran out (the worker was frozen) and another worker took it.
    Operation.objects.filter(pk=op.pk).update(lease_token=uuid.uuid4())
    assert _run_due(holder, after=1) == ["skipped"]
    assert len(holder) == 0
    assert op.phases.get(name="wait").state == {"polls": 1}


def test_the_watch_runs_a_cancel_now_and_renews_leases_near_their_end(access, holder, settings):
    op = _started(access, waits=2, interval=120)
    engine.advance(op.pk)
    cancel_operation(access=access, operation=op)  # its message finds the lease kept: skipped
    assert engine.advance(op.pk).action == "skipped"
    ending = timezone.now() + timedelta(seconds=5)
    Operation.objects.filter(pk=op.pk).update(lease_until=ending)
    holder.watch()
    op.refresh_from_db()
    assert op.lease_until > ending + timedelta(seconds=20)
    assert _run_due(holder) == ["cancelled"]
    op.refresh_from_db()
    assert op.status == OperationStatus.CANCELLED and op.lease_token is None


def test_giving_back_releases_the_leases_and_sends_their_messages(access, holder, queue, settings):
    near = _started(access, waits=2, interval=5)
    far = _started(access, waits=2, interval=5)
    queue.clear()
    engine.advance(near.pk)
    engine.advance(far.pk)
    Operation.objects.filter(pk=far.pk).update(wake_at=timezone.now() + timedelta(hours=2))
    assert holder.stop() == 2
    near.refresh_from_db()
    far.refresh_from_db()
    assert near.lease_token is None and near.enqueued_at is not None
    assert far.lease_token is None and far.enqueued_at is None  # beyond a countdown: the sweep sends it
    assert len(queue) == 1


def test_without_a_holder_every_wait_goes_through_the_broker(access, queue):
    op = _started(access, waits=2, interval=5)
    queue.clear()
    engine.advance(op.pk)
    op.refresh_from_db()
    assert op.lease_token is None and op.enqueued_at is not None
    assert len(queue) == 1


def test_a_hung_or_long_overdue_kept_operation_is_let_go(access, holder, settings):
    """Its lease is not extended, so it runs out and another worker takes the operation over."""
    hung = _started(access, waits=2, interval=0)
    overdue = _started(access, waits=2, interval=0)
    engine.advance(hung.pk)
    engine.advance(overdue.pk)
    holder.due(time.time() + 1)  # both taken to run...
    holder._kept[str(hung.pk)].started -= settings.OPERATIONS["LEASE_SECONDS"] + 1  # ...one for too long
    holder._kept[str(overdue.pk)].running = False  # the other back to waiting, long past its wake-up
    holder._kept[str(overdue.pk)].due -= settings.OPERATIONS["HOLD_LEASE_SECONDS"]
    ending = timezone.now() + timedelta(seconds=5)
    Operation.objects.filter(pk__in=[hung.pk, overdue.pk]).update(lease_until=ending)
    holder.watch()
    assert set(Operation.objects.filter(pk__in=[hung.pk, overdue.pk]).values_list("lease_until", flat=True)) == {ending}
