"""Every write to operations: start, retry, cancel. Views, viewsets, admin and MCP call these."""

from __future__ import annotations

from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction
from django.utils import timezone

from instantstart.errors import StateConflict
from instantstart.tenancy.access import Access

from .audit import record_audit
from .models import Operation, OperationStatus, Phase, PhaseStatus
from .queue import START_PRIORITY, enqueue_advance
from .registry import get_kind


class OperationStateError(StateConflict):
    """The operation is not in a state that allows the requested change (409 on every face)."""


def start_operation(
    *,
    access: Access,
    kind: str,
    target: Any = None,
    params: dict | None = None,
    idempotency_key: str = "",
    audit_action: str | None = None,
    audit_summary: dict | None = None,
) -> tuple[Operation, bool]:
    """Create an operation with its phases and its audit event, and enqueue it on commit.

    Returns ``(operation, created)``. With an idempotency key already used in this team, returns
    the existing operation and starts nothing.
    """
    definition = get_kind(kind)
    if idempotency_key:
        existing = Operation.objects.visible_to(access).filter(idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing, False
    now = timezone.now()
    try:
        with transaction.atomic():
            operation = Operation.objects.create(
                team=access.team,
                kind=kind,
                target_type=ContentType.objects.get_for_model(target) if target is not None else None,
                target_id=str(target.pk) if target is not None else "",
                target_repr=str(target)[:200] if target is not None else "",
                params=params or {},
                requested_by=access.user if getattr(access.user, "pk", None) else None,
                via=access.via,
                idempotency_key=idempotency_key,
                wake_at=now,
            )
            Phase.objects.bulk_create(
                Phase(operation=operation, index=index, name=step.name) for index, step in enumerate(definition.steps)
            )
            record_audit(
                access=access,
                action=audit_action or kind,
                target=target,
                summary=audit_summary if audit_summary is not None else params,
                operation=operation,
            )
            transaction.on_commit(lambda: enqueue_advance(operation.pk, priority=START_PRIORITY, stamp_if_untaken=0))
    except IntegrityError:
        if not idempotency_key:
            raise
        # A concurrent request with the same key won the race.
        return Operation.objects.visible_to(access).get(idempotency_key=idempotency_key), False
    return operation, True


def retry_operation(*, access: Access, operation: Operation) -> Operation:
    """Resume a failed or cancelled operation at the phase that stopped; finished phases stay done."""
    now = timezone.now()
    with transaction.atomic():
        locked = Operation.objects.select_for_update().get(pk=operation.pk)
        if not locked.can_retry:
            raise OperationStateError(
                f"Only failed or cancelled operations can be retried; this one is {locked.status}."
            )
        locked.phases.filter(status__in=[PhaseStatus.FAILED, PhaseStatus.CANCELLED]).update(
            status=PhaseStatus.PENDING, message="", finished_at=None, transient_failures=0
        )
        Operation.objects.filter(pk=locked.pk).update(
            status=OperationStatus.PENDING if locked.started_at is None else OperationStatus.RUNNING,
            error_code="",
            error_message="",
            error_hint="",
            cancel_requested=False,
            finished_at=None,
            wake_at=now,
            enqueued_at=None,
        )
        record_audit(access=access, action="operation.retry", target=locked, operation=locked)
        on_retry = get_kind(locked.kind).on_retry
        if on_retry is not None:
            on_retry(locked)
        count = locked.advance_count
        transaction.on_commit(lambda: enqueue_advance(locked.pk, priority=START_PRIORITY, stamp_if_untaken=count))
    operation.refresh_from_db()
    return operation


def cancel_operation(*, access: Access, operation: Operation) -> Operation:
    """Ask an active operation to stop. Repeatable; a terminal operation is left as it is.

    Cloud resources already created stay (and stay recorded on the phases); a delete operation
    removes them.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = Operation.objects.select_for_update().get(pk=operation.pk)
        if locked.is_terminal:
            if locked.status == OperationStatus.CANCELLED:
                operation.refresh_from_db()
                return operation
            raise OperationStateError(f"The operation already ended: {locked.status}.")
        if not locked.cancel_requested:
            record_audit(access=access, action="operation.cancel", target=locked, operation=locked)
        # Due now, so a long wait does not delay it; the worker that holds (or next takes) the
        # lease applies the cancellation.
        Operation.objects.filter(pk=locked.pk).update(cancel_requested=True, wake_at=now, enqueued_at=None)
        count = locked.advance_count
        transaction.on_commit(lambda: enqueue_advance(locked.pk, stamp_if_untaken=count))
    operation.refresh_from_db()
    return operation
