"""A pool worker's assignment: one label on the pod (the pool's Services and invoke select on it)."""

from __future__ import annotations

from kubernetes import client as k8s

from ..manifests import POOL_MODEL_LABEL
from ..models import Endpoint
from ..readers.cluster_api import kube_of


def relabel(endpoint: Endpoint, pod: str, value: str) -> None:
    """Change only the pod's model label (a strategic merge patch): the container keeps running."""
    core = k8s.CoreV1Api(kube_of(endpoint.cluster))
    core.patch_namespaced_pod(pod, endpoint.namespace, {"metadata": {"labels": {POOL_MODEL_LABEL: value}}})
