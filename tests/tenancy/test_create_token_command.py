"""`manage.py create_token`: a typo in --team or --user creates nothing and lists what exists;
creating a team, a user or a membership takes an explicit --create."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from instantstart.tenancy.models import ApiToken, Membership, Team
from instantstart.tenancy.roles import Role
from tests.support import make_member


@pytest.fixture
def demo(db):
    team = Team.objects.create(slug="demo", name="Demo")
    make_member(team, "admin", Role.ADMIN)
    make_member(team, "bob", Role.MEMBER)
    return team


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as error:
        call_command("create_token", *args)
    return str(error.value)


def test_an_unknown_team_is_an_error_listing_the_teams(demo):
    message = refused("--team", "dmeo", "--user", "admin")
    assert "No team 'dmeo'" in message and "Existing teams: demo" in message and "--create" in message
    assert not Team.objects.filter(slug="dmeo").exists()
    assert ApiToken.objects.count() == 0


def test_an_unknown_user_is_an_error_listing_the_members(demo):
    message = refused("--team", "demo", "--user", "admni")
    assert "No user 'admni'" in message and "Members of demo: admin, bob" in message and "--create" in message
    assert not get_user_model().objects.filter(username="admni").exists()


def test_a_user_of_another_team_is_not_made_a_member_silently(demo):
    other = Team.objects.create(slug="other", name="Other")
    make_member(other, "olga", Role.ADMIN)
    message = refused("--team", "demo", "--user", "olga")
    assert "olga is not a member of demo" in message
    assert not Membership.objects.filter(team=demo, user__username="olga").exists()


def test_an_existing_member_gets_a_token_at_most_their_role(demo, capsys):
    call_command("create_token", "--team", "demo", "--user", "bob", "--role", "admin")
    raw = capsys.readouterr().out.strip()
    assert raw.startswith("ist_")
    assert ApiToken.objects.get(user__username="bob").role == Role.MEMBER  # no silent promotion
    assert Membership.objects.get(team=demo, user__username="bob").role == Role.MEMBER


def test_create_makes_the_team_user_and_membership(db, capsys):
    call_command("create_token", "--team", "newteam", "--user", "dana", "--role", "member", "--create")
    assert capsys.readouterr().out.strip().startswith("ist_")
    assert Membership.objects.get(team__slug="newteam", user__username="dana").role == "member"
