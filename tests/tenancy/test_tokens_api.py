"""REST: tokens, whoami, team settings and members."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from instantstart.operations.models import AuditEvent
from instantstart.tenancy.models import ApiToken, Membership, Team
from tests.support import client_with, token_for


def test_whoami(member_api):
    body = member_api.get("/api/v1/whoami/").json()
    assert body["username"] == "bob" and body["team"] == "acme" and body["role"] == "member"
    assert body["via"] == "api" and body["token"].startswith("bob-token (ist_")


def test_admin_creates_a_token_shown_once_and_stored_hashed(admin_api):
    response = admin_api.post("/api/v1/tokens/", {"name": "ci", "role": "viewer", "expires_in_days": 30}, format="json")
    assert response.status_code == 201
    raw = response.json()["token"]
    token = ApiToken.objects.get(pk=response.json()["id"])
    assert raw.startswith(token.prefix) and raw not in token.token_hash
    assert client_with(raw).get("/api/v1/whoami/").json()["role"] == "viewer"
    listed = admin_api.get("/api/v1/tokens/").json()["results"]
    assert all("token" not in item for item in listed)
    event = AuditEvent.objects.get(action="token.create", summary__name="ci")
    assert event.via == "api" and raw not in str(event.summary)


def test_a_token_cannot_exceed_its_users_role(team, member_user, admin_api):
    response = client_with(token_for(team, member_user, "member")).post("/api/v1/tokens/", {"name": "x"})
    assert response.status_code == 403  # only admins manage tokens
    membership = Membership.objects.get(user=member_user)
    raw = token_for(team, member_user, "admin")  # issued as admin…
    assert client_with(raw).get("/api/v1/whoami/").json()["role"] == "member"  # …capped by membership
    membership.delete()
    assert client_with(raw).get("/api/v1/whoami/").status_code == 401


def test_revoked_and_expired_tokens_stop_working(admin_api, team, viewer_user):
    raw = token_for(team, viewer_user, "viewer")
    token = ApiToken.objects.get(user=viewer_user)
    assert admin_api.post(f"/api/v1/tokens/{token.pk}/revoke/").status_code == 200
    assert client_with(raw).get("/api/v1/whoami/").status_code == 401
    raw2 = token_for(team, viewer_user, "viewer")
    ApiToken.objects.filter(revoked_at__isnull=True, user=viewer_user).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert client_with(raw2).get("/api/v1/whoami/").status_code == 401


def test_replayed_token_creation_never_reveals_the_secret_again(admin_api):
    first = admin_api.post("/api/v1/tokens/", {"name": "ci"}, format="json", HTTP_IDEMPOTENCY_KEY="t1")
    second = admin_api.post("/api/v1/tokens/", {"name": "ci"}, format="json", HTTP_IDEMPOTENCY_KEY="t1")
    assert "token" in first.json() and "token" not in second.json()
    assert second.json()["id"] == first.json()["id"]
    assert ApiToken.objects.filter(name="ci").count() == 1


def test_another_teams_token_is_404(admin_api, other_team, outsider_user):
    token_for(other_team, outsider_user, "admin")
    foreign = ApiToken.objects.get(team=other_team)
    assert admin_api.get(f"/api/v1/tokens/{foreign.pk}/").status_code == 404
    assert admin_api.post(f"/api/v1/tokens/{foreign.pk}/revoke/").status_code == 404
    assert admin_api.delete(f"/api/v1/tokens/{foreign.pk}/").status_code == 404
    foreign.refresh_from_db()
    assert foreign.revoked_at is None


def test_team_settings_validate_and_hide_the_external_id(admin_api, member_api):
    assert member_api.patch("/api/v1/team/", {"name": "x"}, format="json").status_code == 403
    bad = admin_api.patch(
        "/api/v1/team/", {"cloud": "aws", "aws_role_arn": "not-an-arn", "default_region": "mars-1"}, format="json"
    )
    assert bad.status_code == 400
    assert set(bad.json()["error"]["fields"]) == {"aws_role_arn", "default_region"}
    assert Team.objects.get(slug="acme").cloud == "sandbox"
    missing = admin_api.patch("/api/v1/team/", {"cloud": "aws"}, format="json")
    assert set(missing.json()["error"]["fields"]) == {"aws_role_arn", "aws_external_id"}
    ok = admin_api.patch(
        "/api/v1/team/",
        {
            "cloud": "aws",
            "aws_role_arn": "arn:aws:iam::123456789012:role/InstantStart",
            "aws_external_id": "s3cr3t-ext-id",
            "default_region": "us-east-1",
        },
        format="json",
    )
    assert ok.status_code == 200
    assert "aws_external_id" not in ok.json() and ok.json()["aws_external_id_set"] is True
    assert "s3cr3t" not in str(AuditEvent.objects.get(action="team.update").summary)


def test_members(admin_api, member_user, viewer_user, admin_user):
    listed = {m["username"]: m["role"] for m in admin_api.get("/api/v1/team/members/").json()["results"]}
    assert listed == {"alice": "admin", "bob": "member", "carol": "viewer"}
    unknown = admin_api.post("/api/v1/team/members/", {"username": "nobody", "role": "viewer"}, format="json")
    assert unknown.status_code == 400 and "username" in unknown.json()["error"]["fields"]
    alice = Membership.objects.get(user=admin_user)
    last_admin = admin_api.patch(f"/api/v1/team/members/{alice.pk}/", {"role": "member"}, format="json")
    assert last_admin.status_code == 409
    bob = Membership.objects.get(user=member_user)
    assert (
        admin_api.patch(f"/api/v1/team/members/{bob.pk}/", {"role": "admin"}, format="json").json()["role"] == "admin"
    )


def test_another_teams_member_is_404(admin_api, outsider_user):
    foreign = Membership.objects.get(user=outsider_user)
    assert admin_api.get(f"/api/v1/team/members/{foreign.pk}/").status_code == 404
    assert admin_api.delete(f"/api/v1/team/members/{foreign.pk}/").status_code == 404
    assert Membership.objects.filter(pk=foreign.pk).exists()
