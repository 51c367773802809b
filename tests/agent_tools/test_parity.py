"""Every tool answers exactly what its REST endpoint answers, for the same token and arguments."""

from __future__ import annotations

import json

import pytest

from instantstart.operations.models import OperationStatus
from tests.mcp_client import MCP, assert_same, body
from tests.support import client_with

pytestmark = pytest.mark.django_db


def steady(operation: dict) -> dict:
    """An operation's JSON without the fields that move with the clock while it (or a phase) runs."""
    phases = [{**phase, "elapsed_seconds": None} for phase in operation.get("phases", [])]
    return {**operation, "elapsed_seconds": None, "phases": phases}


def test_whoami(member_mcp, member_token):
    result = member_mcp.call("whoami")
    response = client_with(member_token).get("/api/v1/whoami/")
    # The one field that differs is the point: MCP calls say so.
    assert result.structured_content == {**response.json(), "via": "mcp"}
    assert response.json()["via"] == "api"
    assert result.structured_content["role"] == "member"


def test_list_operations_with_filters(
    member_mcp, member_token, team, member_user, outsider_user, other_team, operation_of
):
    failed = operation_of(OperationStatus.FAILED)
    operation_of(OperationStatus.SUCCEEDED)
    operation_of(OperationStatus.FAILED, of_team=other_team, by=outsider_user)
    rest = client_with(member_token)

    for arguments in ({}, {"status": "failed"}, {"kind": "engine.selftest", "limit": 1}, {"target": "nothing"}):
        result = member_mcp.call("list_operations", arguments)
        assert_same(result, rest.get("/api/v1/operations/", arguments))

    only_failed = member_mcp.call("list_operations", {"status": "failed"}).structured_content
    assert [op["id"] for op in only_failed["results"]] == [str(failed.pk)]  # not the other team's


def test_get_operation(member_mcp, member_token, team, member_user, operation_of):
    operation = operation_of(OperationStatus.FAILED)
    result = member_mcp.call("get_operation", {"id": str(operation.pk)})
    assert_same(result, client_with(member_token).get(f"/api/v1/operations/{operation.pk}/"))
    assert result.structured_content["status_tool"] == "get_operation"
    assert result.structured_content["url"] == f"http://testserver/api/v1/operations/{operation.pk}/"


def test_retry_operation_answers_like_rest(member_mcp, member_token, team, member_user, operation_of):
    operation = operation_of(OperationStatus.FAILED)
    result = member_mcp.call("retry_operation", {"id": str(operation.pk)})
    assert not result.is_error
    assert result.structured_content["status"] in ("pending", "running")
    # The answer is the operation as REST now shows it.
    assert steady(body(result)) == steady(client_with(member_token).get(f"/api/v1/operations/{operation.pk}/").json())

    twin = operation_of(OperationStatus.FAILED)
    response = client_with(member_token).post(f"/api/v1/operations/{twin.pk}/retry/")
    assert response.status_code == 202
    assert body(result).keys() == response.json().keys()
    # A second block says what to call next.
    assert json.loads(result.content[1].text) == {"next": "wait_for_operation", "operation_id": str(operation.pk)}


def test_cancel_operation_answers_like_rest(member_mcp, member_token, team, member_user, operation_of):
    operation = operation_of(OperationStatus.RUNNING)
    result = member_mcp.call("cancel_operation", {"id": str(operation.pk)})
    assert not result.is_error
    assert result.structured_content["cancel_requested"] is True
    # Cancelling is repeatable: REST now answers the same operation.
    response = client_with(member_token).post(f"/api/v1/operations/{operation.pk}/cancel/")
    assert response.status_code == 202
    assert steady(body(result)) == steady(response.json())


def test_another_teams_operation_is_the_same_404(member_mcp, member_token, other_team, outsider_user, operation_of):
    theirs = operation_of(OperationStatus.FAILED, of_team=other_team, by=outsider_user)
    rest = client_with(member_token)
    for tool, method, path in (
        ("get_operation", "get", f"/api/v1/operations/{theirs.pk}/"),
        ("retry_operation", "post", f"/api/v1/operations/{theirs.pk}/retry/"),
        ("cancel_operation", "post", f"/api/v1/operations/{theirs.pk}/cancel/"),
    ):
        result = member_mcp.call(tool, {"id": str(theirs.pk)})
        response = getattr(rest, method)(path)
        assert response.status_code == 404
        assert result.is_error
        assert_same(result, response)
    theirs.refresh_from_db()
    assert theirs.status == OperationStatus.FAILED


def test_viewer_retry_is_the_same_403(viewer_mcp, viewer_token, team, member_user, operation_of):
    operation = operation_of(OperationStatus.FAILED)
    result = viewer_mcp.call("retry_operation", {"id": str(operation.pk)})
    response = client_with(viewer_token).post(f"/api/v1/operations/{operation.pk}/retry/")
    assert response.status_code == 403
    assert_same(result, response)
    assert "member role" in body(result)["error"]["message"]
    operation.refresh_from_db()
    assert operation.status == OperationStatus.FAILED


def test_invalid_filter_is_the_same_400(member_mcp, member_token):
    result = member_mcp.call("list_operations", {"status": "bogus"})
    response = client_with(member_token).get("/api/v1/operations/", {"status": "bogus"})
    assert response.status_code == 400
    assert_same(result, response)
    assert "status" in body(result)["error"]["fields"]


def test_conflict_is_the_same_409(member_mcp, member_token, team, member_user, operation_of):
    done = operation_of(OperationStatus.SUCCEEDED)
    rest = client_with(member_token)
    assert_same(
        member_mcp.call("retry_operation", {"id": str(done.pk)}), rest.post(f"/api/v1/operations/{done.pk}/retry/")
    )
    assert_same(
        member_mcp.call("cancel_operation", {"id": str(done.pk)}), rest.post(f"/api/v1/operations/{done.pk}/cancel/")
    )


def test_unknown_and_malformed_ids(member_mcp, member_token):
    rest = client_with(member_token)
    missing = "00000000-0000-0000-0000-000000000000"
    assert_same(member_mcp.call("get_operation", {"id": missing}), rest.get(f"/api/v1/operations/{missing}/"))
    result = member_mcp.call("get_operation", {"id": "not-a-uuid"})
    assert result.is_error
    assert body(result)["error"]["code"] == "not_found"
    result = member_mcp.call("get_operation", {})
    assert result.is_error
    assert body(result)["error"]["fields"] == {"id": ["This field is required."]}


def test_revoked_or_unknown_token_is_refused_like_rest():
    result = MCP("not-a-token").call("whoami")
    response = client_with("not-a-token").get("/api/v1/whoami/")
    assert response.status_code == 401
    assert_same(result, response)
