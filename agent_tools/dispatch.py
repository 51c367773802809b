"""Run one tool call through its REST endpoint, exactly as an HTTP client would reach it.

The call becomes a Django request to the endpoint's own URL (its route, found in the URLconf by
view class and action — see ``agent_tools.contract`` — so the path is the REST path and
idempotency records match), carrying the caller's
``Authorization`` header and, in the environ where no client can forge it, the mark that it comes
from MCP. The endpoint's view function — the one the URLconf routes REST traffic to — answers it:
authentication, role checks, team scoping (another team's object is a 404), serializers and the
error body are the REST API's. Synchronous: call it from a thread, never from the event loop.
"""

from __future__ import annotations

import io
import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import SuspiciousOperation
from django.core.handlers.wsgi import WSGIRequest
from django.urls import NoReverseMatch, resolve, reverse

from instantstart.api.errors import error_body
from instantstart.api.idempotency import HEADER as IDEMPOTENCY_HEADER
from instantstart.tenancy.access import VIA_ENVIRON_KEY, Via

from .contract import Contract
from .registry import IDEMPOTENCY_ARGUMENT, Tool

log = logging.getLogger(__name__)

_IDEMPOTENCY_ENVIRON = "HTTP_" + IDEMPOTENCY_HEADER.upper().replace("-", "_")


@dataclass(frozen=True)
class Caller:
    """Who is calling and how their requests look to Django: the bearer header and the site."""

    authorization: str
    host: str = "localhost"
    scheme: str = "http"
    # Forwarded headers of the MCP request, passed on so SECURE_PROXY_SSL_HEADER and
    # USE_X_FORWARDED_HOST apply to tool answers as they do to REST answers.
    forwarded: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Answer:
    """The REST endpoint's answer: HTTP status, the body as sent, and the body parsed."""

    status: int
    text: str
    data: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def call(tool: Tool, arguments: dict[str, Any] | None, caller: Caller) -> Answer:
    """Dispatch ``tool`` with ``arguments`` as ``caller`` and return the REST answer."""
    arguments = dict(arguments or {})
    idempotency_key = arguments.pop(IDEMPOTENCY_ARGUMENT, None)
    contract = tool.contract
    url_kwargs: dict[str, str] = {}
    for argument, kwarg in contract.path_params.items():
        value = arguments.pop(argument, None)
        if value in (None, ""):
            message = "This field is required."
            return _answer(400, error_body("invalid", f"{argument}: {message}", {argument: [message]}))
        url_kwargs[kwarg] = str(value)
    try:
        path = reverse(contract.route_name, kwargs=url_kwargs)
    except NoReverseMatch:
        # An id no route accepts (a slash, a dot): REST would not find it either.
        return _answer(404, error_body("not_found", "Not found."))
    match = resolve(path)
    request = WSGIRequest(_environ(contract, path, arguments, caller, idempotency_key))
    try:
        response = match.func(request, *match.args, **match.kwargs)
    except SuspiciousOperation:
        # What Django's handler answers for these (a disallowed Host, for one): 400, logged.
        log.warning("%s: suspicious request refused", tool.name, exc_info=True)
        return _answer(400, error_body("bad_request", "Bad request."))
    except Exception:
        # What Django's handler does for an unhandled error: log it, answer 500, hide the details.
        log.exception("%s: unhandled error in %s", tool.name, path)
        return _answer(500, error_body("server_error", "A server error occurred."))
    if hasattr(response, "render"):
        response.render()
    text = response.content.decode(response.charset or "utf-8") if response.content else ""
    is_json = response.get("Content-Type", "").startswith("application/json")
    return Answer(status=response.status_code, text=text, data=json.loads(text) if text and is_json else None)


def json_answer(status: int, body: dict) -> Answer:
    """An answer made here rather than by an endpoint (an argument error, a held approval)."""
    return Answer(status=status, text=json.dumps(body, separators=(",", ":"), default=str), data=body)


_answer = json_answer


def _environ(
    contract: Contract, path: str, arguments: dict[str, Any], caller: Caller, idempotency_key: str | None
) -> dict[str, Any]:
    host, _, port = caller.host.partition(":")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": contract.method.upper(),
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": host or "localhost",
        "SERVER_PORT": port or ("443" if caller.scheme == "https" else "80"),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": caller.host,
        "HTTP_ACCEPT": "application/json",
        "HTTP_AUTHORIZATION": caller.authorization,
        "wsgi.url_scheme": caller.scheme,
        "wsgi.input": io.BytesIO(b""),
        # Not a header: no HTTP client can put this key into a request's environ.
        VIA_ENVIRON_KEY: Via.MCP,
    }
    for name, value in caller.forwarded:
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    if idempotency_key:
        environ[_IDEMPOTENCY_ENVIRON] = str(idempotency_key)
    if contract.method == "get":
        environ["QUERY_STRING"] = _query_string(arguments)
    else:
        # The fields of the endpoint's query-parameter serializer travel in the query string.
        query = {name: value for name, value in arguments.items() if name in contract.query_arguments}
        environ["QUERY_STRING"] = _query_string(query)
        body = json.dumps({name: value for name, value in arguments.items() if name not in query}).encode()
        environ.update(
            {"CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}
        )
    return environ


def _query_string(arguments: dict[str, Any]) -> str:
    return urlencode(
        [
            (name, _query_value(item))
            for name, value in arguments.items()
            if value is not None
            for item in (value if isinstance(value, list) else [value])
        ]
    )


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)
