"""`meta.k8s.io/v1 Table` rendering, which kubectl asks for on `get` (Accept: ...;as=Table).

Columns and cells follow kube-apiserver's printers (pkg/printers/internalversion): the server
always renders the wide columns (priority 1), and `kubectl get` shows them only with `-o wide`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]


def age(ts: str | None) -> str:
    if not ts:
        return "<unknown>"
    try:
        t = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    s = int((datetime.now(UTC) - t).total_seconds())
    if s < 120:
        return f"{max(s, 0)}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def _col(name: str, typ: str = "string", priority: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "type": typ,
        "format": "name" if name == "Name" else "",
        "description": name,
        "priority": priority,
    }


def _pod_row(o: Obj) -> list[Any]:
    st = o.get("status") or {}
    cs = st.get("containerStatuses") or []
    n = len((o.get("spec") or {}).get("containers") or [])
    ready = sum(1 for c in cs if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in cs)
    status = st.get("phase", "Pending")
    for c in cs:
        w = (c.get("state") or {}).get("waiting")
        t = (c.get("state") or {}).get("terminated")
        if w and w.get("reason"):
            status = w["reason"]
        elif t and t.get("reason") and status not in ("Succeeded",):
            status = t["reason"]
    if o["metadata"].get("deletionTimestamp"):
        status = "Terminating"
    return [
        o["metadata"]["name"],
        f"{ready}/{n}",
        status,
        restarts,
        age(o["metadata"].get("creationTimestamp")),
        st.get("podIP") or "<none>",
        (o.get("spec") or {}).get("nodeName") or "<none>",
        st.get("nominatedNodeName") or "<none>",
        _readiness_gates(o),
    ]


def _readiness_gates(o: Obj) -> str:
    gates = (o.get("spec") or {}).get("readinessGates") or []
    if not gates:
        return "<none>"
    conds = {c.get("type"): c.get("status") for c in (o.get("status") or {}).get("conditions") or []}
    return f"{sum(1 for g in gates if conds.get(g.get('conditionType')) == 'True')}/{len(gates)}"


def _node_address(o: Obj, kind: str) -> str:
    for a in (o.get("status") or {}).get("addresses") or []:
        if a.get("type") == kind:
            return a.get("address") or "<none>"
    return "<none>"


def _node_row(o: Obj) -> list[Any]:
    conds = {c.get("type"): c.get("status") for c in (o.get("status") or {}).get("conditions") or []}
    status = "Ready" if conds.get("Ready") == "True" else "NotReady"
    if (o.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = o["metadata"].get("labels") or {}
    roles = {k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/")}
    if labels.get("kubernetes.io/role"):
        roles.add(labels["kubernetes.io/role"])
    info = (o.get("status") or {}).get("nodeInfo") or {}
    return [
        o["metadata"]["name"],
        status,
        ",".join(sorted(r for r in roles if r)) or "<none>",
        age(o["metadata"].get("creationTimestamp")),
        info.get("kubeletVersion", ""),
        _node_address(o, "InternalIP"),
        _node_address(o, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _deploy_row(o: Obj) -> list[Any]:
    st = o.get("status") or {}
    want = (o.get("spec") or {}).get("replicas", 1)
    return [
        o["metadata"]["name"],
        f"{st.get('readyReplicas', 0)}/{want}",
        st.get("updatedReplicas", 0),
        st.get("availableReplicas", 0),
        age(o["metadata"].get("creationTimestamp")),
    ]


def _svc_row(o: Obj) -> list[Any]:
    spec = o.get("spec") or {}
    ing = ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    ext = ",".join(i.get("hostname") or i.get("ip", "") for i in ing) or (
        "<pending>" if spec.get("type") == "LoadBalancer" else "<none>"
    )
    ports = (
        ",".join(
            f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/{p.get('protocol', 'TCP')}"
            for p in spec.get("ports") or []
        )
        or "<none>"
    )
    return [
        o["metadata"]["name"],
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP", "<none>"),
        ext,
        ports,
        age(o["metadata"].get("creationTimestamp")),
    ]


def _job_row(o: Obj) -> list[Any]:
    st = o.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
    status = "Complete" if conds.get("Complete") == "True" else "Failed" if conds.get("Failed") == "True" else "Running"
    return [
        o["metadata"]["name"],
        status,
        f"{st.get('succeeded', 0)}/{(o.get('spec') or {}).get('completions', 1)}",
        age(o["metadata"].get("creationTimestamp")),
    ]


def _rs_row(o: Obj) -> list[Any]:
    st = o.get("status") or {}
    return [
        o["metadata"]["name"],
        (o.get("spec") or {}).get("replicas", 0),
        st.get("replicas", 0),
        st.get("readyReplicas", 0),
        age(o["metadata"].get("creationTimestamp")),
    ]


def _ds_row(o: Obj) -> list[Any]:
    st = o.get("status") or {}
    return [
        o["metadata"]["name"],
        st.get("desiredNumberScheduled", 0),
        st.get("currentNumberScheduled", 0),
        st.get("numberReady", 0),
        st.get("updatedNumberScheduled", 0),
        st.get("numberAvailable", 0),
        age(o["metadata"].get("creationTimestamp")),
    ]


def _sts_row(o: Obj) -> list[Any]:
    st = o.get("status") or {}
    return [
        o["metadata"]["name"],
        f"{st.get('readyReplicas', 0)}/{(o.get('spec') or {}).get('replicas', 1)}",
        age(o["metadata"].get("creationTimestamp")),
    ]


def _event_row(o: Obj) -> list[Any]:
    inv = o.get("involvedObject") or {}
    return [
        age(o.get("lastTimestamp") or o["metadata"].get("creationTimestamp")),
        o.get("type", ""),
        o.get("reason", ""),
        f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        o.get("message", ""),
    ]


def _ns_row(o: Obj) -> list[Any]:
    return [
        o["metadata"]["name"],
        (o.get("status") or {}).get("phase", "Active"),
        age(o["metadata"].get("creationTimestamp")),
    ]


def _cm_row(o: Obj) -> list[Any]:
    return [
        o["metadata"]["name"],
        len(o.get("data") or {}) + len(o.get("binaryData") or {}),
        age(o["metadata"].get("creationTimestamp")),
    ]


_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))


def _access_modes(modes: list[str] | None) -> str:
    return ",".join(short for mode, short in _MODES if mode in (modes or []))


def _storage_class(o: Obj) -> str:
    ann = o["metadata"].get("annotations") or {}
    return ann.get("volume.beta.kubernetes.io/storage-class") or (o.get("spec") or {}).get("storageClassName") or ""


def _pvc_row(o: Obj) -> list[Any]:
    st, spec = o.get("status") or {}, o.get("spec") or {}
    phase = "Terminating" if o["metadata"].get("deletionTimestamp") else st.get("phase", "Pending")
    bound = bool(spec.get("volumeName"))  # capacity and modes show once a volume is bound
    return [
        o["metadata"]["name"],
        phase,
        spec.get("volumeName", ""),
        (st.get("capacity") or {}).get("storage", "") if bound else "",
        _access_modes(st.get("accessModes")) if bound else "",
        _storage_class(o),
        spec.get("volumeAttributesClassName") or "<unset>",
        age(o["metadata"].get("creationTimestamp")),
        spec.get("volumeMode") or "<unset>",
    ]


def _pv_row(o: Obj) -> list[Any]:
    st, spec = o.get("status") or {}, o.get("spec") or {}
    ref = spec.get("claimRef") or {}
    return [
        o["metadata"]["name"],
        (spec.get("capacity") or {}).get("storage", ""),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy", ""),
        "Terminating" if o["metadata"].get("deletionTimestamp") else st.get("phase", ""),
        f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else "",
        _storage_class(o),
        spec.get("volumeAttributesClassName") or "<unset>",
        st.get("reason", ""),
        age(o["metadata"].get("creationTimestamp")),
        spec.get("volumeMode") or "<unset>",
    ]


def _sc_row(o: Obj) -> list[Any]:
    default = (o["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true"
    return [
        o["metadata"]["name"] + (" (default)" if default else ""),
        o.get("provisioner", ""),
        o.get("reclaimPolicy", "Delete"),
        o.get("volumeBindingMode", "Immediate"),
        bool(o.get("allowVolumeExpansion", False)),
        age(o["metadata"].get("creationTimestamp")),
    ]


def jsonpath(obj: Any, path: str) -> Any:
    """The simple `.a.b[0].c` JSONPaths that CRD additionalPrinterColumns use."""
    import re

    cur = obj
    for name, idx in re.findall(r"\.([A-Za-z0-9_\-]+)|\[(\d+)\]", path.strip("{}")):
        if name:
            cur = cur.get(name) if isinstance(cur, dict) else None
        elif isinstance(cur, list) and int(idx) < len(cur):
            cur = cur[int(idx)]
        else:
            cur = None
        if cur is None:
            return None
    return cur


def crd_columns(columns: list[Obj]) -> tuple[list[dict[str, Any]], Any]:
    """Table layout from a CRD version's additionalPrinterColumns (+ NAME, and AGE when absent)."""
    cols = [_col("Name")] + [
        {
            "name": c.get("name", ""),
            "type": c.get("type", "string"),
            "format": "",
            "description": c.get("description", ""),
            "priority": c.get("priority", 0),
        }
        for c in columns
    ]
    has_age = any(c.get("jsonPath") == ".metadata.creationTimestamp" for c in columns)
    if not has_age:
        cols.append(_col("Age"))

    def row(o: Obj) -> list[Any]:
        cells: list[Any] = [o["metadata"]["name"]]
        for c in columns:
            v = jsonpath(o, c.get("jsonPath", ""))
            if c.get("jsonPath") == ".metadata.creationTimestamp":
                v = age(v)
            cells.append(v)
        if not has_age:
            cells.append(age(o["metadata"].get("creationTimestamp")))
        return cells

    return cols, row


KINDS: dict[str, tuple[list[dict[str, Any]], Any]] = {
    "Pod": (
        [
            _col("Name"),
            _col("Ready"),
            _col("Status"),
            _col("Restarts", "integer"),
            _col("Age"),
            _col("IP", priority=1),
            _col("Node", priority=1),
            _col("Nominated Node", priority=1),
            _col("Readiness Gates", priority=1),
        ],
        _pod_row,
    ),
    "Node": (
        [
            _col("Name"),
            _col("Status"),
            _col("Roles"),
            _col("Age"),
            _col("Version"),
            _col("Internal-IP", priority=1),
            _col("External-IP", priority=1),
            _col("OS-Image", priority=1),
            _col("Kernel-Version", priority=1),
            _col("Container-Runtime", priority=1),
        ],
        _node_row,
    ),
    "Deployment": (
        [_col("Name"), _col("Ready"), _col("Up-to-date", "integer"), _col("Available", "integer"), _col("Age")],
        _deploy_row,
    ),
    "Service": (
        [_col("Name"), _col("Type"), _col("Cluster-IP"), _col("External-IP"), _col("Port(s)"), _col("Age")],
        _svc_row,
    ),
    "Job": ([_col("Name"), _col("Status"), _col("Completions"), _col("Age")], _job_row),
    "ReplicaSet": (
        [_col("Name"), _col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"), _col("Age")],
        _rs_row,
    ),
    "DaemonSet": (
        [
            _col("Name"),
            _col("Desired", "integer"),
            _col("Current", "integer"),
            _col("Ready", "integer"),
            _col("Up-to-date", "integer"),
            _col("Available", "integer"),
            _col("Age"),
        ],
        _ds_row,
    ),
    "StatefulSet": ([_col("Name"), _col("Ready"), _col("Age")], _sts_row),
    "Event": ([_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")], _event_row),
    "Namespace": ([_col("Name"), _col("Status"), _col("Age")], _ns_row),
    "ConfigMap": ([_col("Name"), _col("Data", "integer"), _col("Age")], _cm_row),
    "PersistentVolumeClaim": (
        [
            _col("Name"),
            _col("Status"),
            _col("Volume"),
            _col("Capacity"),
            _col("Access Modes"),
            _col("StorageClass"),
            _col("VolumeAttributesClass"),
            _col("Age"),
            _col("VolumeMode", priority=1),
        ],
        _pvc_row,
    ),
    "StorageClass": (
        [
            _col("Name"),
            _col("Provisioner"),
            _col("ReclaimPolicy"),
            _col("VolumeBindingMode"),
            _col("AllowVolumeExpansion", "boolean"),
            _col("Age"),
        ],
        _sc_row,
    ),
    "PersistentVolume": (
        [
            _col("Name"),
            _col("Capacity"),
            _col("Access Modes"),
            _col("Reclaim Policy"),
            _col("Status"),
            _col("Claim"),
            _col("StorageClass"),
            _col("VolumeAttributesClass"),
            _col("Reason"),
            _col("Age"),
            _col("VolumeMode", priority=1),
        ],
        _pv_row,
    ),
}


def _row_object(o: Obj, include: str) -> Obj | None:
    if include == "Object":
        return o
    if include == "None":
        return None
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}


def to_table(
    kind: str,
    items: list[Obj],
    resource_version: str,
    include: str = "Metadata",
    printer_columns: list[Obj] | None = None,
) -> dict[str, Any]:
    if printer_columns:
        cols, row = crd_columns(printer_columns)
    else:
        cols, row = KINDS.get(
            kind,
            (
                [_col("Name"), _col("Age")],
                lambda o: [o["metadata"]["name"], age(o["metadata"].get("creationTimestamp"))],
            ),
        )
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": cols,
        "rows": [{"cells": row(o), "object": _row_object(o, include)} for o in items],
    }
