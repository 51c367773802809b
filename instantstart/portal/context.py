"""Template context shared by every portal page."""

from __future__ import annotations

from instantstart.tenancy.teams import memberships_of


def portal(request) -> dict:
    access = getattr(request, "access", None)
    return {
        "access": access if access else None,
        "team_memberships": memberships_of(request.user) if hasattr(request, "user") else [],
    }
