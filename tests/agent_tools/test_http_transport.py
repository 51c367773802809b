"""/mcp/ over real HTTP: the ASGI application under uvicorn, the SDK's streamable-HTTP client."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from instantstart.operations.models import OperationStatus
from instantstart.tenancy.roles import Role
from tests.support import token_for


def serve(application, lifespan: str):
    """Run ``application`` under uvicorn on 127.0.0.1 (a free port) in a thread; yield its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(application, lifespan=lifespan, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    sock.close()


@pytest.fixture
def asgi_server(transactional_db):
    """instantstart.asgi.application, as deployed, with the ASGI lifespan."""
    from instantstart.asgi import application

    yield from serve(application, "on")


@pytest.fixture
def no_broker(monkeypatch):
    # Creating operations enqueues work on commit; these tests need no worker.
    monkeypatch.setattr("instantstart.operations.services.enqueue_advance", lambda *args, **kwargs: None)


def call_over_http(url: str, token: str, calls: list[tuple[str, dict]], mode: str = "auto"):
    async def run():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http:
            async with Client(streamable_http_client(f"{url}/mcp/", http_client=http), mode=mode) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                return names, [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(run())


# "auto" speaks the 2026 per-request protocol; "legacy" the initialize handshake older clients use.
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_lists_and_calls_tools(asgi_server, no_broker, team, member_user, mode, operation_of):
    token = token_for(team, member_user, Role.MEMBER)
    operation = operation_of(OperationStatus.FAILED)

    names, (whoami, get) = call_over_http(
        asgi_server, token, [("whoami", {}), ("get_operation", {"id": str(operation.pk)})], mode
    )

    assert {"whoami", "list_operations", "get_operation", "retry_operation", "cancel_operation"} <= set(names)
    assert not whoami.is_error
    assert whoami.structured_content["username"] == "bob"
    assert whoami.structured_content["via"] == "mcp"
    assert not get.is_error
    assert json.loads(get.content[0].text)["id"] == str(operation.pk)
    # Links point at the host the agent reached.
    assert get.structured_content["url"] == f"{asgi_server}/api/v1/operations/{operation.pk}/"


def test_missing_or_invalid_token_is_401_before_mcp(asgi_server):
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers, code in (
        ({}, "not_authenticated"),
        ({"Authorization": "Bearer not-a-token"}, "authentication_failed"),
        ({"Authorization": "Basic dXNlcjpwdw=="}, "not_authenticated"),
    ):
        response = httpx2.post(f"{asgi_server}/mcp/", json=ping, headers=headers, timeout=10)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == code
        assert response.headers["www-authenticate"] == 'Bearer realm="instantstart"'


def test_other_paths_still_reach_django(asgi_server):
    response = httpx2.get(f"{asgi_server}/api/v1/whoami/", timeout=10)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_servers_without_lifespan_start_mcp_on_first_use(transactional_db, no_broker, team, member_user):
    from agent_tools.asgi import mount_mcp
    from instantstart.asgi import django_app

    token = token_for(team, member_user, Role.MEMBER)
    for url in serve(mount_mcp(django_app), "off"):
        _, (whoami,) = call_over_http(url, token, [("whoami", {})])
        assert whoami.structured_content["username"] == "bob"
