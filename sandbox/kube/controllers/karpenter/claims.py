"""NodeClaims meeting their nodes: registered nodes bind to the claims waiting for their group,
deleted claims drain and give their node back, claims whose node is gone (or never came) go."""

from __future__ import annotations

from typing import Any

from ...operators.karpenter_crds import NODECLAIM_GR
from ...store import Cluster
from ...util import clone
from ..base import Ctx, pod_active, set_condition
from ..scheduler import node_ready
from .model import (
    COMPONENT,
    DISRUPTED_TAINT,
    FINALIZER,
    GROUP_LABEL,
    POOL_LABEL,
    REGISTRATION_MIN_REAL_SECONDS,
    REGISTRATION_TTL,
    STATE,
    Pool,
    claim_group,
    daemon_pod,
    disrupted,
    instance_id,
)

Obj = dict[str, Any]


def bind_and_terminate(
    c: Cluster, ctx: Ctx, pools: list[Pool], groups: dict[str, Obj], nodes: dict[str, Obj], terminate: list[str]
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
            finish(c, claim)  # the node is gone: the claim goes with it
            continue
        if deleting:
            if node is None:
                finish(c, claim)
                continue
            reason = next(
                (x.get("reason") for x in status.get("conditions") or [] if x.get("type") == "DisruptionReason"),
                "Deleted",
            )
            drain(c, node, f"Disrupting NodeClaim: {reason}")
            g = groups.get(claim_group(claim))
            live = [
                n for n in nodes.values() if (n["metadata"].get("labels") or {}).get(GROUP_LABEL) == claim_group(claim)
            ]
            if g is not None and len(live) > int(g.get("min", 0)):
                terminate.append(instance_id(node))
            else:  # the group is at its minimum: HyperPod keeps the node, Karpenter lets it go
                release_node(c, node)
                finish(c, claim)
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
                finish(c, claim)
                continue
            for n in sorted(nodes.values(), key=lambda n: n["metadata"]["creationTimestamp"]):
                labels = n["metadata"].get("labels") or {}
                if (
                    labels.get(GROUP_LABEL) == claim_group(claim)
                    and n["metadata"]["name"] not in bound
                    and POOL_LABEL not in labels
                    and n["metadata"]["creationTimestamp"] >= claim["metadata"]["creationTimestamp"]
                    and node_ready(n)
                ):
                    pool = pool_by_name.get((claim["metadata"].get("labels") or {}).get(POOL_LABEL, ""))
                    claim = bind(c, claim, n, pool)
                    bound.add(n["metadata"]["name"])
                    nodes[n["metadata"]["name"]] = c.get("/nodes", "", n["metadata"]["name"]) or n
                    break
        out.append(claim)
    return out


def bind(c: Cluster, claim: Obj, node: Obj, pool: Pool | None) -> Obj:
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


def finish(c: Cluster, claim: Obj) -> None:
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


def drain(c: Cluster, node: Obj, message: str) -> None:
    if not disrupted(node):
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
            and not daemon_pod(pod)
        ):
            c.record_event(pod, "Evicted", f"Evicted pod: {message}", "Normal", COMPONENT)
            c.delete(pod_rt, pod["metadata"]["namespace"], pod["metadata"]["name"])


def release_node(c: Cluster, node: Obj) -> None:
    new = clone(node)
    new["spec"]["taints"] = [t for t in new["spec"].get("taints") or [] if t.get("key") != DISRUPTED_TAINT["key"]]
    if not new["spec"]["taints"]:
        new["spec"].pop("taints")
    new["metadata"]["labels"].pop(POOL_LABEL, None)
    c.put("/nodes", new)
