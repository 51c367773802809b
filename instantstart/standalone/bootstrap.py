"""First-run setup for the standalone mode: database schema, a demo team and an admin user."""

from __future__ import annotations

import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command

from instantstart.tenancy.models import Membership, Team
from instantstart.tenancy.roles import Role

DEMO_TEAM = "demo"
ADMIN_USERNAME = "admin"


def migrate() -> None:
    call_command("migrate", interactive=False, verbosity=0)


def ensure_demo(var_dir: Path) -> tuple[str, str | None]:
    """Create the demo team and the admin user unless they exist; returns (username, new password or None)."""
    team, _ = Team.objects.get_or_create(slug=DEMO_TEAM, defaults={"name": "Demo team"})
    User = get_user_model()
    user = User.objects.filter(username=ADMIN_USERNAME).first()
    password = None
    if user is None:
        password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=ADMIN_USERNAME, email="", password=password)
        # Kept so a second `make run` can remind the operator (readable by the owner only).
        path = var_dir / "admin-credentials.txt"
        path.write_text(f"username: {ADMIN_USERNAME}\npassword: {password}\n")
        path.chmod(0o600)
    Membership.objects.get_or_create(team=team, user=user, defaults={"role": Role.ADMIN})
    return ADMIN_USERNAME, password
