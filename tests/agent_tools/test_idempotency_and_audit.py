"""Mutating tools: Idempotency-Key through idempotency_key, and audit events that say via=mcp."""

from __future__ import annotations

import pytest

from instantstart.operations.models import AuditEvent, OperationStatus
from tests.mcp_client import body
from tests.support import client_with

pytestmark = pytest.mark.django_db


def test_same_key_twice_returns_the_stored_answer_and_mutates_once(member_mcp, team, member_user, operation_of):
    operation = operation_of(OperationStatus.FAILED)
    arguments = {"id": str(operation.pk), "idempotency_key": "retry-1"}

    first = member_mcp.call("retry_operation", arguments)
    second = member_mcp.call("retry_operation", arguments)

    assert not first.is_error and not second.is_error
    assert body(second) == body(first)
    assert AuditEvent.objects.filter(action="operation.retry", target_id=str(operation.pk)).count() == 1


def test_without_a_key_the_repeat_is_a_conflict(member_mcp, team, member_user, operation_of):
    operation = operation_of(OperationStatus.FAILED)
    assert not member_mcp.call("retry_operation", {"id": str(operation.pk)}).is_error
    again = member_mcp.call("retry_operation", {"id": str(operation.pk)})
    assert again.is_error
    assert body(again)["error"]["code"] == "conflict"


def test_a_key_used_over_mcp_replays_over_rest(member_mcp, member_token, team, member_user, operation_of):
    """The tool call is the REST call: same path, same key record."""
    operation = operation_of(OperationStatus.FAILED)
    first = member_mcp.call("retry_operation", {"id": str(operation.pk), "idempotency_key": "shared-key"})
    response = client_with(member_token).post(
        f"/api/v1/operations/{operation.pk}/retry/", HTTP_IDEMPOTENCY_KEY="shared-key"
    )
    assert response.status_code == 202
    assert response["Idempotent-Replayed"] == "true"
    assert response.json() == body(first)
    assert AuditEvent.objects.filter(action="operation.retry").count() == 1


def test_a_key_reused_for_another_tool_is_refused(member_mcp, team, member_user, operation_of):
    failed = operation_of(OperationStatus.FAILED)
    running = operation_of(OperationStatus.RUNNING)
    assert not member_mcp.call("retry_operation", {"id": str(failed.pk), "idempotency_key": "k"}).is_error
    reused = member_mcp.call("cancel_operation", {"id": str(running.pk), "idempotency_key": "k"})
    assert reused.is_error
    assert body(reused)["error"]["code"] == "idempotency_key_reused"
    running.refresh_from_db()
    assert running.cancel_requested is False


def test_audit_events_of_mcp_mutations_say_via_mcp(member_mcp, team, member_user, operation_of):
    failed = operation_of(OperationStatus.FAILED)
    running = operation_of(OperationStatus.RUNNING)
    member_mcp.call("retry_operation", {"id": str(failed.pk)})
    member_mcp.call("cancel_operation", {"id": str(running.pk)})

    events = AuditEvent.objects.filter(action__in=["operation.retry", "operation.cancel"])
    assert sorted(events.values_list("action", "via", "actor__username")) == [
        ("operation.cancel", "mcp", "bob"),
        ("operation.retry", "mcp", "bob"),
    ]
    assert all(event.token is not None for event in events)
