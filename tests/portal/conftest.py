"""Portal fixtures: operations to look at (the logged-in clients are in tests/conftest.py)."""

from __future__ import annotations

import pytest

from instantstart.operations.models import Operation, OperationStatus
from tests.factories import OperationFactory


@pytest.fixture
def running_op(team) -> Operation:
    return OperationFactory(team=team, status=OperationStatus.RUNNING)


@pytest.fixture
def failed_op(team) -> Operation:
    return OperationFactory(
        team=team,
        status=OperationStatus.FAILED,
        error_code="SimulatedFailure",
        error_message="simulated failure in wait",
        error_hint="Set fixed=true and retry.",
    )


@pytest.fixture
def other_team_op(other_team) -> Operation:
    return OperationFactory(team=other_team, status=OperationStatus.FAILED)
