"""Helm-equivalent installs of KubeRay and KEDA: the objects their charts render (release names
``kuberay-operator`` and ``keda``), applied with server-side apply and removed object by object.

The CRDs are the upstream files in ``crds/`` (KubeRay v1.4, KEDA 2.17). Every object carries the
feature label, so a listing finds what a feature left behind.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..catalog import FEATURE_LABEL

CRD_DIR = Path(__file__).resolve().parent / "crds"
MANAGED = {"app.kubernetes.io/managed-by": "instantstart"}


@dataclass(frozen=True)
class Release:
    feature: str
    namespace: str
    deployment: str
    service_account: str
    image: str
    command: tuple[str, ...]
    rules: tuple[dict, ...]
    crd_files: tuple[str, ...]
    crd_names: tuple[str, ...]  # what the files define (read without parsing them: a GET stays cheap)


@functools.cache
def _crds(files: tuple[str, ...]) -> tuple[dict, ...]:
    out = []
    for name in files:
        doc = yaml.load((CRD_DIR / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        doc.pop("status", None)
        out.append(doc)
    return tuple(out)


HELM_RELEASES = {
    "kuberay": Release(
        "kuberay",
        "kuberay-operator",
        "kuberay-operator",
        "kuberay-operator",
        "quay.io/kuberay/operator:v1.4.2",
        ("/manager",),
        (
            {"apiGroups": ["ray.io"], "resources": ["*"], "verbs": ["*"]},
            {"apiGroups": [""], "resources": ["pods", "services", "events", "serviceaccounts"], "verbs": ["*"]},
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["*"]},
        ),
        ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml", "ray.io_rayservices.yaml"),
        ("rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io"),
    ),
    "keda": Release(
        "keda",
        "keda",
        "keda-operator",
        "keda-operator",
        "ghcr.io/kedacore/keda:2.17.1",
        ("/keda",),
        (
            {"apiGroups": ["keda.sh"], "resources": ["*"], "verbs": ["*"]},
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["*"]},
            {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["get", "list", "watch", "update", "patch"]},
        ),
        ("keda.sh_scaledobjects.yaml",),
        ("scaledobjects.keda.sh",),
    ),
}


def _labelled(obj: dict, release: Release) -> dict:
    meta = obj.setdefault("metadata", {})
    meta["labels"] = {**meta.get("labels", {}), **MANAGED, FEATURE_LABEL: release.feature}
    return obj


def namespace_object(release: Release) -> dict:
    return _labelled({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": release.namespace}}, release)


def crd_objects(release: Release) -> list[dict]:
    return [_labelled(dict(crd), release) for crd in _crds(release.crd_files)]


def operator_objects(release: Release) -> list[dict]:
    """ServiceAccount, ClusterRole + binding and the operator's Deployment (after namespace and CRDs)."""
    name, ns = release.deployment, release.namespace
    select = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": release.feature}
    objects = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": release.service_account, "namespace": ns}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [dict(rule) for rule in release.rules],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": release.service_account, "namespace": ns}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": dict(select)},
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": select},
                "template": {
                    "metadata": {"labels": {**select, "app.kubernetes.io/component": name}},
                    "spec": {
                        "serviceAccountName": release.service_account,
                        "containers": [
                            {
                                "name": name,
                                "image": release.image,
                                "command": list(release.command),
                                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                                "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}},
                            }
                        ],
                    },
                },
            },
        },
    ]
    return [_labelled(obj, release) for obj in objects]
