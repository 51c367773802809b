"""The HyperPod inference operator's `sidecar-reverse-proxy` container: it listens on 8081 in front
of the model container (load balancers and the Service point at it), answers the health check
path, maps `/invocations` to the endpoint's invocationEndpoint, and exposes the invocation
metrics on 9113 (`model_invocations_total`, `model_errors_total`, `model_concurrent_requests`,
`model_latency_milliseconds`, `model_ttfb_milliseconds`)."""

from __future__ import annotations

import time

import aiohttp
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from .forward import forward
from .loop import IoLoop

PROXY_PORT = 8081
METRICS_PORT = 9113
_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000]


class Sidecar:
    """Proxy state for one pod."""

    def __init__(self, io: IoLoop, model_port: int, invocation_path: str, health_path: str, labels: dict[str, str]):
        self.io = io
        self.model_port = model_port  # loopback port of the model container (set by the hub)
        self.invocation_path = "/" + invocation_path.lstrip("/")
        self.health_path = "/" + health_path.lstrip("/")
        r = self.registry = CollectorRegistry()
        names = list(labels)
        self.invocations = Counter("model_invocations", "Total invocation requests to the model", names, registry=r)
        self.invocations = self.invocations.labels(**labels)
        self.errors = Counter("model_errors", "Total errors during model invocation", names, registry=r)
        self.errors = self.errors.labels(**labels)
        self.concurrent = Gauge("model_concurrent_requests", "Active concurrent model requests", names, registry=r)
        self.concurrent = self.concurrent.labels(**labels)
        self.latency = Histogram(
            "model_latency_milliseconds", "Model invocation latency in milliseconds", names, buckets=_MS, registry=r
        ).labels(**labels)
        self.ttfb = Histogram(
            "model_ttfb_milliseconds", "Model time to first byte in milliseconds", names, buckets=_MS, registry=r
        ).labels(**labels)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=32 * 1024 * 1024)

        async def health(request: web.Request) -> web.Response:
            return web.Response(text="healthy")

        async def proxy(request: web.Request) -> web.StreamResponse:
            path = self.invocation_path if request.path == "/invocations" else request.path
            started = time.monotonic()
            self.invocations.inc()
            self.concurrent.inc()
            try:
                resp = await forward(self.io.session(), request, self.model_port, path)
                if resp.status >= 400:
                    self.errors.inc()
                return resp
            except aiohttp.ClientError:
                self.errors.inc()
                return web.Response(
                    status=502, text="<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html"
                )
            finally:
                ms = (time.monotonic() - started) * 1000
                self.concurrent.dec()
                self.latency.observe(ms)
                self.ttfb.observe(ms)

        app.router.add_get(self.health_path, health)
        if self.health_path != "/ping":
            app.router.add_get("/ping", health)
        app.router.add_route("*", "/{tail:.*}", proxy)
        return app

    def metrics_app(self) -> web.Application:
        app = web.Application()

        async def metrics(request: web.Request) -> web.Response:
            return web.Response(body=generate_latest(self.registry), content_type="text/plain", charset="utf-8")

        app.router.add_get("/metrics", metrics)
        return app
