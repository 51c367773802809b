"""An instance group under managed autoscaling, as it is now: its MinInstanceCount in HyperPod and
its NodePool's node limit in Kubernetes. Reads only."""

from __future__ import annotations

from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client, get
from instantstart.errors import cloud_read

from ..karpenter import NODEPOOL_API, names


def _node_pool(cluster, cloud, group_name: str) -> dict | None:
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    api = api_client(cloud, cluster.eks_cluster_name, cluster.region)
    try:
        return get(api, NODEPOOL_API, "NodePool", names(group_name)[1])
    except ResourceNotFoundError:  # the NodePool kind is served only while autoscaling is on
        return None


@cloud_read()
def group_autoscaling(cluster, group) -> dict:
    """{feature_on, in_hyperpod, autoscaling: {min, max} | None, pool_ready} for ``group``."""
    cloud = team_cloud(cluster.team, cluster.region)
    described = cloud.client("sagemaker").describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    config = described.get("AutoScaling") or {}
    actual = next((g for g in described.get("InstanceGroups", []) if g["InstanceGroupName"] == group.name), None)
    feature_on = config.get("Mode") == "Enable" and config.get("Status") == "InService"
    pool = _node_pool(cluster, cloud, group.name) if feature_on else None
    current = None
    if pool is not None:
        limit = ((pool.get("spec") or {}).get("limits") or {}).get("nodes")
        current = {"min": int((actual or {}).get("MinCount", 0)), "max": int(limit) if limit is not None else None}
    conditions = ((pool or {}).get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return {
        "feature_on": feature_on,
        "in_hyperpod": actual is not None,
        "hyperpod_group": actual,
        "autoscaling": current,
        "pool_ready": ready,
    }
