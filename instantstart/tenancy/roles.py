"""Team roles, ordered: each role can do everything the roles below it can."""

from __future__ import annotations

from django.db import models


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"  # reads everything of the team
    MEMBER = "member", "Member"  # also mutates workloads: jobs, endpoints, operations
    ADMIN = "admin", "Admin"  # also clusters, team settings, members and tokens


_RANK = {Role.VIEWER: 0, Role.MEMBER: 1, Role.ADMIN: 2}


def role_at_least(role: str | None, needed: str) -> bool:
    """True when ``role`` grants what ``needed`` requires."""
    if role is None:
        return False
    return _RANK[Role(role)] >= _RANK[Role(needed)]


def lower_role(a: str, b: str) -> str:
    """The weaker of two roles: a token never has more rights than its user's membership."""
    return a if _RANK[Role(a)] <= _RANK[Role(b)] else b
