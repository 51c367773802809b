"""Failed token authentications are rate-limited per client address: after
TOKEN_AUTH_FAILURE_LIMIT failures within TOKEN_AUTH_FAILURE_WINDOW seconds, bearer requests from
that address get 429 (with Retry-After) until the window ends — guessing tokens, or a script
stuck on a revoked one, cannot hammer the database. Counted in the "throttle" cache (Redis in
production, so every web process shares the count)."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import caches
from rest_framework import exceptions


def _client(request) -> str:
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def _window() -> tuple[int, int]:
    length = settings.TOKEN_AUTH_FAILURE_WINDOW
    start = int(time.time()) // length * length
    return start, start + length


def _key(request) -> str:
    return f"token-auth-failures:{_client(request)}:{_window()[0]}"


def check(request) -> None:
    """Raise 429 while the client's failures in this window reached the limit."""
    failures = caches["throttle"].get(_key(request), 0)
    if failures >= settings.TOKEN_AUTH_FAILURE_LIMIT:
        wait = max(1, _window()[1] - int(time.time()))
        raise exceptions.Throttled(wait=wait, detail=f"Too many failed authentications; retry in {wait} s.")


def record_failure(request) -> None:
    cache, key = caches["throttle"], _key(request)
    if not cache.add(key, 1, timeout=settings.TOKEN_AUTH_FAILURE_WINDOW + 1):
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, timeout=settings.TOKEN_AUTH_FAILURE_WINDOW + 1)
