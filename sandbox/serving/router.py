"""Routers in front of inference replicas.

`Router` is the SGLang router (`python -m sglang_router.launch_router`): it discovers workers by
label selector (the hub hands it the ready pods it would see from its Kubernetes watch), picks one
per request by policy (cache_aware, round_robin, random, power_of_two) and exposes its Prometheus
metrics on --prometheus-port with the names sgl-router registers (`sgl_router_requests_total{route}`,
`sgl_router_running_requests{worker}`, `sgl_router_processed_requests_total{worker}`, ...).
`sgl_router_job_queue_depth` is there too and, as in the real router, counts control-plane jobs
(worker add/remove), not waiting requests.

The HyperPod inference operator's intelligent router uses the same machinery with its strategies
(prefixaware, kvaware, session, roundrobin); it serves no metrics.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from .forward import forward
from .loop import IoLoop

_DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0]
ROUTED = ("/v1/chat/completions", "/v1/completions", "/generate", "/invocations")


@dataclass
class Worker:
    url: str  # as the router sees it: http://<pod ip>:<port>
    port: int  # the loopback port of the simulated process
    pod: str
    running: int = 0
    processed: int = 0
    texts: deque[str] = field(default_factory=lambda: deque(maxlen=512))


class Router:
    """Routing state, counters and the policy."""

    def __init__(self, io: IoLoop, policy: str, flavour: str = "sglang", session_header: str = "x-user-id") -> None:
        self.io = io
        self.policy = policy
        self.flavour = flavour
        self.session_header = session_header
        self.workers: dict[str, Worker] = {}
        self._rr = 0
        self.requests: dict[str, int] = {}
        self.errors: dict[tuple[str, str], int] = {}
        self.durations: dict[str, list[float]] = {}
        self.decisions: dict[str, int] = {}
        self.cache_hits = 0
        self.cache_misses = 0
        self.discovery_updates = 0
        self.access_log: deque[str] = deque(maxlen=2000)

    def set_workers(self, found: list[tuple[str, int, str]]) -> None:
        """The ready workers the router's discovery sees now: (url, loopback port, pod)."""
        # a new dict, swapped in at once: requests on the I/O thread read it while the tick writes
        current = self.workers
        workers: dict[str, Worker] = {}
        for url, port, pod in found:
            w = current.get(url) or Worker(url, port, pod)
            w.port = port
            workers[url] = w
            if url not in current:
                self.access_log.append(f"INFO sgl_router::service_discovery: Adding pod: {pod} | url: {url}")
        for u in current:
            if u not in workers:
                self.access_log.append(f"INFO sgl_router::service_discovery: Removing pod worker {u}")
        if set(workers) != set(current):
            self.discovery_updates += 1
        self.workers = workers

    # ------------------------------------------------------------ policy

    def pick(self, text: str, headers: Any) -> Worker | None:
        ws = sorted(self.workers.values(), key=lambda w: w.url)
        if not ws:
            return None
        p = self.policy
        if p in ("round_robin", "roundrobin"):
            self._rr += 1
            return ws[self._rr % len(ws)]
        if p == "random":
            return random.choice(ws)
        if p == "power_of_two":
            a, b = random.sample(ws, 2) if len(ws) > 1 else (ws[0], ws[0])
            return a if a.running <= b.running else b
        if p == "session":
            key = headers.get(self.session_header) or headers.get("x-session-id")
            if key:
                return ws[int(hashlib.sha1(key.encode()).hexdigest(), 16) % len(ws)]
            return min(ws, key=lambda w: w.running)
        # cache_aware / prefixaware / kvaware: the worker that holds the longest prefix, unless
        # the load is out of balance (then the least loaded one, as sgl-router does)
        loads = [w.running for w in ws]
        if max(loads) - min(loads) > 32 and max(loads) > 1.1 * min(loads):
            return min(ws, key=lambda w: w.running)
        best, best_len = None, 0
        for w in ws:
            n = max((_common(text, t) for t in w.texts), default=0)
            if n > best_len:
                best, best_len = w, n
        if best is not None and text and best_len / len(text) >= 0.5:
            self.cache_hits += 1
            return best
        self.cache_misses += 1
        return min(ws, key=lambda w: (w.running, len(w.texts)))

    # ------------------------------------------------------------ HTTP

    def app(self) -> web.Application:
        app = web.Application(client_max_size=32 * 1024 * 1024)

        async def route(request: web.Request) -> web.StreamResponse:
            path = request.path
            started = time.monotonic()
            self.requests[path] = self.requests.get(path, 0) + 1
            body = await request.read()
            text = _prompt_text(body)
            w = self.pick(text, request.headers)
            if w is None:
                self.errors[(path, "no_workers")] = self.errors.get((path, "no_workers"), 0) + 1
                return web.Response(status=503, text="No available workers")
            self.decisions[f"{self.policy}|{w.url}"] = self.decisions.get(f"{self.policy}|{w.url}", 0) + 1
            w.texts.append(text)
            w.running += 1
            try:
                return await forward(self.io.session(), request, w.port, path, body)
            except aiohttp.ClientError as e:
                self.errors[(path, "request_failed")] = self.errors.get((path, "request_failed"), 0) + 1
                return web.Response(status=502, text=f"Failed to send request to worker {w.url}: {e}")
            finally:
                w.running -= 1
                w.processed += 1
                self.durations.setdefault(path, []).append(time.monotonic() - started)
                del self.durations[path][:-5000]

        async def health(request: web.Request) -> web.Response:
            return web.Response(text="OK")

        async def models(request: web.Request) -> web.StreamResponse:
            w = next(iter(sorted(self.workers.values(), key=lambda x: x.url)), None)  # not a routing decision
            if w is None:
                return web.Response(status=503, text="No available workers")
            try:
                return await forward(self.io.session(), request, w.port, "/v1/models", b"")
            except aiohttp.ClientError as e:
                return web.Response(status=502, text=f"Failed to send request to worker {w.url}: {e}")

        async def list_workers(request: web.Request) -> web.Response:
            return web.json_response({"urls": sorted(self.workers)})

        for path in ROUTED:
            app.router.add_post(path, route)
        app.router.add_get("/health", health)
        app.router.add_get("/liveness", health)
        app.router.add_get("/readiness", health)
        app.router.add_get("/ping", health)
        app.router.add_get("/v1/models", models)
        app.router.add_get("/list_workers", list_workers)
        app.router.add_get("/workers", list_workers)
        return app

    def metrics_app(self) -> web.Application:
        app = web.Application()

        async def metrics(request: web.Request) -> web.Response:
            return web.Response(text=self.metrics_text(), content_type="text/plain")

        app.router.add_get("/metrics", metrics)
        return app

    def metrics_text(self) -> str:
        """metrics-exporter-prometheus text, as sgl-router serves it."""
        out: list[str] = []

        def family(name: str, mtype: str, doc: str, samples: list[tuple[str, float]]) -> None:
            out.append(f"# HELP {name} {doc}")
            out.append(f"# TYPE {name} {mtype}")
            out.extend(f"{name}{labels} {_num(v)}" for labels, v in samples)

        ws = sorted(self.workers.values(), key=lambda w: w.url)
        family(
            "sgl_router_requests_total",
            "counter",
            "Total number of requests by route and method",
            [(f'{{route="{r}"}}', n) for r, n in sorted(self.requests.items())],
        )
        family(
            "sgl_router_request_errors_total",
            "counter",
            "Total number of request errors by route and error type",
            [(f'{{route="{r}",error_type="{t}"}}', n) for (r, t), n in sorted(self.errors.items())],
        )
        family("sgl_router_active_workers", "gauge", "Number of currently active workers", [("", len(ws))])
        family(
            "sgl_router_worker_health",
            "gauge",
            "Worker health status (1=healthy, 0=unhealthy)",
            [(f'{{worker="{w.url}"}}', 1) for w in ws],
        )
        family(
            "sgl_router_worker_load",
            "gauge",
            "Current load on each worker",
            [(f'{{worker="{w.url}"}}', w.running) for w in ws],
        )
        family(
            "sgl_router_running_requests",
            "gauge",
            "Number of running requests per worker",
            [(f'{{worker="{w.url}"}}', w.running) for w in ws],
        )
        family(
            "sgl_router_processed_requests_total",
            "counter",
            "Total requests processed by each worker",
            [(f'{{worker="{w.url}"}}', w.processed) for w in ws],
        )
        family(
            "sgl_router_policy_decisions_total",
            "counter",
            "Total routing policy decisions by policy and worker",
            [
                (f'{{policy="{k.split("|")[0]}",worker="{k.split("|")[1]}"}}', n)
                for k, n in sorted(self.decisions.items())
            ],
        )
        family("sgl_router_cache_hits_total", "counter", "Total cache hits", [("", self.cache_hits)])
        family("sgl_router_cache_misses_total", "counter", "Total cache misses", [("", self.cache_misses)])
        family(
            "sgl_router_discovery_updates_total",
            "counter",
            "Total service discovery update events",
            [("", self.discovery_updates)],
        )
        family(
            "sgl_router_job_queue_depth",
            "gauge",
            "Current number of pending jobs in the queue (worker management operations)",
            [("", 0)],
        )
        name = "sgl_router_request_duration_seconds"
        out.append(f"# HELP {name} Request duration in seconds by route")
        out.append(f"# TYPE {name} histogram")
        for route, ds in sorted(self.durations.items()):
            for b in _DURATION_BUCKETS:
                out.append(f'{name}_bucket{{route="{route}",le="{b}"}} {sum(1 for d in ds if d <= b)}')
            out.append(f'{name}_bucket{{route="{route}",le="+Inf"}} {len(ds)}')
            out.append(f'{name}_sum{{route="{route}"}} {sum(ds)}')
            out.append(f'{name}_count{{route="{route}"}} {len(ds)}')
        return "\n".join(out) + "\n"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _prompt_text(body: bytes) -> str:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    if isinstance(data.get("messages"), list):
        return "\n".join(str(m.get("content", "")) for m in data["messages"] if isinstance(m, dict))
    return str(data.get("prompt") or data.get("text") or "")
