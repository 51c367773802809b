"""REST: /api/v1/operations/ and /api/v1/audit-events/."""

from __future__ import annotations

import pytest

from instantstart.operations.models import AuditEvent, Operation, OperationStatus, PhaseStatus
from instantstart.operations.services import start_operation
from instantstart.tenancy.access import Access, Via


def make_op(team, user, **params) -> Operation:
    access = Access(user=user, team=team, role="admin", via=Via.SYSTEM)
    op, _ = start_operation(access=access, kind="engine.selftest", params=params)
    return op


def fail(op: Operation) -> None:
    op.phases.filter(name="work").update(status=PhaseStatus.FAILED, message="boom")
    Operation.objects.filter(pk=op.pk).update(
        status=OperationStatus.FAILED, error_code="Boom", error_message="it broke", error_hint="fix it"
    )


@pytest.fixture
def op(team, admin_user):
    return make_op(team, admin_user)


@pytest.fixture
def foreign_op(other_team, outsider_user):
    return make_op(other_team, outsider_user)


def test_list_shows_only_the_callers_team(viewer_api, op, foreign_op):
    response = viewer_api.get("/api/v1/operations/")
    assert response.status_code == 200
    ids = [item["id"] for item in response.json()["results"]]
    assert ids == [str(op.pk)]


def test_detail_shows_phases_error_and_how_to_follow(viewer_api, op):
    fail(op)
    body = viewer_api.get(f"/api/v1/operations/{op.pk}/").json()
    assert body["status"] == "failed"
    assert [p["name"] for p in body["phases"]] == ["work", "wait", "finish"]
    assert body["phases"][0]["status"] == "failed" and body["phases"][0]["message"] == "boom"
    assert body["error"] == {"code": "Boom", "message": "it broke", "hint": "fix it"}
    assert body["url"].endswith(f"/api/v1/operations/{op.pk}/")
    assert body["status_tool"] == "get_operation"
    assert body["can_retry"] is True


def test_filters(viewer_api, team, admin_user):
    a = make_op(team, admin_user)
    b = make_op(team, admin_user)
    fail(b)
    assert [o["id"] for o in viewer_api.get("/api/v1/operations/?status=failed").json()["results"]] == [str(b.pk)]
    assert viewer_api.get("/api/v1/operations/?kind=cluster.create").json()["results"] == []
    assert len(viewer_api.get("/api/v1/operations/?kind=engine.selftest").json()["results"]) == 2
    assert viewer_api.get(f"/api/v1/operations/?target={a.pk}").json()["results"] == []
    bad = viewer_api.get("/api/v1/operations/?status=bogus")
    assert bad.status_code == 400
    assert "status" in bad.json()["error"]["fields"]


def test_another_teams_operation_is_404_everywhere(member_api, foreign_op):
    for method, path in [
        ("get", f"/api/v1/operations/{foreign_op.pk}/"),
        ("post", f"/api/v1/operations/{foreign_op.pk}/retry/"),
        ("post", f"/api/v1/operations/{foreign_op.pk}/cancel/"),
    ]:
        response = getattr(member_api, method)(path)
        assert response.status_code == 404, path
        assert response.json() == {"error": {"code": "not_found", "message": "Not found."}}
    foreign_op.refresh_from_db()
    assert foreign_op.cancel_requested is False


def test_without_a_token_every_endpoint_is_401(anonymous_api, op):
    for path in [
        "/api/v1/operations/",
        f"/api/v1/operations/{op.pk}/",
        "/api/v1/audit-events/",
        "/api/v1/whoami/",
        "/api/v1/tokens/",
        "/api/v1/team/",
        "/api/v1/team/members/",
    ]:
        response = anonymous_api.get(path)
        assert response.status_code == 401, path
        assert response["WWW-Authenticate"].startswith("Bearer")
    assert anonymous_api.post(f"/api/v1/operations/{op.pk}/retry/").status_code == 401


def test_a_bad_token_is_401(op):
    from tests.support import client_with

    assert client_with("ist_not-a-real-token").get("/api/v1/operations/").status_code == 401


def test_retry_and_cancel(member_api, op):
    assert member_api.post(f"/api/v1/operations/{op.pk}/retry/").status_code == 409  # not failed
    response = member_api.post(f"/api/v1/operations/{op.pk}/cancel/")
    assert response.status_code == 202 and response.json()["cancel_requested"] is True
    assert member_api.post(f"/api/v1/operations/{op.pk}/cancel/").status_code == 202  # repeatable
    fail(op)
    response = member_api.post(f"/api/v1/operations/{op.pk}/retry/")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] in ("pending", "running") and body["error"] is None
    assert body["phases"][0]["status"] == "pending"
    actions = list(AuditEvent.objects.filter(team=op.team).values_list("action", "via"))
    assert ("operation.retry", "api") in actions and ("operation.cancel", "api") in actions


def test_viewers_cannot_retry(viewer_api, op):
    fail(op)
    response = viewer_api.post(f"/api/v1/operations/{op.pk}/retry/")
    assert response.status_code == 403
    assert response.json()["error"]["message"] == "This action needs the member role; you have viewer."
    op.refresh_from_db()
    assert op.status == OperationStatus.FAILED


def test_the_same_idempotency_key_never_acts_twice(member_api, op):
    fail(op)
    first = member_api.post(f"/api/v1/operations/{op.pk}/retry/", HTTP_IDEMPOTENCY_KEY="k-1")
    fail(op)  # even if the operation failed again, the repeat does not retry it again
    second = member_api.post(f"/api/v1/operations/{op.pk}/retry/", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == second.status_code == 202
    assert second.json() == first.json()
    assert second["Idempotent-Replayed"] == "true"
    assert AuditEvent.objects.filter(action="operation.retry").count() == 1
    other_path = member_api.post(f"/api/v1/operations/{op.pk}/cancel/", HTTP_IDEMPOTENCY_KEY="k-1")
    assert other_path.status_code == 422


def test_a_failed_request_does_not_burn_its_idempotency_key(member_api, op):
    assert member_api.post(f"/api/v1/operations/{op.pk}/retry/", HTTP_IDEMPOTENCY_KEY="k-2").status_code == 409
    fail(op)
    assert member_api.post(f"/api/v1/operations/{op.pk}/retry/", HTTP_IDEMPOTENCY_KEY="k-2").status_code == 202


def test_audit_events_are_for_admins_of_the_team(admin_api, member_api, outsider_api, op):
    body = admin_api.get("/api/v1/audit-events/").json()
    events = {e["action"]: e for e in body["results"]}
    assert set(events) == {"engine.selftest", "token.create"}
    assert events["engine.selftest"]["operation"] == str(op.pk)
    assert member_api.get("/api/v1/audit-events/").status_code == 403
    outsider_actions = {e["action"] for e in outsider_api.get("/api/v1/audit-events/").json()["results"]}
    assert "engine.selftest" not in outsider_actions
    event = op.team.audit_events.get(action="engine.selftest")
    assert outsider_api.get(f"/api/v1/audit-events/{event.pk}/").status_code == 404
