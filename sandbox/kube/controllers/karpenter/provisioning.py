"""Provisioning: pending pods fitted on existing room, on claims in flight, then on new NodeClaims
of the first Ready pool and group that can take them within the pool's limits."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ...operators.karpenter_crds import NODECLAIM_GR
from ...quantity import parse_quantity
from ...store import Cluster, rand_suffix
from ..base import Ctx, owner_ref, set_condition
from ..nodes import resources_of
from ..scheduler import fit_reasons, node_ready, node_usage, pod_requests
from .model import (
    COMPONENT,
    FINALIZER,
    GROUP_LABEL,
    POOL_LABEL,
    STATE,
    Pool,
    add_usage,
    claim_group,
    daemon_overhead,
    disrupted,
    fmt_quantity,
    pending_pods,
    req_ok,
    virtual_node,
)

Obj = dict[str, Any]


def provision(
    c: Cluster, ctx: Ctx, pools: list[Pool], groups: dict[str, Obj], nodes: dict[str, Obj], claims: list[Obj]
) -> None:
    pending = pending_pods(c)
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
        if node_ready(n) and not disrupted(n) and not (n.get("spec") or {}).get("unschedulable")
    ]
    pool_by_name = {p.name: p for p in pools}
    for claim in claims:
        if (claim.get("status") or {}).get("nodeName") or claim["metadata"].get("deletionTimestamp"):
            continue
        g = groups.get(claim_group(claim))
        pool = pool_by_name.get((claim["metadata"].get("labels") or {}).get(POOL_LABEL, ""))
        if g is None or pool is None:
            continue
        vnode = virtual_node(claim["metadata"]["name"], pool, claim_group(claim), g)
        bins.append((vnode, daemon_overhead(c, vnode), claim))
    pool_use = pool_usage(pools, nodes, claims, groups)
    for pod in pending:
        req = pod_requests(pod)
        placed = next((b for b in bins if not fit_reasons(pod, b[0], b[1])), None)
        if placed is not None:
            add_usage(placed[1], req)
            if placed[2] is not None:
                nominate(c, pod, placed[2])
            continue
        claim = new_claim(c, pod, pools, groups, pool_use)
        if claim is None:
            continue
        pool = pool_by_name[(claim["metadata"]["labels"])[POOL_LABEL]]
        g = groups[claim_group(claim)]
        vnode = virtual_node(claim["metadata"]["name"], pool, claim_group(claim), g)
        used = daemon_overhead(c, vnode)
        add_usage(used, req)
        bins.append((vnode, used, claim))
        claims.append(claim)
        nominate(c, pod, claim)


def pool_usage(
    pools: list[Pool], nodes: dict[str, Obj], claims: list[Obj], groups: dict[str, Obj]
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
        g = groups.get(claim_group(x))
        if pool in use and g is not None and not (x.get("status") or {}).get("nodeName"):
            for k, v in resources_of(g)[0].items():
                use[pool][k] = use[pool].get(k, Decimal(0)) + parse_quantity(v)
            use[pool]["nodes"] += 1
    return use


def new_claim(
    c: Cluster, pod: Obj, pools: list[Pool], groups: dict[str, Obj], pool_use: dict[str, dict[str, Decimal]]
) -> Obj | None:
    reasons = []
    for pool in pools:
        if not pool.ready:
            continue
        for gname in pool.groups:
            g = groups.get(gname)
            if g is None:
                continue
            vnode = virtual_node("new", pool, gname, g)
            if not req_ok(pool.requirements, vnode["metadata"]["labels"]):
                reasons.append(f'incompatible with nodepool "{pool.name}" requirements')
                continue
            why = fit_reasons(pod, vnode, daemon_overhead(c, vnode))
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
            return create_claim(c, pool, gname, g, pod)
    msg = "Failed to schedule pod, " + (
        "; ".join(dict.fromkeys(reasons)) or "no ready nodepool with an autoscaling instance group"
    )
    st = c.sim.setdefault(STATE, {}).setdefault("pod_msgs", {})
    if st.get(pod["metadata"]["uid"]) != msg:
        st[pod["metadata"]["uid"]] = msg
        c.record_event(pod, "FailedScheduling", msg, "Warning", COMPONENT)
    return None


def create_claim(c: Cluster, pool: Pool, gname: str, g: Obj, pod: Obj) -> Obj:
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
            "resources": {"requests": {k: fmt_quantity(k, v) for k, v in pod_requests(pod).items()}},
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


def nominate(c: Cluster, pod: Obj, claim: Obj) -> None:
    msgs = c.sim.setdefault(STATE, {}).setdefault("pod_msgs", {})
    msg = f"Pod should schedule on: nodeclaim/{claim['metadata']['name']}"
    if msgs.get(pod["metadata"]["uid"]) != msg:
        msgs[pod["metadata"]["uid"]] = msg
        c.record_event(pod, "Nominated", msg, component=COMPONENT)
