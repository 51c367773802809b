"""Portal fixtures: logged-in test clients for the standing users, and operations to look at."""

from __future__ import annotations

import pytest
from django.utils import timezone

from instantstart.operations.models import Operation, OperationStatus, Phase, PhaseStatus
from instantstart.tenancy.services import system_access


def make_operation(team, *, status=OperationStatus.RUNNING, phase_statuses=None, **fields) -> Operation:
    """An `engine.selftest` operation in a given state, written directly (no worker runs it)."""
    phase_statuses = (
        phase_statuses
        or {
            OperationStatus.PENDING: ["pending", "pending", "pending"],
            OperationStatus.RUNNING: ["succeeded", "running", "pending"],
            OperationStatus.SUCCEEDED: ["succeeded", "succeeded", "succeeded"],
            OperationStatus.FAILED: ["succeeded", "failed", "pending"],
            OperationStatus.CANCELLED: ["succeeded", "cancelled", "pending"],
        }[status]
    )
    now = timezone.now()
    terminal = status in (OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED)
    operation = Operation.objects.create(
        team=team,
        kind="engine.selftest",
        via="api",
        status=status,
        started_at=None if status == OperationStatus.PENDING else now,
        finished_at=now if terminal else None,
        **fields,
    )
    for index, (name, phase_status) in enumerate(zip(["work", "wait", "finish"], phase_statuses, strict=True)):
        Phase.objects.create(
            operation=operation,
            index=index,
            name=name,
            status=phase_status,
            attempts=0 if phase_status == PhaseStatus.PENDING else 1,
            message=f"{name} message" if phase_status != PhaseStatus.PENDING else "",
            started_at=None if phase_status == PhaseStatus.PENDING else now,
        )
    return operation


@pytest.fixture
def running_op(team) -> Operation:
    return make_operation(team, status=OperationStatus.RUNNING)


@pytest.fixture
def failed_op(team) -> Operation:
    return make_operation(
        team,
        status=OperationStatus.FAILED,
        error_code="SimulatedFailure",
        error_message="simulated failure in wait",
        error_hint="Set fixed=true and retry.",
    )


@pytest.fixture
def other_team_op(other_team) -> Operation:
    return make_operation(other_team, status=OperationStatus.FAILED)


__all__ = ["make_operation", "system_access"]
