"""prometheus.yml → targets (static_configs and kubernetes_sd_configs with roles pod, endpoints and
service, then relabel_configs), and the scrape loop that pulls /metrics over HTTP into the TSDB.

Discovery reads cluster objects, so it runs in the controller tick (`discover`); scraping runs on
the serving I/O loop. Intervals are simulated time (divided by the speedup, at least 50 ms real).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from ...kube.store import Cluster
from ..loop import IoLoop
from .tsdb import TSDB, Labels

Obj = dict[str, Any]
Resolver = Callable[[str, int, str], int | None]  # (host, port, client namespace) -> loopback port
MIN_INTERVAL = 0.05
_SANITIZE = re.compile(r"[^a-zA-Z0-9_]")


def _duration(s: Any, default: float) -> float:
    if s is None:
        return default
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(s).strip())
    if not m:
        return default
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


@dataclass
class Target:
    """One scrape target after relabeling."""

    job: str
    url_path: str
    labels: dict[str, str]
    address: str
    port: int | None  # loopback port of the simulated process, None when nothing listens there
    interval: float  # simulated seconds
    discovered: dict[str, str] = field(default_factory=dict)
    health: str = "unknown"
    last_error: str = ""
    last_scrape: float = 0.0
    duration: float = 0.0
    seen: set[Labels] = field(default_factory=set)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.job, self.address, self.url_path)


def parse_config(text: str) -> tuple[Obj, str]:
    try:
        cfg = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        return {}, f"parsing YAML file prometheus.yml: {e}"
    if not isinstance(cfg, dict):
        return {}, "parsing YAML file prometheus.yml: not a mapping"
    return cfg, ""


def relabel(labels: dict[str, str], rules: list[Obj]) -> dict[str, str] | None:
    """Apply relabel_configs; None when the target is dropped."""
    out = dict(labels)
    for r in rules or []:
        action = str(r.get("action", "replace")).lower()
        sep = str(r.get("separator", ";"))
        src = sep.join(out.get(s, "") for s in r.get("source_labels") or [])
        rx = re.compile(f"^(?:{r.get('regex', '(.*)')})$")
        repl = str(r.get("replacement", "$1"))
        py_repl = re.sub(r"\$\{?(\w+)\}?", lambda m: f"\\g<{m.group(1)}>", repl)
        if action == "keep":
            if not rx.match(src):
                return None
        elif action == "drop":
            if rx.match(src):
                return None
        elif action == "replace":
            m = rx.match(src)
            if m and r.get("target_label"):
                target = m.expand(re.sub(r"\$\{?(\w+)\}?", lambda x: f"\\g<{x.group(1)}>", str(r["target_label"])))
                value = m.expand(py_repl)
                if value:
                    out[target] = value
                else:
                    out.pop(target, None)
        elif action == "labelmap":
            for k, v in list(out.items()):
                m = rx.match(k)
                if m:
                    out[m.expand(py_repl)] = v
        elif action == "labeldrop":
            out = {k: v for k, v in out.items() if not rx.match(k)}
        elif action == "labelkeep":
            out = {k: v for k, v in out.items() if rx.match(k)}
        elif action in ("lowercase", "uppercase") and r.get("target_label"):
            out[str(r["target_label"])] = src.lower() if action == "lowercase" else src.upper()
    return out


def _meta(prefix: str, d: dict[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (d or {}).items():
        name = _SANITIZE.sub("_", k)
        out[f"{prefix}_{name}"] = str(v)
        out[f"{prefix}present_{name}"] = "true"
    return out


def _pod_targets(c: Cluster, namespaces: list[str] | None) -> list[dict[str, str]]:
    out = []
    for p in c.list("/pods"):
        ns = p["metadata"]["namespace"]
        if namespaces and ns not in namespaces:
            continue
        st = p.get("status") or {}
        ip = st.get("podIP")
        if not ip or st.get("phase") in ("Succeeded", "Failed"):
            continue
        ready = any(x.get("type") == "Ready" and x.get("status") == "True" for x in st.get("conditions") or [])
        owner = next((r for r in p["metadata"].get("ownerReferences") or [] if r.get("controller")), {})
        base = {
            "__meta_kubernetes_namespace": ns,
            "__meta_kubernetes_pod_name": p["metadata"]["name"],
            "__meta_kubernetes_pod_ip": ip,
            "__meta_kubernetes_pod_uid": p["metadata"]["uid"],
            "__meta_kubernetes_pod_node_name": (p.get("spec") or {}).get("nodeName", ""),
            "__meta_kubernetes_pod_phase": st.get("phase", ""),
            "__meta_kubernetes_pod_ready": "true" if ready else "false",
            "__meta_kubernetes_pod_controller_kind": owner.get("kind", ""),
            "__meta_kubernetes_pod_controller_name": owner.get("name", ""),
        }
        base.update(_meta("__meta_kubernetes_pod_label", p["metadata"].get("labels")))
        base.update(_meta("__meta_kubernetes_pod_annotation", p["metadata"].get("annotations")))
        for ct in (p.get("spec") or {}).get("containers") or []:
            ports = ct.get("ports") or []
            for port in ports or [None]:
                t = dict(base, __meta_kubernetes_pod_container_name=ct.get("name", ""))
                if port:
                    t["__address__"] = f"{ip}:{port.get('containerPort')}"
                    t["__meta_kubernetes_pod_container_port_number"] = str(port.get("containerPort"))
                    t["__meta_kubernetes_pod_container_port_name"] = str(port.get("name", ""))
                    t["__meta_kubernetes_pod_container_port_protocol"] = str(port.get("protocol", "TCP"))
                else:
                    t["__address__"] = ip
                out.append(t)
    return out


def _service_meta(svc: Obj) -> dict[str, str]:
    out = {
        "__meta_kubernetes_namespace": svc["metadata"]["namespace"],
        "__meta_kubernetes_service_name": svc["metadata"]["name"],
        "__meta_kubernetes_service_type": (svc.get("spec") or {}).get("type", "ClusterIP"),
        "__meta_kubernetes_service_cluster_ip": (svc.get("spec") or {}).get("clusterIP", ""),
    }
    out.update(_meta("__meta_kubernetes_service_label", svc["metadata"].get("labels")))
    out.update(_meta("__meta_kubernetes_service_annotation", svc["metadata"].get("annotations")))
    return out


def _endpoint_targets(c: Cluster, namespaces: list[str] | None) -> list[dict[str, str]]:
    out = []
    pods_by_ip = {
        (p.get("status") or {}).get("podIP"): p for p in c.list("/pods") if (p.get("status") or {}).get("podIP")
    }
    for svc in c.list("/services"):
        ns = svc["metadata"]["namespace"]
        if namespaces and ns not in namespaces:
            continue
        ep = c.get("/endpoints", ns, svc["metadata"]["name"])
        if ep is None:
            continue
        meta = _service_meta(svc)
        meta["__meta_kubernetes_endpoints_name"] = svc["metadata"]["name"]
        for ss in ep.get("subsets") or []:
            for ready, addrs in (("true", ss.get("addresses") or []), ("false", ss.get("notReadyAddresses") or [])):
                for a in addrs:
                    for pt in ss.get("ports") or []:
                        t = dict(meta)
                        t["__address__"] = f"{a.get('ip')}:{pt.get('port')}"
                        t["__meta_kubernetes_endpoint_port_name"] = str(pt.get("name", ""))
                        t["__meta_kubernetes_endpoint_port_protocol"] = str(pt.get("protocol", "TCP"))
                        t["__meta_kubernetes_endpoint_ready"] = ready
                        t["__meta_kubernetes_endpoint_address_target_kind"] = "Pod"
                        pod = pods_by_ip.get(a.get("ip"))
                        if pod is not None:
                            t["__meta_kubernetes_pod_name"] = pod["metadata"]["name"]
                            t["__meta_kubernetes_pod_ip"] = a.get("ip", "")
                            t.update(_meta("__meta_kubernetes_pod_label", pod["metadata"].get("labels")))
                            t.update(_meta("__meta_kubernetes_pod_annotation", pod["metadata"].get("annotations")))
                        out.append(t)
    return out


def _service_targets(c: Cluster, namespaces: list[str] | None) -> list[dict[str, str]]:
    out = []
    for svc in c.list("/services"):
        ns = svc["metadata"]["namespace"]
        if namespaces and ns not in namespaces:
            continue
        for pt in (svc.get("spec") or {}).get("ports") or []:
            t = _service_meta(svc)
            t["__address__"] = f"{svc['metadata']['name']}.{ns}.svc:{pt.get('port')}"
            t["__meta_kubernetes_service_port_name"] = str(pt.get("name", ""))
            t["__meta_kubernetes_service_port_number"] = str(pt.get("port"))
            out.append(t)
    return out


def discover(c: Cluster, cfg: Obj, resolver: Resolver, own_namespace: str) -> list[Target]:
    """Every target of every scrape config, relabeled and resolved to loopback ports."""
    glob = cfg.get("global") or {}
    default_interval = _duration(glob.get("scrape_interval"), 60.0)
    targets: list[Target] = []
    for sc in cfg.get("scrape_configs") or []:
        if not isinstance(sc, dict) or not sc.get("job_name"):
            continue
        job = str(sc["job_name"])
        interval = _duration(sc.get("scrape_interval"), default_interval)
        candidates: list[dict[str, str]] = []
        for st in sc.get("static_configs") or []:
            for addr in st.get("targets") or []:
                candidates.append(
                    {"__address__": str(addr), **{str(k): str(v) for k, v in (st.get("labels") or {}).items()}}
                )
        for sd in sc.get("kubernetes_sd_configs") or []:
            role = sd.get("role", "pod")
            names = ((sd.get("namespaces") or {}).get("names")) or None
            if (sd.get("namespaces") or {}).get("own_namespace"):
                names = (names or []) + [own_namespace]
            fn = {"pod": _pod_targets, "endpoints": _endpoint_targets, "service": _service_targets}.get(role)
            if fn is not None:
                candidates.extend(fn(c, names))
        for cand in candidates:
            cand.setdefault("__metrics_path__", str(sc.get("metrics_path", "/metrics")))
            cand.setdefault("__scheme__", str(sc.get("scheme", "http")))
            cand.setdefault("job", job)
            final = relabel(cand, sc.get("relabel_configs") or [])
            if final is None:
                continue
            address = final.get("__address__", "")
            path = final.get("__metrics_path__", "/metrics")
            labels = {k: v for k, v in final.items() if not k.startswith("__")}
            labels.setdefault("instance", address)
            host, _, port = address.rpartition(":")
            if not host:
                host, port = address, "80"
            lp = resolver(host, int(port) if port.isdigit() else 80, own_namespace)
            targets.append(Target(job, path, labels, address, lp, interval, discovered=cand))
    return targets


class Prometheus:
    """One simulated Prometheus server."""

    def __init__(self, io: IoLoop, speedup: float) -> None:
        self.io = io
        self.speedup = speedup
        self.db = TSDB()
        self.targets: dict[tuple[str, str, str], Target] = {}
        self.config_error = ""
        self.started = time.time()
        self._task: asyncio.Task[Any] | None = None

    def set_targets(self, targets: list[Target]) -> None:
        """Called from the tick: keep scrape state of targets that stay, mark the rest stale."""
        new = {t.key: t for t in targets}
        now = time.time()
        for key, old in list(self.targets.items()):
            if key not in new:
                for labels in old.seen:
                    self.db.mark_stale(labels, now)
                self.db.mark_stale(_with(old.labels, "up"), now)
            else:
                cur = new[key]
                cur.health, cur.last_error, cur.last_scrape = old.health, old.last_error, old.last_scrape
                cur.duration, cur.seen = old.duration, old.seen
        self.targets = new

    def start(self) -> None:
        if self._task is None:
            self._task = self.io.submit(self._run())  # type: ignore[assignment]

    def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()

    async def _run(self) -> None:
        while True:
            now = time.time()
            due = [
                t
                for t in list(self.targets.values())
                if now - t.last_scrape >= max(MIN_INTERVAL, t.interval / self.speedup)
            ]
            if due:
                await asyncio.gather(*(self._scrape(t) for t in due), return_exceptions=True)
            await asyncio.sleep(MIN_INTERVAL / 2)

    async def _scrape(self, t: Target) -> None:
        started = time.time()
        t.last_scrape = started
        samples: list[tuple[Labels, float]] = []
        try:
            if t.port is None:
                host = t.address.rpartition(":")[0] or t.address
                raise ConnectionError(
                    f'Get "http://{t.address}{t.url_path}": dial tcp {t.address}: connect: connection refused'
                    if host[:1].isdigit()
                    else f'Get "http://{t.address}{t.url_path}": dial tcp: lookup {host}: no such host'
                )
            async with self.io.session().get(
                f"http://127.0.0.1:{t.port}{t.url_path}", timeout=aiohttp.ClientTimeout(total=10)
            ) as resp:
                if resp.status != 200:
                    raise ConnectionError(f"server returned HTTP status {resp.status} {resp.reason}")
                text = await resp.text()
            for fam in text_string_to_metric_families(text):
                for s in fam.samples:
                    if s.name.endswith("_created"):
                        continue
                    labels = {**s.labels, **t.labels, "__name__": s.name}
                    samples.append((frozenset(labels.items()), float(s.value)))
            t.health, t.last_error = "up", ""
        except (TimeoutError, aiohttp.ClientError, ConnectionError, OSError, ValueError) as e:
            t.health, t.last_error = "down", str(e) or type(e).__name__
        now = time.time()
        t.duration = now - started
        seen = set()
        for labels, v in samples:
            self.db.append(labels, now, v)
            seen.add(labels)
        for labels in t.seen - seen:
            self.db.mark_stale(labels, now)
        t.seen = seen
        self.db.append(_with(t.labels, "up"), now, 1.0 if t.health == "up" else 0.0)
        self.db.append(_with(t.labels, "scrape_duration_seconds"), now, t.duration)
        self.db.append(_with(t.labels, "scrape_samples_scraped"), now, float(len(samples)))


def _with(labels: dict[str, str], name: str) -> Labels:
    return frozenset({**labels, "__name__": name}.items())
