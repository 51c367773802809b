"""`ServingHub`: every simulated server process of every cluster, kept in step with pod state.

`reconcile(cluster, ctx)` runs in the controller tick (cluster lock held) and only decides; all
I/O (listeners, model checks against S3, scrapes, KEDA's queries) happens on the serving I/O loop
and is picked up by a later tick. A serving container:

  Pending  → marked so the kubelet leaves its readiness to the hub
  Running  → checking (model path / Hugging Face id / GPUs) → loading (~40 s simulated)
           → serving: a listener on 127.0.0.1, container Ready; or it crashes (CrashLoopBackOff)
  gone     → the listener closes

The state lives in the pod's simulation record, so after a sandbox restart running pods get their
listeners back without reloading. `resolve()` turns in-cluster addresses (pod IP, Service DNS name
or ClusterIP, with the port) into loopback ports: the API server proxy, routers, Prometheus and
KEDA reach the simulated processes through it and never touch a non-loopback address.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlparse

import aiohttp
from aiohttp import web

from ..kube.controllers.base import Ctx, pod_active, pod_ready, sim
from ..kube.selectors import match_label_selector_obj
from ..kube.store import Cluster
from . import commands, downloads, openai_app, podstate, startup
from .addresses import mounted_file, service_backends, service_named
from .engine import Engine
from .loop import IoLoop
from .objects import MemoryObjects, ObjectStore
from .observability import AMP_SCRAPE, AMP_URL, OBSERVABILITY_ADDON, amp_value
from .prometheus.api import make_app as prometheus_app
from .prometheus.scrape import Prometheus, discover, parse_config
from .router import Router
from .sidecar import METRICS_PORT, PROXY_PORT, Sidecar

Obj = dict[str, Any]
Key = tuple[str, str, str]  # cluster key, pod uid, container name
ENGINES = ("vllm", "sglang", "lmi")
SIDECAR = "sidecar-reverse-proxy"
DISCOVERY_EVERY = 0.25  # real seconds between Prometheus service-discovery refreshes


@dataclass
class Proc:
    """One simulated process: a container of a pod and its listeners."""

    kind: str
    obj: Any
    apps: dict[int, web.Application]
    ports: dict[int, int] = field(default_factory=dict)  # container port -> loopback port
    runners: list[web.AppRunner] = field(default_factory=list)
    pending: concurrent.futures.Future[Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Poll:
    """A KEDA prometheus trigger's query, polled on the I/O loop."""

    url: str
    query: str
    interval: float
    port: int | None
    result: tuple[float | None, str | None, float] = (None, None, 0.0)
    task: concurrent.futures.Future[Any] | None = None


class ServingHub:
    """Simulated serving processes and the address book that reaches them."""

    def __init__(self, speedup: float, objects: ObjectStore | None = None) -> None:
        self.io = IoLoop()
        self.speedup = float(speedup)
        self.objects: ObjectStore = objects or MemoryObjects()
        self.procs: dict[Key, Proc] = {}
        self.checks: dict[Key, concurrent.futures.Future[Any]] = {}
        self.polls: dict[tuple[str, str, int], Poll] = {}
        self.writes: dict[str, concurrent.futures.Future[Any]] = {}  # download pods' object writes
        self.amp: dict[str, Prometheus] = {}  # per cluster: its Managed Prometheus workspace's data
        self._programs: dict[tuple[str, str], list[tuple[Obj, commands.Program | None]]] = {}
        self._discovered: dict[Key, float] = {}
        # model checks read the object store, whose AWS-side lock must never nest inside a cluster lock
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="sandbox-serving-check")

    # ------------------------------------------------------------ tick

    def _programs_of(self, c: Cluster, pod: Obj) -> list[tuple[Obj, commands.Program | None]]:
        """What each container runs (a pod's containers never change: parsed once per pod)."""
        key = (c.key, pod["metadata"]["uid"])
        progs = self._programs.get(key)
        if progs is None:
            progs = self._programs[key] = [(ct, _program(ct)) for ct in pod["spec"].get("containers") or []]
        return progs

    def reconcile(self, c: Cluster, ctx: Ctx) -> None:
        live: set[Key] = set()
        pods = c.list("/pods")
        by_uid = {p["metadata"]["uid"]: p for p in pods}
        for pod in pods:
            if not (pod.get("spec") or {}).get("nodeName"):
                continue
            phase = (pod.get("status") or {}).get("phase", "Pending")
            progs = self._programs_of(c, pod)
            fetch = next(((ct, p) for ct, p in progs if p is not None and p.kind == "hf-download"), None)
            if fetch is not None:
                s = sim(c, pod)
                if "log" not in s:
                    s.update(log="download", run_s=None)  # it ends when the download does, not on a timer
                if phase == "Running" and pod_active(pod):
                    downloads.reconcile(
                        c, ctx, pod, fetch[0], fetch[1], self.speedup, self.writes, self._pool, self.objects
                    )
                continue
            served = [(ct, p) for ct, p in progs if p is not None]
            if not served:
                continue
            s = sim(c, pod)
            if "serving_containers" not in s:
                # before the kubelet starts it: readiness is the server's, not the kubelet's
                s["serving_containers"] = [ct["name"] for ct, _ in served]
                s.setdefault("log", "serving")
            if phase != "Running" or not pod_active(pod):
                continue
            for ct, prog in served:
                key = (c.key, pod["metadata"]["uid"], ct["name"])
                live.add(key)
                self._container(c, ctx, pod, ct, prog, s.setdefault("serving", {}).setdefault(ct["name"], {}), key)
        for key in [k for k in self.procs if k[0] == c.key and k not in live]:
            self._stop(key)
        for key in [k for k in self.checks if k[0] == c.key and k not in live]:
            self.checks.pop(key).cancel()
        for key in [k for k in self._programs if k[0] == c.key and k[1] not in by_uid]:
            del self._programs[key]
        self._wire(c, by_uid)

    def _container(self, c: Cluster, ctx: Ctx, pod: Obj, ct: Obj, prog: commands.Program, sv: Obj, key: Key) -> None:
        state = sv.get("state")
        spec = commands.serve_spec(ct, prog) if prog.kind in ENGINES else None
        if state is None:
            if spec is None:
                sv["state"] = "starting"
            else:
                sv["state"] = "checking"
                check = startup.plan(c, pod, ct, spec)
                self.checks[key] = self._pool.submit(startup.run, check, self.objects)
            return
        if state == "checking":
            fut = self.checks.get(key)
            if fut is None:  # the sandbox restarted while checking
                sv.pop("state")
                return
            if not fut.done():
                return
            self.checks.pop(key)
            try:
                errors, max_len = fut.result()
            except Exception as e:  # noqa: BLE001 - the store failed: the engine fails to start
                errors, max_len = [f"OSError: {e}"], None
            if errors:
                for line in errors:
                    c.append_log(pod, ct["name"], line)
                restarts = int(sv.get("restarts", 0)) + 1
                wait = podstate.backoff(restarts)
                sv.update(state="backoff", until=ctx.now + wait / self.speedup, restarts=restarts)
                podstate.crash(c, pod, ct["name"], restarts, wait)
                return
            for line in startup.startup_lines(spec, max_len):  # type: ignore[arg-type]
                c.append_log(pod, ct["name"], line)
            sv.update(state="loading", until=ctx.now + startup.LOAD_SECONDS / self.speedup, max_len=max_len)
            return
        if state == "backoff":
            if ctx.now >= float(sv.get("until", 0)):
                podstate.restart(c, pod, ct["name"])
                sv.pop("state")
            return
        if state == "loading":
            if ctx.now >= float(sv.get("until", 0)):
                sv["state"] = "starting"
            return
        proc = self.procs.get(key)
        if proc is None:
            proc = self._make(c, pod, ct, prog, spec, sv)
            if proc is None:
                return
            self.procs[key] = proc
            proc.pending = self.io.submit(self._listen(proc))
            return
        if proc.pending is not None:
            if not proc.pending.done():
                return
            try:
                proc.pending.result()
            except OSError as e:
                c.append_log(pod, ct["name"], f"ERROR: [Errno 98] error while attempting to bind: {e}")
                self._stop(key)
                return
            proc.pending = None
            if state == "starting":
                if spec is not None:
                    for line in startup.ready_lines(spec, spec.port):
                        c.append_log(pod, ct["name"], line)
                sv["state"] = "serving"
            fresh = c.get("/pods", pod["metadata"]["namespace"], pod["metadata"]["name"]) or pod
            podstate.set_ready(c, fresh, True, {ct["name"]})

    def _make(
        self, c: Cluster, pod: Obj, ct: Obj, prog: commands.Program, spec: commands.ServeSpec | None, sv: Obj
    ) -> Proc | None:
        ip = (pod.get("status") or {}).get("podIP", "")
        if spec is not None:
            engine = Engine(spec, sv.get("max_len"), ip)
            return Proc("engine", engine, {spec.port: openai_app.make_app(engine)})
        if prog.kind == "router":
            rs = commands.router_spec(prog)
            router = Router(self.io, rs.policy)
            return Proc(
                "router", router, {rs.port: router.app(), rs.metrics_port: router.metrics_app()}, meta={"spec": rs}
            )
        if prog.kind == "hprouter":
            rs, header = commands.hyperpod_router_spec(prog)
            router = Router(self.io, rs.policy, flavour="hyperpod", session_header=header)
            return Proc("router", router, {rs.port: router.app()}, meta={"spec": rs})
        if prog.kind == "prometheus":
            prom = Prometheus(self.io, self.speedup)
            listen = prog.opt("--web.listen-address", default=":9090") or ":9090"
            port = int(listen.rpartition(":")[2] or 9090)
            prom.start()
            return Proc(
                "prometheus",
                prom,
                {port: prometheus_app(prom)},
                meta={"config": prog.opt("--config.file", default="/etc/prometheus/prometheus.yml")},
            )
        if prog.kind == "sidecar":
            env = commands.env_of(ct)
            labels = {"model_name": env.get("MODEL_NAME", ""), "namespace": pod["metadata"]["namespace"]}
            car = Sidecar(
                self.io, 0, env.get("INVOCATION_PATH", "invocations"), env.get("HEALTH_CHECK_PATH", "/ping"), labels
            )
            return Proc(
                "sidecar",
                car,
                {PROXY_PORT: car.app(), METRICS_PORT: car.metrics_app()},
                meta={"model_port": int(env.get("MODEL_PORT", "8080") or 8080)},
            )
        return None

    async def _listen(self, proc: Proc) -> None:
        for cport, app in proc.apps.items():
            runner, port = await self.io.serve(app)
            proc.runners.append(runner)
            proc.ports[cport] = port

    def _stop(self, key: Key) -> None:
        proc = self.procs.pop(key, None)
        if proc is None:
            return
        if proc.kind == "prometheus":
            proc.obj.stop()
        runners = list(proc.runners)

        async def _close() -> None:
            for r in runners:
                await r.cleanup()

        if runners:
            self.io.submit(_close())

    # ------------------------------------------------------------ wiring between processes

    def _wire(self, c: Cluster, by_uid: dict[str, Obj]) -> None:
        now = time.monotonic()
        self._observability(c, now)
        for key, proc in list(self.procs.items()):
            if key[0] != c.key:
                continue
            pod = by_uid.get(key[1])
            if pod is None:
                continue
            if proc.kind == "engine":
                _drain(c, pod, key[2], proc.obj.access_log)
            elif proc.kind == "router":
                self._discover_workers(c, proc)
                _drain(c, pod, key[2], proc.obj.access_log)
            elif proc.kind == "sidecar":
                proc.obj.model_port = self.pod_port(c, pod, proc.meta["model_port"]) or 0
            elif proc.kind == "prometheus" and now - self._discovered.get(key, 0) >= DISCOVERY_EVERY:
                self._discovered[key] = now
                self._prometheus_targets(c, pod, proc)

    def _observability(self, c: Cluster, now: float) -> None:
        """The observability add-on's collector: scrape inference endpoints into the AMP workspace."""
        amp = self.amp.get(c.key)
        if OBSERVABILITY_ADDON not in c.addons:
            if amp is not None:
                self.amp.pop(c.key).stop()
            return
        if amp is None:
            amp = self.amp[c.key] = Prometheus(self.io, self.speedup)
            amp.start()
        key = (c.key, "", "amp")
        if now - self._discovered.get(key, 0) >= DISCOVERY_EVERY:
            self._discovered[key] = now
            amp.set_targets(discover(c, AMP_SCRAPE, lambda h, p, n: self.resolve(c, h, p, n), ""))

    def _discover_workers(self, c: Cluster, proc: Proc) -> None:
        rs: commands.RouterSpec = proc.meta["spec"]
        found = []
        if rs.discovery and rs.selector:
            for p in c.list("/pods", rs.discovery_namespace or None):
                if not (pod_active(p) and pod_ready(p)) or not match_label_selector_obj(
                    {"matchLabels": rs.selector}, p["metadata"].get("labels")
                ):
                    continue
                ip = (p.get("status") or {}).get("podIP")
                port = self.pod_port(c, p, rs.discovery_port)
                if ip and port:
                    found.append((f"http://{ip}:{rs.discovery_port}", port, p["metadata"]["name"]))
        for url in rs.worker_urls:
            u = urlparse(url)
            port = self.resolve(c, u.hostname or "", u.port or 80, "default")
            if port:
                found.append((url, port, u.hostname or url))
        proc.obj.set_workers(found)

    def _prometheus_targets(self, c: Cluster, pod: Obj, proc: Proc) -> None:
        path = proc.meta["config"]
        ct = next((x for x, p in self._programs_of(c, pod) if p is not None and p.kind == "prometheus"), {})
        text = mounted_file(c, pod, ct, path)
        prom: Prometheus = proc.obj
        if text is None:
            prom.config_error = f"open {path}: no such file or directory"
            prom.set_targets([])
            return
        cfg, err = parse_config(text)
        prom.config_error = err
        ns = pod["metadata"]["namespace"]
        prom.set_targets(discover(c, cfg, lambda h, p, n: self.resolve(c, h, p, n), ns))

    # ------------------------------------------------------------ addresses

    def pod_port(self, c: Cluster, pod: Obj, port: int) -> int | None:
        """The loopback port of whatever listens on `port` in that pod (None: connection refused)."""
        uid = pod["metadata"]["uid"]
        for (ck, puid, _name), proc in self.procs.items():
            if ck == c.key and puid == uid and proc.pending is None and port in proc.ports:
                return proc.ports[port]
        return None

    def resolve(self, c: Cluster, host: str, port: int, namespace: str) -> int | None:
        """An in-cluster address (pod IP, Service ClusterIP or DNS name) → loopback port."""
        host = host.strip("[]")
        for p in c.list("/pods"):
            if (p.get("status") or {}).get("podIP") == host and pod_active(p):
                return self.pod_port(c, p, port)
        svc = service_named(c, host, namespace)
        if svc is None:
            return None
        pods = service_backends(c, svc, port)
        random.shuffle(pods)
        for p, target in pods:
            lp = self.pod_port(c, p, target)
            if lp:
                return lp
        return None

    # ------------------------------------------------------------ KEDA's Prometheus queries

    def prometheus_value(
        self, c: Cluster, key: tuple[str, int], server: str, query: str, interval_s: float, namespace: str
    ) -> tuple[float | None, str | None, float]:
        """The latest answer to a trigger's query: (value, error, wall time). Polled every
        `interval_s` simulated seconds on the I/O loop; the first call starts the poller."""
        if AMP_URL.match(server.rstrip("/")):
            return amp_value(self.amp.get(c.key), query, self.speedup)
        u = urlparse(server)
        port = self.resolve(c, u.hostname or "", u.port or (443 if u.scheme == "https" else 80), namespace)
        pkey = (c.key, key[0], key[1])
        poll = self.polls.get(pkey)
        if poll is None:
            poll = self.polls[pkey] = Poll(server, query, interval_s, port)
            poll.task = self.io.submit(self._poll(poll))
        poll.query, poll.port, poll.interval, poll.url = query, port, interval_s, server
        return poll.result

    def forget_polls(self, c: Cluster, keep: set[str]) -> None:
        for k in [k for k in self.polls if k[0] == c.key and k[1] not in keep]:
            task = self.polls.pop(k).task
            if task is not None:
                task.cancel()

    async def _poll(self, poll: Poll) -> None:
        while True:
            poll.result = await self._query(poll)
            await asyncio.sleep(max(0.05, poll.interval / self.speedup))

    async def _query(self, poll: Poll) -> tuple[float | None, str | None, float]:
        now = time.time()
        u = urlparse(poll.url)
        full = f"{poll.url.rstrip('/')}/api/v1/query?{urlencode({'query': poll.query, 'time': f'{now:.3f}'})}"
        if poll.port is None:
            return None, f'Get "{full}": dial tcp: lookup {u.hostname}: no such host', now
        try:
            async with self.io.session().get(
                f"http://127.0.0.1:{poll.port}/api/v1/query",
                params={"query": poll.query, "time": f"{now:.3f}"},
                timeout=aiohttp.ClientTimeout(total=3),
            ) as resp:
                body = await resp.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, ValueError) as e:
            return None, f'Get "{full}": {e}', now
        if body.get("status") != "success":
            return None, f"prometheus query api returned error. status: {resp.status} response: {body}", now
        data = body.get("data") or {}
        result = data.get("result")
        if data.get("resultType") == "scalar":
            return float(result[1]), None, now
        if not result:
            return 0.0, None, now  # ignoreNullValues (KEDA's default): an empty answer is 0
        if len(result) > 1:
            return None, f"prometheus query {poll.query} returned multiple elements", now
        v = float(result[0]["value"][1])
        if v != v:
            return None, "prometheus query returns NaN", now
        return v, None, now

    # ------------------------------------------------------------ lifecycle

    def drop_cluster(self, cluster_key: str) -> None:
        for key in [k for k in self.procs if k[0] == cluster_key]:
            self._stop(key)
        amp = self.amp.pop(cluster_key, None)
        if amp is not None:
            amp.stop()
        for k in [k for k in self.polls if k[0] == cluster_key]:
            task = self.polls.pop(k).task
            if task is not None:
                task.cancel()

    def close(self) -> None:
        for key in list(self.procs):
            self._stop(key)
        for p in self.polls.values():
            if p.task is not None:
                p.task.cancel()
        self.polls.clear()
        for amp in self.amp.values():
            amp.stop()
        self.amp.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.io.close()


def _program(ct: Obj) -> commands.Program | None:
    if ct.get("name") == SIDECAR:
        return commands.Program("sidecar", [])
    return commands.program(ct)


def _drain(c: Cluster, pod: Obj, container: str, lines: Any) -> None:
    while lines:
        c.append_log(pod, container, lines.popleft())
