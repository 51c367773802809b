"""Helpers shared by the simulated controllers: time scaling, owner refs, pod creation."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...isolation import Contained
from ..store import Cluster, rand_suffix
from ..util import clone

Obj = dict[str, Any]

# annotations a manifest can carry to steer the simulation (documented in sandbox/kube/README.md)
ANN_RUN_SECONDS = "sandbox.instantstart.io/run-seconds"
ANN_EXIT_CODE = "sandbox.instantstart.io/exit-code"


@dataclass
class Ctx:
    speedup: float
    now: float
    serving: Any = None  # the world's sandbox.serving.hub.ServingHub (simulated server processes)
    metrics: Any = None  # where simulated trainers' MLflow values go (sandbox/mlflow_runs.py), if anywhere
    contained: Contained | None = None  # per-object containment of failures (sandbox/isolation.py)

    def elapsed(self, since: float | None) -> float:
        """Simulated seconds since a wall-clock instant."""
        if since is None:
            return 0.0
        return (self.now - since) * self.speedup

    def per_object(self, c: Cluster, controller: str, obj: Obj, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args), the work of `controller` on one object. When it fails, only this object stops:
        the error is logged once per change and shown on the object as a Warning event (what
        `kubectl describe` shows for a controller that cannot sync an object)."""
        if self.contained is None:
            return fn(*args)
        meta = obj.get("metadata") or {}
        key = (c.key, controller, meta.get("uid") or meta.get("name"))

        def report(message: str) -> None:
            c.record_event(
                obj, "FailedSync", f"error syncing {meta.get('name')}: {message}", "Warning", component=controller
            )

        return self.contained.run(key, fn, *args, on_error=report)


def make_ctx(speedup: float, metrics: Any = None, contained: Contained | None = None) -> Ctx:
    return Ctx(speedup=speedup, now=time.time(), metrics=metrics, contained=contained)


def owner_ref(owner: Obj, controller: bool = True) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def owned_by(obj: Obj, owner: Obj) -> bool:
    uid = owner["metadata"]["uid"]
    return any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or [])


def children(c: Cluster, gr: str, owner: Obj) -> list[Obj]:
    ns = owner["metadata"].get("namespace")
    return [o for o in c.list(gr, ns) if owned_by(o, owner)]


def controller_of(obj: Obj) -> Obj | None:
    for r in obj["metadata"].get("ownerReferences") or []:
        if r.get("controller"):
            return r
    return None


def sim(c: Cluster, obj: Obj) -> dict[str, Any]:
    return c.sim.setdefault(obj["metadata"]["uid"], {})


def create_pod(
    c: Cluster,
    owner: Obj,
    template: Obj,
    name: str | None = None,
    extra_labels: dict[str, str] | None = None,
    sim_state: dict[str, Any] | None = None,
    extra_annotations: dict[str, str] | None = None,
    hostname: str | None = None,
) -> Obj | None:
    """Create a pod from a pod template, owned by `owner`; None when the create is refused."""
    rt = c.type_by_gr("/pods")
    assert rt is not None
    tmeta = clone(template.get("metadata") or {})
    meta: Obj = {
        "labels": dict(tmeta.get("labels") or {}),
        "annotations": dict(tmeta.get("annotations") or {}),
        "ownerReferences": [owner_ref(owner)],
    }
    meta["labels"].update(extra_labels or {})
    meta["annotations"].update(extra_annotations or {})
    if not meta["annotations"]:
        del meta["annotations"]
    if name:
        meta["name"] = name
    else:
        meta["name"] = f"{owner['metadata']['name']}-{rand_suffix()}"
    spec = clone(template.get("spec") or {})
    if hostname:
        spec.setdefault("hostname", hostname)
    from ..errors import ApiError

    try:
        pod = c.create(rt, {"metadata": meta, "spec": spec}, owner["metadata"]["namespace"])
    except ApiError as e:
        c.record_event(
            owner,
            "FailedCreate",
            f"Error creating: {e.message}",
            "Warning",
            component=f"{owner['kind'].lower()}-controller",
        )
        return None
    if sim_state:
        c.sim.setdefault(pod["metadata"]["uid"], {}).update(sim_state)
    return pod


def set_condition(
    conditions: list[Obj],
    ctype: str,
    status: str,
    reason: str = "",
    message: str = "",
    ts: str | None = None,
    with_probe: bool = False,
) -> list[Obj]:
    """Upsert a condition, keeping lastTransitionTime unless the status changes."""
    from ..store import now_iso

    out = [dict(x) for x in conditions]
    ts = ts or now_iso()
    for cond in out:
        if cond.get("type") == ctype:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = ts
            cond["status"] = status
            cond["reason"] = reason
            cond["message"] = message
            if with_probe:
                cond["lastUpdateTime"] = cond.get("lastUpdateTime", ts) if cond.get("status") == status else ts
            return out
    new: Obj = {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": ts}
    if with_probe:
        new["lastUpdateTime"] = ts
    out.append(new)
    return out


def pod_active(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and not pod["metadata"].get(
        "deletionTimestamp"
    )


def pod_ready(pod: Obj) -> bool:
    return any(
        x.get("type") == "Ready" and x.get("status") == "True"
        for x in (pod.get("status") or {}).get("conditions") or []
    )
