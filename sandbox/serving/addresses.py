"""In-cluster names → objects, as cluster DNS and kube-proxy see them: a Service by DNS name or
ClusterIP, the ready pods behind one of its ports, and files that ConfigMap/Secret volumes put in a
container."""

from __future__ import annotations

import base64
import posixpath
from typing import Any

from ..kube.store import Cluster

Obj = dict[str, Any]


def service_named(c: Cluster, host: str, namespace: str) -> Obj | None:
    for svc in c.list("/services"):
        if (svc.get("spec") or {}).get("clusterIP") == host:
            return svc
    parts = host.split(".")
    if len(parts) >= 3 and parts[2] == "svc":
        return c.get("/services", parts[1], parts[0])
    if len(parts) == 2:
        return c.get("/services", parts[1], parts[0])
    if len(parts) == 1:
        return c.get("/services", namespace, parts[0])
    return None


def service_backends(c: Cluster, svc: Obj, port: int | str) -> list[tuple[Obj, int]]:
    """Ready pods behind a Service port (by number or name) and the container port each serves it on."""
    sp = next(
        (p for p in (svc.get("spec") or {}).get("ports") or [] if p.get("port") == port or p.get("name") == port),
        None,
    )
    if sp is None:
        return []
    ep = c.get("/endpoints", svc["metadata"]["namespace"], svc["metadata"]["name"]) or {}
    out = []
    by_ip = {(p.get("status") or {}).get("podIP"): p for p in c.list("/pods", svc["metadata"]["namespace"])}
    for ss in ep.get("subsets") or []:
        ports = ss.get("ports") or []
        ep_port = next((x for x in ports if x.get("name", "") == sp.get("name", "")), None)
        if ep_port is None:
            continue
        for a in ss.get("addresses") or []:
            p = by_ip.get(a.get("ip"))
            if p is not None:
                out.append((p, int(ep_port["port"])))
    return out


def mounted_file(c: Cluster, pod: Obj, ct: Obj, path: str) -> str | None:
    """A file that a ConfigMap (or Secret) volume puts at `path` in the container."""
    for m in ct.get("volumeMounts") or []:
        mp = str(m.get("mountPath", "")).rstrip("/")
        if not path.startswith(mp + "/"):
            continue
        rel = path[len(mp) + 1 :]
        vol = next((v for v in pod["spec"].get("volumes") or [] if v.get("name") == m.get("name")), None)
        if vol is None:
            return None
        ns = pod["metadata"]["namespace"]
        if vol.get("configMap"):
            src = c.get("/configmaps", ns, vol["configMap"].get("name", "")) or {}
            data = src.get("data") or {}
            decode = False
            items = vol["configMap"].get("items")
        elif vol.get("secret"):
            src = c.get("/secrets", ns, vol["secret"].get("secretName", "")) or {}
            data = src.get("data") or {}
            decode = True
            items = vol["secret"].get("items")
        else:
            return None
        key = rel
        for it in items or []:
            if it.get("path") == rel:
                key = it.get("key", rel)
        value = data.get(posixpath.basename(key)) if key not in data else data[key]
        if value is None:
            return None
        return base64.b64decode(value).decode() if decode else str(value)
    return None
