"""REST authentication: team bearer tokens, and portal sessions with a current team."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import authentication, exceptions

from instantstart.api import throttle

from .access import VIA_ENVIRON_KEY, Access, Via
from .models import ApiToken, Membership, hash_token
from .teams import current_membership

# last_used_at is written at most this often per token, so reads do not turn into writes.
_LAST_USED_RESOLUTION_SECONDS = 60


def resolve_token(raw: str, via: str) -> Access | None:
    """The Access a raw bearer token grants, or None when it is unknown, expired or revoked."""
    token = ApiToken.objects.active().select_related("team", "user").filter(token_hash=hash_token(raw)).first()
    if token is None or not token.user.is_active:
        return None
    membership = Membership.objects.filter(user=token.user, team=token.team).first()
    role = token.effective_role(membership.role if membership else None)
    if role is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > _LAST_USED_RESOLUTION_SECONDS:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return Access(user=token.user, team=token.team, role=role, via=via, token=token)


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>`; the token decides the team and caps the role."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if parts[0].lower() != self.keyword.lower():
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header: use 'Bearer <token>'.")
        via = request._request.META.get(VIA_ENVIRON_KEY, Via.API)
        throttle.check(request)
        access = resolve_token(parts[1], via)
        if access is None:
            throttle.record_failure(request)
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        return access.user, access

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="instantstart"'


class TeamSessionAuthentication(authentication.SessionAuthentication):
    """A logged-in portal user calling the API acts for the team chosen in the portal."""

    def authenticate(self, request):
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        membership = current_membership(request._request, user)
        if membership is None:
            raise exceptions.PermissionDenied("You are not a member of any team.")
        return user, Access(user=user, team=membership.team, role=membership.role, via=Via.API)
