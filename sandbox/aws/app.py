"""WSGI front of the AWS half: count the call, apply faults, answer from our extensions (the
registry in sandbox/aws/handlers.py) or from moto."""

from __future__ import annotations

import io
import logging
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from sandbox.aws.handlers import HANDLERS, Ctx
from sandbox.aws.protocol import (
    AwsError,
    Response,
    error_response,
    parse_request,
    server_error,
    throttle_error,
)
from sandbox.aws.world import World

log = logging.getLogger("sandbox.aws")

_ACCOUNT_OF: dict[str, str] = {}  # access key -> account; moto's lookup scans every account


def _account_for(access_key: str) -> str:
    from moto.iam.models import get_account_id_from

    if not access_key:
        return "123456789012"
    account = _ACCOUNT_OF.get(access_key)
    if account is None:
        account = get_account_id_from(access_key)
        if account != "123456789012" and len(_ACCOUNT_OF) < 100_000:
            _ACCOUNT_OF[access_key] = account
    return account


class AwsApp:
    def __init__(self, world: World):
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        # importing the extension modules registers their handlers
        from sandbox.aws import (  # noqa: F401
            cloudformation_ext,
            ec2_ext,
            eks_access,
            eks_addons,
            eks_clusters,
            eks_tags,
            eks_updates,
            hyperpod,
            iam_ext,
            quotas,
            sagemaker_misc,
            sagemaker_mlflow,
            sts_trust,
        )

        self.world = world
        self.moto_app = DomainDispatcherApplication(create_backend_app)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        status, headers, body = self.handle(environ)
        given = next((str(v) for k, v in headers if k.lower() == "content-length"), None)
        headers = [(k, v) for k, v in headers if k.lower() not in ("content-length", "transfer-encoding")]
        if environ.get("REQUEST_METHOD") == "HEAD":
            # a HEAD answer has no body and the length a GET's would have (HeadObject's ContentLength)
            start_response(f"{status} {_REASONS.get(status, 'OK')}", headers + [("Content-Length", given or "0")])
            return [b""]
        start_response(f"{status} {_REASONS.get(status, 'OK')}", headers + [("Content-Length", str(len(body)))])
        return [body]

    def handle(self, environ: dict[str, Any]) -> Response:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        req = parse_request(environ, body, self.world.region)
        world = self.world
        with world.lock:
            account = _account_for(req.access_key)
            name = req.model_name  # the boto3 client name ("eks", "service-quotas", ...)
            world.count_call(account, name, req.action)
            fault = world.faults.take("throttle", service=name, action=req.action, account=account)
            if fault:
                return error_response(req.protocol, throttle_error(req.protocol, req.service))
            fault = world.faults.take("server_error", service=name, action=req.action, account=account)
            if fault:
                return error_response(
                    req.protocol, server_error(req.protocol, req.service, int(fault.get("status", 500)))
                )
            handler = HANDLERS.get((req.service, req.action))
            ctx = Ctx(world, req, account, environ, self.moto_app)
            try:
                if handler is not None:
                    resp = handler(ctx)
                    if resp is not None:
                        if req.method != "GET" and not req.action.startswith(("Describe", "List", "Get", "Search")):
                            world.touch()
                        return resp
                resp = ctx.moto()
                if resp[0] < 300 and not req.action.startswith(("Describe", "List", "Get")):
                    world.touch()
                return resp
            except AwsError as e:
                return error_response(req.protocol, e)
            except Exception:
                log.error("sandbox AWS handler failed for %s:%s\n%s", req.service, req.action, traceback.format_exc())
                return error_response(req.protocol, server_error(req.protocol, req.service))


_REASONS = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
