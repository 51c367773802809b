"""The API server's proxy subresources, the way kube-apiserver resolves and forwards them:

    /api/v1/namespaces/{ns}/services/{[scheme:]name[:port]}/proxy/{path}
    /api/v1/namespaces/{ns}/pods/{[scheme:]name[:port]}/proxy/{path}

A Service is resolved through its Endpoints (ready addresses only, port matched by name; a port
number is first mapped to the port's name), a pod through its IP (no IP: 400 "address not
allowed"). The request then goes to the simulated process listening there (ServingHub), with the
caller's Authorization header removed (the API server consumed it) and the answer streamed back
as it arrives (server-sent events pass through). Nothing is ever sent to a pod or Service IP:
every address is translated to a 127.0.0.1 port first.
"""

from __future__ import annotations

import http.client
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..serving.forward import HOP_BY_HOP as FORWARD_DROPS
from .controllers.base import pod_active
from .errors import ApiError, bad_request, not_found
from .store import Cluster

if TYPE_CHECKING:
    from .api import Request
    from .world import KubeWorld

# (status, body or None, content type, stream or None, extra headers)
Answer = tuple[int, bytes | None, str, Iterator[bytes] | None, list[tuple[str, str]]]

# the API server consumed the caller's credentials: they are not passed on
HOP_BY_HOP = FORWARD_DROPS | {"authorization"}


def is_proxy(segs: list[str]) -> bool:
    return (
        len(segs) >= 7
        and segs[0] == "api"
        and segs[1] == "v1"
        and segs[2] == "namespaces"
        and segs[4] in ("services", "pods")
        and segs[6] == "proxy"
    )


def _unavailable(message: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)


def _split(id_: str) -> tuple[str, str, str]:
    """utilnet.SplitSchemeNamePort: name | name:port | scheme:name:port."""
    parts = id_.split(":")
    if len(parts) == 1:
        return "", parts[0], ""
    if len(parts) == 2:
        return "", parts[0], parts[1]
    if len(parts) == 3 and parts[0] in ("http", "https"):
        return parts[0], parts[1], parts[2]
    raise bad_request(f'invalid request "{id_}"')


def _service_target(c: Cluster, hub: Any, ns: str, id_: str) -> tuple[str, int, int | None]:
    """(address shown in errors, pod port, loopback port or None)."""
    _scheme, name, port = _split(id_)
    svc = c.get("/services", ns, name)
    if svc is None:
        raise not_found("", "services", name)
    if port.isdigit():
        sp = next((p for p in (svc.get("spec") or {}).get("ports") or [] if p.get("port") == int(port)), None)
        if sp is None:
            raise _unavailable(f'no service port {port} found for service "{name}"')
        port = sp.get("name", "")
    ep = c.get("/endpoints", ns, name)
    subsets = [ss for ss in (ep or {}).get("subsets") or [] if ss.get("addresses")]
    if not subsets:
        raise _unavailable(f'no endpoints available for service "{name}"')
    # Only running pods: a finished pod keeps its podIP in status after the CNI handed the address to
    # a new pod, and kube-apiserver proxies to the endpoint's address, not to whichever pod had it first.
    pods = {(p.get("status") or {}).get("podIP"): p for p in c.list("/pods", ns) if pod_active(p)}
    random.shuffle(subsets)
    for ss in subsets:
        for pt in ss.get("ports") or []:
            if pt.get("name", "") != port:
                continue
            addrs = list(ss.get("addresses") or [])
            random.shuffle(addrs)
            for a in addrs:
                pod = pods.get(a.get("ip"))
                if pod is None:
                    continue  # "we only proxy to addresses that are actually pods"
                target = int(pt["port"])
                return f"{a['ip']}:{target}", target, hub.pod_port(c, pod, target) if hub else None
    raise _unavailable(f'no endpoints available for service "{id_}"')


def _pod_target(c: Cluster, hub: Any, ns: str, id_: str) -> tuple[str, int, int | None]:
    _scheme, name, port = _split(id_)
    pod = c.get("/pods", ns, name)
    if pod is None:
        raise not_found("", "pods", name)
    if not port:
        for ct in (pod.get("spec") or {}).get("containers") or []:
            if ct.get("ports"):
                port = str(ct["ports"][0].get("containerPort"))
                break
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        raise bad_request("address not allowed")
    if not port.isdigit():
        named = next(
            (
                p.get("containerPort")
                for ct in pod["spec"].get("containers") or []
                for p in ct.get("ports") or []
                if p.get("name") == port
            ),
            None,
        )
        if named is None:
            raise bad_request(f'invalid pod request "{id_}"')
        port = str(named)
    target = int(port or 80)
    return f"{ip}:{target}", target, hub.pod_port(c, pod, target) if hub else None


def handle(world: KubeWorld, c: Cluster, segs: list[str], req: Request) -> Answer:
    ns, kind, id_ = segs[3], segs[4], segs[5]
    path = "/" + "/".join(segs[7:])
    if req.environ.get("PATH_INFO", "").endswith("/") and not path.endswith("/"):
        path += "/"
    hub = getattr(world, "serving", None)
    with c.lock:  # resolve under the lock, forward without it
        address, _port, loopback = (_service_target if kind == "services" else _pod_target)(c, hub, ns, id_)
    if loopback is None:
        raise _unavailable(f"error trying to reach service: dial tcp {address}: connect: connection refused")
    query = req.environ.get("QUERY_STRING", "")
    headers = {}
    for k, v in req.environ.items():
        if k.startswith("HTTP_"):
            name = k[5:].replace("_", "-").title()
            if name.lower() not in HOP_BY_HOP:
                headers[name] = v
    if req.environ.get("CONTENT_TYPE"):
        headers["Content-Type"] = req.environ["CONTENT_TYPE"]
    headers["X-Forwarded-For"] = req.environ.get("REMOTE_ADDR", "127.0.0.1")
    body = req.raw() if req.method in ("POST", "PUT", "PATCH", "DELETE") else None
    conn = http.client.HTTPConnection("127.0.0.1", loopback, timeout=600)
    try:
        conn.request(req.method, path + (f"?{query}" if query else ""), body=body, headers=headers)
        up = conn.getresponse()
    except OSError as e:
        conn.close()
        raise _unavailable(f"error trying to reach service: dial tcp {address}: {e}")
    out_headers = [(k, v) for k, v in up.getheaders() if k.lower() not in HOP_BY_HOP and k.lower() != "content-type"]
    ctype = up.getheader("Content-Type") or "text/plain"
    if up.getheader("Content-Length") is not None:
        data = up.read()
        conn.close()
        return up.status, data, ctype, None, out_headers
    return up.status, None, ctype, _stream(conn, up), out_headers


def _stream(conn: http.client.HTTPConnection, up: http.client.HTTPResponse) -> Iterator[bytes]:
    try:
        while True:
            chunk = up.read1(65536)
            if not chunk:
                return
            yield chunk
    except OSError:
        return
    finally:
        conn.close()
