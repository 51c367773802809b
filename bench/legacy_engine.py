"""The engine as it was before issue 16, kept as bench/engine.py's `legacy` baseline (not product code).

One advance per message, through the ORM: the lease taken by a conditional UPDATE, the operation
and its current phase loaded, the phase marked running, the result saved in a transaction that
re-checks the lease with SELECT … FOR UPDATE, the lease released by one more UPDATE; "is there a
next phase" asked of the database; every finished phase and every wait goes back to the queue.
bench/legacy_worker.py runs it in a worker that also opens a database connection per task, as
Celery's Django fixup did, and `starts_as_before` sends new operations' first messages at the same
priority as the rest. Compare it with instantstart/operations/engine.py.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

# What did not change is shared with the product's engine: running a step and classifying what it
# raised, backoff and jitter, the Outcome.
from instantstart.operations.context import StepContext
from instantstart.operations.engine import Outcome, _jitter, _run_step, _Transient, backoff_seconds, given_up
from instantstart.operations.models import ACTIVE, Operation, OperationStatus, Phase, PhaseStatus
from instantstart.operations.queue import enqueue_advance
from instantstart.operations.registry import get_kind
from instantstart.operations.results import Done, Fail, Wait

log = logging.getLogger(__name__)

# How the benches start a worker that runs this engine: a connection per task, as Celery's Django
# fixup opened one before issue 16.
WORKER_APP = "bench.legacy_worker"
WORKER_ENV = {"WORKER_DB_CONN_MAX_AGE": "0"}

# A message that arrives this much before the operation's wake-up time is a duplicate (e.g. the
# sweep's) and is dropped; the scheduled one will come.
_EARLY_TOLERANCE = timedelta(milliseconds=250)


def _conf(name: str):
    return settings.OPERATIONS[name]


def advance(operation_id: str | uuid.UUID) -> Outcome:
    """Run the current step of one operation once, if it is due and nobody else holds it."""
    now = timezone.now()
    token = uuid.uuid4()
    taken = (
        Operation.objects.filter(pk=operation_id, status__in=ACTIVE)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .filter(Q(wake_at__isnull=True) | Q(wake_at__lte=now + _EARLY_TOLERANCE))
        .update(
            lease_token=token,
            lease_until=now + timedelta(seconds=_conf("LEASE_SECONDS")),
            advance_count=F("advance_count") + 1,
        )
    )
    if not taken:
        return Outcome("skipped")
    outcome = Outcome("skipped")
    try:
        operation = Operation.objects.select_related("team", "target_type").get(pk=operation_id)
        outcome = _advance_leased(operation, token)
    finally:
        # Released before the next message is sent, so that message finds the operation free.
        Operation.objects.filter(pk=operation_id, lease_token=token).update(lease_token=None, lease_until=None)
    if outcome.next_in is not None:
        enqueue_advance(operation_id, countdown=outcome.next_in)
    return outcome


def _advance_leased(operation: Operation, token: uuid.UUID) -> Outcome:
    now = timezone.now()
    if operation.cancel_requested:
        _finish(operation, token, OperationStatus.CANCELLED, phase_status=PhaseStatus.CANCELLED)
        return Outcome("cancelled")
    phase = operation.current_phase()
    if phase is None:
        _finish(operation, token, OperationStatus.SUCCEEDED)
        return Outcome("succeeded")
    kind = get_kind(operation.kind)
    step = kind.step(phase.name)

    if operation.status == OperationStatus.PENDING:
        operation.status = OperationStatus.RUNNING
        operation.started_at = operation.started_at or now
        Operation.objects.filter(pk=operation.pk, lease_token=token).update(
            status=OperationStatus.RUNNING, started_at=operation.started_at
        )
    if phase.status != PhaseStatus.RUNNING:
        phase.status = PhaseStatus.RUNNING
        phase.started_at = phase.started_at or now
        phase.attempts += 1
        phase.finished_at = None
        Phase.objects.filter(pk=phase.pk).update(
            status=phase.status, started_at=phase.started_at, attempts=phase.attempts, finished_at=None
        )

    result = _run_step(step, StepContext(operation=operation, phase=phase))

    if isinstance(result, _Transient):
        phase.transient_failures += 1
        result = given_up(result, phase.transient_failures) or result
        if isinstance(result, _Transient):
            delay = backoff_seconds(phase.transient_failures)
            phase.attempts += 1
            return _save_wait(
                operation, phase, token, delay, f"Temporary error ({result.code}): {result.message}. Retrying."
            )

    if isinstance(result, Wait):
        seconds = result.seconds if result.seconds is not None else step.poll_seconds
        if seconds is None:
            seconds = _conf("DEFAULT_POLL_SECONDS")
        phase.transient_failures = 0
        return _save_wait(operation, phase, token, _jitter(seconds * _conf("POLL_SCALE")), result.message)

    if isinstance(result, Done):
        with transaction.atomic():
            if not _still_leased(operation, token):
                return Outcome("skipped")
            Phase.objects.filter(pk=phase.pk).update(
                status=PhaseStatus.SUCCEEDED,
                message=result.message,
                finished_at=timezone.now(),
                transient_failures=0,
            )
            has_next = operation.phases.filter(index__gt=phase.index).exists()
            if has_next:
                Operation.objects.filter(pk=operation.pk).update(wake_at=timezone.now())
        if not has_next:
            _finish(operation, token, OperationStatus.SUCCEEDED)
            return Outcome("succeeded")
        return Outcome("done", next_in=0)

    assert isinstance(result, Fail)
    with transaction.atomic():
        if not _still_leased(operation, token):
            return Outcome("skipped")
        Phase.objects.filter(pk=phase.pk).update(
            status=PhaseStatus.FAILED,
            message=result.message,
            finished_at=timezone.now(),
            transient_failures=phase.transient_failures,
        )
        operation.error_code, operation.error_message, operation.error_hint = (
            result.code,
            result.message,
            result.hint,
        )
        Operation.objects.filter(pk=operation.pk).update(
            error_code=result.code, error_message=result.message, error_hint=result.hint
        )
    _finish(operation, token, OperationStatus.FAILED)
    return Outcome("failed")


def _save_wait(operation: Operation, phase: Phase, token: uuid.UUID, delay: float, message: str) -> Outcome:
    wake = timezone.now() + timedelta(seconds=delay)
    with transaction.atomic():
        if not _still_leased(operation, token):
            return Outcome("skipped")
        Operation.objects.filter(pk=operation.pk).update(wake_at=wake)
        Phase.objects.filter(pk=phase.pk).update(
            message=message, attempts=phase.attempts, transient_failures=phase.transient_failures
        )
    return Outcome("wait", next_in=delay)


def _still_leased(operation: Operation, token: uuid.UUID) -> bool:
    # Locks the row for the rest of the transaction; a lost lease means another worker took over.
    return Operation.objects.select_for_update().filter(pk=operation.pk, lease_token=token).exists()


def _finish(operation: Operation, token: uuid.UUID, status: str, *, phase_status: str | None = None) -> None:
    now = timezone.now()
    with transaction.atomic():
        if not _still_leased(operation, token):
            return
        if phase_status is not None:
            current = operation.current_phase()
            if current is not None:
                Phase.objects.filter(pk=current.pk).update(status=phase_status, finished_at=now)
        Operation.objects.filter(pk=operation.pk).update(
            status=status, finished_at=now, wake_at=None, cancel_requested=False
        )
    operation.status = status
    operation.finished_at = now
    kind = get_kind(operation.kind)
    if kind.on_finish is not None:
        try:
            kind.on_finish(operation)
        except Exception:  # noqa: BLE001 - the operation's own outcome is already saved
            log.exception("on_finish of %s failed", operation.pk)


@contextlib.contextmanager
def starts_as_before():
    """New operations' first messages at the same priority as every other, as before issue 16.

    For the process that starts the operations (bench/engine.py's and bench/clusters.py's driver).
    """
    from instantstart.operations import services

    saved = services.START_PRIORITY
    services.START_PRIORITY = None
    try:
        yield
    finally:
        services.START_PRIORITY = saved
