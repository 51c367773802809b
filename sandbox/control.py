"""The sandbox control API under /_sandbox (faults, call counts, quotas, health, save).

GET    /_sandbox/health                       -> {"ok": true, ...Sandbox.info()}
GET    /_sandbox/calls[?account=ID]           -> {"calls": {"eks:CreateCluster": 1, ...}}
DELETE /_sandbox/calls[?account=ID]           -> {"calls": {}}
GET    /_sandbox/faults                       -> {"faults": [{"id": 1, "kind": "throttle", ...}]}
POST   /_sandbox/faults   {fault} | [{fault}] -> {"faults": [added...]}   (400 {"error"} when invalid)
DELETE /_sandbox/faults[/ID]                  -> {"faults": [remaining...]}
POST   /_sandbox/quotas   {"account", "service", "quota_code", "value", "region"?} -> {"ok": true}
POST   /_sandbox/accounts/ID/control-plane-role {"external_id": str|null, "principal_account"?}
                                              -> {"role_arn"}  (re)deploy deploy/instantstart-role.yaml there
POST   /_sandbox/speedup  {"speedup": N}      -> {"speedup": N}
POST   /_sandbox/advance  {"seconds": N}?     -> {"moved": timers}  skip N real-world seconds (all if absent)
POST   /_sandbox/save                         -> {"ok": true}
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from sandbox.faults import FaultError

# where callers with credentials moto does not know (the control plane's own) land: the principal
# the control-plane role trusts
DEFAULT_ACCOUNT = "123456789012"

if TYPE_CHECKING:
    from sandbox.server import Sandbox


class ControlApp:
    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            status, obj = self.route(environ)
        except FaultError as e:
            status, obj = 400, {"error": str(e)}
        except (ValueError, KeyError, TypeError) as e:
            status, obj = 400, {"error": f"bad request: {e}"}
        body = json.dumps(obj, default=str).encode()
        start_response(
            f"{status} {'OK' if status < 400 else 'Error'}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        )
        return [body]

    def route(self, environ: dict[str, Any]) -> tuple[int, Any]:
        sb = self.sandbox
        world = sb.world
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "").rstrip("/")
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        body = json.loads(raw) if raw.strip() else {}
        parts = path.split("/")[2:]  # after "", "_sandbox"
        head = parts[0] if parts else ""
        if head in ("", "health", "info"):
            return 200, {"ok": True, **sb.info()}
        if head == "calls":
            if method == "DELETE":
                world.reset_calls(query.get("account"))
                return 200, {"calls": {}}
            return 200, {"calls": world.get_calls(query.get("account"))}
        if head == "faults":
            if method == "POST":
                specs = body if isinstance(body, list) else [body]
                return 200, {"faults": world.faults.add_many(specs)}
            if method == "DELETE":
                if len(parts) > 1:
                    world.faults.remove(int(parts[1]))
                else:
                    world.faults.clear()
                return 200, {"faults": world.faults.list()}
            return 200, {"faults": world.faults.list()}
        if head == "quotas" and method == "POST":
            from sandbox.aws.quotas import set_quota

            with world.lock:
                set_quota(
                    world,
                    body["account"],
                    body.get("region", world.region),
                    body["service"],
                    body["quota_code"],
                    float(body["value"]),
                )
            return 200, {"ok": True}
        if head == "accounts" and len(parts) == 3 and parts[2] == "control-plane-role" and method == "POST":
            from sandbox.aws.sts_trust import CONTROL_PLANE_ROLE, deploy_control_plane_role

            account = parts[1]
            if not account.isdigit() or len(account) != 12:
                raise ValueError(f"{account!r} is not a 12-digit account id")
            with world.lock:
                deploy_control_plane_role(
                    world, account, str(body.get("principal_account") or DEFAULT_ACCOUNT), body.get("external_id")
                )
            return 200, {"role_arn": f"arn:aws:iam::{account}:role/{CONTROL_PLANE_ROLE}"}
        if head == "speedup" and method == "POST":
            world.speedup = float(body["speedup"])
            if sb.kube is not None and hasattr(sb.kube, "speedup"):
                sb.kube.speedup = world.speedup
            return 200, {"speedup": world.speedup}
        if head == "advance" and method == "POST":
            secs = body.get("seconds")
            return 200, {"moved": world.advance(None if secs is None else float(secs))}
        if head == "save" and method == "POST":
            sb.save()
            return 200, {"ok": True}
        return 404, {"error": f"no such control endpoint {method} {path}"}
