"""default-scheduler: binds pending pods to nodes that fit, or reports why none does."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from ..quantity import parse_quantity
from ..store import Cluster
from ..util import clone
from .base import Ctx, pod_active, set_condition, sim

Obj = dict[str, Any]
RESOURCES = (
    "cpu",
    "memory",
    "nvidia.com/gpu",
    "vpc.amazonaws.com/efa",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
)


def pod_requests(pod: Obj) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    spec = pod.get("spec") or {}
    for ct in spec.get("containers") or []:
        res = ct.get("resources") or {}
        req = dict(res.get("limits") or {})
        req.update(res.get("requests") or {})
        for k, v in req.items():
            try:
                total[k] = total.get(k, Decimal(0)) + parse_quantity(v)
            except ValueError:
                pass
    # init containers run one at a time: the pod needs the max of them, if larger
    for ct in spec.get("initContainers") or []:
        res = ct.get("resources") or {}
        req = dict(res.get("limits") or {})
        req.update(res.get("requests") or {})
        for k, v in req.items():
            try:
                total[k] = max(total.get(k, Decimal(0)), parse_quantity(v))
            except ValueError:
                pass
    return total


def tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations or []:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator", "Equal")
        if not t.get("key") and op == "Exists":
            return True
        if t.get("key") != taint.get("key"):
            continue
        if op == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _affinity_ok(pod: Obj, labels: dict[str, str]) -> bool:
    aff = (((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = aff.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        ok = True
        for e in term.get("matchExpressions") or []:
            k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
            v = labels.get(k)
            if (
                (op == "In" and v not in vals)
                or (op == "NotIn" and v in vals)
                or (op == "Exists" and k not in labels)
                or (op == "DoesNotExist" and k in labels)
            ):
                ok = False
            if op in ("Gt", "Lt"):
                try:
                    ok = ok and v is not None and (int(v) > int(vals[0]) if op == "Gt" else int(v) < int(vals[0]))
                except ValueError:
                    ok = False
        if ok:
            return True
    return False


def node_ready(node: Obj) -> bool:
    return any(
        x.get("type") == "Ready" and x.get("status") == "True"
        for x in (node.get("status") or {}).get("conditions") or []
    )


def fit_reasons(pod: Obj, node: Obj, used: dict[str, Decimal]) -> list[str]:
    """Why this pod cannot go on this node (empty when it fits)."""
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return ["node(s) didn't match Pod's node affinity/selector"]
    if not _affinity_ok(pod, labels):
        return ["node(s) didn't match Pod's node affinity/selector"]
    if (node.get("spec") or {}).get("unschedulable") and not tolerates(
        spec.get("tolerations") or [], {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    ):
        return ["node(s) were unschedulable"]
    for t in (node.get("spec") or {}).get("taints") or []:
        if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(spec.get("tolerations") or [], t):
            if t.get("key") == "node.kubernetes.io/unschedulable":
                continue
            val = f": {t['value']}" if t.get("value") else ""
            return [f"node(s) had untolerated taint {{{t.get('key')}{val}}}"]
    alloc = (node.get("status") or {}).get("allocatable") or {}
    reasons = []
    req = pod_requests(pod)
    for k, want in req.items():
        if want <= 0:
            continue
        have = parse_quantity(alloc.get(k, "0"))
        if used.get(k, Decimal(0)) + want > have:
            reasons.append(f"Insufficient {k}")
    if used.get("pods", Decimal(0)) + 1 > parse_quantity(alloc.get("pods", "110")):
        reasons.append("Too many pods")
    return reasons


def _allocated(node: Obj, used: dict[str, Decimal]) -> float:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    frac = []
    for k in ("cpu", "memory", "nvidia.com/gpu"):
        have = parse_quantity(alloc.get(k, "0"))
        if have > 0:
            frac.append(float(used.get(k, Decimal(0)) / have))
    # pods without requests still count (the real scorer assumes 100m/200Mi for them)
    pods = float(used.get("pods", Decimal(0)) / max(parse_quantity(alloc.get("pods", "110")), Decimal(1)))
    return (sum(frac) / len(frac) if frac else 0.0) + pods


def node_usage(c: Cluster) -> dict[str, dict[str, Decimal]]:
    usage: dict[str, dict[str, Decimal]] = {}
    for pod in c.list("/pods"):
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or not pod_active(pod):
            continue
        u = usage.setdefault(node, {})
        for k, v in pod_requests(pod).items():
            u[k] = u.get(k, Decimal(0)) + v
        u["pods"] = u.get("pods", Decimal(0)) + 1
    return usage


def schedule(c: Cluster, ctx: Ctx) -> None:
    pending = [
        p
        for p in c.list("/pods")
        if not (p.get("spec") or {}).get("nodeName")
        and pod_active(p)
        and (p.get("spec") or {}).get("schedulerName", "default-scheduler") == "default-scheduler"
    ]
    if not pending:
        return
    nodes = [n for n in c.list("/nodes") if node_ready(n)]
    all_nodes = c.list("/nodes")
    usage = node_usage(c)
    for pod in sorted(
        pending, key=lambda p: (-int((p.get("spec") or {}).get("priority") or 0), p["metadata"]["creationTimestamp"])
    ):
        ctx.per_object(c, "default-scheduler", pod, _schedule_one, c, ctx, pod, nodes, all_nodes, usage)


def _schedule_one(
    c: Cluster, ctx: Ctx, pod: Obj, nodes: list[Obj], all_nodes: list[Obj], usage: dict[str, dict[str, Decimal]]
) -> None:
    reasons: Counter[str] = Counter()
    fitting = []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        r = fit_reasons(pod, node, usage.get(node["metadata"]["name"], {}))
        if not r:
            fitting.append(node)
        for x in r:
            reasons[x] += 1
    # NodeResourcesFit's default LeastAllocated scoring: spread over the emptiest fitting node
    chosen = min(fitting, key=lambda n: _allocated(n, usage.get(n["metadata"]["name"], {}))) if fitting else None
    not_ready = len(all_nodes) - len(nodes)
    if not_ready:
        reasons["node(s) had untolerated taint {node.kubernetes.io/not-ready: }"] += not_ready
    if chosen is None:
        parts = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda x: x[0]))
        msg = (
            f"0/{len(all_nodes)} nodes are available: {parts}." if all_nodes else "no nodes available to schedule pods"
        )
        if all_nodes:
            msg += (
                f" preemption: 0/{len(all_nodes)} nodes are available: {len(all_nodes)} No preemption "
                "victims found for incoming pod."
            )
        st = clone(pod.get("status") or {})
        st["phase"] = "Pending"
        st["conditions"] = set_condition(st.get("conditions") or [], "PodScheduled", "False", "Unschedulable", msg)
        s = sim(c, pod)
        if s.get("unsched_msg") != msg:
            s["unsched_msg"] = msg
            c.record_event(pod, "FailedScheduling", msg, "Warning", component="default-scheduler")
        for cond in st["conditions"]:
            if cond["type"] == "PodScheduled":
                cond["lastProbeTime"] = None
        c.put_status("/pods", pod, st)
        return
    node_name = chosen["metadata"]["name"]
    new = clone(pod)
    new["spec"]["nodeName"] = node_name
    st = new.setdefault("status", {})
    st["conditions"] = set_condition(st.get("conditions") or [], "PodScheduled", "True", "", "")
    new = c.put("/pods", new)
    sim(c, new)["t_bound"] = ctx.now
    u = usage.setdefault(node_name, {})
    for k, v in pod_requests(pod).items():
        u[k] = u.get(k, Decimal(0)) + v
    u["pods"] = u.get("pods", Decimal(0)) + 1
    c.record_event(
        new,
        "Scheduled",
        f"Successfully assigned {pod['metadata']['namespace']}/{pod['metadata']['name']} to {node_name}",
        component="default-scheduler",
    )
