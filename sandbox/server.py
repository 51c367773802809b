"""One threaded WSGI server on 127.0.0.1 hosting both halves of the sandbox (see CONTRACT.md).

    /k8s/{account}/{region}/{cluster}/...  -> KubeWorld.wsgi (sandbox/kube)
    /_sandbox/...                          -> ControlApp (sandbox/control.py)
    everything else                        -> AwsApp: moto + our extensions (sandbox/aws)

and one more port per EKS cluster, serving that cluster's Kubernetes API at its root (the EKS
endpoint; sandbox/endpoints.py). Ports stay the same across restarts with the same state dir.

Only one Sandbox may run per process at a time: moto keeps its backends in module globals.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sandbox.control import ControlApp
from sandbox.endpoints import Endpoints, serve_on
from sandbox.faults import Faults
from sandbox.isolation import Contained

log = logging.getLogger("sandbox")

SAVE_EVERY = 3.0  # seconds between snapshots while something changed
TICK = 0.1


class _NullKube:
    """Stand-in used only when sandbox.kube is not importable, so the AWS half still runs."""

    def __init__(self, state_dir: Path | None, speedup: float):
        self.clusters: dict[str, Any] = {}

    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = (
            b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"kube emulator not available",'
            b'"reason":"ServiceUnavailable","code":503}'
        )
        start_response(
            "503 Service Unavailable", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]

    def ensure_cluster(self, key: str, version: str) -> None:
        self.clusters.setdefault(key, {"version": version})

    def drop_cluster(self, key: str) -> None:
        self.clusters.pop(key, None)

    def sync_nodes(self, key: str, nodes: list[dict[str, Any]]) -> None:
        self.clusters.setdefault(key, {})["nodes"] = nodes

    def set_addons(self, key: str, names: Any) -> None:
        self.clusters.setdefault(key, {})["addons"] = set(names)

    def set_autoscaling(self, key: str, groups: dict[str, Any] | None) -> None:
        self.clusters.setdefault(key, {})["autoscaling"] = groups

    def report(self, key: str) -> dict[str, Any] | None:
        return None

    def inject_pod_crash(self, key: str, namespace: str, name_prefix: str, count: int = 1) -> None:
        pass

    def tick(self) -> None:
        pass

    def save(self) -> None:
        pass


def _kube_class() -> Any:
    try:
        from sandbox.kube import KubeWorld  # type: ignore[attr-defined]

        return KubeWorld
    except Exception:  # missing or broken kube half: keep the AWS half usable
        log.warning(
            "sandbox.kube.KubeWorld not importable; Kubernetes endpoints answer 503\n%s", traceback.format_exc(limit=2)
        )
        return _NullKube


def _default_speedup() -> float:
    return float(os.environ.get("SANDBOX_SPEEDUP", "20") or 20)


class Sandbox:
    _running: Sandbox | None = None  # moto's state is per process: one running Sandbox at a time

    def __init__(
        self,
        state_dir: Path | str | None = None,
        port: int = 0,
        speedup: float | None = None,
        region: str = "us-west-2",
        *,
        snapshots: bool = True,
    ):
        """``snapshots=False``: never write the world's snapshots (a throwaway sandbox, e.g. one shared
        by a whole test run: pickling every account's state every few seconds would cost more than
        the run). The state directory is still used for what runs there (MLflow, endpoints)."""
        from sandbox.aws.world import World

        self.state_dir = Path(state_dir) if state_dir else None
        self.snapshots = snapshots
        self.port = port
        self.speedup = float(speedup) if speedup is not None else _default_speedup()
        self.region = region
        self.world = World(self.speedup, region, self.state_dir)
        self.kube: Any = None
        self._server: Any = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._known_kube: set[str] = set()
        self._last_save = 0.0
        self._last_kube_save = 0.0
        self.aws_endpoint = ""
        self.endpoints: Endpoints | None = None
        # failures of the controller loop, contained per cluster and logged once per change
        self.contained: Contained = self.world.contained

    @property
    def faults(self) -> Faults:
        return self.world.faults

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Sandbox:
        from moto.core.base_backend import BackendDict
        from moto.moto_server.werkzeug_app import MotoRequestHandler

        from sandbox.aws.app import AwsApp

        if Sandbox._running is not None and Sandbox._running is not self:
            raise RuntimeError(
                f"a Sandbox is already running in this process at {Sandbox._running.aws_endpoint}; "
                "moto keeps its state per process, so stop it first (or share it)"
            )
        Sandbox._running = self
        try:
            self._start(BackendDict, MotoRequestHandler, AwsApp)
        except BaseException:
            self._stop_mlflow()
            Sandbox._running = None
            raise
        return self

    def _start(self, BackendDict: Any, MotoRequestHandler: Any, AwsApp: Any) -> None:  # noqa: N803
        os.environ.pop("MOTO_ACCOUNT_ID", None)  # would pin every request to one account
        BackendDict.reset()  # moto state is process-global: start from the snapshot (or empty)
        from sandbox.aws.app import _ACCOUNT_OF

        _ACCOUNT_OF.clear()
        self.world.load()
        kube_cls = _kube_class()
        try:
            self.kube = kube_cls(self.state_dir, self.speedup)
        except Exception:
            log.error("KubeWorld failed to start; Kubernetes endpoints answer 503\n%s", traceback.format_exc())
            self.kube = _NullKube(self.state_dir, self.speedup)
        if hasattr(self.kube, "object_store"):
            from sandbox.aws.s3_objects import MotoObjects

            self.kube.object_store = MotoObjects(self.world)  # S3 mounts and download Jobs use moto's buckets
        self._known_kube = set(getattr(self.kube, "clusters", {}) or {})  # restored from its snapshot
        self._start_mlflow()
        self.world.faults.on_pod_crash = self._pod_crash
        self.world.faults.on_job_hang = self._job_hang
        self.world.faults.load_env()
        self.aws_app = AwsApp(self.world)
        self.control = ControlApp(self)

        class _Quiet(MotoRequestHandler):
            def log_request(self, *a: Any, **k: Any) -> None:
                pass

        self.endpoints = Endpoints(self.state_dir, self._cluster_app)
        self._server = serve_on(self.endpoints.main_socket(self.port), self._wsgi, _Quiet)
        self.port = self._server.server_port
        self.endpoints.record_main(self.port)
        self.aws_endpoint = f"http://127.0.0.1:{self.port}"
        self.world.base_url = self.aws_endpoint
        self.world.endpoint_of = self.endpoints.endpoint
        self._refresh_endpoints()
        self._stop.clear()
        serve = lambda: self._server.serve_forever(poll_interval=0.05)  # noqa: E731 (quick stop())
        for target, name in ((serve, "sandbox-http"), (self._loop, "sandbox-controller")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        if self._server is None:
            return
        self._stop.set()
        if hasattr(self.kube, "close"):
            self.kube.close()  # end open watch/log streams so request threads finish
        self._server.shutdown()
        for t in self._threads:
            t.join(timeout=5)
        self._threads.clear()
        self._server.server_close()
        self._server = None
        if self.endpoints is not None:
            self.endpoints.close()
        self.world.endpoint_of = None
        try:
            self.save()
        finally:
            self._stop_mlflow()
            if Sandbox._running is self:
                Sandbox._running = None

    def save(self) -> None:
        if not self.snapshots:
            return
        self.world.save()
        if self.kube is not None and self.state_dir:
            self.kube.save()

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def advance(self, real_seconds: float | None = None) -> int:
        """Skip time (real-world seconds; everything pending when None). See World.advance."""
        return self.world.advance(real_seconds)

    def info(self) -> dict[str, Any]:
        return {
            "aws_endpoint": self.aws_endpoint,
            "region": self.region,
            "kube_endpoint_template": f"{self.aws_endpoint}/k8s/{{account}}/{{region}}/{{cluster}}",
            "state_dir": str(self.state_dir) if self.state_dir else None,
            "speedup": self.world.speedup,
        }

    # ---- HTTP ---------------------------------------------------------------------------------
    def _cluster_app(self, key: str) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
        """The WSGI app behind a cluster's own port: its API at the root, as at an EKS endpoint."""
        prefix = f"/k8s/{key}"

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            environ["PATH_INFO"] = prefix + (environ.get("PATH_INFO") or "")
            return self.kube.wsgi(environ, start_response)

        return app

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/k8s/"):
            return self.kube.wsgi(environ, start_response)
        if path.startswith("/_sandbox"):
            return self.control(environ, start_response)
        return self.aws_app(environ, start_response)

    # ---- controller ---------------------------------------------------------------------------
    def _loop(self) -> None:
        from sandbox.aws import lifecycle

        # Each stage is contained on its own (and, inside, per cluster and per object): a bad record
        # in one account must not stop the clusters of every other team.
        while not self._stop.wait(TICK):
            plan = self.contained.run(("aws",), lifecycle.tick, self.world)
            if plan is not None:
                self._apply(plan)
            self.contained.run(("kube",), self.kube.tick)
            self.contained.run(("save",), self._save_due)

    def _save_due(self) -> None:
        if not self.snapshots:
            return
        now = time.monotonic()
        if self.state_dir and self.world.dirty and now - self._last_save >= SAVE_EVERY:
            self._last_save = now
            self.world.save()
        if self.state_dir and now - self._last_kube_save >= 5.0:
            self._last_kube_save = now
            self.kube.save()

    def _apply(self, plan: list[Any]) -> None:
        keys = set()
        reports = {}
        for kc in plan:
            keys.add(kc.key)
            report = self.contained.run(("apply", kc.key), self._apply_one, kc)
            if report is not None:
                reports[kc.key] = report
        self.world.kube_reports = reports  # read by the next AWS tick (CONTRACT.md)
        for gone in self._known_kube - keys:
            self.kube.drop_cluster(gone)
            if self.endpoints is not None:
                self.endpoints.drop(gone)
        self._known_kube = keys

    def _apply_one(self, kc: Any) -> dict[str, Any] | None:
        """One cluster's picture applied to the Kubernetes half; its report back."""
        self.kube.ensure_cluster(kc.key, kc.version)
        # a part the AWS side could not compute this tick (kc.stale) stays as it is
        if "nodes" not in kc.stale:
            self.kube.sync_nodes(kc.key, kc.nodes)
        if "addons" not in kc.stale:
            self.kube.set_addons(kc.key, kc.addons)
        if "autoscaling" not in kc.stale:
            self.kube.set_autoscaling(kc.key, kc.autoscaling)
        return self.kube.report(kc.key)

    def _refresh_endpoints(self) -> None:
        """Listen again for every cluster that has an endpoint: on its recorded port when free (so
        endpoints recorded before the restart keep working), else on a new one that DescribeCluster
        then reports. Endpoints of the old `/k8s/` form are moved to a port of their own."""
        from moto.eks.models import eks_backends

        from sandbox.aws.eks_clusters import kube_endpoint

        with self.world.lock:
            for account, asb in list(eks_backends.items()):
                for region, backend in list(asb.items()):
                    for name, c in backend.clusters.items():
                        if c.endpoint:
                            c.endpoint = kube_endpoint(self.world, account, region, name)

    # ---- MLflow ---------------------------------------------------------------------------------
    def _start_mlflow(self) -> None:
        """Real MLflow servers for the tracking servers/apps (started in the background, so start()
        does not wait for them) and the simulated trainers' path to them."""
        from sandbox.aws.sagemaker_mlflow import resume_servers, tracking_base_url
        from sandbox.mlflow_runs import MlflowRuns
        from sandbox.mlflow_server import MlflowServers

        self.mlflow = MlflowServers(self.state_dir / "mlflow" if self.state_dir else None)
        self.world.mlflow = self.mlflow  # type: ignore[attr-defined]
        with self.world.lock:
            resume_servers(self.world)
        self.mlflow_runs = MlflowRuns(
            lambda uri: tracking_base_url(self.world, uri),
            self.state_dir / "mlflow" / "open-runs.json" if self.state_dir else None,
        )
        if hasattr(self.kube, "metrics"):
            self.kube.metrics = self.mlflow_runs

    def _stop_mlflow(self) -> None:
        runs, servers = getattr(self, "mlflow_runs", None), getattr(self, "mlflow", None)
        if runs is not None:
            runs.close()
        if servers is not None:
            servers.close()
        self.world.mlflow = None  # type: ignore[attr-defined]

    def _pod_crash(self, fault: dict[str, Any]) -> None:
        key = f"{fault.get('account', '')}/{fault.get('region') or self.region}/{fault['cluster']}"
        self.kube.inject_pod_crash(key, fault["namespace"], fault["name_prefix"], int(fault.get("count", 1)))

    def _job_hang(self, fault: dict[str, Any]) -> None:
        key = f"{fault.get('account', '')}/{fault.get('region') or self.region}/{fault['cluster']}"
        if hasattr(self.kube, "inject_job_hang"):
            self.kube.inject_job_hang(
                key, fault["namespace"], fault["job"], int(fault.get("count", 1)), int(fault.get("after_steps", 2))
            )
