"""The operation engine: advance one operation by one step, under a lease.

`advance` is what the Celery task runs. It never sleeps: a step that must wait for the cloud
returns Wait and the engine re-enqueues itself with a countdown, so one worker can drive
thousands of operations. A lease taken with a conditional UPDATE makes sure two workers never
run a step of the same operation at once; an expired lease (the worker died) lets the sweep
hand the operation to another worker, which resumes from what the phase recorded.
"""

from __future__ import annotations

import logging
import random
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from instantstart.cloud.errors import classify

from .context import StepContext
from .models import ACTIVE, Operation, OperationStatus, Phase, PhaseStatus
from .queue import enqueue_advance
from .registry import get_kind
from .results import Done, Fail, PermanentError, StepResult, TransientError, Wait

log = logging.getLogger(__name__)

# A message that arrives this much before the operation's wake-up time is a duplicate (e.g. the
# sweep's) and is dropped; the scheduled one will come.
_EARLY_TOLERANCE = timedelta(milliseconds=250)


def _conf(name: str):
    return settings.OPERATIONS[name]


@dataclass(frozen=True)
class Outcome:
    """What one advance did (returned for tests and the benchmark)."""

    action: str  # skipped | done | wait | failed | succeeded | cancelled
    next_in: float | None = None


def backoff_seconds(failures: int) -> float:
    """Exponential backoff with jitter for the n-th consecutive transient failure."""
    base = _conf("BACKOFF_BASE_SECONDS") * (2 ** max(failures - 1, 0))
    capped = min(base, _conf("BACKOFF_MAX_SECONDS"))
    return capped * random.uniform(0.5, 1.0)


def _jitter(seconds: float) -> float:
    # Spreads wake-ups of operations that started together, so polls don't arrive in bursts.
    return max(0.0, seconds * random.uniform(0.9, 1.1))


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
        if phase.transient_failures > _conf("TRANSIENT_RETRIES"):
            result = Fail(
                f"{result.message} (still failing after {phase.transient_failures} tries)",
                hint="The cloud kept answering with temporary errors. Retry the operation later.",
                code=result.code,
            )
        else:
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


@dataclass(frozen=True)
class _Transient:
    code: str
    message: str


def _run_step(step, ctx: StepContext) -> StepResult | _Transient:
    try:
        result = step.run(ctx)
    except TransientError as exc:
        return _Transient("TransientError", str(exc))
    except PermanentError as exc:
        return Fail(exc.message, hint=exc.hint, code=exc.code)
    except Exception as exc:  # noqa: BLE001 - every failure must end up on the phase, not in a log only
        classified = classify(exc)
        if classified is None:
            log.exception("step %s of operation %s raised", step.name, ctx.operation.pk)
            return Fail(
                f"Internal error in step {step.name}: {type(exc).__name__}: {exc}",
                hint="This is a bug in InstantStart. Retrying may help; please report it.",
                code="internal_error",
            )
        if classified.transient:
            return _Transient(classified.code, classified.message)
        return Fail(classified.message, hint=_hint_for(classified.code), code=classified.code)
    if not isinstance(result, (Done, Wait, Fail)):
        return Fail(
            f"Step {step.name} returned {result!r}",
            hint="This is a bug in InstantStart; please report it.",
            code="internal_error",
        )
    return result


def _hint_for(code: str) -> str:
    if code in {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"}:
        return "The team's AWS role lacks a permission: check the role's policies, then retry."
    return "Fix what the message says, then retry the operation; finished phases are not redone."


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


def sweep(now=None) -> int:
    """Re-enqueue active operations that are due and free: their message was lost or their worker died."""
    now = now or timezone.now()
    grace = timedelta(seconds=_conf("SWEEP_GRACE_SECONDS"))
    stalled = (
        Operation.objects.filter(status__in=ACTIVE)
        .filter(Q(wake_at__isnull=True) | Q(wake_at__lte=now - grace))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .values_list("pk", flat=True)[:1000]
    )
    count = 0
    for pk in stalled:
        enqueue_advance(pk, countdown=0)
        count += 1
    return count
