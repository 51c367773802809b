"""Pass one HTTP request on to a loopback listener and stream its answer back (routers and the
inference operator's reverse-proxy sidecar do this)."""

from __future__ import annotations

import aiohttp
from aiohttp import web

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}


async def forward(
    session: aiohttp.ClientSession, request: web.Request, port: int, path: str, body: bytes | None = None
) -> web.StreamResponse:
    """Raises aiohttp.ClientError when the upstream cannot be reached (the caller answers 502/503)."""
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
    data = body if body is not None else await request.read()
    url = f"http://127.0.0.1:{port}{path}"
    if request.query_string:
        url += "?" + request.query_string
    async with session.request(request.method, url, data=data, headers=headers) as up:
        out_headers = {k: v for k, v in up.headers.items() if k.lower() not in HOP_BY_HOP}
        resp = web.StreamResponse(status=up.status, reason=up.reason, headers=out_headers)
        await resp.prepare(request)
        async for chunk in up.content.iter_any():
            await resp.write(chunk)
        await resp.write_eof()
        return resp
