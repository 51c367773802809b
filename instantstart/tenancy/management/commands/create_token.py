"""python manage.py create_token --team SLUG --user USERNAME [--role admin|member|viewer]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from instantstart.tenancy.roles import Role
from instantstart.tenancy.services import create_token, ensure_team_member, system_access


class Command(BaseCommand):
    help = (
        "Create an API token (creating the team, user and membership when missing). "
        "Prints only the new token on stdout."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--team", required=True, help="Team slug.")
        parser.add_argument("--user", required=True, help="Username.")
        parser.add_argument("--role", choices=[r.value for r in Role], default=Role.ADMIN.value)
        parser.add_argument("--name", default="cli", help="A name for the token (default: cli).")

    def handle(self, *args, team: str, user: str, role: str, name: str, **options) -> None:
        from django.core.exceptions import ValidationError
        from django.core.validators import validate_slug

        try:
            validate_slug(team)
        except ValidationError:
            raise CommandError(f"--team {team!r} is not a valid slug (letters, digits, dashes).")
        team_obj, user_obj, membership = ensure_team_member(team_slug=team.lower(), username=user, role=role)
        token_role = role if membership.role == role else min(role, membership.role, key=_rank)
        _, raw = create_token(access=system_access(team_obj, user_obj), user=user_obj, name=name, role=token_role)
        self.stdout.write(raw)


def _rank(role: str) -> int:
    return [Role.VIEWER, Role.MEMBER, Role.ADMIN].index(Role(role))
