"""HyperPod managed autoscaling (Karpenter), the AWS half: while a cluster's AutoScaling is InService
its instance groups are handed to the Kubernetes half (`kube_groups`), and each tick acts on what
Karpenter decided there (`tick_autoscaling`, reading `World.kube_reports`): a group whose desired
node count is above its target gets the difference added (as BatchAddClusterNodes), and the
instances Karpenter gave back are deleted (as BatchDeleteClusterNodes), never below the group's
MinInstanceCount. The contract between the halves is in sandbox/CONTRACT.md.
"""

from __future__ import annotations

from typing import Any

from sandbox.aws.eks_clusters import subnet_zone
from sandbox.aws.hyperpod.nodes import add_nodes, delete_node
from sandbox.aws.hyperpod.store import table
from sandbox.aws.instance_types import hardware
from sandbox.aws.world import World

WHY = "(managed autoscaling: Karpenter)"


def _eks_key(c: dict[str, Any]) -> str | None:
    arn = ((c.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn") or ""
    parts = arn.split(":")
    if len(parts) < 6:
        return None
    return f"{parts[4]}/{parts[3]}/{parts[5].split('/', 1)[-1]}"


def _scaling(c: dict[str, Any]) -> bool:
    return (
        (c.get("AutoScaling") or {}).get("Mode") == "Enable"
        and c.get("_autoscaling", {}).get("Status") == "InService"
        and c["ClusterStatus"] in ("InService", "Updating")
    )


def _group(account: str, region: str, c: dict[str, Any], g: dict[str, Any]) -> dict[str, Any]:
    spec = g["spec"]
    subnets = (spec.get("OverrideVpcConfig") or {}).get("Subnets") or (c.get("VpcConfig") or {}).get("Subnets") or []
    kc = spec.get("KubernetesConfig") or {}
    return {
        "cluster": c["ClusterName"],
        "instance_type": spec["InstanceType"],
        "zones": sorted({subnet_zone(account, region, s) for s in subnets}) or [f"{region}a"],
        "capacity_type": "Spot" if "Spot" in (spec.get("CapacityRequirements") or {}) else "OnDemand",
        "count": int(spec.get("InstanceCount", 0)),
        "min": int(spec.get("MinInstanceCount", 0)),
        "status": g["Status"],
        "labels": dict(kc.get("Labels") or {}),
        "taints": [
            {"key": t["Key"], "value": t.get("Value", ""), "effect": t["Effect"]} for t in kc.get("Taints") or []
        ],
        **hardware(spec["InstanceType"]),
    }


def kube_groups(world: World, account: str, region: str, eks_arn: str) -> dict[str, dict[str, Any]] | None:
    """The autoscaled instance groups of the HyperPod cluster on this EKS cluster, None when
    managed autoscaling is not InService there."""
    out: dict[str, dict[str, Any]] | None = None
    for c in table(world, account, region).values():
        if ((c.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn") != eks_arn or not _scaling(c):
            continue
        out = out or {}
        for name, g in c["_groups"].items():
            if g["Status"] != "Deleting":
                out.setdefault(name, _group(account, region, c, g))
    return out


def tick_autoscaling(world: World) -> None:
    for account, region, tbl in world.tables("hp_clusters"):
        for c in tbl.values():
            key = _eks_key(c)
            decided = (world.kube_reports.get(key or "") or {}).get("karpenter") if _scaling(c) else None
            if not decided:
                continue
            for name, desired in (decided.get("desired") or {}).items():
                g = c["_groups"].get(name)
                if g is None or g["Status"] in ("Deleting", "Creating"):
                    continue
                extra = int(desired) - int(g["spec"].get("InstanceCount", 0))
                if extra > 0:
                    add_nodes(world, account, region, c, g, extra, WHY)
                    world.touch()
            for iid in decided.get("terminate") or []:
                node = c["_nodes"].get(iid)
                if node is None or node["_op"] is not None or node["Status"] != "Running":
                    continue
                g = c["_groups"].get(node["InstanceGroupName"])
                if g is None:
                    continue
                live = sum(
                    1
                    for n in c["_nodes"].values()
                    if n["InstanceGroupName"] == node["InstanceGroupName"] and not n["_op"]
                )
                if live <= int(g["spec"].get("MinInstanceCount", 0)):
                    continue  # the group's minimum stays, whatever Karpenter would like
                delete_node(world, c, node, WHY)
                world.touch()
