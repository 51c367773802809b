"""One asyncio event loop thread for every simulated listener and their outbound HTTP: a cluster
with dozens of serving pods costs one thread, and no cluster lock is ever held while a byte moves."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any

import aiohttp
from aiohttp import web


class IoLoop:
    """The serving I/O thread (started on first use, stopped by close())."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._session: aiohttp.ClientSession | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="sandbox-serving", daemon=True)
                self._thread.start()
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def session(self) -> aiohttp.ClientSession:
        """The shared client session (call from the loop)."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
                connector=aiohttp.TCPConnector(limit=0),
                auto_decompress=False,
            )
        return self._session

    async def serve(self, app: web.Application) -> tuple[web.AppRunner, int]:
        """Listen on a free loopback port; returns the runner (for cleanup) and the port."""
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, reuse_address=True)
        await site.start()
        server = site._server  # noqa: SLF001 - aiohttp exposes the bound port only here
        port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return runner, port

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = None
        if loop is None:
            return

        async def _shutdown() -> None:
            if self._session is not None and not self._session.closed:
                await self._session.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()

        try:
            asyncio.run_coroutine_threadsafe(_shutdown(), loop).result(timeout=5)
        except Exception:  # noqa: BLE001 - closing: nothing left to report to
            pass
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)
        loop.close()
