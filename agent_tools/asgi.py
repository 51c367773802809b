"""/mcp/ in the ASGI application: the MCP SDK's streamable-HTTP app beside Django.

``mount_mcp(django_app)`` returns an ASGI app that sends HTTP requests for ``/mcp`` and ``/mcp/…``
to the MCP server (after the bearer-token gate) and everything else — other HTTP paths, websockets —
to the app it wraps. It also answers the ASGI lifespan protocol, which Django does not: the SDK's
session manager needs its task group running before it can serve a request. Under a server that
sends no lifespan events the manager is started on the first MCP request instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
from contextlib import AsyncExitStack
from typing import Any

from asgiref.sync import sync_to_async
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from instantstart.api.errors import error_body

from .auth import WWW_AUTHENTICATE, bearer_error, host_allowed
from .server import build_server

log = logging.getLogger(__name__)

Scope = dict[str, Any]
PREFIX = "/mcp"


def mount_mcp(django_app: Any, *, prefix: str = PREFIX) -> MCPMount:
    """Wrap the Django ASGI app so that ``prefix`` is served by the MCP server."""
    return MCPMount(django_app, prefix=prefix)


class MCPMount:
    """An ASGI router: MCP under ``prefix``, the wrapped app for everything else."""

    def __init__(self, app: Any, *, prefix: str = PREFIX) -> None:
        self.app = app
        self.prefix = prefix.rstrip("/")
        self._manager: StreamableHTTPSessionManager | None = None
        self._fallback: asyncio.Task | None = None
        self._fallback_lock: asyncio.Lock | None = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http" and self._is_mcp_path(scope["path"]):
            await self._serve_mcp(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _is_mcp_path(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + "/")

    @staticmethod
    def _new_manager() -> StreamableHTTPSessionManager:
        # A manager runs once; each lifespan cycle (a server restart in-process, a test) gets its own.
        # Stateless with JSON answers: every request stands alone, so any web process can serve any
        # request and nothing is kept between them. Host checks are Django's (ALLOWED_HOSTS) in
        # _serve_mcp; the SDK's own DNS-rebinding guard is left off (a browser cannot add the token).
        return StreamableHTTPSessionManager(app=build_server(), stateless=True, json_response=True)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        stack = AsyncExitStack()
        try:
            manager = self._new_manager()
            await stack.enter_async_context(manager.run())
        except Exception as exc:
            log.exception("MCP session manager did not start")
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        self._manager = manager
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        self._manager = None
        try:
            await stack.aclose()
        except Exception as exc:
            log.exception("MCP session manager did not stop cleanly")
            await send({"type": "lifespan.shutdown.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})

    async def _running_manager(self) -> StreamableHTTPSessionManager:
        """The manager started by the lifespan, or one started now for servers without lifespan."""
        if self._manager is not None:
            return self._manager
        if self._fallback_lock is None:
            self._fallback_lock = asyncio.Lock()
        async with self._fallback_lock:
            if self._manager is None:
                started = asyncio.Event()
                self._fallback = asyncio.get_running_loop().create_task(self._run_until_cancelled(started))
                await started.wait()
        assert self._manager is not None
        return self._manager

    async def _run_until_cancelled(self, started: asyncio.Event) -> None:
        manager = self._new_manager()
        async with manager.run():
            self._manager = manager
            started.set()
            await asyncio.Event().wait()

    async def _serve_mcp(self, scope: Scope, receive: Any, send: Any) -> None:
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        if not host_allowed(headers.get("host", "")):
            await _json(send, 400, error_body("bad_request", "Invalid Host header."))
            return
        error = await sync_to_async(bearer_error, thread_sensitive=True)(headers.get("authorization"))
        if error is not None:
            await _json(send, 401, error, [(b"www-authenticate", WWW_AUTHENTICATE.encode())])
            return
        manager = await self._running_manager()
        await manager.handle_request(scope, receive, send)


async def _json(send: Any, status: int, body: dict, extra_headers: list[tuple[bytes, bytes]] | None = None) -> None:
    payload = json.dumps(body, separators=(",", ":")).encode()  # compact, as DRF renders
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra_headers or [])})
    await send({"type": "http.response.body", "body": payload})
