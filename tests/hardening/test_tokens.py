"""DELETE and GET of a token agree: DELETE revokes (as POST …/revoke/) and answers the token."""

from __future__ import annotations

from instantstart.tenancy.models import ApiToken
from tests.support import client_with, token_for


def test_delete_revokes_the_token_and_get_shows_it_revoked(admin_api, team, viewer_user):
    raw = token_for(team, viewer_user, "viewer")
    token = ApiToken.objects.get(user=viewer_user)
    deleted = admin_api.delete(f"/api/v1/tokens/{token.pk}/")
    assert deleted.status_code == 200
    assert deleted.json()["revoked_at"] is not None and deleted.json()["is_active"] is False
    shown = admin_api.get(f"/api/v1/tokens/{token.pk}/").json()
    assert shown == deleted.json()
    assert client_with(raw).get("/api/v1/whoami/").status_code == 401
    again = admin_api.delete(f"/api/v1/tokens/{token.pk}/")  # repeatable: the same answer
    assert again.status_code == 200 and again.json()["revoked_at"] == deleted.json()["revoked_at"]
