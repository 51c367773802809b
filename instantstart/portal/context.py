"""Template context shared by every portal page."""

from __future__ import annotations

from instantstart.tenancy.roles import Role
from instantstart.tenancy.teams import memberships_of


def portal(request) -> dict:
    access = getattr(request, "access", None)
    access = access if access else None
    user = getattr(request, "user", None)
    return {
        "access": access,
        "is_team_admin": bool(access) and access.can(Role.ADMIN),
        "team_memberships": memberships_of(user) if user is not None else [],
    }
