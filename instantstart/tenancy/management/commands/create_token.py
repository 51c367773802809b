"""python manage.py create_token --team SLUG --user USERNAME [--role admin|member|viewer] [--create]"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from instantstart.tenancy.models import Membership, Team
from instantstart.tenancy.roles import Role
from instantstart.tenancy.services import create_token, ensure_team_member, system_access


class Command(BaseCommand):
    help = (
        "Create an API token for a member of a team. Prints only the new token on stdout. "
        "An unknown team, user or membership is an error listing what exists; --create creates them."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--team", required=True, help="Team slug.")
        parser.add_argument("--user", required=True, help="Username.")
        parser.add_argument("--role", choices=[r.value for r in Role], default=Role.ADMIN.value)
        parser.add_argument("--name", default="cli", help="A name for the token (default: cli).")
        parser.add_argument(
            "--create",
            action="store_true",
            help="Create the team, the user and the membership when missing (a typo otherwise creates nothing).",
        )

    def handle(self, *args, team: str, user: str, role: str, name: str, create: bool, **options) -> None:
        from django.core.exceptions import ValidationError
        from django.core.validators import validate_slug

        try:
            validate_slug(team)
        except ValidationError:
            raise CommandError(f"--team {team!r} is not a valid slug (letters, digits, dashes).")
        slug = team.lower()
        if create:
            team_obj, user_obj, membership = ensure_team_member(team_slug=slug, username=user, role=role)
        else:
            team_obj, user_obj, membership = _existing_member(slug, user)
        token_role = role if membership.role == role else min(role, membership.role, key=_rank)
        _, raw = create_token(access=system_access(team_obj, user_obj), user=user_obj, name=name, role=token_role)
        self.stdout.write(raw)


def _existing_member(slug: str, username: str):
    """The team, user and membership, or a CommandError naming what exists instead."""
    team = Team.objects.filter(slug=slug).first()
    if team is None:
        teams = ", ".join(Team.objects.values_list("slug", flat=True)) or "none"
        raise CommandError(f"No team {slug!r}. Existing teams: {teams}. Pass --create to create it.")
    user = get_user_model().objects.filter(username=username).first()
    members = ", ".join(
        Membership.objects.filter(team=team).order_by("user__username").values_list("user__username", flat=True)
    )
    if user is None:
        raise CommandError(
            f"No user {username!r}. Members of {slug}: {members or 'none'}. Pass --create to create the user."
        )
    membership = Membership.objects.filter(team=team, user=user).first()
    if membership is None:
        raise CommandError(
            f"{username} is not a member of {slug} (members: {members or 'none'}). Pass --create to add them."
        )
    return team, user, membership


def _rank(role: str) -> int:
    return [Role.VIEWER, Role.MEMBER, Role.ADMIN].index(Role(role))
