"""Selectors for teams and memberships, and the portal's current-team choice."""

from __future__ import annotations

from django.http import HttpRequest

from .models import Membership

SESSION_TEAM_KEY = "instantstart.team_id"


def memberships_of(user) -> list[Membership]:
    if not getattr(user, "is_authenticated", False):
        return []
    return list(Membership.objects.filter(user=user).select_related("team").order_by("team__name"))


def current_membership(request: HttpRequest, user) -> Membership | None:
    """The membership for the team chosen in this session, else the user's first team."""
    memberships = memberships_of(user)
    if not memberships:
        return None
    chosen = request.session.get(SESSION_TEAM_KEY) if hasattr(request, "session") else None
    for membership in memberships:
        if str(membership.team_id) == chosen:
            return membership
    return memberships[0]
