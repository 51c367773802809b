"""The engine in-process: steps, waits, transient retries, failures, retry, cancel, leases."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from instantstart.operations import engine
from instantstart.operations.models import Operation, OperationStatus, PhaseStatus
from instantstart.operations.registry import OperationKind, Step, register
from instantstart.operations.results import Done
from instantstart.operations.services import cancel_operation, retry_operation, start_operation
from instantstart.tenancy.models import Team


@pytest.fixture
def fast(settings):
    settings.OPERATIONS = {**settings.OPERATIONS, "BACKOFF_BASE_SECONDS": 0.0, "DEFAULT_POLL_SECONDS": 0.0}


def drive(operation: Operation, limit: int = 50) -> list[str]:
    """Advance until terminal, making each due (what the countdown would do), and log actions."""
    actions = []
    for _ in range(limit):
        Operation.objects.filter(pk=operation.pk).update(wake_at=timezone.now())
        outcome = engine.advance(operation.pk)
        actions.append(outcome.action)
        operation.refresh_from_db()
        if operation.is_terminal:
            return actions
    raise AssertionError(f"not terminal after {limit} advances: {actions}")


def test_a_wait_step_returns_instead_of_sleeping_and_schedules_itself(access, settings, fast):
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 2, "interval": 30})
    outcome = engine.advance(op.pk)  # work, handed off to wait #1: comes back at once with a countdown
    assert outcome.action == "wait" and outcome.steps == 2
    assert 27 <= outcome.next_in <= 33
    op.refresh_from_db()
    assert op.wake_at > timezone.now() + timedelta(seconds=25)
    # A message arriving before the wake-up (e.g. a duplicate) does nothing.
    assert engine.advance(op.pk).action == "skipped"
    assert op.phases.get(name="wait").state == {"polls": 1}


def test_phases_run_in_order_and_record_state(access, fast):
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 2, "interval": 0})
    actions = drive(op)
    # A finished phase hands off to the next in the same advance: work+wait, wait, wait+finish.
    assert actions == ["wait", "wait", "succeeded"]
    assert op.advance_count == 5  # step runs
    op.refresh_from_db()
    assert op.status == OperationStatus.SUCCEEDED
    assert [p.status for p in op.phases.all()] == [PhaseStatus.SUCCEEDED] * 3
    assert op.phases.get(name="work").state["resource_id"].startswith("res-")
    assert op.finished_at is not None and op.started_at is not None


def test_transient_errors_are_retried_with_backoff(access, settings):
    settings.OPERATIONS = {**settings.OPERATIONS, "BACKOFF_BASE_SECONDS": 4.0, "DEFAULT_POLL_SECONDS": 0.0}
    op, _ = start_operation(access=access, kind="engine.selftest", params={"transient": 2, "waits": 0})
    first = engine.advance(op.pk)
    assert first.action == "wait" and 2.0 <= first.next_in <= 4.0
    phase = op.phases.get(name="work")
    assert "Temporary error" in phase.message and phase.status == PhaseStatus.RUNNING
    Operation.objects.filter(pk=op.pk).update(wake_at=timezone.now())
    second = engine.advance(op.pk)
    assert second.action == "wait" and 4.0 <= second.next_in <= 8.0  # backoff grows
    assert drive(op)[-1] == "succeeded"


def test_transient_errors_beyond_the_limit_fail_the_phase(access, settings):
    settings.OPERATIONS = {**settings.OPERATIONS, "BACKOFF_BASE_SECONDS": 0.0, "TRANSIENT_RETRIES": 2}
    op, _ = start_operation(access=access, kind="engine.selftest", params={"transient": 10})
    drive(op)
    assert op.status == OperationStatus.FAILED
    assert "still failing after 3 tries" in op.error_message
    assert op.error_hint


def test_retry_resumes_at_the_failed_phase_without_redoing_finished_ones(access, fast):
    op, _ = start_operation(
        access=access, kind="engine.selftest", params={"waits": 1, "interval": 0, "fail_in": "finish"}
    )
    drive(op)
    assert op.status == OperationStatus.FAILED
    assert op.error_code == "SimulatedFailure" and op.error_hint == "Set fixed=true and retry."
    work_before = op.phases.get(name="work")
    Operation.objects.filter(pk=op.pk).update(params={**op.params, "fixed": True})
    op = retry_operation(access=access, operation=op)
    assert op.status == OperationStatus.RUNNING and op.error_message == ""
    actions = drive(op)
    assert actions == ["succeeded"] or actions == ["done", "succeeded"]
    work_after = op.phases.get(name="work")
    assert work_after.state == work_before.state and work_after.state["creates"] == 1
    assert work_after.attempts == work_before.attempts
    assert op.phases.get(name="finish").attempts == 2


def test_cancel_stops_at_the_next_step_and_retry_continues(access, fast):
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 5, "interval": 0})
    engine.advance(op.pk)
    cancel_operation(access=access, operation=op)
    cancel_operation(access=access, operation=op)  # repeatable
    assert drive(op) == ["cancelled"]
    assert op.phases.get(name="wait").status == PhaseStatus.CANCELLED
    retry_operation(access=access, operation=op)
    assert drive(op)[-1] == "succeeded"


def test_a_held_lease_keeps_other_workers_out(access, fast):
    op, _ = start_operation(access=access, kind="engine.selftest")
    Operation.objects.filter(pk=op.pk).update(lease_until=timezone.now() + timedelta(seconds=60))
    assert engine.advance(op.pk).action == "skipped"
    op.refresh_from_db()
    assert op.status == OperationStatus.PENDING


def test_the_sweep_requeues_operations_whose_worker_died(access, settings, fast):
    op, _ = start_operation(access=access, kind="engine.selftest")
    # Lease expired (its worker died), wake-up passed: stalled.
    Operation.objects.filter(pk=op.pk).update(
        lease_until=timezone.now() - timedelta(seconds=1), wake_at=timezone.now() - timedelta(seconds=5)
    )
    fresh, _ = start_operation(access=access, kind="engine.selftest")
    Operation.objects.filter(pk=fresh.pk).update(lease_until=timezone.now() + timedelta(seconds=60))
    assert engine.sweep() == 1


def test_an_unexpected_exception_fails_the_phase_with_a_readable_error(access, fast):
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": "not-a-number"})
    drive(op)
    assert op.status == OperationStatus.FAILED
    assert op.error_code == "internal_error"
    assert "ValueError" in op.error_message
    assert op.phases.get(name="wait").status == PhaseStatus.FAILED


def _taken_over_then_record(ctx):
    # Another worker takes the operation over while this step runs (its lease expired), then the
    # step tries to record what it created.
    Operation.objects.filter(pk=ctx.operation.pk).update(lease_token=uuid.uuid4())
    ctx.record(resource_id="res-late")
    return Done("created")


register(OperationKind(name="test.taken_over", steps=(Step("work", _taken_over_then_record),)))


def test_a_worker_that_lost_its_lease_writes_nothing(access):
    op, _ = start_operation(access=access, kind="test.taken_over")
    assert engine.advance(op.pk).action == "skipped"
    op.refresh_from_db()
    phase = op.phases.get()
    # Not even the phase's start: it is saved with the step's result, which was never written.
    assert phase.state == {} and phase.status == PhaseStatus.PENDING
    assert op.lease_token is not None  # still the other worker's


def test_a_polling_advance_costs_at_most_three_statements(access, fast, django_assert_max_num_queries):
    op, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 5, "interval": 0})
    engine.advance(op.pk)  # work, then the first poll
    Operation.objects.filter(pk=op.pk).update(wake_at=timezone.now())
    with django_assert_max_num_queries(3):
        assert engine.advance(op.pk).action == "wait"


SEEN_FROM_OUTSIDE: list[str] = []


def _done_step(ctx) -> Done:
    return Done("done")


def _look_from_another_connection(operation: Operation) -> None:
    """What a reader elsewhere (the REST API, a test's wait) sees while the kind records the outcome."""

    def look() -> None:
        try:
            SEEN_FROM_OUTSIDE.append(Operation.objects.get(pk=operation.pk).status)
        finally:
            connections.close_all()  # this thread's own connection

    reader = threading.Thread(target=look)
    reader.start()
    reader.join()
    Team.objects.filter(pk=operation.team_id).update(name="recorded")


def _record_then_fail(operation: Operation) -> None:
    Team.objects.filter(pk=operation.team_id).update(name="half-recorded")
    raise RuntimeError("the hook broke")


register(
    OperationKind(name="test.finish_seen", on_finish=_look_from_another_connection, steps=(Step("w", _done_step),))
)
register(OperationKind(name="test.finish_breaks", on_finish=_record_then_fail, steps=(Step("w", _done_step),)))


@pytest.mark.django_db(transaction=True)
def test_an_outcome_is_seen_only_together_with_what_its_kind_records_of_it(access):
    """A reader never sees a succeeded operation whose record is not updated yet (a deleted group's row
    still there): the outcome and the kind's hook commit in one transaction."""
    SEEN_FROM_OUTSIDE.clear()
    op, _ = start_operation(access=access, kind="test.finish_seen")
    assert engine.advance(op.pk).action == "succeeded"
    assert SEEN_FROM_OUTSIDE == [OperationStatus.RUNNING]  # not yet "succeeded" while the hook ran
    op.refresh_from_db()
    assert op.status == OperationStatus.SUCCEEDED
    assert Team.objects.get(pk=op.team_id).name == "recorded"


def test_a_failing_hook_undoes_only_its_own_writes(access):
    name = access.team.name
    op, _ = start_operation(access=access, kind="test.finish_breaks")
    assert engine.advance(op.pk).action == "succeeded"
    op.refresh_from_db()
    assert op.status == OperationStatus.SUCCEEDED and op.finished_at is not None
    assert Team.objects.get(pk=op.team_id).name == name
