"""The sweep sends only the messages that are missing: none for a queued one, however late."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from instantstart.operations import engine
from instantstart.operations.models import Operation, WorkerHeartbeat


def test_an_operation_whose_message_waits_in_a_backlog_gets_no_second_one(started, queue):
    op = started()
    # Ten minutes overdue, as behind a long backlog: its message is still in the queue.
    Operation.objects.filter(pk=op.pk).update(wake_at=timezone.now() - timedelta(minutes=10))
    assert engine.sweep() == 0
    assert engine.sweep(now=timezone.now() + timedelta(minutes=30)) == 0
    assert len(queue) == 1


def test_a_wait_longer_than_the_broker_may_hold_a_message_is_sent_by_the_sweep_when_due(started, queue, settings):
    op = started(waits=1, interval=2 * 3600)
    outcome = engine.advance(op.pk)
    assert outcome.action == "wait" and outcome.next_in > settings.OPERATIONS["MAX_COUNTDOWN_SECONDS"]
    assert len(queue) == 1  # no countdown message for two hours
    op.refresh_from_db()
    assert op.enqueued_at is None
    assert engine.sweep() == 0  # not due for a long while
    almost = op.wake_at - timedelta(seconds=5)
    assert engine.sweep(now=almost) == 1
    assert len(queue) == 2
    assert engine.sweep(now=almost) == 0  # sent once
    assert engine.sweep(now=op.wake_at + timedelta(minutes=5)) == 0
    assert len(queue) == 2


def test_messages_a_dead_worker_may_have_held_are_sent_again(started, queue, settings):
    op = started()
    enqueued = Operation.objects.values_list("enqueued_at", flat=True).get(pk=op.pk)
    stale = timedelta(seconds=settings.OPERATIONS["WORKER_STALE_SECONDS"] + 1)
    later = enqueued + stale + timedelta(seconds=2)
    WorkerHeartbeat.objects.create(hostname="alive@host", last_seen=later)
    assert engine.sweep(now=later) == 0
    # A worker that beat after the message was sent, then fell silent: it may have taken it.
    WorkerHeartbeat.objects.create(hostname="dead@host", last_seen=enqueued + timedelta(seconds=1))
    assert engine.sweep(now=later) == 1
    assert len(queue) == 2
    assert list(WorkerHeartbeat.objects.values_list("hostname", flat=True)) == ["alive@host"]


def test_an_operation_with_no_message_out_gets_one_at_once(started, queue):
    op = started()
    # What enqueue_advance leaves when the broker refused the message.
    Operation.objects.filter(pk=op.pk).update(enqueued_at=None)
    assert engine.sweep() == 1
    assert len(queue) == 2
    assert engine.sweep() == 0
