"""MCP test helpers: an in-process MCP client per token, operations in chosen states, REST twins."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from instantstart.operations.models import Operation, OperationStatus, PhaseStatus
from instantstart.operations.services import start_operation
from instantstart.tenancy.services import system_access
from tests.mcp_client import MCP, body  # noqa: F401  (re-exported for the tests here)


def make_operation(team, user, status: str = OperationStatus.FAILED) -> Operation:
    """An engine.selftest operation of ``team`` put directly into ``status``."""
    operation, _ = start_operation(access=system_access(team, user), kind="engine.selftest", params={"waits": 0})
    now = timezone.now()
    fields: dict[str, Any] = {"status": status}
    if status != OperationStatus.PENDING:
        fields["started_at"] = now
    if status in (OperationStatus.FAILED, OperationStatus.SUCCEEDED, OperationStatus.CANCELLED):
        fields["finished_at"] = now
    if status == OperationStatus.FAILED:
        fields.update(error_code="SimulatedFailure", error_message="simulated failure in work", error_hint="Retry.")
        operation.phases.filter(index=0).update(status=PhaseStatus.FAILED, message="simulated failure in work")
    Operation.objects.filter(pk=operation.pk).update(**fields)
    operation.refresh_from_db()
    return operation
