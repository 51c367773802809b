"""The controller tick of the AWS half: advance every timed transition (acting on what the Kubernetes
half last reported, see CONTRACT.md), then describe what the Kubernetes half should look like
(clusters, nodes, running add-ons with their configuration, autoscaled HyperPod groups).

Every part is contained (sandbox/isolation.py): a service whose tick raises does not hold up the
others, and a part of a cluster's picture that cannot be computed is marked stale (its Kubernetes
side stays as it is) while every other cluster moves on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sandbox.aws.addresses import nodegroup_addresses
from sandbox.aws.ec2_ext import tick_ec2
from sandbox.aws.eks_addons import kube_addons, tick_addons
from sandbox.aws.eks_clusters import active_clusters, eks_backend, subnet_zone, tick_eks
from sandbox.aws.eks_updates import tick_updates
from sandbox.aws.hyperpod.autoscaling import kube_groups, tick_autoscaling
from sandbox.aws.hyperpod.ticks import kube_nodes, tick_hyperpod
from sandbox.aws.instance_types import hardware
from sandbox.aws.sagemaker_misc import tick_misc
from sandbox.aws.sagemaker_mlflow import tick_mlflow
from sandbox.aws.world import World

_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@dataclass
class KubeCluster:
    key: str
    version: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    addons: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # name -> configuration values
    autoscaling: dict[str, dict[str, Any]] | None = None  # managed Karpenter's instance groups
    stale: set[str] = field(default_factory=set)  # parts not computed this tick: left as they are


_TICKS = (tick_eks, tick_addons, tick_updates, tick_hyperpod, tick_autoscaling, tick_misc, tick_mlflow, tick_ec2)


def tick(world: World) -> list[KubeCluster]:
    contained = world.contained
    with world.lock:
        for fn in _TICKS:
            contained.run(("tick", fn.__name__), fn, world)
        plan = []
        for account, region, name, version in active_clusters(world):
            key = f"{account}/{region}/{name}"
            arn = f"arn:aws:eks:{region}:{account}:cluster/{name}"
            kc = KubeCluster(key, version)
            parts = (
                ("nodes", _nodes_of, (world, account, region, name, arn)),
                ("addons", kube_addons, (world, account, region, name)),
                ("autoscaling", kube_groups, (world, account, region, arn)),
            )
            for part, fn, args in parts:
                value = contained.run(("plan", part, key), fn, *args)
                if contained.failing(("plan", part, key)):
                    kc.stale.add(part)
                else:
                    setattr(kc, part, value)
            plan.append(kc)
        return plan


def _nodes_of(world: World, account: str, region: str, name: str, arn: str) -> list[dict[str, Any]]:
    return kube_nodes(world, account, region, arn) + nodegroup_nodes(world, account, region, name)


def nodegroup_nodes(world: World, account: str, region: str, cluster_name: str) -> list[dict[str, Any]]:
    cluster = eks_backend(account, region).clusters.get(cluster_name)
    out: list[dict[str, Any]] = []
    if cluster is None:
        return out
    for ng in cluster.nodegroups.values():
        if ng.status not in ("ACTIVE", "UPDATING"):
            continue
        desired = int((ng.scaling_config or {}).get("desiredSize", 0))
        itype = (ng.instance_types or ["t3.medium"])[0]
        subnets = list(ng.subnets or [])
        hw = hardware(itype)
        for addr in nodegroup_addresses(world, account, region, ng, itype, subnets, desired):
            subnet = addr["subnet"]
            zone = subnet_zone(account, region, subnet) if subnet else f"{region}a"
            ip = addr["ip"]
            labels = dict(ng.labels or {})
            labels.update(
                {
                    "node.kubernetes.io/instance-type": itype,
                    "topology.kubernetes.io/zone": zone,
                    "topology.kubernetes.io/region": region,
                    "eks.amazonaws.com/nodegroup": ng.nodegroup_name,
                    "eks.amazonaws.com/capacityType": ng.capacity_type,
                }
            )
            out.append(
                {
                    "name": f"ip-{ip.replace('.', '-')}.{region}.compute.internal",
                    "instance_id": addr["instance_id"],
                    **addr["kube"],
                    "instance_group": ng.nodegroup_name,
                    "instance_type": itype,
                    "zone": zone,
                    "capacity_type": ng.capacity_type,
                    "labels": labels,
                    "taints": [
                        {
                            "key": t.get("key"),
                            "value": t.get("value", ""),
                            "effect": _EFFECTS.get(t.get("effect"), "NoSchedule"),
                        }
                        for t in ng.taints or []
                    ],
                    "gpus": hw["gpus"],
                    "efa": hw["efa"],
                    "cpu": hw["cpu"],
                    "memory_gib": hw["memory_gib"],
                    "ready": True,
                }
            )
    return out
