"""The gate in front of /mcp/: a valid team bearer token, checked before any MCP message is read.

The answers match the REST API's (same codes, messages and error shape), so a client sees one
behaviour whichever face it uses. Each tool call authenticates the token again inside its REST
endpoint; this gate only keeps anonymous traffic out of the MCP layer.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from instantstart.api.errors import error_body
from instantstart.tenancy.access import Via
from instantstart.tenancy.authentication import BearerTokenAuthentication, resolve_token
from instantstart.tenancy.models import hash_token

from .db import release_stale_connections

NOT_PROVIDED = "Authentication credentials were not provided."
MALFORMED = "Malformed Authorization header: use 'Bearer <token>'."
INVALID = "Invalid, expired or revoked token."
WWW_AUTHENTICATE = 'Bearer realm="instantstart"'

# The gate remembers a token it found valid for a few seconds: an agent's burst of calls costs one
# lookup here. Only the gate: every tool call is authenticated again, uncached, by its endpoint, so
# a token revoked a second ago still gets nothing but the endpoint's 401 tool error.
GATE_CACHE_SECONDS = 5.0
_GATE_CACHE_SIZE = 10_000
_recently_valid: dict[str, float] = {}


def bearer_error(authorization: str | None) -> dict | None:
    """The 401 body for an ``Authorization`` header, or None when it carries a valid token.

    Reads the database: call it from a thread.
    """
    parts = (authorization or "").split()
    if not parts or parts[0].lower() != BearerTokenAuthentication.keyword.lower():
        return error_body("not_authenticated", NOT_PROVIDED)
    if len(parts) != 2:
        return error_body("authentication_failed", MALFORMED)
    key = hash_token(parts[1])
    now = time.monotonic()
    if _recently_valid.get(key, 0) > now:
        return None
    release_stale_connections()
    try:
        access = resolve_token(parts[1], Via.MCP)
    finally:
        release_stale_connections()
    if access is None:
        _recently_valid.pop(key, None)
        return error_body("authentication_failed", INVALID)
    if len(_recently_valid) > _GATE_CACHE_SIZE:
        _recently_valid.clear()
    _recently_valid[key] = now + GATE_CACHE_SECONDS
    return None


def host_allowed(host: str) -> bool:
    """Whether Django would accept this Host header (ALLOWED_HOSTS, as ``request.get_host()``)."""
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)
