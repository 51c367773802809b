"""Whether an instance group's nodes are all back: as many Running, Ready and Schedulable nodes as it targets."""

from __future__ import annotations

from instantstart.cloud.aws import team_cloud

from .models import Cluster
from .nodes import list_nodes


def group_settled(cluster: Cluster, group_name: str) -> tuple[bool, str]:
    sagemaker = team_cloud(cluster.team, cluster.region).client("sagemaker")
    described = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    group = next((g for g in described.get("InstanceGroups", []) if g["InstanceGroupName"] == group_name), None)
    if group is None:
        return True, f"group {group_name} no longer exists"
    target = group.get("TargetCount", 0)
    healthy = [
        n
        for n in list_nodes(cluster)
        if n["instance_group"] == group_name
        and n["status"] == "Running"
        and n["ready"]
        and n["health"] == "Schedulable"
    ]
    return len(healthy) >= target, f"{len(healthy)} of {target} nodes of {group_name} healthy"
