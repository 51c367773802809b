"""Fixtures for the Kubernetes emulator tests: a KubeWorld served on 127.0.0.1:0 by a threaded
werkzeug server, a background ticker, and clients (official kubernetes client, kubectl).

No Django here; the emulator is driven only over HTTP, as the product drives a real cluster."""

from __future__ import annotations

import base64
import logging
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from werkzeug.serving import make_server

from sandbox.kube import KubeWorld

SPEEDUP = 1000.0
KEY = "111122223333/us-west-2/demo"
CRD_DIR = Path(__file__).resolve().parents[3] / "sandbox" / "kube" / "crds"
TOKEN = "k8s-aws-v1." + base64.urlsafe_b64encode(
    b"https://sts.us-west-2.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15"
).decode().rstrip("=")

logging.getLogger("werkzeug").setLevel(logging.ERROR)


def gpu_node(name: str, gpus: int = 8, **kw: Any) -> dict[str, Any]:
    n = {
        "name": name,
        "instance_id": f"i-{name[-6:]}",
        "instance_group": "gpu-group",
        "instance_type": "ml.p5.48xlarge",
        "zone": "us-west-2a",
        "capacity_type": "on-demand",
        "labels": {},
        "gpus": gpus,
        "efa": 32,
        "cpu": 192,
        "memory_gib": 2048,
        "ready": True,
    }
    n.update(kw)
    return n


@cache
def load_crd(filename: str) -> dict[str, Any]:
    """The real upstream CRD files (copied verbatim into sandbox/kube/crds), parsed once."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(CRD_DIR / filename) as f:
        return yaml.load(f, Loader=loader)


@dataclass
class Kube:
    world: KubeWorld
    key: str
    url: str
    api: client.ApiClient
    tick_errors: list[BaseException] = field(default_factory=list)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def apps(self) -> client.AppsV1Api:
        return client.AppsV1Api(self.api)

    @property
    def batch(self) -> client.BatchV1Api:
        return client.BatchV1Api(self.api)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    @property
    def ext(self) -> client.ApiextensionsV1Api:
        return client.ApiextensionsV1Api(self.api)

    def raw(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        query: list[tuple[str, Any]] | None = None,
    ) -> tuple[int, Any]:
        """A request through the client's REST layer, returning (status, decoded JSON or text)."""
        import json as _json

        headers = {"Content-Type": content_type, "Accept": "application/json", "Authorization": f"Bearer {TOKEN}"}
        url = self.url + path
        if query:
            from urllib.parse import urlencode

            url += "?" + urlencode(query)
        data = body if isinstance(body, str | bytes) or body is None else _json.dumps(body)
        r = self.api.rest_client.pool_manager.request(method, url, body=data, headers=headers)
        text = r.data.decode()
        try:
            return r.status, _json.loads(text)
        except ValueError:
            return r.status, text

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = ["kubectl", "--server", self.url, "--token", TOKEN, "--insecure-skip-tls-verify", *args]
        res = subprocess.run(cmd, capture_output=True, text=True, input=input, timeout=60)
        if check and res.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed: {res.stderr}")
        return res


def wait_for(fn: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except Exception as e:  # noqa: BLE001 - retried until the timeout
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what or fn}: last={last!r}")


def serve(world: KubeWorld, key: str = KEY) -> tuple[Any, str, threading.Event, list[BaseException]]:
    srv = make_server("127.0.0.1", 0, world.wsgi, threaded=True)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    stop = threading.Event()
    errors: list[BaseException] = []

    def loop() -> None:
        while not stop.is_set():
            try:
                world.tick()
            except BaseException as e:  # noqa: BLE001 - surfaced by the fixture
                errors.append(e)
            stop.wait(0.005)

    threading.Thread(target=loop, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_port}/k8s/{key}", stop, errors


def make_client(url: str) -> client.ApiClient:
    cfg = client.Configuration(host=url)
    cfg.api_key = {"authorization": f"Bearer {TOKEN}"}
    return client.ApiClient(cfg)


@pytest.fixture
def world_factory(tmp_path: Path) -> Iterator[Callable[..., Kube]]:
    started: list[tuple[Any, threading.Event, KubeWorld]] = []

    def start(
        state_dir: Path | None = None, nodes: int = 2, addons: set[str] | None = None, world: KubeWorld | None = None
    ) -> Kube:
        w = world or KubeWorld(state_dir, speedup=SPEEDUP)
        w.ensure_cluster(KEY, "1.31")
        if nodes:
            w.sync_nodes(KEY, [gpu_node(f"hyperpod-i-0000000{i}") for i in range(nodes)])
        if addons is not None:
            w.set_addons(KEY, addons)
        srv, url, stop, errors = serve(w)
        started.append((srv, stop, w))
        return Kube(w, KEY, url, make_client(url), errors)

    yield start
    for srv, stop, w in started:
        stop.set()
        w.close()
        srv.shutdown()


@pytest.fixture
def kube(world_factory: Callable[..., Kube]) -> Iterator[Kube]:
    k = world_factory()
    yield k
    assert not k.tick_errors, k.tick_errors
    assert not k.world.controller_errors, k.world.controller_errors[0]


@pytest.fixture
def kubectl_bin() -> str:
    path = shutil.which("kubectl")
    if not path:
        pytest.skip("kubectl is not installed")
    return path


def deployment(
    name: str, replicas: int = 1, image: str = "nginx:1.27", env: list[dict[str, str]] | None = None, **pod: Any
) -> dict[str, Any]:
    labels = {"app": name}
    container: dict[str, Any] = {"name": name, "image": image, "ports": [{"containerPort": 80}]}
    if env:
        container["env"] = env
    spec: dict[str, Any] = {"containers": [container]}
    spec.update(pod)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": spec},
        },
    }
