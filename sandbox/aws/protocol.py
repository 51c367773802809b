"""Wire-level helpers: which service/action/account a request is, and AWS error shapes per protocol.

The botocore service models are the authority for operation names and HTTP bindings, so the
rest-json/rest-xml action matcher is generated from them instead of being hand-written.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qs, unquote

import botocore.session

# signing name (credential scope) -> botocore service model name, where they differ
_SIGNING_TO_MODEL = {
    "servicequotas": "service-quotas",
    "monitoring": "cloudwatch",
    "elasticloadbalancing": "elbv2",
    "states": "stepfunctions",
    "execute-api": "apigateway",
    "email": "ses",
    "elasticfilesystem": "efs",
    "es": "opensearch",
}

_session_lock = threading.Lock()
_session = None


def _botocore_session() -> Any:
    global _session
    with _session_lock:
        if _session is None:
            _session = botocore.session.get_session()
        return _session


@lru_cache(maxsize=64)
def service_model(model_name: str) -> Any | None:
    try:
        return _botocore_session().get_service_model(model_name)
    except Exception:  # unknown service name: we still pass the request through to moto
        return None


def model_name_for(signing_name: str) -> str:
    return _SIGNING_TO_MODEL.get(signing_name, signing_name)


@dataclass
class _Route:
    name: str
    method: str
    regex: re.Pattern[str]
    query_literals: dict[str, str | None]
    specificity: int
    required_headers: tuple[str, ...] = ()


@lru_cache(maxsize=64)
def _rest_routes(model_name: str) -> list[_Route]:
    model = service_model(model_name)
    routes: list[_Route] = []
    if model is None:
        return routes
    for op_name in model.operation_names:
        op = model.operation_model(op_name)
        http = op.http
        # e.g. CopyObject and PutObject share PUT /{Bucket}/{Key+}; the required copy-source header decides
        headers: tuple[str, ...] = ()
        if op.input_shape is not None:
            headers = tuple(
                str(m.serialization.get("name", n)).lower()
                for n, m in op.input_shape.members.items()
                if m.serialization.get("location") == "header" and n in op.input_shape.required_members
            )
        uri: str = http.get("requestUri", "/")
        path, _, query = uri.partition("?")
        literals: dict[str, str | None] = {}
        for part in filter(None, query.split("&")):
            k, eq, v = part.partition("=")
            literals[k] = v if eq else None
        pattern = ""
        specificity = 0
        for piece in re.split(r"(\{[^}]+\})", path):
            if piece.startswith("{"):
                label = piece[1:-1]
                greedy = label.endswith("+")
                label = re.sub(r"\W", "_", label.rstrip("+"))
                pattern += f"(?P<{label}>.+)" if greedy else f"(?P<{label}>[^/]+)"
            else:
                pattern += re.escape(piece)
                specificity += len(piece)
        pattern = pattern.rstrip("/") if pattern != "/" else pattern
        regex = re.compile("^" + pattern + "/?$")
        routes.append(
            _Route(
                op_name,
                http.get("method", "POST"),
                regex,
                literals,
                specificity + 10 * len(literals) + 10 * len(headers),
                headers,
            )
        )
    routes.sort(key=lambda r: -r.specificity)
    return routes


def match_rest(
    model_name: str, method: str, raw_path: str, query: dict[str, list[str]], headers: dict[str, str] | None = None
) -> tuple[str, dict[str, str]] | None:
    for route in _rest_routes(model_name):
        if route.method != method:
            continue
        if route.required_headers and not all(h in (headers or {}) for h in route.required_headers):
            continue
        m = route.regex.match(raw_path)
        if not m:
            continue
        if any(k not in query or (v is not None and query[k][0] != v) for k, v in route.query_literals.items()):
            continue
        return route.name, {k: unquote(v) for k, v in m.groupdict().items()}
    return None


@dataclass
class AwsRequest:
    method: str
    raw_path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    service: str = "unknown"  # signing name as in the credential scope ("eks", "sagemaker", ...)
    model_name: str = "unknown"
    protocol: str = "json"
    region: str = "us-east-1"
    access_key: str = ""
    action: str = "Unknown"
    path_params: dict[str, str] = field(default_factory=dict)
    _json: Any = None

    @property
    def params(self) -> dict[str, Any]:
        """JSON body (json / rest-json protocols) merged with path and query parameters."""
        if self._json is None:
            try:
                self._json = json.loads(self.body or b"{}") or {}
            except ValueError:
                self._json = {}
        return self._json

    def q(self, name: str) -> str | None:
        v = self.query.get(name)
        return v[0] if v else None


_CRED_RE = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")


def parse_request(environ: dict[str, Any], body: bytes, default_region: str) -> AwsRequest:
    raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
    raw_path, _, raw_query = raw_uri.partition("?")
    if not raw_query:
        raw_query = environ.get("QUERY_STRING", "")
    headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
    if environ.get("CONTENT_TYPE"):
        headers["content-type"] = environ["CONTENT_TYPE"]
    req = AwsRequest(
        method=environ.get("REQUEST_METHOD", "GET"),
        raw_path=raw_path,
        query=parse_qs(raw_query, keep_blank_values=True),
        headers=headers,
        body=body,
        region=default_region,
    )
    auth = headers.get("authorization", "")
    m = _CRED_RE.search(auth)
    if m:
        req.access_key, req.region, req.service = m.group(1), m.group(2), m.group(3)
    elif req.q("X-Amz-Credential"):  # presigned URL
        parts = req.q("X-Amz-Credential").split("/")  # type: ignore[union-attr]
        if len(parts) >= 4:
            req.access_key, req.region, req.service = parts[0], parts[2], parts[3]
    req.model_name = model_name_for(req.service)
    model = service_model(req.model_name)
    req.protocol = model.protocol if model is not None else "json"
    target = headers.get("x-amz-target")
    form: dict[str, list[str]] = {}
    if "x-www-form-urlencoded" in headers.get("content-type", "") and body:
        form = parse_qs(body.decode("utf-8", "replace"))
    if target:
        req.action = target.rsplit(".", 1)[-1]
    elif "Action" in form or "Action" in req.query:
        req.action = (form.get("Action") or req.query["Action"])[0]
    elif m2 := re.match(r"^/service/[^/]+/operation/([^/]+)$", raw_path):
        req.action = m2.group(1)
    elif req.protocol in ("rest-json", "rest-xml"):
        hit = match_rest(req.model_name, req.method, raw_path, req.query, headers)
        if hit:
            req.action, req.path_params = hit
    return req


class AwsError(Exception):
    """An error that is rendered in the protocol of the request (code as botocore will parse it)."""

    def __init__(self, code: str, message: str, status: int = 400, extra: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.message, self.status, self.extra = code, message, status, extra or {}


Response = tuple[int, list[tuple[str, str]], bytes]


def json_response(obj: Any, status: int = 200, protocol: str = "json") -> Response:
    ctype = "application/x-amz-json-1.1" if protocol == "json" else "application/json"
    body = json.dumps(obj, default=str).encode()
    return status, [("Content-Type", ctype), ("x-amzn-RequestId", str(uuid.uuid4()))], body


def error_response(protocol: str, err: AwsError) -> Response:
    rid = str(uuid.uuid4())
    if protocol in ("json", "rest-json"):
        body = {"__type": err.code, "message": err.message, "Message": err.message, **err.extra}
        return (
            err.status,
            [
                ("Content-Type", "application/x-amz-json-1.1" if protocol == "json" else "application/json"),
                ("x-amzn-RequestId", rid),
                ("x-amzn-ErrorType", err.code),
            ],
            json.dumps(body).encode(),
        )
    if protocol == "ec2":
        xml = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{err.code}</Code>'
            f"<Message>{_x(err.message)}</Message></Error></Errors><RequestID>{rid}</RequestID></Response>"
        )
        return err.status, [("Content-Type", "text/xml")], xml.encode()
    if protocol == "rest-xml":
        xml = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{err.code}</Code>'
            f"<Message>{_x(err.message)}</Message><RequestId>{rid}</RequestId></Error>"
        )
        return err.status, [("Content-Type", "application/xml")], xml.encode()
    # query (iam, sts, cloudformation, ...)
    kind = "Sender" if err.status < 500 else "Receiver"
    xml = (
        f"<ErrorResponse><Error><Type>{kind}</Type><Code>{err.code}</Code><Message>{_x(err.message)}</Message>"
        f"</Error><RequestId>{rid}</RequestId></ErrorResponse>"
    )
    return err.status, [("Content-Type", "text/xml")], xml.encode()


def _x(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Real throttling / server error codes per protocol (botocore's retry handler keys on these codes).
def throttle_error(protocol: str, service: str) -> AwsError:
    if protocol == "ec2":
        return AwsError("RequestLimitExceeded", "Request limit exceeded.", 503)
    if protocol == "rest-xml":
        return AwsError("SlowDown", "Please reduce your request rate.", 503)
    if protocol == "query":
        return AwsError("Throttling", "Rate exceeded", 400)
    if service == "eks":
        return AwsError("ThrottlingException", "Rate exceeded", 429)
    return AwsError("ThrottlingException", "Rate exceeded", 400)


def server_error(protocol: str, service: str, status: int = 500) -> AwsError:
    if status == 503:
        code = (
            "ServiceUnavailableException"
            if service == "eks"
            else ("Unavailable" if protocol == "ec2" else "ServiceUnavailable")
        )
        return AwsError(code, "Service is unavailable. Please try again later.", 503)
    if service == "eks":
        return AwsError("ServerException", "An internal error occurred. Please try again.", 500)
    if protocol == "ec2":
        return AwsError("InternalError", "An internal error has occurred.", 500)
    return AwsError(
        "InternalFailure", "The request processing has failed because of an unknown error, exception or failure.", 500
    )
