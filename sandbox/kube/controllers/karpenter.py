"""HyperPod's managed Karpenter, the Kubernetes half: NodePools whose HyperpodNodeClass lists HyperPod
instance groups get NodeClaims for pending pods that fit a group's instance type, and give back nodes
that stayed empty (or whose pods fit elsewhere) for the pool's `consolidateAfter`.

It runs only while the AWS half hands over the cluster's autoscaled groups (AutoScaling InService,
`KubeWorld.set_autoscaling`). Launching and terminating are the AWS half's: this controller only
decides, and `decisions()` reports per group how many nodes should exist and which instances to
remove (CONTRACT.md). The lifecycle tick raises the group's count (as BatchAddClusterNodes) or
deletes the instances (as BatchDeleteClusterNodes, never below the group's MinInstanceCount); the
new nodes register through `sync_nodes` and bind to their NodeClaims here.

Simplifications (sandbox/kube/README.md): consolidation moves only pods owned by a ReplicaSet or
StatefulSet; drift, expiry and disruption schedules are not simulated; budgets count nodes.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from ..operators import MANAGED_LABEL as OWNER_LABEL
from ..operators.karpenter_crds import KARPENTER_CRDS, NODECLAIM_GR, NODECLASS_GR, NODECLASS_GROUP, NODEPOOL_GR
from ..quantity import parse_quantity
from ..store import CRD_GR, Cluster, rand_suffix
from ..util import clone
from .base import Ctx, controller_of, owner_ref, pod_active, set_condition
from .nodes import resources_of
from .scheduler import fit_reasons, node_ready, node_usage, pod_requests

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


# ------------------------------------------------------------------ the AWS half's handover


def set_groups(c: Cluster, groups: dict[str, Obj] | None) -> None:
    """Managed Karpenter on (the autoscaled HyperPod groups) or off (None): its CRDs are served only
    while it is on; turning it off removes them with every NodePool, NodeClaim and node class."""
    st = c.sim.setdefault(STATE, {})
    st["groups"] = groups
    rt = c.type_by_gr(CRD_GR)
    assert rt is not None
    for crd in KARPENTER_CRDS:
        name = crd["metadata"]["name"]
        present = c.get(CRD_GR, "", name)
        if groups is not None and present is None:
            body = clone(crd)
            body["metadata"]["labels"] = {OWNER_LABEL: OWNER}
            c.create(rt, body)
        elif groups is None and present is not None:
            if (present["metadata"].get("labels") or {}).get(OWNER_LABEL) == OWNER:
                c.delete(rt, "", name)  # ours only: an open-source Karpenter someone installed keeps its CRDs
    if groups is None:
        st.pop("decisions", None)


def decisions(c: Cluster) -> Obj | None:
    """{"desired": {group: nodes}, "terminate": [instance ids]} while managed Karpenter runs."""
    st = c.sim.get(STATE) or {}
    if st.get("groups") is None:
        return None
    return st.get("decisions") or {"desired": {}, "terminate": []}


# ------------------------------------------------------------------ helpers


def _duration(s: str | None) -> float | None:
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


def _req_ok(reqs: list[Obj], labels: dict[str, str]) -> bool:
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


def _validation_errors(pool: Obj) -> list[str]:
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


def _cond(obj: Obj, conds: list[Obj], ctype: str, ok: bool, reason: str, message: str = "") -> list[Obj]:
    """Karpenter's condition style: reason = the type when True, the problem and a message when not."""
    conds = set_condition(conds, ctype, "True" if ok else "False", ctype if ok else reason, "" if ok else message)
    for x in conds:
        if x["type"] == ctype:
            x["observedGeneration"] = int(obj["metadata"].get("generation") or 1)
    return conds


def _put_status(c: Cluster, gr: str, obj: Obj, status: Obj) -> Obj:
    cur = obj.get("status") or {}
    if json.dumps(cur, sort_keys=True) == json.dumps(status, sort_keys=True):
        return obj
    return c.put_status(gr, obj, status)


def _instance_id(node: Obj) -> str:
    return (
        str((node.get("spec") or {}).get("providerID") or node["metadata"]["name"])
        .rsplit("/", 1)[-1]
        .replace("hyperpod-", "")
    )


def _daemon_pod(pod: Obj) -> bool:
    ref = controller_of(pod)
    return bool(ref and ref.get("kind") == "DaemonSet")


def _movable(pod: Obj) -> bool:
    ref = controller_of(pod)
    return bool(ref and ref.get("kind") in ("ReplicaSet", "StatefulSet"))


def _do_not_disrupt(obj: Obj) -> bool:
    return (obj["metadata"].get("annotations") or {}).get("karpenter.sh/do-not-disrupt") == "true"


def _fmt(key: str, v: Decimal) -> str:
    if key == "memory" or key.endswith("storage"):
        return f"{int(v / 1024)}Ki"
    return str(int(v)) if v == v.to_integral_value() else f"{int(v * 1000)}m"


# ------------------------------------------------------------------ the model of a pool


class _Pool:
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
        self.after = _duration(dis.get("consolidateAfter", "0s"))
        self.budgets = [b.get("nodes", "10%") for b in dis.get("budgets") or [{"nodes": "10%"}]]
        self.errors = _validation_errors(obj)
        try:
            self.limits = {k: parse_quantity(v) for k, v in (spec.get("limits") or {}).items()}
        except ValueError as e:  # one bad pool must not stop the others
            self.limits, self.errors = {}, [*self.errors, f"limits: {e}"]
        cls = classes.get(self.ref.get("name", "")) if self.ref.get("group") == NODECLASS_GROUP else None
        self.nodeclass = cls
        self.class_ready = bool(cls and _class_problem(cls, groups) is None)
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


def _class_problem(cls: Obj, groups: dict[str, Obj]) -> tuple[str, str] | None:
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


def _virtual_node(name: str, pool: _Pool, group: str, g: Obj) -> Obj:
    """A node of `group` as it will register (labels, taints, allocatable), for the scheduling simulation."""
    cap, alloc = resources_of(g)
    taints = [t for t in pool.taints + list(g.get("taints") or []) if t.get("effect") in ("NoSchedule", "NoExecute")]
    return {
        "metadata": {"name": name, "labels": pool.node_labels(group, g)},
        "spec": {"taints": taints},
        "status": {"capacity": cap, "allocatable": alloc},
    }


def _daemon_overhead(c: Cluster, node: Obj) -> dict[str, Decimal]:
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


# ------------------------------------------------------------------ the controller


def run(c: Cluster, ctx: Ctx) -> None:
    st = c.sim.get(STATE) or {}
    groups: dict[str, Obj] | None = st.get("groups")
    if groups is None or c.type_by_gr(NODEPOOL_GR) is None:
        return
    classes = {o["metadata"]["name"]: o for o in c.list(NODECLASS_GR)}
    for cls in classes.values():
        problem = _class_problem(cls, groups)
        status = dict(cls.get("status") or {})
        conds = (cls.get("status") or {}).get("conditions") or []
        status["conditions"] = _cond(cls, conds, "Ready", problem is None, *(problem or ("", "")))
        _put_status(c, NODECLASS_GR, cls, status)
    pools = [_Pool(p, groups, classes) for p in c.list(NODEPOOL_GR) if not p["metadata"].get("deletionTimestamp")]
    pools.sort(key=lambda p: (-p.weight, p.name))
    managed = {g for p in pools for g in p.groups}
    nodes = {n["metadata"]["name"]: n for n in c.list("/nodes")}
    terminate: list[str] = []
    claims = _bind_and_terminate(c, ctx, pools, groups, nodes, terminate)
    _provision(c, ctx, pools, groups, nodes, claims)
    _consolidate(c, ctx, st, pools, groups, managed, nodes, claims, terminate)
    desired: dict[str, int] = {}
    for g in managed:
        live = [n for n in nodes.values() if (n["metadata"].get("labels") or {}).get(GROUP_LABEL) == g]
        live = [n for n in live if not _disrupted(n) and _instance_id(n) not in terminate]
        pending = [x for x in claims if _claim_group(x) == g and not (x.get("status") or {}).get("nodeName")]
        desired[g] = len(live) + len([x for x in pending if not x["metadata"].get("deletionTimestamp")])
    st["decisions"] = {"desired": desired, "terminate": sorted(set(terminate))}
    _pool_status(c, pools, nodes)


def _claim_group(claim: Obj) -> str:
    return (claim["metadata"].get("labels") or {}).get(GROUP_LABEL, "")


def _disrupted(node: Obj) -> bool:
    return any(t.get("key") == DISRUPTED_TAINT["key"] for t in (node.get("spec") or {}).get("taints") or [])


def _bind_and_terminate(
    c: Cluster, ctx: Ctx, pools: list[_Pool], groups: dict[str, Obj], nodes: dict[str, Obj], terminate: list[str]
) -> list[Obj]:
    """Registered nodes bind to the NodeClaims waiting for their group; deleted NodeClaims drain and
    give their node back; claims whose node is gone (or never came) are cleaned up."""
    claims = c.list(NODECLAIM_GR)
    bound = {(x.get("status") or {}).get("nodeName") for x in claims} - {None}
    born = c.sim.setdefault(STATE, {}).setdefault("born", {})
    for uid in set(born) - {x["metadata"]["uid"] for x in claims}:
        born.pop(uid)
    pool_by_name = {p.name: p for p in pools}
    out = []
    for claim in sorted(claims, key=lambda x: x["metadata"]["creationTimestamp"]):
        status = dict(claim.get("status") or {})
        node_name = status.get("nodeName")
        node = nodes.get(node_name) if node_name else None
        deleting = bool(claim["metadata"].get("deletionTimestamp"))
        if node_name and node is None:
            _finish(c, claim)  # the node is gone: the claim goes with it
            continue
        if deleting:
            if node is None:
                _finish(c, claim)
                continue
            reason = next(
                (x.get("reason") for x in status.get("conditions") or [] if x.get("type") == "DisruptionReason"),
                "Deleted",
            )
            _drain(c, node, f"Disrupting NodeClaim: {reason}")
            g = groups.get(_claim_group(claim))
            live = [
                n for n in nodes.values() if (n["metadata"].get("labels") or {}).get(GROUP_LABEL) == _claim_group(claim)
            ]
            if g is not None and len(live) > int(g.get("min", 0)):
                terminate.append(_instance_id(node))
            else:  # the group is at its minimum: HyperPod keeps the node, Karpenter lets it go
                _release_node(c, node)
                _finish(c, claim)
                continue
            out.append(claim)
            continue
        if node is None:
            since = born.setdefault(claim["metadata"]["uid"], ctx.now)
            # at the sandbox's large speedups one tick is minutes of simulated time: also wait a few
            # real seconds, so that a node one tick away never loses its claim
            if ctx.elapsed(since) > REGISTRATION_TTL and ctx.now - since > REGISTRATION_MIN_REAL_SECONDS:
                c.record_event(
                    claim, "FailedRegistration", "NodeClaim did not register a node in time", "Warning", COMPONENT
                )
                _finish(c, claim)
                continue
            for n in sorted(nodes.values(), key=lambda n: n["metadata"]["creationTimestamp"]):
                labels = n["metadata"].get("labels") or {}
                if (
                    labels.get(GROUP_LABEL) == _claim_group(claim)
                    and n["metadata"]["name"] not in bound
                    and POOL_LABEL not in labels
                    and n["metadata"]["creationTimestamp"] >= claim["metadata"]["creationTimestamp"]
                    and node_ready(n)
                ):
                    pool = pool_by_name.get((claim["metadata"].get("labels") or {}).get(POOL_LABEL, ""))
                    claim = _bind(c, claim, n, pool)
                    bound.add(n["metadata"]["name"])
                    nodes[n["metadata"]["name"]] = c.get("/nodes", "", n["metadata"]["name"]) or n
                    break
        out.append(claim)
    return out


def _bind(c: Cluster, claim: Obj, node: Obj, pool: _Pool | None) -> Obj:
    new = clone(node)
    labels = new["metadata"].setdefault("labels", {})
    labels.update(
        {
            POOL_LABEL: (claim["metadata"].get("labels") or {}).get(POOL_LABEL, ""),
            "karpenter.sh/registered": "true",
            "karpenter.sh/initialized": "true",
            "karpenter.sh/capacity-type": "on-demand",
            **(pool.labels if pool else {}),
        }
    )
    taints = new["spec"].get("taints") or []
    for t in (claim.get("spec") or {}).get("taints") or []:
        if not any(x.get("key") == t.get("key") and x.get("effect") == t.get("effect") for x in taints):
            taints.append({k: v for k, v in t.items() if k in ("key", "value", "effect")})
    if taints:
        new["spec"]["taints"] = taints
    c.put("/nodes", new)
    st = dict(claim.get("status") or {})
    st.update(
        {
            "nodeName": node["metadata"]["name"],
            "providerID": (node.get("spec") or {}).get("providerID", ""),
            "imageID": "ami-0hyperpodeks000001",
            "capacity": dict((node.get("status") or {}).get("capacity") or {}),
            "allocatable": dict((node.get("status") or {}).get("allocatable") or {}),
        }
    )
    conds = st.get("conditions") or []
    for ctype in ("Registered", "Initialized", "Ready"):
        conds = set_condition(conds, ctype, "True", ctype, "")
    st["conditions"] = conds
    claim = c.put_status(NODECLAIM_GR, claim, st)
    c.record_event(
        claim, "Registered", "Status condition transitioned, Type: Registered, Status: True", component=COMPONENT
    )
    return claim


def _finish(c: Cluster, claim: Obj) -> None:
    """The claim goes: deleted if it is not yet, then its termination finalizer removed."""
    rt = c.type_by_gr(NODECLAIM_GR)
    assert rt is not None
    name = claim["metadata"]["name"]
    cur = c.get(NODECLAIM_GR, "", name)
    if cur is None:
        return
    if not cur["metadata"].get("deletionTimestamp"):
        c.delete(rt, "", name)
        cur = c.get(NODECLAIM_GR, "", name)
        if cur is None:
            return
    new = clone(cur)
    new["metadata"]["finalizers"] = [f for f in new["metadata"].get("finalizers") or [] if f != FINALIZER]
    c.put(NODECLAIM_GR, new)


def _drain(c: Cluster, node: Obj, message: str) -> None:
    if not _disrupted(node):
        new = clone(node)
        new["spec"]["taints"] = (new["spec"].get("taints") or []) + [dict(DISRUPTED_TAINT)]
        c.put("/nodes", new)
        c.record_event(node, "DisruptionTerminating", message, component=COMPONENT)
    pod_rt = c.type_by_gr("/pods")
    assert pod_rt is not None
    for pod in c.list("/pods"):
        if (
            (pod.get("spec") or {}).get("nodeName") == node["metadata"]["name"]
            and pod_active(pod)
            and not _daemon_pod(pod)
        ):
            c.record_event(pod, "Evicted", f"Evicted pod: {message}", "Normal", COMPONENT)
            c.delete(pod_rt, pod["metadata"]["namespace"], pod["metadata"]["name"])


def _release_node(c: Cluster, node: Obj) -> None:
    new = clone(node)
    new["spec"]["taints"] = [t for t in new["spec"].get("taints") or [] if t.get("key") != DISRUPTED_TAINT["key"]]
    if not new["spec"]["taints"]:
        new["spec"].pop("taints")
    new["metadata"]["labels"].pop(POOL_LABEL, None)
    c.put("/nodes", new)


def _pending(c: Cluster) -> list[Obj]:
    out = []
    for p in c.list("/pods"):
        spec = p.get("spec") or {}
        if spec.get("nodeName") or not pod_active(p) or _daemon_pod(p):
            continue
        if spec.get("schedulerName", "default-scheduler") != "default-scheduler":
            continue
        conds = (p.get("status") or {}).get("conditions") or []
        if any(x.get("type") == "PodScheduled" and x.get("reason") == "Unschedulable" for x in conds):
            out.append(p)
    return sorted(out, key=lambda p: p["metadata"]["creationTimestamp"])


def _add(used: dict[str, Decimal], req: dict[str, Decimal]) -> None:
    for k, v in req.items():
        used[k] = used.get(k, Decimal(0)) + v
    used["pods"] = used.get("pods", Decimal(0)) + 1


def _provision(
    c: Cluster, ctx: Ctx, pools: list[_Pool], groups: dict[str, Obj], nodes: dict[str, Obj], claims: list[Obj]
) -> None:
    pending = _pending(c)
    msgs = c.sim.setdefault(STATE, {}).setdefault("pod_msgs", {})
    for uid in set(msgs) - {p["metadata"]["uid"] for p in c.list("/pods")}:
        msgs.pop(uid)  # events already told; forget pods that are gone
    if not pending:
        return
    usage = node_usage(c)
    # existing room first (nodes that registered since the scheduler looked), then claims in flight
    bins: list[tuple[Obj, dict[str, Decimal], Obj | None]] = [
        (n, dict(usage.get(name, {})), None)
        for name, n in nodes.items()
        if node_ready(n) and not _disrupted(n) and not (n.get("spec") or {}).get("unschedulable")
    ]
    pool_by_name = {p.name: p for p in pools}
    for claim in claims:
        if (claim.get("status") or {}).get("nodeName") or claim["metadata"].get("deletionTimestamp"):
            continue
        g = groups.get(_claim_group(claim))
        pool = pool_by_name.get((claim["metadata"].get("labels") or {}).get(POOL_LABEL, ""))
        if g is None or pool is None:
            continue
        vnode = _virtual_node(claim["metadata"]["name"], pool, _claim_group(claim), g)
        bins.append((vnode, _daemon_overhead(c, vnode), claim))
    pool_use = _pool_usage(pools, nodes, claims, groups)
    for pod in pending:
        req = pod_requests(pod)
        placed = next((b for b in bins if not fit_reasons(pod, b[0], b[1])), None)
        if placed is not None:
            _add(placed[1], req)
            if placed[2] is not None:
                _nominate(c, pod, placed[2])
            continue
        claim = _new_claim(c, pod, pools, groups, pool_use)
        if claim is None:
            continue
        pool = pool_by_name[(claim["metadata"]["labels"])[POOL_LABEL]]
        g = groups[_claim_group(claim)]
        vnode = _virtual_node(claim["metadata"]["name"], pool, _claim_group(claim), g)
        used = _daemon_overhead(c, vnode)
        _add(used, req)
        bins.append((vnode, used, claim))
        claims.append(claim)
        _nominate(c, pod, claim)


def _pool_usage(
    pools: list[_Pool], nodes: dict[str, Obj], claims: list[Obj], groups: dict[str, Obj]
) -> dict[str, dict[str, Decimal]]:
    use: dict[str, dict[str, Decimal]] = {p.name: {"nodes": Decimal(0)} for p in pools}
    for n in nodes.values():
        pool = (n["metadata"].get("labels") or {}).get(POOL_LABEL)
        if pool in use:
            for k, v in ((n.get("status") or {}).get("capacity") or {}).items():
                use[pool][k] = use[pool].get(k, Decimal(0)) + parse_quantity(v)
            use[pool]["nodes"] += 1
    for x in claims:
        pool = (x["metadata"].get("labels") or {}).get(POOL_LABEL)
        g = groups.get(_claim_group(x))
        if pool in use and g is not None and not (x.get("status") or {}).get("nodeName"):
            for k, v in resources_of(g)[0].items():
                use[pool][k] = use[pool].get(k, Decimal(0)) + parse_quantity(v)
            use[pool]["nodes"] += 1
    return use


def _new_claim(
    c: Cluster, pod: Obj, pools: list[_Pool], groups: dict[str, Obj], pool_use: dict[str, dict[str, Decimal]]
) -> Obj | None:
    reasons = []
    for pool in pools:
        if not pool.ready:
            continue
        for gname in pool.groups:
            g = groups.get(gname)
            if g is None:
                continue
            vnode = _virtual_node("new", pool, gname, g)
            if not _req_ok(pool.requirements, vnode["metadata"]["labels"]):
                reasons.append(f'incompatible with nodepool "{pool.name}" requirements')
                continue
            why = fit_reasons(pod, vnode, _daemon_overhead(c, vnode))
            if why:
                reasons.append(f'incompatible with nodepool "{pool.name}", instance group {gname}: {"; ".join(why)}')
                continue
            cap = {k: parse_quantity(v) for k, v in resources_of(g)[0].items()}
            cap["nodes"] = Decimal(1)
            use = pool_use[pool.name]
            over = [k for k, lim in pool.limits.items() if use.get(k, Decimal(0)) + cap.get(k, Decimal(0)) > lim]
            if over:
                reasons.append(
                    f'all available instance types exceed limits for nodepool: "{pool.name}" ({", ".join(over)})'
                )
                continue
            for k, v in cap.items():
                use[k] = use.get(k, Decimal(0)) + v
            return _create_claim(c, pool, gname, g, pod)
    msg = "Failed to schedule pod, " + (
        "; ".join(dict.fromkeys(reasons)) or "no ready nodepool with an autoscaling instance group"
    )
    st = c.sim.setdefault(STATE, {}).setdefault("pod_msgs", {})
    if st.get(pod["metadata"]["uid"]) != msg:
        st[pod["metadata"]["uid"]] = msg
        c.record_event(pod, "FailedScheduling", msg, "Warning", COMPONENT)
    return None


def _create_claim(c: Cluster, pool: _Pool, gname: str, g: Obj, pod: Obj) -> Obj:
    rt = c.type_by_gr(NODECLAIM_GR)
    assert rt is not None
    labels = {
        POOL_LABEL: pool.name,
        GROUP_LABEL: gname,
        "node.kubernetes.io/instance-type": g["instance_type"],
        "topology.kubernetes.io/zone": (g.get("zones") or [""])[0],
        "karpenter.sh/capacity-type": "on-demand",
        **pool.labels,
    }
    tspec = pool.template.get("spec") or {}
    requirements = list(tspec.get("requirements") or []) + [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [g["instance_type"]]},
        {"key": POOL_LABEL, "operator": "In", "values": [pool.name]},
    ]
    body = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": f"{pool.name}-{rand_suffix()}",
            "labels": labels,
            "annotations": {"karpenter.sh/nodepool-hash-version": "v3"},
            "finalizers": [FINALIZER],
            "ownerReferences": [dict(owner_ref(pool.obj, controller=False), blockOwnerDeletion=True)],
        },
        "spec": {
            "nodeClassRef": dict(pool.ref),
            "requirements": requirements,
            "resources": {"requests": {k: _fmt(k, v) for k, v in pod_requests(pod).items()}},
            **({"taints": pool.taints} if pool.taints else {}),
            **({"startupTaints": tspec["startupTaints"]} if tspec.get("startupTaints") else {}),
            "expireAfter": tspec.get("expireAfter", "720h"),
        },
        "status": {
            "conditions": set_condition(
                set_condition([], "Launched", "True", "Launched", ""),
                "Registered",
                "Unknown",
                "AwaitingReconciliation",
                "object is awaiting reconciliation",
            )
        },
    }
    claim = c.create(rt, body, keep_status=True)
    c.record_event(
        pool.obj,
        "Launched",
        f"Launched NodeClaim {claim['metadata']['name']} for instance group {gname} ({g['instance_type']})",
        component=COMPONENT,
    )
    return claim


def _nominate(c: Cluster, pod: Obj, claim: Obj) -> None:
    msgs = c.sim.setdefault(STATE, {}).setdefault("pod_msgs", {})
    msg = f"Pod should schedule on: nodeclaim/{claim['metadata']['name']}"
    if msgs.get(pod["metadata"]["uid"]) != msg:
        msgs[pod["metadata"]["uid"]] = msg
        c.record_event(pod, "Nominated", msg, component=COMPONENT)


def _consolidate(
    c: Cluster,
    ctx: Ctx,
    st: Obj,
    pools: list[_Pool],
    groups: dict[str, Obj],
    managed: set[str],
    nodes: dict[str, Obj],
    claims: list[Obj],
    terminate: list[str],
) -> None:
    """Give back nodes that have been empty (or, for WhenEmptyOrUnderutilized, whose pods all fit
    elsewhere) for the pool's consolidateAfter, within its budget and the group's minimum."""
    since: dict[str, list[Any]] = st.setdefault("since", {})
    pods_on: dict[str, list[Obj]] = {}
    for p in c.list("/pods"):
        node = (p.get("spec") or {}).get("nodeName")
        if node and pod_active(p) and not _daemon_pod(p):
            pods_on.setdefault(node, []).append(p)
    claim_of = {(x.get("status") or {}).get("nodeName"): x for x in claims}
    pool_of_group = {g: p for p in reversed(pools) for g in p.groups}
    usage = node_usage(c)
    pending = _pending(c)
    for name in [n for n in since if n not in nodes]:
        since.pop(name)
    disrupting: dict[str, int] = {}
    for n in nodes.values():
        pool_name = (n["metadata"].get("labels") or {}).get(POOL_LABEL) or ""
        if _disrupted(n):
            disrupting[pool_name] = disrupting.get(pool_name, 0) + 1
    live: dict[str, int] = {}
    for n in nodes.values():
        g = (n["metadata"].get("labels") or {}).get(GROUP_LABEL)
        if g and not _disrupted(n):
            live[g] = live.get(g, 0) + 1
    # its own nodes (those of NodeClaims) first; nodes the group had before Karpenter after them
    for name, node in sorted(nodes.items(), key=lambda kv: (kv[0] not in claim_of, kv[0])):
        labels = node["metadata"].get("labels") or {}
        gname = labels.get(GROUP_LABEL)
        pool = pool_of_group.get(gname or "")
        if gname not in managed or pool is None or _disrupted(node) or not node_ready(node):
            continue
        pods = pods_on.get(name, [])
        sig = sorted(p["metadata"]["uid"] for p in pods)
        if (since.get(name) or [None])[0] != sig or any(not fit_reasons(p, node, usage.get(name, {})) for p in pending):
            since[name] = [sig, ctx.now]  # a pod came or went, or a pending pod is about to land here
            continue
        if pool.after is None or ctx.elapsed(since[name][1]) < pool.after:
            continue
        if _do_not_disrupt(node) or any(_do_not_disrupt(p) for p in pods):
            continue
        if pods:
            if pool.policy != "WhenEmptyOrUnderutilized" or not all(_movable(p) for p in pods):
                continue
            if not _fits_elsewhere(pods, name, nodes, usage):
                continue
            reason = "Underutilized"
        else:
            reason = "Empty"
        g = groups.get(gname or "") or {}
        if live.get(gname or "", 0) <= int(g.get("min", 0)):
            continue
        pool_nodes = sum(
            1 for n in nodes.values() if (n["metadata"].get("labels") or {}).get(GROUP_LABEL) in pool.groups
        )
        key = labels.get(POOL_LABEL) or ""
        if disrupting.get(key, 0) >= pool.budget(pool_nodes):
            continue
        disrupting[key] = disrupting.get(key, 0) + 1
        live[gname or ""] = live.get(gname or "", 0) - 1
        claim = claim_of.get(name)
        if claim is not None:
            new = dict(claim.get("status") or {})
            new["conditions"] = set_condition(new.get("conditions") or [], "DisruptionReason", "True", reason, "")
            claim = c.put_status(NODECLAIM_GR, claim, new)
            c.record_event(claim, "DisruptionTerminating", f"Disrupting NodeClaim: {reason}", component=COMPONENT)
            rt = c.type_by_gr(NODECLAIM_GR)
            assert rt is not None
            c.delete(rt, "", claim["metadata"]["name"])
        _drain(c, c.get("/nodes", "", name) or node, f"Disrupting NodeClaim: {reason}")
        terminate.append(_instance_id(node))


def _fits_elsewhere(pods: list[Obj], here: str, nodes: dict[str, Obj], usage: dict[str, dict[str, Decimal]]) -> bool:
    room = {
        name: dict(usage.get(name, {}))
        for name, n in nodes.items()
        if name != here and node_ready(n) and not _disrupted(n) and not (n.get("spec") or {}).get("unschedulable")
    }
    for pod in pods:
        spot = next((name for name, used in room.items() if not fit_reasons(pod, nodes[name], used)), None)
        if spot is None:
            return False
        _add(room[spot], pod_requests(pod))
    return True


def _pool_status(c: Cluster, pools: list[_Pool], nodes: dict[str, Obj]) -> None:
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
        conds = _cond(pool.obj, conds, "ValidationSucceeded", not pool.errors, "NodePoolValidationFailed", errors)
        conds = _cond(pool.obj, conds, "NodeClassReady", pool.class_ready, "NodeClassNotReady", _class_message(pool))
        conds = _cond(pool.obj, conds, "Ready", pool.ready, "UnhealthyDependents", errors or _class_message(pool))
        status.update(
            {
                "conditions": conds,
                "nodes": count,
                "resources": {k: _fmt(k, v) for k, v in sorted(totals.items())} | {"nodes": str(count)},
                "nodeClassObservedGeneration": int(
                    ((pool.nodeclass or {}).get("metadata") or {}).get("generation") or 0
                ),
            }
        )
        cur = c.get(NODEPOOL_GR, "", pool.name)
        if cur is not None:
            _put_status(c, NODEPOOL_GR, cur, status)


def _class_message(pool: _Pool) -> str:
    if pool.nodeclass is None:
        ref = pool.ref
        return f"NodeClass {ref.get('kind', '')}/{ref.get('name', '')} ({ref.get('group', '')}) not found"
    return "" if pool.class_ready else "HyperpodNodeClass is not ready"
