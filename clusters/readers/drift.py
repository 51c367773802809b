"""Drift: where the actual state (AWS, Kubernetes) differs from what InstantStart recorded. Reads only."""

from __future__ import annotations

from kubernetes import client as k8s

from features.readers.drift import feature_drift
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from instantstart.errors import cloud_read

from ..models import Cluster, ClusterStatus, StorageStatus


def _difference(resource: str, field: str, recorded, actual) -> dict:
    return {"resource": resource, "field": field, "recorded": recorded, "actual": actual}


@cloud_read()
def cluster_drift(cluster: Cluster) -> list[dict]:
    """Each difference as {resource, field, recorded, actual}; only active and imported clusters are compared."""
    if cluster.status not in (ClusterStatus.ACTIVE, ClusterStatus.IMPORTED):
        return []
    cloud = team_cloud(cluster.team, cluster.region)
    differences: list[dict] = []
    eks = cloud.client("eks")
    try:
        described = eks.describe_cluster(name=cluster.eks_cluster_name)["cluster"]
    except eks.exceptions.ResourceNotFoundException:
        return [_difference("eks", "exists", True, False)]
    if described.get("version") != cluster.versions.get("kubernetes"):
        differences.append(_difference("eks", "version", cluster.versions.get("kubernetes"), described.get("version")))
    if described["status"] != "ACTIVE":
        differences.append(_difference("eks", "status", "ACTIVE", described["status"]))

    if cluster.hyperpod_cluster_name:
        sagemaker = cloud.client("sagemaker")
        try:
            hyperpod = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
        except sagemaker.exceptions.ResourceNotFound:
            return [*differences, _difference("hyperpod", "exists", True, False)]
        if hyperpod["ClusterStatus"] != "InService":
            differences.append(_difference("hyperpod", "status", "InService", hyperpod["ClusterStatus"]))
        actual = {g["InstanceGroupName"]: g for g in hyperpod.get("InstanceGroups", [])}
        recorded = {g.name: g for g in cluster.instance_groups.all()}
        for name in sorted(set(actual) | set(recorded)):
            if name not in actual:
                differences.append(_difference(f"instance_group/{name}", "exists", True, False))
            elif name not in recorded:
                differences.append(_difference(f"instance_group/{name}", "exists", False, True))
            else:
                target = actual[name].get("TargetCount", actual[name].get("CurrentCount"))
                if target != recorded[name].count:
                    differences.append(_difference(f"instance_group/{name}", "count", recorded[name].count, target))
                if actual[name]["InstanceType"] != recorded[name].instance_type:
                    differences.append(
                        _difference(
                            f"instance_group/{name}",
                            "instance_type",
                            recorded[name].instance_type,
                            actual[name]["InstanceType"],
                        )
                    )

    attached = list(cluster.storages.filter(status=StorageStatus.ATTACHED))
    if attached:
        core = k8s.CoreV1Api(api_client(cloud, cluster.eks_cluster_name))
        for storage in attached:
            try:
                core.read_namespaced_persistent_volume_claim(storage.claim_name, storage.namespace)
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise
                differences.append(_difference(f"storage/{storage.name}", "claim", storage.claim_name, None))
    return differences + feature_drift(cluster)
