"""The registry of the sandbox's own AWS actions: plain functions per (signing service, action).

A handler receives a Ctx (the world, the parsed request, the caller's account) and answers, or
returns None to let moto answer. It may call moto itself (ctx.moto(...)) to wrap an existing moto
operation, e.g. to give an EKS cluster a CREATING phase after moto stored it. Extension modules
import `handles` from here; sandbox/aws/app.py imports the extension modules, so nothing imports
the app back.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlencode

from sandbox.aws.protocol import AwsRequest, Response, json_response
from sandbox.aws.world import World

Handler = Callable[["Ctx"], "Response | None"]
HANDLERS: dict[tuple[str, str], Handler] = {}


def handles(service: str, *actions: str) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        for a in actions:
            HANDLERS[(service, a)] = fn
        return fn

    return deco


@dataclass
class Ctx:
    world: World
    req: AwsRequest
    account: str
    environ: dict[str, Any]
    moto_app: Any

    @property
    def region(self) -> str:
        return self.req.region

    @property
    def params(self) -> dict[str, Any]:
        return self.req.params

    def ok(self, obj: Any, status: int = 200) -> Response:
        return json_response(obj, status, self.req.protocol)

    def moto(
        self,
        method: str | None = None,
        path: str | None = None,
        body: bytes | None = None,
        query: dict[str, str] | None = None,
    ) -> Response:
        """Call moto with this request, or with a variant of it (same credentials/region)."""
        env = dict(self.environ)
        data = self.req.body if body is None else body
        if method:
            env["REQUEST_METHOD"] = method
        if path is not None:
            qs = urlencode(query or {})
            env["PATH_INFO"] = unquote(path)
            env["RAW_URI"] = env["REQUEST_URI"] = path + (f"?{qs}" if qs else "")
            env["QUERY_STRING"] = qs
        env["CONTENT_LENGTH"] = str(len(data))
        env["wsgi.input"] = io.BytesIO(data)
        return call_wsgi(self.moto_app, env)


def call_wsgi(app: Any, environ: dict[str, Any]) -> Response:
    captured: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        captured["status"], captured["headers"] = status, headers
        return lambda data: None

    chunks = app(environ, start_response)
    try:
        body = b"".join(chunks)
    finally:
        if hasattr(chunks, "close"):
            chunks.close()
    return int(captured["status"].split()[0]), list(captured["headers"]), body
