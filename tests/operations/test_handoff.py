"""A finished phase runs the next one in the same advance: no message, no queue round trip."""

from __future__ import annotations

from instantstart.operations import engine
from instantstart.operations.models import OperationStatus, PhaseStatus
from instantstart.operations.registry import OperationKind, Step, register
from instantstart.operations.results import Wait
from instantstart.operations.services import cancel_operation, start_operation
from instantstart.tenancy.services import system_access


def test_phases_that_finish_run_one_after_another_in_one_advance(started, queue):
    op = started(waits=0)
    outcome = engine.advance(op.pk)
    assert outcome.action == "succeeded" and outcome.steps == 3
    op.refresh_from_db()
    assert op.status == OperationStatus.SUCCEEDED
    assert [p.status for p in op.phases.all()] == [PhaseStatus.SUCCEEDED] * 3
    assert op.advance_count == 3
    assert len(queue) == 1  # only the message that started it: no message between phases


def test_without_a_budget_each_phase_goes_through_the_queue(started, queue, settings):
    settings.OPERATIONS = {**settings.OPERATIONS, "HANDOFF_SECONDS": 0.0}
    op = started(waits=0)
    outcome = engine.advance(op.pk)
    assert outcome.action == "done" and outcome.next_in == 0 and outcome.steps == 1
    assert len(queue) == 2
    op.refresh_from_db()
    assert op.enqueued_at is not None  # the sweep knows this message is out


def test_a_wait_after_a_hand_off_sends_one_message_with_its_countdown(started, queue):
    op = started(waits=1, interval=30)
    outcome = engine.advance(op.pk)
    assert outcome.action == "wait" and 27 <= outcome.next_in <= 33
    assert len(queue) == 2
    wait = op.phases.get(name="wait")
    assert wait.status == PhaseStatus.RUNNING and wait.attempts == 1 and wait.state == {"polls": 1}
    assert op.phases.get(name="work").status == PhaseStatus.SUCCEEDED


def _cancel_then_wait_long(ctx):
    # The user cancels while this step talks to the cloud; the step then asks to wait an hour.
    cancel_operation(access=system_access(ctx.operation.team), operation=ctx.operation)
    return Wait(3600, "waiting for the cloud")


register(OperationKind(name="test.cancel_during_step", steps=(Step("slow", _cancel_then_wait_long),)))


def test_a_cancel_requested_while_a_step_runs_is_not_delayed_by_the_wait_it_returns(access):
    op, _ = start_operation(access=access, kind="test.cancel_during_step")
    outcome = engine.advance(op.pk)
    assert outcome.action == "wait" and outcome.next_in == 0  # due now, not in an hour
    assert engine.advance(op.pk).action == "cancelled"
    op.refresh_from_db()
    assert op.status == OperationStatus.CANCELLED and op.wake_at is None and op.enqueued_at is None
    assert op.phases.get().status == PhaseStatus.CANCELLED
