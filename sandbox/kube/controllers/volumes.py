"""persistentvolume-controller: claims bind to volumes (named, pre-bound, matching, or provisioned
from their StorageClass), volumes show their phase and claim, as `kubectl get pv,pvc` shows them.

Not modelled: the EBS CSI driver that EKS needs before gp2/gp3 volumes really provision (here every
class with a provisioner provisions), the pv/pvc-protection finalizers, volume attachment, resizing,
and the scheduler waiting for unbound immediate claims.
"""

from __future__ import annotations

from typing import Any

from ..quantity import parse_quantity
from ..store import Cluster
from ..util import clone
from .base import Ctx, pod_active, sim

Obj = dict[str, Any]
CONTROLLER = "persistentvolume-controller"
PV = "/persistentvolumes"
PVC = "/persistentvolumeclaims"
SC = "storage.k8s.io/storageclasses"


def run(c: Cluster, ctx: Ctx) -> None:
    for pvc in c.list(PVC):
        ctx.per_object(c, CONTROLLER, pvc, _claim, c, pvc)
    for pv in c.list(PV):
        ctx.per_object(c, CONTROLLER, pv, _volume, c, pv)


def _pv_class(pv: Obj) -> str:
    ann = pv["metadata"].get("annotations") or {}
    return ann.get("volume.beta.kubernetes.io/storage-class") or (pv.get("spec") or {}).get("storageClassName") or ""


def _pvc_class(pvc: Obj) -> str:
    ann = pvc["metadata"].get("annotations") or {}
    return ann.get("volume.beta.kubernetes.io/storage-class") or (pvc.get("spec") or {}).get("storageClassName") or ""


def _requested(pvc: Obj) -> Any:
    storage = (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage", "0")
    try:
        return parse_quantity(storage)
    except ValueError:
        return parse_quantity("0")


def _mismatch(pv: Obj, pvc: Obj) -> str | None:
    """Why this volume cannot serve this claim (None when it can)."""
    pv_spec, pvc_spec = pv.get("spec") or {}, pvc.get("spec") or {}
    if _pv_class(pv) != _pvc_class(pvc):
        return "storageClassName does not match"
    if not set(pvc_spec.get("accessModes") or []) <= set(pv_spec.get("accessModes") or []):
        return "incompatible accessMode"
    try:
        have = parse_quantity((pv_spec.get("capacity") or {}).get("storage", "0"))
    except ValueError:
        return "requested PV is too small"
    if have < _requested(pvc):
        return "requested PV is too small"
    return None


def _claimed_by(pv: Obj) -> Obj | None:
    return (pv.get("spec") or {}).get("claimRef")


def _for_claim(ref: Obj | None, pvc: Obj) -> bool:
    """The volume's claimRef names this claim (a ref without uid is a pre-binding)."""
    meta = pvc["metadata"]
    return bool(
        ref
        and ref.get("namespace") == meta["namespace"]
        and ref.get("name") == meta["name"]
        and ref.get("uid") in (None, "", meta["uid"])
    )


def _once(c: Cluster, obj: Obj, reason: str, message: str, etype: str = "Warning") -> None:
    """An event the first time the claim is in this state (the controller retries every tick)."""
    s = sim(c, obj)
    if s.get("pv_event") != (reason, message):
        s["pv_event"] = (reason, message)
        c.record_event(obj, reason, message, etype, component=CONTROLLER)


def _claim(c: Cluster, pvc: Obj) -> None:
    meta, spec = pvc["metadata"], pvc.get("spec") or {}
    if meta.get("deletionTimestamp"):
        return
    phase = (pvc.get("status") or {}).get("phase")
    if phase == "Bound":
        pv = c.get(PV, "", spec.get("volumeName") or "")
        if pv is None or not _for_claim(_claimed_by(pv), pvc):
            c.put_status(PVC, pvc, {**(pvc.get("status") or {}), "phase": "Lost"})
            _once(c, pvc, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
        return
    if phase == "Lost":
        return
    if spec.get("volumeName"):
        pv = c.get(PV, "", spec["volumeName"])
        if pv is None:
            return  # waits for the named volume to appear
        ref = _claimed_by(pv)
        if ref and not _for_claim(ref, pvc):
            _once(c, pvc, "FailedBinding", f'volume "{spec["volumeName"]}" already bound to a different claim.')
            return
        why = _mismatch(pv, pvc)
        if why:
            _once(c, pvc, "FailedBinding", f'Cannot bind to requested volume "{spec["volumeName"]}": {why}')
            return
        _bind(c, pv, pvc, by_controller=False)
        return
    candidates = [
        pv
        for pv in c.list(PV)
        if (pv.get("status") or {}).get("phase") in (None, "Available")
        and (not _claimed_by(pv) or _for_claim(_claimed_by(pv), pvc))
        and _mismatch(pv, pvc) is None
    ]
    if candidates:
        # a volume pre-bound to this claim first, then the smallest that fits (as the binder does)
        candidates.sort(
            key=lambda pv: (not _claimed_by(pv), parse_quantity((pv["spec"].get("capacity") or {}).get("storage", "0")))
        )
        _bind(c, candidates[0], pvc, by_controller=True)
        return
    _provision(c, pvc)


def _provision(c: Cluster, pvc: Obj) -> None:
    meta, spec = pvc["metadata"], pvc.get("spec") or {}
    cls_name = _pvc_class(pvc)
    if not cls_name:
        _once(
            c,
            pvc,
            "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set",
            "Normal",
        )
        return
    sc = c.get(SC, "", cls_name)
    if sc is None:
        _once(c, pvc, "ProvisioningFailed", f'storageclass.storage.k8s.io "{cls_name}" not found')
        return
    if sc.get("volumeBindingMode") == "WaitForFirstConsumer" and not _consumed(c, pvc):
        _once(c, pvc, "WaitForFirstConsumer", "waiting for first consumer to be created before binding", "Normal")
        return
    rt = c.type_by_gr(PV)
    assert rt is not None
    name = f"pvc-{meta['uid']}"
    pv = c.get(PV, "", name) or c.create(
        rt,
        {
            "metadata": {
                "name": name,
                "annotations": {"pv.kubernetes.io/provisioned-by": sc.get("provisioner", "")},
            },
            "spec": {
                "capacity": {"storage": (spec.get("resources") or {}).get("requests", {}).get("storage", "1Gi")},
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy", "Delete"),
                "storageClassName": cls_name,
                "volumeMode": spec.get("volumeMode", "Filesystem"),
                "claimRef": _ref(pvc),
            },
        },
        keep_status=False,
    )
    c.record_event(pvc, "ProvisioningSucceeded", f"Successfully provisioned volume {name}", component=CONTROLLER)
    _bind(c, pv, pvc, by_controller=True)


def _consumed(c: Cluster, pvc: Obj) -> bool:
    """A scheduled pod mounts the claim (what WaitForFirstConsumer waits for)."""
    ns, name = pvc["metadata"]["namespace"], pvc["metadata"]["name"]
    for pod in c.list("/pods", ns):
        if not pod_active(pod) or not (pod.get("spec") or {}).get("nodeName"):
            continue
        for v in (pod.get("spec") or {}).get("volumes") or []:
            if (v.get("persistentVolumeClaim") or {}).get("claimName") == name:
                return True
    return False


def _ref(pvc: Obj) -> Obj:
    meta = pvc["metadata"]
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
        "apiVersion": "v1",
        "resourceVersion": meta.get("resourceVersion", ""),
    }


def _bind(c: Cluster, pv: Obj, pvc: Obj, *, by_controller: bool) -> None:
    new_pv = clone(pv)
    if not _claimed_by(pv) or not (_claimed_by(pv) or {}).get("uid"):
        new_pv["spec"]["claimRef"] = {**(_claimed_by(pv) or {}), **_ref(pvc)}
        if not _claimed_by(pv):
            new_pv["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bound-by-controller"] = "yes"
    new_pv["status"] = {"phase": "Bound"}
    pv = c.put(PV, new_pv)
    new_pvc = clone(pvc)
    ann = new_pvc["metadata"].setdefault("annotations", {})
    ann["pv.kubernetes.io/bind-completed"] = "yes"
    if by_controller:
        ann["pv.kubernetes.io/bound-by-controller"] = "yes"
    new_pvc["spec"]["volumeName"] = pv["metadata"]["name"]
    new_pvc["status"] = {
        "phase": "Bound",
        "accessModes": list((pv.get("spec") or {}).get("accessModes") or []),
        "capacity": dict((pv.get("spec") or {}).get("capacity") or {}),
    }
    c.put(PVC, new_pvc)
    sim(c, pvc).pop("pv_event", None)


def _volume(c: Cluster, pv: Obj) -> None:
    if pv["metadata"].get("deletionTimestamp"):
        return
    phase = (pv.get("status") or {}).get("phase")
    ref = _claimed_by(pv)
    if phase in (None, "", "Pending"):
        c.put_status(PV, pv, {"phase": "Available"})
        return
    if phase != "Bound" or not ref:
        return
    claim = c.get(PVC, ref.get("namespace") or "", ref.get("name") or "")
    if claim is not None and claim["metadata"]["uid"] == ref.get("uid"):
        return
    # the claim is gone: the reclaim policy decides
    provisioned = (pv["metadata"].get("annotations") or {}).get("pv.kubernetes.io/provisioned-by")
    if (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete" and provisioned:
        rt = c.type_by_gr(PV)
        assert rt is not None
        c.delete(rt, "", pv["metadata"]["name"])
        return
    c.put_status(PV, pv, {"phase": "Released"})
