"""The model the managed Karpenter simulation works with: constants, a NodePool with its node class
and groups, the node a group would launch, condition and status helpers."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from ...operators.karpenter_crds import NODECLASS_GROUP, NODEPOOL_GR
from ...quantity import parse_quantity
from ...store import Cluster
from ..base import controller_of, pod_active, set_condition
from ..nodes import resources_of
from ..scheduler import fit_reasons, pod_requests

Obj = dict[str, Any]

STATE = "_karpenter"  # c.sim key: groups from the AWS half, timers, decisions
OWNER = "hyperpod-karpenter"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
POOL_LABEL = "karpenter.sh/nodepool"
DISRUPTED_TAINT = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
FINALIZER = "karpenter.sh/termination"
REGISTRATION_TTL = 900.0  # simulated seconds a NodeClaim may wait for its node (Karpenter: 15 min)
REGISTRATION_MIN_REAL_SECONDS = 5.0
COMPONENT = "karpenter"


def duration(s: str | None) -> float | None:
    """Karpenter durations ("30s", "1h30m", "Never") in seconds; None for Never."""
    if not s or s == "Never":
        return None
    total, num = 0.0, ""
    for ch in s:
        if ch.isdigit():
            num += ch
        else:
            total += int(num or 0) * {"s": 1, "m": 60, "h": 3600}.get(ch, 0)
            num = ""
    return total


def req_ok(reqs: list[Obj], labels: dict[str, str]) -> bool:
    for r in reqs:
        key, op, vals = r.get("key"), r.get("operator"), r.get("values") or []
        v = labels.get(key)
        if op == "In" and v not in vals or op == "NotIn" and v in vals:
            return False
        if op == "Exists" and key not in labels or op == "DoesNotExist" and key in labels:
            return False
        if op in ("Gt", "Lt"):
            try:
                if v is None or (int(v) <= int(vals[0]) if op == "Gt" else int(v) >= int(vals[0])):
                    return False
            except (ValueError, IndexError):
                return False
    return True


def validation_errors(pool: Obj) -> list[str]:
    """The upstream CEL rules a NodePool is most often refused for (the sandbox does not run CEL)."""
    out = []
    spec = pool.get("spec") or {}
    for r in ((spec.get("template") or {}).get("spec") or {}).get("requirements") or []:
        op, vals = r.get("operator"), r.get("values") or []
        if op == "In" and not vals:
            out.append("requirements with operator 'In' must have a value defined")
        if op in ("Gt", "Lt") and (len(vals) != 1 or not str(vals[0]).isdigit()):
            out.append("requirements operator 'Gt' or 'Lt' must have a single positive integer value")
        if r.get("key") in ("karpenter.sh/nodepool", "kubernetes.io/hostname"):
            out.append(f'label "{r.get("key")}" is restricted')
    labels = (((spec.get("template") or {}).get("metadata") or {}).get("labels")) or {}
    for k in labels:
        if k in ("karpenter.sh/nodepool", "kubernetes.io/hostname"):
            out.append(f'label "{k}" is restricted')
    return out


def condition(obj: Obj, conds: list[Obj], ctype: str, ok: bool, reason: str, message: str = "") -> list[Obj]:
    """Karpenter's condition style: reason = the type when True, the problem and a message when not."""
    conds = set_condition(conds, ctype, "True" if ok else "False", ctype if ok else reason, "" if ok else message)
    for x in conds:
        if x["type"] == ctype:
            x["observedGeneration"] = int(obj["metadata"].get("generation") or 1)
    return conds


def put_status(c: Cluster, gr: str, obj: Obj, status: Obj) -> Obj:
    cur = obj.get("status") or {}
    if json.dumps(cur, sort_keys=True) == json.dumps(status, sort_keys=True):
        return obj
    return c.put_status(gr, obj, status)


def instance_id(node: Obj) -> str:
    return (
        str((node.get("spec") or {}).get("providerID") or node["metadata"]["name"])
        .rsplit("/", 1)[-1]
        .replace("hyperpod-", "")
    )


def daemon_pod(pod: Obj) -> bool:
    ref = controller_of(pod)
    return bool(ref and ref.get("kind") == "DaemonSet")


def movable(pod: Obj) -> bool:
    ref = controller_of(pod)
    return bool(ref and ref.get("kind") in ("ReplicaSet", "StatefulSet"))


def do_not_disrupt(obj: Obj) -> bool:
    return (obj["metadata"].get("annotations") or {}).get("karpenter.sh/do-not-disrupt") == "true"


def fmt_quantity(key: str, v: Decimal) -> str:
    if key == "memory" or key.endswith("storage"):
        return f"{int(v / 1024)}Ki"
    return str(int(v)) if v == v.to_integral_value() else f"{int(v * 1000)}m"


class Pool:
    def __init__(self, obj: Obj, groups: dict[str, Obj], classes: dict[str, Obj]) -> None:
        self.obj = obj
        self.name = obj["metadata"]["name"]
        spec = obj.get("spec") or {}
        self.template = spec.get("template") or {}
        tspec = self.template.get("spec") or {}
        self.labels = dict((self.template.get("metadata") or {}).get("labels") or {})
        self.taints = list(tspec.get("taints") or [])
        self.requirements = list(tspec.get("requirements") or [])
        self.ref = tspec.get("nodeClassRef") or {}
        self.weight = int(spec.get("weight") or 0)
        dis = spec.get("disruption") or {}
        self.policy = dis.get("consolidationPolicy", "WhenEmptyOrUnderutilized")
        self.after = duration(dis.get("consolidateAfter", "0s"))
        self.budgets = [b.get("nodes", "10%") for b in dis.get("budgets") or [{"nodes": "10%"}]]
        self.errors = validation_errors(obj)
        try:
            self.limits = {k: parse_quantity(v) for k, v in (spec.get("limits") or {}).items()}
        except ValueError as e:  # one bad pool must not stop the others
            self.limits, self.errors = {}, [*self.errors, f"limits: {e}"]
        cls = classes.get(self.ref.get("name", "")) if self.ref.get("group") == NODECLASS_GROUP else None
        self.nodeclass = cls
        self.class_ready = bool(cls and class_problem(cls, groups) is None)
        self.ready = not self.errors and self.class_ready
        self.groups = sorted(((cls or {}).get("spec") or {}).get("instanceGroups") or []) if self.ready else []

    def node_labels(self, group: str, g: Obj) -> dict[str, str]:
        itype = g["instance_type"]
        labels = {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "arm64" if itype.startswith(("ml.g5g", "ml.c7g", "ml.m7g")) else "amd64",
            "node.kubernetes.io/instance-type": itype,
            "beta.kubernetes.io/instance-type": itype,
            "topology.kubernetes.io/zone": (g.get("zones") or [""])[0],
            GROUP_LABEL: group,
            "sagemaker.amazonaws.com/compute-type": "hyperpod",
            "sagemaker.amazonaws.com/node-health-status": "Schedulable",
            "sagemaker.amazonaws.com/capacity-type": "OnDemand",
            "karpenter.sh/capacity-type": "on-demand",
            POOL_LABEL: self.name,
        }
        labels.update(g.get("labels") or {})
        labels.update(self.labels)
        return labels

    def budget(self, nodes: int) -> int:
        allowed = nodes
        for b in self.budgets:
            s = str(b)
            n = math.ceil(nodes * int(s[:-1]) / 100) if s.endswith("%") else int(s)
            allowed = min(allowed, n)
        return allowed


def class_problem(cls: Obj, groups: dict[str, Obj]) -> tuple[str, str] | None:
    for name in (cls.get("spec") or {}).get("instanceGroups") or []:
        g = groups.get(name)
        if g is None:
            return "InstanceGroupNotFound", f"instance group {name} is not an autoscaling instance group of the cluster"
        if g.get("capacity_type") == "Spot":
            return (
                "UnsupportedCapacityType",
                f"instance group {name} uses Spot capacity; autoscaling supports On-Demand only",
            )
    return None


def virtual_node(name: str, pool: Pool, group: str, g: Obj) -> Obj:
    """A node of `group` as it will register (labels, taints, allocatable), for the scheduling simulation."""
    cap, alloc = resources_of(g)
    taints = [t for t in pool.taints + list(g.get("taints") or []) if t.get("effect") in ("NoSchedule", "NoExecute")]
    return {
        "metadata": {"name": name, "labels": pool.node_labels(group, g)},
        "spec": {"taints": taints},
        "status": {"capacity": cap, "allocatable": alloc},
    }


def daemon_overhead(c: Cluster, node: Obj) -> dict[str, Decimal]:
    """What the DaemonSets will run on a new node (its pods need room next to them)."""
    used: dict[str, Decimal] = {"pods": Decimal(0)}
    for ds in c.list("apps/daemonsets"):
        pod = {"spec": ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}}
        if fit_reasons(pod, node, {}):
            continue
        for k, v in pod_requests(pod).items():
            used[k] = used.get(k, Decimal(0)) + v
        used["pods"] += 1
    return used


def claim_group(claim: Obj) -> str:
    return (claim["metadata"].get("labels") or {}).get(GROUP_LABEL, "")


def disrupted(node: Obj) -> bool:
    return any(t.get("key") == DISRUPTED_TAINT["key"] for t in (node.get("spec") or {}).get("taints") or [])


def add_usage(used: dict[str, Decimal], req: dict[str, Decimal]) -> None:
    for k, v in req.items():
        used[k] = used.get(k, Decimal(0)) + v
    used["pods"] = used.get("pods", Decimal(0)) + 1


def pending_pods(c: Cluster) -> list[Obj]:
    out = []
    for p in c.list("/pods"):
        spec = p.get("spec") or {}
        if spec.get("nodeName") or not pod_active(p) or daemon_pod(p):
            continue
        if spec.get("schedulerName", "default-scheduler") != "default-scheduler":
            continue
        conds = (p.get("status") or {}).get("conditions") or []
        if any(x.get("type") == "PodScheduled" and x.get("reason") == "Unschedulable" for x in conds):
            out.append(p)
    return sorted(out, key=lambda p: p["metadata"]["creationTimestamp"])


def pool_status(c: Cluster, pools: list[Pool], nodes: dict[str, Obj]) -> None:
    for pool in pools:
        totals: dict[str, Decimal] = {}
        count = 0
        for n in nodes.values():
            if (n["metadata"].get("labels") or {}).get(POOL_LABEL) != pool.name:
                continue
            count += 1
            for k, v in ((n.get("status") or {}).get("capacity") or {}).items():
                totals[k] = totals.get(k, Decimal(0)) + parse_quantity(v)
        status = dict(pool.obj.get("status") or {})
        errors = "; ".join(pool.errors)
        conds = status.get("conditions") or []
        conds = condition(pool.obj, conds, "ValidationSucceeded", not pool.errors, "NodePoolValidationFailed", errors)
        conds = condition(pool.obj, conds, "NodeClassReady", pool.class_ready, "NodeClassNotReady", class_message(pool))
        conds = condition(pool.obj, conds, "Ready", pool.ready, "UnhealthyDependents", errors or class_message(pool))
        status.update(
            {
                "conditions": conds,
                "nodes": count,
                "resources": {k: fmt_quantity(k, v) for k, v in sorted(totals.items())} | {"nodes": str(count)},
                "nodeClassObservedGeneration": int(
                    ((pool.nodeclass or {}).get("metadata") or {}).get("generation") or 0
                ),
            }
        )
        cur = c.get(NODEPOOL_GR, "", pool.name)
        if cur is not None:
            put_status(c, NODEPOOL_GR, cur, status)


def class_message(pool: Pool) -> str:
    if pool.nodeclass is None:
        ref = pool.ref
        return f"NodeClass {ref.get('kind', '')}/{ref.get('name', '')} ({ref.get('group', '')}) not found"
    return "" if pool.class_ready else "HyperpodNodeClass is not ready"
