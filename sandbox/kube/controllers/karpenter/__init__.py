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

model.py (pools, node classes, the node a group would launch), claims.py (NodeClaims and their
nodes), provisioning.py, consolidation.py; this module is the handover and the tick.
"""

from __future__ import annotations

from typing import Any

from ...operators import MANAGED_LABEL as OWNER_LABEL
from ...operators.karpenter_crds import KARPENTER_CRDS, NODECLASS_GR, NODEPOOL_GR
from ...store import CRD_GR, Cluster
from ...util import clone
from ..base import Ctx
from .claims import bind_and_terminate
from .consolidation import consolidate
from .model import (
    GROUP_LABEL,
    OWNER,
    STATE,
    Pool,
    claim_group,
    class_problem,
    condition,
    disrupted,
    instance_id,
    pool_status,
    put_status,
)
from .provisioning import provision

Obj = dict[str, Any]


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


def run(c: Cluster, ctx: Ctx) -> None:
    """One Karpenter tick: node classes and pools judged, claims bound or drained, pending pods
    provisioned, idle nodes consolidated, and the decisions for the AWS half written."""
    st = c.sim.get(STATE) or {}
    groups: dict[str, Obj] | None = st.get("groups")
    if groups is None or c.type_by_gr(NODEPOOL_GR) is None:
        return
    classes = {o["metadata"]["name"]: o for o in c.list(NODECLASS_GR)}
    for cls in classes.values():
        problem = class_problem(cls, groups)
        status = dict(cls.get("status") or {})
        conds = (cls.get("status") or {}).get("conditions") or []
        status["conditions"] = condition(cls, conds, "Ready", problem is None, *(problem or ("", "")))
        put_status(c, NODECLASS_GR, cls, status)
    pools = [Pool(p, groups, classes) for p in c.list(NODEPOOL_GR) if not p["metadata"].get("deletionTimestamp")]
    pools.sort(key=lambda p: (-p.weight, p.name))
    managed = {g for p in pools for g in p.groups}
    nodes = {n["metadata"]["name"]: n for n in c.list("/nodes")}
    terminate: list[str] = []
    claims = bind_and_terminate(c, ctx, pools, groups, nodes, terminate)
    provision(c, ctx, pools, groups, nodes, claims)
    consolidate(c, ctx, st, pools, groups, managed, nodes, claims, terminate)
    desired: dict[str, int] = {}
    for g in managed:
        live = [n for n in nodes.values() if (n["metadata"].get("labels") or {}).get(GROUP_LABEL) == g]
        live = [n for n in live if not disrupted(n) and instance_id(n) not in terminate]
        pending = [x for x in claims if claim_group(x) == g and not (x.get("status") or {}).get("nodeName")]
        desired[g] = len(live) + len([x for x in pending if not x["metadata"].get("deletionTimestamp")])
    st["decisions"] = {"desired": desired, "terminate": sorted(set(terminate))}
    pool_status(c, pools, nodes)
