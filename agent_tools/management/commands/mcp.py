"""`python manage.py mcp [--read-only]`: the MCP server over stdio, for agents on this machine.

The token comes from INSTANTSTART_TOKEN (never a command-line argument: those show in `ps`).
Every tool call acts with that token's team and role, exactly as REST calls with it would.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from mcp.server.stdio import stdio_server

from agent_tools.auth import bearer_error
from agent_tools.server import build_server

TOKEN_ENV = "INSTANTSTART_TOKEN"
URL_ENV = "INSTANTSTART_URL"


def default_base_url() -> str:
    """A URL on the first concrete ALLOWED_HOSTS name: answers' links must pass Django's host check."""
    names = [host.lstrip(".") for host in settings.ALLOWED_HOSTS if host not in ("*", "")]
    scheme = "https" if settings.MODE == "production" else "http"
    return f"{scheme}://{names[0] if names else 'localhost'}"


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio with the team token in $INSTANTSTART_TOKEN."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--read-only",
            action="store_true",
            default=settings.MCP_READ_ONLY,
            help="List and run only the tools that change nothing (default: MCP_READ_ONLY).",
        )
        parser.add_argument(
            "--base-url",
            default=os.environ.get(URL_ENV) or default_base_url(),
            help=f"Where the portal and REST API are reached, for links in answers (default: ${URL_ENV}, "
            "else the first ALLOWED_HOSTS name).",
        )

    def handle(self, *args, read_only: bool, base_url: str, **options) -> None:
        token = os.environ.get(TOKEN_ENV, "").strip()
        if not token:
            raise CommandError(f"Set {TOKEN_ENV} to a team API token (create one in the portal under Team → Tokens).")
        authorization = f"Bearer {token}"
        error = bearer_error(authorization)
        if error is not None:
            raise CommandError(f"{TOKEN_ENV} was refused: {error['error']['message']}")
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise CommandError(f"--base-url must be an http(s) URL, not {base_url!r}.")
        # Tool calls run their ORM work on a worker thread with its own connection.
        connections.close_all()
        server = build_server(read_only=read_only, authorization=authorization, site=(url.scheme, url.netloc))

        async def serve() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(serve)
