"""Operators in the cluster: what EKS add-ons and Helm-installed operators put there, and whether an
operator runs.

- `apply_addons` makes the cluster hold exactly what its running add-ons install (addons.py): their
  namespace, workloads, CRDs and CSIDrivers, labelled with the add-on. An add-on that goes away takes
  all of it along (CRDs with their custom objects), as `aws eks delete-addon` does; one deleted with
  `--preserve` leaves it in place, unmanaged.
- `operator_active` is true while the operator's Deployment has a ready replica: an add-on whose pods
  cannot run (no nodes) reconciles nothing, and neither does a Helm install that is not up yet.
- `observe` is what the AWS half needs to judge add-on dependencies (CRDs, CSIDrivers, ready
  Deployments), whoever installed them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ApiError
from ..resources import BUILTIN
from ..store import CRD_GR, Cluster
from ..util import clone
from .addons import INFERENCE_ADDON, TRAINING_ADDON, addon_objects
from .crds import HPJ_GR, HPJ_GROUP, load_crd
from .helm import DEFAULT_NAMESPACE, KEDA, KUBERAY, release_objects

__all__ = [
    "HPJ_GR",
    "HPJ_GROUP",
    "INFERENCE_ADDON",
    "KEDA",
    "KUBERAY",
    "MANAGED_LABEL",
    "TRAINING_ADDON",
    "apply_addons",
    "observe",
    "operator_active",
    "preload",
]

Obj = dict[str, Any]
MANAGED_LABEL = "sandbox.instantstart.io/addon"

# operator -> the Deployments (namespace, or None for any) whose readiness means it reconciles
OPERATOR_DEPLOYMENTS: dict[str, list[tuple[str | None, str]]] = {
    TRAINING_ADDON: [("aws-hyperpod", "hp-training-operator-controller-manager")],
    # the add-on's name, and the Helm chart's (release hyperpod-inference-operator)
    INFERENCE_ADDON: [
        ("hyperpod-inference-system", "hyperpod-inference-controller-manager"),
        (None, "hyperpod-inference-operator-controller-manager"),
    ],
    KUBERAY: [(None, "kuberay-operator")],
    KEDA: [(None, "keda-operator")],
}
_PRUNE_ORDER = ("apps/deployments", "apps/daemonsets", "storage.k8s.io/csidrivers", CRD_GR)


def _ready(d: Obj | None) -> bool:
    return (
        d is not None
        and not d["metadata"].get("deletionTimestamp")
        and int((d.get("status") or {}).get("readyReplicas") or 0) > 0
    )


def operator_active(c: Cluster, operator: str) -> bool:
    for ns, name in OPERATOR_DEPLOYMENTS[operator]:
        if ns is not None and _ready(c.get("apps/deployments", ns, name)):
            return True
        if ns is None and any(_ready(d) for (_ns, n), d in c.bucket("apps/deployments").items() if n == name):
            return True
    return False


def _plan(name: str, config: Obj) -> tuple[str, list[Any]] | None:
    if name in DEFAULT_NAMESPACE:  # test shorthand for a Helm install (see helm.py)
        return DEFAULT_NAMESPACE[name], release_objects(name)
    return addon_objects(name, config)


def preload(names: Iterable[str]) -> None:
    """Parse the CRD files these add-ons need (slow the first time) before the cluster lock is taken."""
    for name in names:
        plan = _plan(name, {})
        for obj in plan[1] if plan else ():
            if isinstance(obj, str):
                load_crd(obj)


# add-ons only install built-in kinds (CRDs included): a dict instead of a scan, since this runs
# for every object of every add-on of every cluster on every tick
_BUILTIN_KINDS = {(rt.api_version, rt.kind): rt for rt in BUILTIN}


def _where(c: Cluster, obj: Obj) -> tuple[Any, str, str] | None:
    rt = _BUILTIN_KINDS.get((obj["apiVersion"], obj["kind"]))
    if rt is None:
        return None
    ns = (obj["metadata"].get("namespace") or "default") if rt.namespaced else ""
    return rt, ns, obj["metadata"]["name"]


def _body(obj: Any) -> Obj:
    obj = load_crd(obj) if isinstance(obj, str) else obj
    if obj.get("kind") == "CustomResourceDefinition":
        return {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "metadata": {
                "name": obj["metadata"]["name"],
                "annotations": dict(obj["metadata"].get("annotations") or {}),
            },
            "spec": obj["spec"],
        }
    return obj


def _ensure(c: Cluster, owner: str, ns: str, objects: list[Any]) -> set[tuple[str, str, str]]:
    """Create what is missing (labelled with its owner); returns the keys of all the objects."""
    keys: set[tuple[str, str, str]] = set()
    ns_rt = c.type_by_gr("/namespaces")
    assert ns_rt is not None
    current = c.get("/namespaces", "", ns)
    if current is not None and current["metadata"].get("deletionTimestamp"):
        return keys  # still terminating from a removal: install on a later tick
    if current is None:
        c.create(ns_rt, {"metadata": {"name": ns, "labels": {MANAGED_LABEL: owner}}})
        keys.add(("/namespaces", "", ns))
    for raw in objects:
        if isinstance(raw, dict) and raw.get("kind") == "Namespace":
            continue  # created above
        obj = _body(raw)
        where = _where(c, obj)
        if where is None:
            continue
        rt, ons, name = where
        keys.add((rt.gr, ons, name))
        if c.get(rt.gr, ons, name) is not None:
            continue
        body = clone(obj)
        body["metadata"].setdefault("labels", {})[MANAGED_LABEL] = owner
        try:
            c.create(rt, body, ons)
        except ApiError:
            continue  # e.g. the namespace is going away; the next tick tries again
    return keys


def _owned(c: Cluster, owner: str) -> list[tuple[str, Obj]]:
    out = []
    for gr in (
        *_PRUNE_ORDER,
        "/serviceaccounts",
        "rbac.authorization.k8s.io/clusterroles",
        "rbac.authorization.k8s.io/clusterrolebindings",
        "/namespaces",
    ):
        for o in c.list(gr):
            if (o["metadata"].get("labels") or {}).get(MANAGED_LABEL) == owner:
                out.append((gr, o))
    return out


def _prune(c: Cluster, owner: str, keep: set[tuple[str, str, str]]) -> None:
    for gr, o in _owned(c, owner):
        ns = o["metadata"].get("namespace", "")
        if (gr, ns, o["metadata"]["name"]) in keep:
            continue
        if gr == "/namespaces" and ("/namespaces", "", o["metadata"]["name"]) not in keep and keep:
            continue  # a config change never takes the add-on's own namespace
        rt = c.type_by_gr(gr)
        if rt is not None and c.get(gr, ns, o["metadata"]["name"]) is not None:
            c.delete(rt, ns, o["metadata"]["name"])


def _release(c: Cluster, owner: str) -> None:
    """delete-addon --preserve: the software stays, EKS no longer manages it."""
    for gr, o in _owned(c, owner):
        new = clone(o)
        new["metadata"]["labels"].pop(MANAGED_LABEL, None)
        c.put(gr, new)


def apply_addons(c: Cluster, addons: Mapping[str, Obj | None] | Iterable[str]) -> None:
    """`addons`: the running add-ons (names, or name -> configuration values; None = deleted with
    preserve). Idempotent and cheap when nothing changed: the server calls it on every tick."""
    configs: dict[str, Obj | None] = dict(addons) if isinstance(addons, Mapping) else dict.fromkeys(addons, {})
    active = {n: cfg for n, cfg in configs.items() if cfg is not None}
    applied: dict[str, str] = c.sim.setdefault("_addons_applied", {})
    c.addons = set(active)
    for name, cfg in active.items():
        plan = _plan(name, cfg)
        if plan is None:
            continue
        keys = _ensure(c, name, *plan)
        sig = json.dumps(cfg, sort_keys=True)
        if applied.get(name) != sig:
            if name in applied and keys:
                _prune(c, name, keys)  # configuration changed: drop what it no longer installs
            applied[name] = sig
    for name in [n for n in applied if n not in active]:
        if name in configs:
            _release(c, name)
        else:
            _prune(c, name, set())
        del applied[name]


def observe(c: Cluster) -> dict[str, list[str]]:
    """The cluster facts add-on dependencies are judged by."""
    return {
        "crds": sorted(
            name for (_ns, name), o in c.bucket(CRD_GR).items() if not o["metadata"].get("deletionTimestamp")
        ),
        "csi_drivers": sorted(name for (_ns, name) in c.bucket("storage.k8s.io/csidrivers")),
        "deployments": sorted(f"{ns}/{name}" for (ns, name), d in c.bucket("apps/deployments").items() if _ready(d)),
    }
