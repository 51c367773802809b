"""Consolidation: nodes that stayed empty, or whose pods fit elsewhere, for the pool's
consolidateAfter are given back, within its budget and the group's minimum."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ...operators.karpenter_crds import NODECLAIM_GR
from ...store import Cluster
from ..base import Ctx, pod_active, set_condition
from ..scheduler import fit_reasons, node_ready, node_usage, pod_requests
from .claims import drain
from .model import (
    COMPONENT,
    GROUP_LABEL,
    POOL_LABEL,
    Pool,
    add_usage,
    daemon_pod,
    disrupted,
    do_not_disrupt,
    instance_id,
    movable,
    pending_pods,
)

Obj = dict[str, Any]


def consolidate(
    c: Cluster,
    ctx: Ctx,
    st: Obj,
    pools: list[Pool],
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
        if node and pod_active(p) and not daemon_pod(p):
            pods_on.setdefault(node, []).append(p)
    claim_of = {(x.get("status") or {}).get("nodeName"): x for x in claims}
    pool_of_group = {g: p for p in reversed(pools) for g in p.groups}
    usage = node_usage(c)
    pending = pending_pods(c)
    for name in [n for n in since if n not in nodes]:
        since.pop(name)
    disrupting: dict[str, int] = {}
    for n in nodes.values():
        pool_name = (n["metadata"].get("labels") or {}).get(POOL_LABEL) or ""
        if disrupted(n):
            disrupting[pool_name] = disrupting.get(pool_name, 0) + 1
    live: dict[str, int] = {}
    for n in nodes.values():
        g = (n["metadata"].get("labels") or {}).get(GROUP_LABEL)
        if g and not disrupted(n):
            live[g] = live.get(g, 0) + 1
    # its own nodes (those of NodeClaims) first; nodes the group had before Karpenter after them
    for name, node in sorted(nodes.items(), key=lambda kv: (kv[0] not in claim_of, kv[0])):
        labels = node["metadata"].get("labels") or {}
        gname = labels.get(GROUP_LABEL)
        pool = pool_of_group.get(gname or "")
        if gname not in managed or pool is None or disrupted(node) or not node_ready(node):
            continue
        pods = pods_on.get(name, [])
        sig = sorted(p["metadata"]["uid"] for p in pods)
        if (since.get(name) or [None])[0] != sig or any(not fit_reasons(p, node, usage.get(name, {})) for p in pending):
            since[name] = [sig, ctx.now]  # a pod came or went, or a pending pod is about to land here
            continue
        if pool.after is None or ctx.elapsed(since[name][1]) < pool.after:
            continue
        if do_not_disrupt(node) or any(do_not_disrupt(p) for p in pods):
            continue
        if pods:
            if pool.policy != "WhenEmptyOrUnderutilized" or not all(movable(p) for p in pods):
                continue
            if not fits_elsewhere(pods, name, nodes, usage):
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
        drain(c, c.get("/nodes", "", name) or node, f"Disrupting NodeClaim: {reason}")
        terminate.append(instance_id(node))


def fits_elsewhere(pods: list[Obj], here: str, nodes: dict[str, Obj], usage: dict[str, dict[str, Decimal]]) -> bool:
    room = {
        name: dict(usage.get(name, {}))
        for name, n in nodes.items()
        if name != here and node_ready(n) and not disrupted(n) and not (n.get("spec") or {}).get("unschedulable")
    }
    for pod in pods:
        spot = next((name for name, used in room.items() if not fit_reasons(pod, nodes[name], used)), None)
        if spot is None:
            return False
        add_usage(room[spot], pod_requests(pod))
    return True
