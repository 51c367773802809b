"""Phases of `cluster.import` and `cluster.reconcile`: read what exists, record it, never create."""

from __future__ import annotations

from instantstart.cloud.kube import api_client, apply
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail

from ..manifests import base_manifests
from ..models import CapacityType, Cluster, InstanceGroup, StorageKind, StorageStatus
from ..readers.importable import hyperpod_clusters_by_eks_arn
from ..readers.nodes import node_summary
from .base import cloud_of, cluster_of
from .storage import volume_manifests


def _subnet_zones(ec2, subnet_ids: list[str]) -> dict[str, str]:
    if not subnet_ids:
        return {}
    return {s["SubnetId"]: s["AvailabilityZone"] for s in ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"]}


def read_cloud(ctx: StepContext):
    """Record the EKS cluster, its HyperPod cluster and their instance groups as they are."""
    cluster = cluster_of(ctx)
    cloud = cloud_of(cluster)
    eks = cloud.client("eks")
    try:
        described = eks.describe_cluster(name=cluster.eks_cluster_name)["cluster"]
    except eks.exceptions.ResourceNotFoundException:
        return Fail(
            f"EKS cluster {cluster.eks_cluster_name} no longer exists in {cluster.region}.",
            hint="Check the name, or forget this cluster (DELETE) if it was removed outside InstantStart.",
            code="EksClusterMissing",
        )
    vpc_config = described.get("resourcesVpcConfig") or {}
    hyperpod = hyperpod_clusters_by_eks_arn(cloud, cluster.region).get(described["arn"])
    ec2 = cloud.client("ec2")
    groups = (hyperpod or {}).get("InstanceGroups", [])
    default_subnets = ((hyperpod or {}).get("VpcConfig") or {}).get("Subnets", [])
    zones = _subnet_zones(
        ec2,
        sorted(
            {*default_subnets, *[s for g in groups for s in ((g.get("OverrideVpcConfig") or {}).get("Subnets") or [])]}
        ),
    )
    security_groups = ((hyperpod or {}).get("VpcConfig") or {}).get("SecurityGroupIds") or vpc_config.get(
        "securityGroupIds", []
    )
    recorded = []
    for group in groups:
        subnets = (group.get("OverrideVpcConfig") or {}).get("Subnets") or default_subnets
        subnet = subnets[0] if subnets else ""
        capacity = (
            CapacityType.TRAINING_PLAN
            if group.get("TrainingPlanArn")
            else (CapacityType.SPOT if "Spot" in (group.get("CapacityRequirements") or {}) else CapacityType.ON_DEMAND)
        )
        InstanceGroup.objects.update_or_create(
            cluster=cluster,
            name=group["InstanceGroupName"],
            defaults={
                "instance_type": group["InstanceType"],
                "count": group.get("TargetCount", group.get("CurrentCount", 0)) or 0,
                "min_count": group.get("MinCount", 0) or 0,
                "capacity_type": capacity,
                "training_plan_arn": group.get("TrainingPlanArn", ""),
                "efa_only": (group.get("NetworkInterface") or {}).get("InterfaceType") == "efa-only",
                "deep_health_checks": group.get("OnStartDeepHealthChecks", []),
                "availability_zone": zones.get(subnet, cluster.availability_zone),
                "subnet_id": subnet,
                "status": group.get("Status", ""),  # HyperPod's InstanceGroupStatus, as it reports it
            },
        )
        recorded.append(group["InstanceGroupName"])
    cluster.instance_groups.exclude(name__in=recorded).delete()
    first_zone = next(iter(zones.values()), cluster.availability_zone)
    Cluster.objects.filter(pk=cluster.pk).update(
        eks_cluster_arn=described["arn"],
        eks_endpoint=described.get("endpoint", ""),
        kubernetes_version=described.get("version") or cluster.kubernetes_version,
        vpc_id=vpc_config.get("vpcId", ""),
        availability_zone=cluster.availability_zone or first_zone,
        hyperpod_cluster_name=(hyperpod or {}).get("ClusterName", ""),
        hyperpod_cluster_arn=(hyperpod or {}).get("ClusterArn", ""),
        network={
            **cluster.network,
            "vpc_id": vpc_config.get("vpcId", ""),
            "security_group_id": (security_groups or [""])[0],
            "cluster_subnets": vpc_config.get("subnetIds", []),
            "compute_subnets": zones,
        },
        versions={
            **cluster.versions,
            "kubernetes": described.get("version"),
            "platform": described.get("platformVersion"),
        },
    )
    ctx.record(instance_groups=recorded, hyperpod=(hyperpod or {}).get("ClusterName"))
    summary = node_summary(Cluster.objects.get(pk=cluster.pk))
    Cluster.objects.filter(pk=cluster.pk).update(node_summary=summary)
    return Done(f"recorded {len(recorded)} instance groups and {summary['total']} nodes")


def reapply_manifests(ctx: StepContext):
    """Put back base manifests and storage volumes that went missing (server-side apply is idempotent)."""
    cluster = cluster_of(ctx)
    if not cluster.managed:
        return Done("imported cluster: its manifests are its owner's")
    api = api_client(cloud_of(cluster), cluster.eks_cluster_name)
    applied = 0
    for manifest in base_manifests(cluster):
        apply(api, manifest)
        applied += 1
    for storage in cluster.storages.filter(status=StorageStatus.ATTACHED):
        fsx = None
        if storage.kind == StorageKind.FSX:
            fsx = (
                cloud_of(cluster)
                .client("fsx")
                .describe_file_systems(FileSystemIds=[storage.file_system_id])["FileSystems"][0]
            )
        for manifest in volume_manifests(storage, cluster.region, fsx):
            apply(api, manifest)
            applied += 1
    return Done(f"{applied} objects applied")
