"""Database connection hygiene for work done outside Django's request cycle."""

from __future__ import annotations

from django.db import connections


def release_stale_connections() -> None:
    """What Django's request_started/request_finished signals do around a request.

    Closes connections that broke or outlived CONN_MAX_AGE, so a long-running MCP process (stdio,
    or the /mcp/ mount) survives a database restart. A connection inside a transaction belongs to
    someone (a test's, an outer atomic block) and is left alone.
    """
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()
