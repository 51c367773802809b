"""`python manage.py mcp` over stdio, driven by the SDK's stdio client."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from django.conf import settings
from mcp import Client, StdioServerParameters

from instantstart.operations.models import OperationStatus
from instantstart.tenancy.roles import Role
from tests.support import ROOT, token_for


def command_env(token: str | None) -> dict[str, str]:
    db = settings.DATABASES["default"]
    user, host, port = db["USER"] or "postgres", db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    env = {
        "INSTANTSTART_MODE": "test",
        "DJANGO_SETTINGS_MODULE": "instantstart.settings",
        "DATABASE_URL": f"postgres://{user}@{host}:{port}/{db['NAME']}",
        "PATH": os.environ.get("PATH", ""),
        "LOG_LEVEL": "WARNING",
    }
    if token is not None:
        env["INSTANTSTART_TOKEN"] = token
    return env


def run_stdio(token: str, *args: str, calls: list[tuple[str, dict]]):
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", *args], env=command_env(token), cwd=str(ROOT)
    )

    async def run():
        async with Client(params, read_timeout_seconds=30) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            return names, [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(run())


@pytest.mark.parametrize("read_only", [False, True])
def test_stdio_server_serves_the_tokens_identity(
    transactional_db, monkeypatch, team, member_user, read_only, operation_of
):
    monkeypatch.setattr("instantstart.operations.services.enqueue_advance", lambda *args, **kwargs: None)
    token = token_for(team, member_user, Role.MEMBER)
    operation = operation_of(OperationStatus.FAILED)
    calls = [("whoami", {}), ("get_operation", {"id": str(operation.pk)})]
    names, (whoami, get) = run_stdio(token, *(["--read-only"] if read_only else []), calls=calls)

    assert not whoami.is_error
    assert whoami.structured_content["username"] == "bob"
    assert whoami.structured_content["team"] == "acme"
    assert whoami.structured_content["via"] == "mcp"
    assert ("retry_operation" in names) is not read_only
    assert "get_operation" in names
    # Links are built for --base-url / $INSTANTSTART_URL (here the default: ALLOWED_HOSTS is "*").
    assert get.structured_content["url"] == f"http://localhost/api/v1/operations/{operation.pk}/"


@pytest.mark.parametrize(
    ("token", "message"),
    [(None, "Set INSTANTSTART_TOKEN"), ("not-a-token", "INSTANTSTART_TOKEN was refused: Invalid, expired or revoked")],
)
def test_stdio_server_refuses_to_start_without_a_valid_token(transactional_db, token, message):
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp"],
        cwd=ROOT,
        env=command_env(token),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert message in done.stderr
    assert done.stdout == ""
