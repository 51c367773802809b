"""`KubeWorld`: every emulated EKS cluster's API server, its simulated controllers and persistence.

See sandbox/CONTRACT.md for how the server and the AWS half drive it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..isolation import Contained
from ..serving.hub import ServingHub
from ..serving.objects import MemoryObjects, ObjectStore
from .api import KubeApi
from .controllers import inference, karpenter, keda, ray, serving, trainer_logs, training
from .controllers.base import Ctx, make_ctx, pod_active
from .controllers.hangs import hang_job
from .controllers.kubelet import crash, ip_demand, run_kubelet
from .controllers.nodes import sync_nodes as _sync_nodes
from .controllers.scheduler import schedule
from .controllers.workloads import run_workloads
from .operators import apply_addons, observe, preload
from .store import Cluster

log = logging.getLogger("sandbox.kube")

SNAPSHOT = "kube.json"
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

Controller = Callable[[Cluster, Ctx], None]
# order matters a little: owners first, so that their pods are scheduled and started in the same tick
CONTROLLERS: list[tuple[str, Controller]] = [
    # programs print what is due first: the operator's log monitoring then judges lines printed by now
    ("printer", trainer_logs.print_due),
    ("workloads", run_workloads),
    ("training", training.run),
    ("ray", ray.run),
    ("inference", inference.run),
    ("keda", keda.run),
    ("scheduler", schedule),
    ("karpenter", karpenter.run),  # after the scheduler: it provisions for what stayed pending
    ("serving", serving.run),
    ("kubelet", run_kubelet),
]


class KubeWorld:
    def __init__(self, state_dir: Path | str | None, speedup: float = 20.0, *, kubectl_anonymous: bool = True) -> None:
        self.state_dir = Path(state_dir) if state_dir else None
        self.speedup = float(speedup)
        # kubectl withholds tokens over http; see KubeApi.authorized
        self.kubectl_anonymous = kubectl_anonymous
        self._saved_sig: tuple[Any, ...] | None = None
        self.controller_errors: list[str] = []  # tracebacks of failed controller runs (tests assert none)
        self.metrics: Any = None  # MLflow sink of the simulated trainers (the Sandbox sets sandbox.mlflow_runs)
        # per cluster, controller and object: one failure stops only its own object, logged once
        self.contained = Contained(log, self.controller_errors)
        self.clusters: dict[str, Cluster] = {}
        self._lock = threading.Lock()  # guards the clusters map, not the clusters
        self._api = KubeApi(self)
        # simulated server processes of serving pods (listeners on 127.0.0.1); see sandbox/serving
        self.serving = ServingHub(self.speedup, MemoryObjects())
        if self.state_dir and (self.state_dir / SNAPSHOT).exists():
            data = json.loads((self.state_dir / SNAPSHOT).read_text())
            for cd in data.get("clusters", []):
                c = Cluster.restore(cd)
                self.clusters[c.key] = c

    # ------------------------------------------------------------ HTTP

    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        return self._api(environ, start_response)

    # ------------------------------------------------------------ lifecycle driven by the AWS half

    def ensure_cluster(self, key: str, version: str = "1.31") -> Cluster:
        with self._lock:
            c = self.clusters.get(key)
            if c is None:
                c = Cluster(key, version)
                self.clusters[key] = c
                new = True
            else:
                new = False
        if new:
            with c.lock:
                _bootstrap(c)
        elif c.version != version and version:
            c.version = version
        return c

    def drop_cluster(self, key: str) -> None:
        with self._lock:
            c = self.clusters.pop(key, None)
        if c is not None:
            with c.lock:
                c.closed = True
                c.cond.notify_all()
        self.serving.drop_cluster(key)

    def sync_nodes(self, key: str, nodes: list[dict[str, Any]]) -> None:
        c = self.clusters.get(key)
        if c is None:
            return
        with c.lock:
            _sync_nodes(c, nodes, self.contained)

    def set_addons(self, key: str, names: Mapping[str, dict[str, Any] | None] | Iterable[str]) -> None:
        """The running EKS add-ons: names, or name -> configuration values (None: deleted with preserve)."""
        c = self.clusters.get(key)
        if c is None:
            return
        addons = dict(names) if isinstance(names, Mapping) else dict.fromkeys(names, {})
        preload(addons)
        with c.lock:
            apply_addons(c, addons)

    def set_autoscaling(self, key: str, groups: dict[str, dict[str, Any]] | None) -> None:
        """HyperPod managed Karpenter: the autoscaled instance groups while AutoScaling is InService
        (CONTRACT.md), None otherwise."""
        c = self.clusters.get(key)
        if c is None:
            return
        with c.lock:
            karpenter.set_groups(c, groups)

    def report(self, key: str) -> dict[str, Any] | None:
        """What the AWS half reads back each tick: cluster facts for add-on dependencies, and the
        Karpenter decisions (CONTRACT.md)."""
        c = self.clusters.get(key)
        if c is None:
            return None
        with c.lock:
            out: dict[str, Any] = observe(c)
            out["pod_ip_demand"] = ip_demand(c)
            decided = karpenter.decisions(c)
            if decided is not None:
                out["karpenter"] = decided
            return out

    def inject_pod_crash(self, key: str, namespace: str, name_prefix: str, count: int = 1) -> list[str]:
        """Fail up to `count` running pods whose name starts with name_prefix; returns their names."""
        c = self.clusters.get(key)
        if c is None:
            return []
        crashed = []
        with c.lock:
            for pod in c.list("/pods", namespace or None):
                if len(crashed) >= count:
                    break
                if (
                    pod["metadata"]["name"].startswith(name_prefix)
                    and pod_active(pod)
                    and (pod.get("status") or {}).get("phase") == "Running"
                ):
                    crash(c, make_ctx(self.speedup, self.metrics), pod, 137 if len(crashed) % 2 == 0 else 1)
                    crashed.append(pod["metadata"]["name"])
        return crashed

    @property
    def object_store(self) -> ObjectStore:
        """Where S3 mounts read and download Jobs write (the sandbox server sets moto's S3)."""
        return self.serving.objects

    @object_store.setter
    def object_store(self, store: ObjectStore) -> None:
        self.serving.objects = store

    def inject_job_hang(self, key: str, namespace: str, job: str, count: int = 1, after_steps: int = 2) -> list[str]:
        """The training job `job` (HyperPodPyTorchJob or RayJob) stops making progress: its processes print
        nothing more and log no metrics, without exiting. `count` attempts hang: this one now, later ones
        (after the operator restarts the job) after `after_steps` steps. Returns the pods now hung."""
        c = self.clusters.get(key)
        if c is None:
            return []
        with c.lock:
            return hang_job(c, make_ctx(self.speedup, self.metrics), namespace, job, count, after_steps)

    def tick(self) -> None:
        ctx = make_ctx(self.speedup, self.metrics, self.contained)
        ctx.serving = self.serving
        for c in list(self.clusters.values()):
            with c.lock:
                for name, fn in CONTROLLERS:
                    # one broken controller must not stop the others, nor the other clusters
                    self.contained.run((c.key, name), fn, c, ctx)

    def save(self) -> None:
        if not self.state_dir:
            return
        # the server saves every few seconds: skip the (multi-MB) write when nothing changed
        sig = tuple(
            sorted(
                (c.key, c.rv, sum(len(v) for v in c.logs.values()), tuple(sorted(c.addons)))
                for c in list(self.clusters.values())
            )
        )
        if sig == self._saved_sig and (self.state_dir / SNAPSHOT).exists():
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        snaps = []
        for c in list(self.clusters.values()):
            with c.lock:
                snaps.append(json.dumps(c.snapshot()))
        tmp = self.state_dir / (SNAPSHOT + ".tmp")
        tmp.write_text('{"format": 1, "clusters": [' + ",".join(snaps) + "]}")
        os.replace(tmp, self.state_dir / SNAPSHOT)
        self._saved_sig = sig

    def close(self) -> None:
        """End open watch and log streams and the simulated servers (server shutdown)."""
        for c in list(self.clusters.values()):
            with c.lock:
                c.closed = True
                c.cond.notify_all()
        self.serving.close()

    # ------------------------------------------------------------ conveniences for tests / tools

    def cluster(self, key: str) -> Cluster:
        return self.clusters[key]


def _bootstrap(c: Cluster) -> None:
    """What a fresh EKS control plane serves before any add-on: namespaces, the kubernetes Service,
    the gp2 StorageClass, the aws-auth ConfigMap."""
    ns_rt = c.type_by_gr("/namespaces")
    assert ns_rt is not None
    for ns in SYSTEM_NAMESPACES:
        if c.get("/namespaces", "", ns) is None:
            c.create(ns_rt, {"metadata": {"name": ns}})
    svc_rt = c.type_by_gr("/services")
    if svc_rt and c.get("/services", "default", "kubernetes") is None:
        c.create(
            svc_rt,
            {
                "metadata": {
                    "name": "kubernetes",
                    "namespace": "default",
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "clusterIP": "10.100.0.1",
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 443}],
                },
            },
            "default",
        )
    sc_rt = c.type_by_gr("storage.k8s.io/storageclasses")
    if sc_rt and c.get("storage.k8s.io/storageclasses", "", "gp2") is None:
        c.create(
            sc_rt,
            {
                "metadata": {"name": "gp2", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "kubernetes.io/aws-ebs",
                "parameters": {"fsType": "ext4", "type": "gp2"},
                "reclaimPolicy": "Delete",
                "volumeBindingMode": "WaitForFirstConsumer",
            },
        )
    cm_rt = c.type_by_gr("/configmaps")
    if cm_rt and c.get("/configmaps", "kube-system", "aws-auth") is None:
        c.create(
            cm_rt,
            {"metadata": {"name": "aws-auth", "namespace": "kube-system"}, "data": {"mapRoles": "[]\n"}},
            "kube-system",
        )
