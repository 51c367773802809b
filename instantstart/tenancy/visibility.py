"""The one visibility gate: which rows a caller may see, for every model a team owns.

A team-owned model's queryset subclasses ``TeamOwnedQuerySet`` and says where its team is and,
if anything, what is no longer shown::

    class InstanceGroupQuerySet(TeamOwnedQuerySet):
        team_path = "cluster__team"
        hidden = Q(cluster__status="deleted")

Viewsets (``instantstart.api.viewsets``), portal views, serializers, selectors and tools all read
through ``visible_to(access)``; an object outside it is a 404 on every face, never a 403.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from django.db import models

if TYPE_CHECKING:
    from .access import Access


class TeamOwnedQuerySet(models.QuerySet):
    """Rows of one team. ``hidden`` (a Q) is what the team no longer sees, such as deleted rows."""

    team_path: str = "team"
    hidden: models.Q | None = None

    def owned_by(self, access: Access) -> Self:
        """Every row of the caller's team, hidden ones included (history pages)."""
        return self.filter(**{self.team_path: access.team})

    def visible_to(self, access: Access) -> Self:
        """The rows the caller sees: the team's own, without the hidden ones."""
        owned = self.owned_by(access)
        return owned.exclude(self.hidden) if self.hidden is not None else owned
