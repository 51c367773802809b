"""Login, the layout, the team switcher, the dashboard and the pages still to come."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from instantstart.operations.models import OperationStatus
from instantstart.tenancy.models import Membership
from instantstart.tenancy.roles import Role
from instantstart.tenancy.teams import SESSION_TEAM_KEY
from tests.factories import OperationFactory
from tests.support import logged_in

pytestmark = pytest.mark.django_db

PAGES = [
    "portal:dashboard",
    "portal:clusters",
    "portal:jobs",
    "portal:endpoints",
    "portal:operations",
    "portal:audit",
    "portal:team",
]


@pytest.mark.parametrize("name", PAGES)
def test_every_page_requires_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_login_form_logs_in_and_logout_logs_out(client, admin_user):
    page = client.get("/login/")
    assert page.status_code == 200 and b'name="password"' in page.content
    response = client.post("/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_wrong_password_shows_an_error(client, admin_user):
    response = client.post("/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"correct username and password" in response.content


def test_user_without_a_team_is_told_to_ask_an_admin(db):
    user = get_user_model().objects.create_user(username="newbie", password="x-secret-123")
    response = logged_in(user).get("/")
    assert response.status_code == 200
    assert b"You are not in a team yet" in response.content
    assert b"Ask a team admin" in response.content


def test_layout_has_navigation_user_menu_htmx_and_csrf_header(admin_client):
    html = admin_client.get("/").content.decode()
    for label in ("Dashboard", "Clusters", "Jobs", "Endpoints", "Operations", "Audit", "Team &amp; tokens"):
        assert f">{label}</a>" in html
    assert "alice" in html and "Log out" in html
    assert "/static/instantstart/vendor/htmx.min.js" in html
    assert "/static/instantstart/portal.css" in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


def test_audit_link_hidden_from_non_admins(member_client):
    assert b">Audit</a>" not in member_client.get("/").content


def test_dashboard_counts(admin_client, team, other_team, member_user):
    OperationFactory(team=team, status=OperationStatus.RUNNING)
    OperationFactory(team=team, status=OperationStatus.PENDING)
    OperationFactory(team=team, status=OperationStatus.FAILED)
    OperationFactory(team=team, status=OperationStatus.SUCCEEDED)
    OperationFactory(team=other_team, status=OperationStatus.FAILED)
    response = admin_client.get("/")
    assert response.context["counts"] == {"active": 2, "failed": 1, "succeeded": 1}
    assert response.context["members"] == 2
    assert len(response.context["recent"]) == 4


class TestTeamSwitcher:
    def test_switch_to_own_team(self, admin_client, admin_user, other_team):
        Membership.objects.create(team=other_team, user=admin_user, role=Role.VIEWER)
        response = admin_client.post(
            reverse("portal:switch_team"), {"team": str(other_team.pk), "next": "/operations/"}
        )
        assert response.status_code == 302 and response["Location"] == "/operations/"
        assert admin_client.session[SESSION_TEAM_KEY] == str(other_team.pk)
        page = admin_client.get("/")
        assert page.context["access"].team == other_team
        assert page.context["access"].role == Role.VIEWER

    def test_switch_to_a_team_you_are_not_in_is_404(self, admin_client, team, other_team):
        response = admin_client.post(reverse("portal:switch_team"), {"team": str(other_team.pk)})
        assert response.status_code == 404
        assert SESSION_TEAM_KEY not in admin_client.session
        assert admin_client.get("/").context["access"].team == team

    def test_garbage_team_id_is_404(self, admin_client):
        assert admin_client.post(reverse("portal:switch_team"), {"team": "nope"}).status_code == 404

    def test_switch_does_not_follow_an_object_page_or_another_host(
        self, admin_client, admin_user, other_team, running_op
    ):
        Membership.objects.create(team=other_team, user=admin_user, role=Role.ADMIN)
        url = reverse("portal:switch_team")
        object_page = reverse("portal:operation", kwargs={"op_id": running_op.pk})
        assert admin_client.post(url, {"team": str(other_team.pk), "next": object_page})["Location"] == "/"
        assert admin_client.post(url, {"team": str(other_team.pk), "next": "https://evil.example/"})["Location"] == "/"

    def test_switch_is_post_only(self, admin_client, team):
        assert admin_client.get(reverse("portal:switch_team"), {"team": str(team.pk)}).status_code == 405


def test_htmx_poll_after_logout_redirects_the_whole_page(client, running_op):
    url = reverse("portal:operation", kwargs={"op_id": running_op.pk})
    response = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=f"http://testserver{url}")
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/login/?next={url}"


def test_unknown_page_is_our_404_even_when_logged_out(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert b"There is nothing at this address" in response.content


@pytest.mark.parametrize("path", ["/static/instantstart/vendor/htmx.min.js", "/static/instantstart/portal.css"])
def test_assets_are_served_locally(client, path):
    response = client.get(path)
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert len(body) > 1000
