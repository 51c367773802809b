"""Which storage a path inside a container is: follow the container's volumeMounts to the pod's
volumes, a PersistentVolumeClaim to its PersistentVolume, and the CSI driver to the bucket
(Mountpoint for S3, `s3.csi.aws.com`, with an optional `prefix` mount option) or the FSx for
Lustre file system (`fsx.csi.aws.com`, volumeHandle = file system id)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from ..kube.store import Cluster

Obj = dict[str, Any]
FSX_FILES = "_fsx_files"  # cluster.sim key: {file system id: {path under the mount root: size}}


@dataclass(frozen=True)
class Location:
    """A path resolved to storage: kind s3 (bucket + key prefix) or fsx (file system + path)."""

    kind: str  # s3 | fsx | local
    store: str  # bucket or file system id ("" for local)
    path: str  # key prefix in the bucket / path under the FSx root / the local path
    read_only: bool = False
    claim: str = ""


def resolve(c: Cluster, pod: Obj, container: Obj, path: str) -> Location:
    """Where `path` (absolute, inside `container`) lives."""
    path = posixpath.normpath(path)
    best: Obj | None = None
    for m in container.get("volumeMounts") or []:
        mp = posixpath.normpath(str(m.get("mountPath", "")))
        if path == mp or path.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) > len(posixpath.normpath(best["mountPath"])):
                best = m
    if best is None:
        return Location("local", "", path)
    sub = path[len(posixpath.normpath(best["mountPath"])) :].lstrip("/")
    if best.get("subPath"):
        sub = posixpath.join(str(best["subPath"]), sub) if sub else str(best["subPath"])
    vol = next((v for v in (pod.get("spec") or {}).get("volumes") or [] if v.get("name") == best.get("name")), None)
    ro = bool(best.get("readOnly"))
    if vol is None:
        return Location("local", "", path)
    claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
    if claim:
        ns = pod["metadata"]["namespace"]
        pvc = c.get("/persistentvolumeclaims", ns, claim)
        pv = _volume_of(c, pvc, ns, claim)
        if pv is not None:
            csi = (pv.get("spec") or {}).get("csi") or {}
            return _csi_location(pv, csi, sub, ro, claim)
        return Location("local", "", path, ro, claim)
    if vol.get("csi"):
        return _csi_location({}, vol["csi"], sub, ro, "")
    return Location("local", "", path, ro)


def _volume_of(c: Cluster, pvc: Obj | None, ns: str, claim: str) -> Obj | None:
    if pvc is not None and (pvc.get("spec") or {}).get("volumeName"):
        pv = c.get("/persistentvolumes", "", pvc["spec"]["volumeName"])
        if pv is not None:
            return pv
    for pv in c.list("/persistentvolumes"):
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if ref.get("name") == claim and ref.get("namespace", ns) == ns:
            return pv
    return None


def _csi_location(pv: Obj, csi: Obj, sub: str, ro: bool, claim: str) -> Location:
    driver = csi.get("driver")
    attrs = csi.get("volumeAttributes") or {}
    if driver == "s3.csi.aws.com":
        prefix = ""
        for opt in (pv.get("spec") or {}).get("mountOptions") or []:
            parts = str(opt).replace("=", " ").split()
            if len(parts) == 2 and parts[0].lstrip("-") == "prefix":
                prefix = parts[1].strip("/") + "/"
        key = (prefix + sub).strip("/")
        return Location("s3", str(attrs.get("bucketName", "")), key, ro, claim)
    if driver == "fsx.csi.aws.com":
        return Location("fsx", str(csi.get("volumeHandle", "")), sub.strip("/"), ro, claim)
    return Location("local", "", sub, ro, claim)


def fsx_files(c: Cluster, fs_id: str, prefix: str) -> list[tuple[str, int]]:
    files = (c.sim.get(FSX_FILES) or {}).get(fs_id) or {}
    p = prefix.strip("/")
    return sorted((k, v) for k, v in files.items() if not p or k == p or k.startswith(p + "/"))


def record_fsx(c: Cluster, fs_id: str, files: dict[str, int]) -> None:
    c.sim.setdefault(FSX_FILES, {}).setdefault(fs_id, {}).update(files)
