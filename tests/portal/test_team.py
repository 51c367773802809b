"""Team & tokens page: settings, members, tokens. Admins change them; everyone else reads."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from instantstart.operations.models import AuditEvent
from instantstart.tenancy.models import ApiToken, Membership, Team
from instantstart.tenancy.roles import Role
from tests.support import logged_in

pytestmark = pytest.mark.django_db

TEAM = "/team/"


def settings_post(**changes) -> dict:
    return {
        "name": "Acme ML",
        "cloud": "sandbox",
        "aws_role_arn": "",
        "aws_external_id": "",
        "default_region": "us-west-2",
        **changes,
    }


class TestSettings:
    def test_admin_saves_only_what_changed(self, admin_client, team):
        response = admin_client.post(reverse("portal:team_settings"), settings_post(name="Acme Research"))
        assert response.status_code == 302 and response["Location"] == TEAM
        team.refresh_from_db()
        assert team.name == "Acme Research"
        event = AuditEvent.objects.get(action="team.update")
        assert event.summary == {"name": "Acme Research"} and event.via == "ui"
        assert "Team settings saved (name)" in admin_client.get(TEAM).content.decode()

    def test_unchanged_form_changes_nothing(self, admin_client):
        admin_client.post(reverse("portal:team_settings"), settings_post())
        assert not AuditEvent.objects.filter(action="team.update").exists()
        assert "Nothing changed" in admin_client.get(TEAM).content.decode()

    def test_errors_show_inline_keep_input_and_change_nothing(self, admin_client, team):
        response = admin_client.post(
            reverse("portal:team_settings"),
            settings_post(name="Renamed", cloud="aws", aws_role_arn="not-an-arn", default_region="mars-1"),
        )
        html = response.content.decode()
        assert response.status_code == 400
        assert "Team settings not saved: correct the fields marked below." in html
        assert "Give an IAM role ARN like" in html
        assert "is not an AWS region where SageMaker HyperPod is offered" in html
        assert 'value="not-an-arn"' in html and 'value="Renamed"' in html
        assert '<option value="mars-1" selected>' in html
        team.refresh_from_db()
        assert (team.name, team.cloud, team.aws_role_arn) == ("Acme ML", "sandbox", "")
        assert not AuditEvent.objects.filter(action="team.update").exists()

    def test_aws_needs_role_and_external_id(self, admin_client, team):
        response = admin_client.post(reverse("portal:team_settings"), settings_post(cloud="aws"))
        html = response.content.decode()
        assert response.status_code == 400
        assert "Required when the cloud is AWS: the role InstantStart assumes." in html
        assert "Required when the cloud is AWS: set it in the role" in html

    def test_external_id_is_write_only(self, admin_client, team):
        arn = "arn:aws:iam::123456789012:role/InstantStart"
        admin_client.post(
            reverse("portal:team_settings"),
            settings_post(cloud="aws", aws_role_arn=arn, aws_external_id="very-secret-ext-id"),
        )
        team.refresh_from_db()
        assert team.cloud == "aws" and team.aws_external_id == "very-secret-ext-id"
        html = admin_client.get(TEAM).content.decode()
        assert "very-secret-ext-id" not in html and "set — leave empty to keep it" in html
        # An empty box keeps it; the audit trail never holds it.
        admin_client.post(reverse("portal:team_settings"), settings_post(cloud="aws", aws_role_arn=arn, name="X"))
        team.refresh_from_db()
        assert team.aws_external_id == "very-secret-ext-id" and team.name == "X"
        assert all("very-secret" not in str(e.summary) for e in AuditEvent.objects.all())

    def test_non_admins_read_but_cannot_change(self, member_client, team):
        html = member_client.get(TEAM).content.decode()
        assert "Team admins change these settings" in html and "Save settings" not in html
        response = member_client.post(reverse("portal:team_settings"), settings_post(name="Hijacked"))
        assert response.status_code == 403
        team.refresh_from_db()
        assert team.name == "Acme ML"


class TestMembers:
    def test_admin_adds_a_member(self, admin_client, team):
        get_user_model().objects.create_user(username="dave", password="pw-dave-123")
        response = admin_client.post(reverse("portal:member_add"), {"username": "dave", "role": "viewer"})
        assert response.status_code == 302
        assert Membership.objects.get(team=team, user__username="dave").role == Role.VIEWER
        assert "dave joined Acme ML" in admin_client.get(TEAM).content.decode()

    def test_unknown_user_is_an_inline_error_that_keeps_input(self, admin_client, team):
        response = admin_client.post(reverse("portal:member_add"), {"username": "ghost", "role": "admin"})
        html = response.content.decode()
        assert response.status_code == 400
        assert "No active user named &#x27;ghost&#x27;." in html
        assert 'value="ghost"' in html and '<option value="admin" selected>' in html
        assert Membership.objects.filter(team=team).count() == 1

    def test_admin_changes_a_role(self, admin_client, member_user, team):
        membership = Membership.objects.get(user=member_user, team=team)
        admin_client.post(reverse("portal:member_role", kwargs={"membership_id": membership.pk}), {"role": "admin"})
        membership.refresh_from_db()
        assert membership.role == Role.ADMIN

    def test_same_role_changes_nothing(self, admin_client, member_user, team):
        membership = Membership.objects.get(user=member_user, team=team)
        url = reverse("portal:member_role", kwargs={"membership_id": membership.pk})
        response = admin_client.post(url, {"role": "member"}, follow=True)
        assert "bob already is member: nothing changed." in response.content.decode()
        assert not AuditEvent.objects.filter(action="member.role").exists()

    def test_invalid_role_is_an_error_message(self, admin_client, member_user, team):
        membership = Membership.objects.get(user=member_user, team=team)
        url = reverse("portal:member_role", kwargs={"membership_id": membership.pk})
        response = admin_client.post(url, {"role": "owner"}, follow=True)
        assert "is not a valid choice" in response.content.decode()
        membership.refresh_from_db()
        assert membership.role == Role.MEMBER

    def test_last_admin_cannot_step_down_or_leave(self, admin_client, admin_user, team):
        membership = Membership.objects.get(user=admin_user, team=team)
        response = admin_client.post(
            reverse("portal:member_role", kwargs={"membership_id": membership.pk}), {"role": "viewer"}, follow=True
        )
        assert "A team needs at least one admin" in response.content.decode()
        remove_url = reverse("portal:member_remove", kwargs={"membership_id": membership.pk})
        response = admin_client.post(remove_url, follow=True)
        assert "A team needs at least one admin" in response.content.decode()
        membership.refresh_from_db()
        assert membership.role == Role.ADMIN

    def test_admin_removes_a_member(self, admin_client, member_user, team):
        membership = Membership.objects.get(user=member_user, team=team)
        admin_client.post(reverse("portal:member_remove", kwargs={"membership_id": membership.pk}))
        assert not Membership.objects.filter(pk=membership.pk).exists()

    def test_another_teams_membership_is_404(self, admin_client, outsider_user, other_team):
        membership = Membership.objects.get(user=outsider_user, team=other_team)
        url = reverse("portal:member_remove", kwargs={"membership_id": membership.pk})
        assert admin_client.post(url).status_code == 404
        assert Membership.objects.filter(pk=membership.pk).exists()

    def test_member_cannot_manage_members(self, member_client, admin_user, team):
        membership = Membership.objects.get(user=admin_user, team=team)
        remove_url = reverse("portal:member_remove", kwargs={"membership_id": membership.pk})
        assert member_client.post(remove_url).status_code == 403
        assert "Add member" not in member_client.get(TEAM).content.decode()


class TestTokens:
    def test_created_token_is_shown_once(self, admin_client, team, admin_user):
        response = admin_client.post(
            reverse("portal:token_create"), {"name": "ci", "role": "member", "expires_in_days": "30"}
        )
        assert response.status_code == 302
        token = ApiToken.objects.get(team=team, name="ci")
        assert token.user == admin_user and token.role == Role.MEMBER and token.expires_at is not None
        first = admin_client.get(TEAM).content.decode()
        secret = first.split('<code class="secret">')[1].split("</code>")[0]
        assert secret.startswith("ist_") and secret[:12] == token.prefix
        # The secret authenticates against the REST API ...
        from rest_framework.test import APIClient

        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        assert api.get("/api/v1/whoami/").status_code == 200
        # ... and is never shown again.
        assert secret not in admin_client.get(TEAM).content.decode()

    def test_token_form_errors_inline(self, admin_client, team):
        response = admin_client.post(
            reverse("portal:token_create"), {"name": "", "role": "member", "expires_in_days": "0"}
        )
        html = response.content.decode()
        assert response.status_code == 400
        assert "This field is required." in html
        assert "Ensure this value is greater than or equal to 1." in html
        assert not ApiToken.objects.filter(team=team).exists()

    def test_revoke(self, admin_client, team, admin_user):
        admin_client.post(reverse("portal:token_create"), {"name": "old", "role": "viewer"})
        token = ApiToken.objects.get(team=team, name="old")
        response = admin_client.post(reverse("portal:token_revoke", kwargs={"token_id": token.pk}), follow=True)
        assert "is revoked" in response.content.decode()
        token.refresh_from_db()
        assert token.revoked_at is not None
        assert AuditEvent.objects.filter(action="token.revoke").exists()

    def test_another_teams_token_is_404(self, admin_client, other_team, outsider_user):
        from tests.support import token_for

        token_for(other_team, outsider_user, Role.ADMIN)
        token = ApiToken.objects.get(team=other_team)
        assert admin_client.post(reverse("portal:token_revoke", kwargs={"token_id": token.pk})).status_code == 404
        token.refresh_from_db()
        assert token.revoked_at is None

    def test_non_admins_neither_see_nor_create_tokens(self, member_client, team):
        html = member_client.get(TEAM).content.decode()
        assert "Team admins create and revoke" in html and "Create token" not in html
        assert member_client.post(reverse("portal:token_create"), {"name": "x", "role": "viewer"}).status_code == 403
        assert not ApiToken.objects.filter(team=team).exists()


class TestAudit:
    def test_admin_sees_the_teams_events_only(self, admin_client, team, other_team, outsider_user):
        admin_client.post(reverse("portal:team_settings"), settings_post(name="Acme Research"))
        logged_in(outsider_user).post(reverse("portal:team_settings"), settings_post(name="Globex 2"))
        response = admin_client.get(reverse("portal:audit"))
        assert response.status_code == 200
        actions = [(e.team_id, e.action) for e in response.context["page"].object_list]
        assert actions == [(team.pk, "team.update")]
        assert "Acme Research" in response.content.decode()
        assert Team.objects.get(pk=other_team.pk).name == "Globex 2"

    @pytest.mark.parametrize("client_fixture", ["member_client", "viewer_client"])
    def test_hidden_from_non_admins(self, request, client_fixture):
        response = request.getfixturevalue(client_fixture).get(reverse("portal:audit"))
        assert response.status_code == 403
        assert b"needs the admin role" in response.content


class TestRolesExplained:
    def test_every_member_reads_what_each_role_may_do(self, viewer_client):
        page = viewer_client.get(TEAM).content.decode()
        roles = page[page.index('id="roles"') : page.index("</dl>", page.index('id="roles"'))]
        assert "<dt>Viewer</dt>" in roles and "<dt>Member</dt>" in roles and "<dt>Admin</dt>" in roles
        assert "Changes nothing" in roles and "submits and stops jobs" in roles and "API tokens" in roles

    def test_add_a_member_says_how_to_create_the_user(self, admin_client, team):
        page = admin_client.get(TEAM).content.decode()
        form = page[page.index('id="add-member"') : page.index("</form>", page.index('id="add-member"'))]
        assert f"create_token --team {team.slug} --user NAME --role member --create" in form
        assert "changepassword" in form and "/admin/auth/user/add/" in form


class TestInvite:
    """ "Add a member" with "Create the user": a new account with a one-time password, shown once."""

    def test_admin_creates_a_user_who_must_change_the_one_time_password(self, admin_client, team, client):
        response = admin_client.post(
            reverse("portal:member_add"), {"username": "erin", "role": "member", "create": "on"}
        )
        assert response.status_code == 302 and response["Location"] == TEAM
        page = admin_client.get(TEAM).content.decode()
        box = page[page.index('id="new-member"') : page.index("</div>", page.index('id="new-member"'))]
        password = box.split('<code class="secret">')[1].split("</code>")[0]
        assert "erin" in box and len(password) >= 12
        assert 'id="new-member"' not in admin_client.get(TEAM).content.decode()  # shown once
        assert Membership.objects.get(team=team, user__username="erin").role == Role.MEMBER
        assert AuditEvent.objects.get(action="member.invite").summary == {"user": "erin", "role": "member"}

        # First login with the one-time password lands on the password change page, whatever is asked.
        response = client.post("/login/", {"username": "erin", "password": password}, follow=True)
        assert response.redirect_chain[-1][0] == reverse("portal:password_change")
        assert "one-time password" in response.content.decode()
        response = client.get("/clusters/")
        assert response.status_code == 302 and response["Location"] == reverse("portal:password_change")
        response = client.get("/", headers={"HX-Request": "true"})
        assert response["HX-Redirect"] == reverse("portal:password_change")

        new = "a-long-new-passphrase-42"
        response = client.post(
            reverse("portal:password_change"),
            {"old_password": password, "new_password1": new, "new_password2": new},
            follow=True,
        )
        assert response.status_code == 200 and "Your password is changed." in response.content.decode()
        assert client.get("/clusters/").status_code == 200  # normal pages from now on
        client.post("/logout/")
        response = client.post("/login/", {"username": "erin", "password": new})
        assert response.status_code == 302 and client.get("/").status_code == 200

    def test_an_existing_username_or_a_bad_one_is_an_inline_error(self, admin_client, member_user, team):
        for username, message in [(member_user.username, "exists already"), ("no spaces!", "Enter a valid username")]:
            response = admin_client.post(
                reverse("portal:member_add"), {"username": username, "role": "viewer", "create": "on"}
            )
            html = response.content.decode()
            assert response.status_code == 400 and message in html, html
            assert 'id="id_member_create" name="create" type="checkbox" checked' in html
        assert not AuditEvent.objects.filter(action="member.invite").exists()

    def test_existing_users_are_still_added_by_username_and_need_no_change(self, admin_client, team, client):
        get_user_model().objects.create_user(username="frank", password="pw-frank-123")
        admin_client.post(reverse("portal:member_add"), {"username": "frank", "role": "viewer"})
        client.post("/login/", {"username": "frank", "password": "pw-frank-123"})
        assert client.get("/").status_code == 200
