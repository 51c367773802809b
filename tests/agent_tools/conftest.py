"""MCP test fixtures: operations of the team in chosen states (the MCP clients are in tests/conftest.py)."""

from __future__ import annotations

import pytest

from instantstart.operations.models import Operation, OperationStatus
from tests.factories import OperationFactory


def failed_operation_fields() -> dict:
    return {
        "error_code": "SimulatedFailure",
        "error_message": "simulated failure in work",
        "error_hint": "Retry.",
    }


@pytest.fixture
def operation_of(team, member_user):
    """Make an engine.selftest operation of a team (the member's by default) in a status."""

    def make(status: str = OperationStatus.FAILED, *, of_team=None, by=None) -> Operation:
        fields = failed_operation_fields() if status == OperationStatus.FAILED else {}
        return OperationFactory(team=of_team or team, requested_by=by or member_user, status=status, **fields)

    return make
