"""The operation engine: advance one operation by one or more steps, under a lease.

`advance` is what the Celery task runs. It never sleeps: a step that must wait for the cloud
returns Wait, and the worker either keeps the operation and runs its next advance itself when due
(`advance_kept`, see holding.py) or re-enqueues it with a countdown, so one worker can drive
thousands of operations. A lease taken with a conditional UPDATE makes sure two workers never
run a step of the same operation at once; an expired lease (the worker died) lets the sweep
hand the operation to another worker, which resumes from what the phase recorded.

Its own statements on PostgreSQL (see lease.py): the claim, which also returns the operation and
its current phase (or, for a kept operation, one SELECT under the lease it kept), and one write
per step result that saves it, sets the wake-up and releases or keeps the lease. A phase's start,
and a finished phase's result when the next phase runs in the same advance (while within the
hand-off budget: no queue round trip between phases), are saved with the next step's result.
Waits longer than a broker may hold a message are not sent; the sweep sends them when due.
"""

from __future__ import annotations

import functools
import logging
import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from instantstart.cloud.errors import classify

from . import holding, lease
from .context import StepContext
from .heartbeat import forget_messages_of
from .lease import Sql
from .models import ACTIVE, Operation, OperationStatus, Phase, PhaseStatus, WorkerHeartbeat
from .queue import enqueue_advance
from .registry import OperationKind, Step, get_kind
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
    steps: int = 0  # step runs in this advance (more than one after a same-task hand-off)


def backoff_seconds(failures: int) -> float:
    """Exponential backoff with jitter for the n-th consecutive transient failure."""
    base = _conf("BACKOFF_BASE_SECONDS") * (2 ** max(failures - 1, 0))
    capped = min(base, _conf("BACKOFF_MAX_SECONDS"))
    return capped * random.uniform(0.5, 1.0)


def _jitter(seconds: float) -> float:
    # Spreads wake-ups of operations that started together, so polls don't arrive in bursts.
    return max(0.0, seconds * random.uniform(0.9, 1.1))


def advance(operation_id: str | uuid.UUID) -> Outcome:
    """Run the current step of one operation, if it is due and nobody else holds it.

    A finished phase hands off to the next one in the same call while within the hand-off budget.
    """
    token = uuid.uuid4()
    now = timezone.now()
    claimed = lease.claim(
        operation_id,
        token,
        now=now,
        until=now + timedelta(seconds=_conf("LEASE_SECONDS")),
        due_by=now + _EARLY_TOLERANCE,
    )
    if claimed is None:
        return Outcome("skipped")
    return _advance(*claimed, token, counted=True)


def advance_kept(operation_id: str | uuid.UUID, token: uuid.UUID) -> Outcome:
    """The next advance of an operation this worker kept leased while it waited (holding.py).

    No claim: the lease is already this worker's, so one SELECT reads the operation and the write
    that saves the step's result also counts the advance.
    """
    loaded = lease.load(operation_id, token)
    if loaded is None:  # taken over (the lease ran out), cancelled and finished, or gone
        return Outcome("skipped")
    return _advance(*loaded, token, counted=False)


def _advance(operation: Operation, phase: Phase | None, token: uuid.UUID, *, counted: bool) -> Outcome:
    run = _Run(operation, phase, token, counted=counted)
    try:
        return run.run()
    except BaseException:
        # Given back so the sweep's next message finds the operation free; the step may be redone.
        try:
            run.release()
        except Exception:  # noqa: BLE001 - the lease then expires on its own
            log.warning("could not release the lease of %s", operation.pk, exc_info=True)
        raise


class _Run:
    """One advance of one leased operation: its steps, until one waits, fails or the budget ends."""

    def __init__(self, operation: Operation, phase: Phase | None, token: uuid.UUID, *, counted: bool) -> None:
        self.operation, self.phase, self.token = operation, phase, token
        self.kind: OperationKind = get_kind(operation.kind)
        self.started = time.monotonic()
        self.steps = 0
        # Step runs not yet added to advance_count (a claim counts the first one itself).
        self.uncounted = 0 if counted else 1
        # Phase changes saved with the next write: a phase's start, and a finished phase's result
        # when the next phase runs in this advance (one write per step result, not two).
        self.deferred: dict[int, dict] = {}

    def _defer(self, phases: dict[int, dict]) -> None:
        for pk, values in phases.items():
            self.deferred[pk] = {**self.deferred.get(pk, {}), **values}

    def _write(self, operation: dict, phases: dict[int, dict] | None = None) -> lease.Written:
        """A write under the lease, with the deferred phase changes and the step runs it follows."""
        if self.uncounted:
            operation = {**operation, "advance_count": Sql(f"{_col('advance_count')} + {self.uncounted:d}")}
        self._defer(phases or {})
        written = lease.write(self.operation.pk, self.token, operation=operation, phases=self.deferred)
        if written.held:
            self.uncounted, self.deferred = 0, {}
        return written

    def release(self) -> None:
        """Give the lease back after an unexpected error, with what the finished phases recorded."""
        self._write(_released())

    def run(self) -> Outcome:
        while True:
            if self.operation.cancel_requested:
                return self._finish(OperationStatus.CANCELLED, phase_status=PhaseStatus.CANCELLED)
            if self.phase is None:
                return self._finish(OperationStatus.SUCCEEDED)
            step = self.kind.step(self.phase.name)
            if self.phase.status != PhaseStatus.RUNNING:
                self._start_phase()
            ctx = StepContext(operation=self.operation, phase=self.phase, lease_token=self.token)
            result = _run_step(step, ctx)
            self.steps += 1
            if result is None:  # the lease was lost while the step ran
                return Outcome("skipped", steps=self.steps)
            outcome = self._save(step, ctx, result)
            if outcome is not None:
                return outcome

    def _start_phase(self) -> None:
        """Mark the phase running; saved with the step's result (the claim or read just checked the lease)."""
        phase, now = self.phase, timezone.now()
        phase.status, phase.started_at = PhaseStatus.RUNNING, phase.started_at or now
        phase.attempts, phase.finished_at = phase.attempts + 1, None
        values = {"status": phase.status, "started_at": phase.started_at, "attempts": phase.attempts}
        self.deferred[phase.pk] = {**values, "finished_at": None}

    def _save(self, step: Step, ctx: StepContext, result: StepResult | _Transient) -> Outcome | None:
        """Save one step's result; None means: go on with the next phase in this task."""
        phase = self.phase
        if isinstance(result, _Transient):
            phase.transient_failures += 1
            result = given_up(result, phase.transient_failures) or result
            if isinstance(result, _Transient):
                phase.attempts += 1
                message = f"Temporary error ({result.code}): {result.message}. Retrying."
                return self._wait(ctx, backoff_seconds(phase.transient_failures), message)

        if isinstance(result, Wait):
            seconds = result.seconds if result.seconds is not None else step.poll_seconds
            if seconds is None:
                seconds = _conf("DEFAULT_POLL_SECONDS")
            phase.transient_failures = 0
            return self._wait(ctx, _jitter(seconds * _conf("POLL_SCALE")), result.message)

        if isinstance(result, Done):
            return self._done(ctx, result)

        assert isinstance(result, Fail)
        self.operation.error_code, self.operation.error_message = result.code, result.message
        self.operation.error_hint = result.hint
        return self._finish(
            OperationStatus.FAILED,
            phase_status=PhaseStatus.FAILED,
            phase_values={"message": result.message, "transient_failures": phase.transient_failures},
            ctx=ctx,
        )

    def _phase_result(self, ctx: StepContext, **values) -> dict[int, dict]:
        if ctx.pending_state:
            values["state"] = self.phase.state
        return {self.phase.pk: values}

    def _wait(self, ctx: StepContext, delay: float, message: str) -> Outcome:
        phase = self.phase
        result = self._phase_result(
            ctx, message=message, attempts=phase.attempts, transient_failures=phase.transient_failures
        )
        return self._park(delay, result, "wait")

    def _park(self, delay: float, phases: dict[int, dict], action: str) -> Outcome:
        """Save the phases and the next wake-up; keep the lease (holding.py) or send a message."""
        now = timezone.now()
        wake = now + timedelta(seconds=delay)
        holder = holding.current(advance_kept)
        keep = holder is not None and delay <= holding.hold_limit() and holder.has_room(self.operation.pk)
        cancelled = f"CASE WHEN {_col('cancel_requested')} THEN %s ELSE %s END"
        # A cancel that arrived while the step ran is applied now, not after the wait.
        values, send = {"wake_at": Sql(cancelled, (now, wake))}, False
        if keep:
            values.update(enqueued_at=None, lease_until=wake + timedelta(seconds=holding.lease_seconds()))
        else:
            # A countdown longer than the broker may hold a message is not sent: the sweep sends it
            # when it comes due (Redis would otherwise deliver it again after its visibility timeout).
            send = delay <= _conf("MAX_COUNTDOWN_SECONDS")
            values.update(enqueued_at=Sql(cancelled, (now, now if send else None)), **_released())
        written = self._write(values, phases=phases)
        if not written.held:
            return Outcome("skipped", steps=self.steps)
        if written.cancel_requested:
            delay, send = 0.0, True
        if keep:
            holder.keep(self.operation.pk, self.token, delay)
        elif send:
            enqueue_advance(self.operation.pk, countdown=delay, stamp=now)
        return Outcome(action, next_in=delay, steps=self.steps)

    def _done(self, ctx: StepContext, result: Done) -> Outcome | None:
        now = timezone.now()
        finished = self._phase_result(
            ctx, status=PhaseStatus.SUCCEEDED, message=result.message, finished_at=now, transient_failures=0
        )
        following = self.phase.index + 1
        if following >= len(self.kind.steps):  # the kind's step list says: no next phase
            return self._finish(OperationStatus.SUCCEEDED, done=finished)
        if time.monotonic() - self.started < _conf("HANDOFF_SECONDS"):
            # The next phase runs in this advance; this one's result is saved with that one's.
            seen = lease.phase_at(self.operation.pk, self.token, following)
            if seen is None:
                return Outcome("skipped", steps=self.steps)
            self.operation.cancel_requested, next_phase = seen
            self._defer(finished)
            if next_phase is None:  # fewer phases stored than the kind has steps
                return self._finish(OperationStatus.SUCCEEDED)
            self.uncounted += 1  # the next phase's step, run in this advance
            self.operation.wake_at, self.phase = now, next_phase
            return None
        # Out of budget: the next phase waits for its turn behind other operations' due advances.
        return self._park(0.0, finished, "done")

    def _finish(
        self,
        status: str,
        *,
        phase_status: str | None = None,
        phase_values: dict | None = None,
        ctx: StepContext | None = None,
        done: dict[int, dict] | None = None,
    ) -> Outcome:
        now = timezone.now()
        operation = self.operation
        values = {
            "status": status,
            "finished_at": now,
            "wake_at": None,
            "enqueued_at": None,
            "cancel_requested": False,
            **_released(),
        }
        if status == OperationStatus.FAILED:
            values.update(
                error_code=operation.error_code, error_message=operation.error_message, error_hint=operation.error_hint
            )
        phases = dict(done or {})
        if phase_status is not None and self.phase is not None:
            extra = phase_values or {}
            if ctx is not None and ctx.pending_state:
                extra = {**extra, "state": self.phase.state}
            phases[self.phase.pk] = {"status": phase_status, "finished_at": now, **extra}
        # The outcome and what the kind records of it (a deleted group's row gone, a job marked failed)
        # commit together: nobody reads a finished operation whose record is not yet updated, and a
        # worker killed in between leaves neither.
        with transaction.atomic():
            if not self._write(values, phases=phases).held:
                return Outcome("skipped", steps=self.steps)
            operation.status, operation.finished_at = status, now
            self._on_finish(operation)
        action = {OperationStatus.SUCCEEDED: "succeeded", OperationStatus.FAILED: "failed"}.get(status, "cancelled")
        return Outcome(action, steps=self.steps)

    def _on_finish(self, operation: Operation) -> None:
        if self.kind.on_finish is None:
            return
        try:
            with transaction.atomic():  # a savepoint: a failing hook undoes only its own writes
                self.kind.on_finish(operation)
        except Exception:  # noqa: BLE001 - the operation's own outcome is saved all the same
            log.exception("on_finish of %s failed", operation.pk)


def _released() -> dict:
    return {"lease_token": None, "lease_until": None}


@functools.cache
def _col(name: str) -> str:
    from django.db import connection

    return connection.ops.quote_name(name)  # the same on PostgreSQL and SQLite


@dataclass(frozen=True)
class _Transient:
    code: str
    message: str


def _run_step(step: Step, ctx: StepContext) -> StepResult | _Transient | None:
    """Run the step once and turn whatever it raised into a result; None if the lease was lost."""
    try:
        result = step.run(ctx)
    except lease.LeaseLost:
        log.warning("operation %s was taken over by another worker during step %s", ctx.operation.pk, step.name)
        return None
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


def given_up(transient: _Transient, failures: int) -> Fail | None:
    """The failure a phase ends with once temporary errors went on past OPERATION_TRANSIENT_RETRIES."""
    if failures <= _conf("TRANSIENT_RETRIES"):
        return None
    return Fail(
        f"{transient.message} (still failing after {failures} tries)",
        hint="The cloud kept answering with temporary errors. Retry the operation later.",
        code=transient.code,
    )


def _hint_for(code: str) -> str:
    if code in {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"}:
        return "The team's AWS role lacks a permission: check the role's policies, then retry."
    return "Fix what the message says, then retry the operation; finished phases are not redone."


# --- the sweep ------------------------------------------------------------------------------


def sweep(now: datetime | None = None) -> int:
    """Send the messages that are missing; returns how many were sent.

    An active operation whose lease is free needs a message when its wake-up is near and none is
    outstanding (``enqueued_at`` is null): its wait was longer than a broker holds a message, its
    send failed, or its worker died mid-step (the claim had taken the message). A message counts
    as outstanding while it is queued, however long the backlog: the sweep adds no duplicate for
    it. It counts as lost when the worker that may have held it stopped beating (its stamps are
    cleared), or, as a last resort, when it is older than OPERATION_MESSAGE_LOST_AFTER.
    """
    now = now or timezone.now()
    _forget_messages_of_dead_workers(now)
    horizon = now + timedelta(seconds=min(2 * _conf("SWEEP_INTERVAL_SECONDS"), _conf("MAX_COUNTDOWN_SECONDS")))
    lost_before = now - timedelta(seconds=_conf("MESSAGE_LOST_AFTER_SECONDS"))
    due = (
        Operation.objects.filter(status__in=ACTIVE)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .filter(Q(wake_at__isnull=True) | Q(wake_at__lte=horizon))
        # An expired lease means the worker that took the message died mid-step: send one again.
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=lost_before) | Q(lease_until__isnull=False))
    )
    with transaction.atomic():
        # SKIP LOCKED on PostgreSQL: two sweeps never send the same message; SQLite ignores it
        # and serializes the transaction instead.
        picked = list(due.select_for_update(skip_locked=True).order_by("wake_at").values_list("pk", "wake_at")[:1000])
        if picked:
            Operation.objects.filter(pk__in=[pk for pk, _ in picked]).update(enqueued_at=now)
    for pk, wake_at in picked:
        countdown = max(0.0, (wake_at - now).total_seconds()) if wake_at else 0.0
        enqueue_advance(pk, countdown=countdown, stamp=now)
    return len(picked)


def _forget_messages_of_dead_workers(now: datetime) -> None:
    """A worker that stopped beating took the messages it held with it (Redis gives them back only
    after its visibility timeout): clear the stamps of every message sent before it died, so the
    sweep sends those again now. Messages that were still queued elsewhere become one duplicate
    each, which the lease drops."""
    stale = now - timedelta(seconds=_conf("WORKER_STALE_SECONDS"))
    for hostname, last_seen in WorkerHeartbeat.objects.filter(last_seen__lt=stale).values_list("hostname", "last_seen"):
        forget_messages_of(hostname, last_seen)
