"""Sets request.membership / request.team / request.access for portal pages."""

from __future__ import annotations

from django.utils.functional import SimpleLazyObject

from .access import Access, Via
from .teams import current_membership


def _access_for(request) -> Access | None:
    membership = current_membership(request, request.user)
    if membership is None:
        return None
    return Access(user=request.user, team=membership.team, role=membership.role, via=Via.UI)


class CurrentTeamMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.access = SimpleLazyObject(lambda: _access_for(request))
        return self.get_response(request)
