"""Phase `hyperpod`: the HyperPod cluster on the EKS control plane, polled to InService."""

from __future__ import annotations

from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..models import CapacityType, Cluster, InstanceGroup
from .base import cloud_of, cluster_of
from .network import ensure_compute_subnet

POLL_SECONDS = 30
FIRST_POLL_SECONDS = 180
# Threads per core: HyperPod recommends 1 (no hyper-threading) for accelerated training fleets.
THREADS_PER_CORE = 1


def hyperpod_name(cluster: Cluster) -> str:
    return f"{cluster.resource_prefix}-hp"[:63]


def instance_group_request(cluster: Cluster, group: InstanceGroup) -> dict:
    """One group as HyperPod's CreateCluster/UpdateCluster wants it (UpdateCluster is a partial upsert)."""
    request: dict = {
        "InstanceGroupName": group.name,
        "InstanceType": group.instance_type,
        "InstanceCount": group.count,
        "LifeCycleConfig": {"SourceS3Uri": cluster.identity["lifecycle_uri"], "OnCreate": "on_create.sh"},
        "ExecutionRole": cluster.identity["execution_role_arn"],
        "ThreadsPerCore": THREADS_PER_CORE,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": group.ebs_volume_gb}}],
    }
    if group.min_count:
        request["MinInstanceCount"] = group.min_count
    if group.deep_health_checks:
        request["OnStartDeepHealthChecks"] = list(group.deep_health_checks)
    if group.capacity_type == CapacityType.TRAINING_PLAN:
        request["TrainingPlanArn"] = group.training_plan_arn
    elif group.capacity_type == CapacityType.SPOT:
        request["CapacityRequirements"] = {"Spot": {}}
    else:
        request["CapacityRequirements"] = {"OnDemand": {}}
    if group.efa_only:
        request["NetworkInterface"] = {"InterfaceType": "efa-only"}
    if group.labels or group.taints:
        request["KubernetesConfig"] = {"Labels": dict(group.labels), "Taints": list(group.taints)}
    if group.availability_zone != cluster.availability_zone:
        request["OverrideVpcConfig"] = {
            "SecurityGroupIds": [cluster.network["security_group_id"]],
            "Subnets": [group.subnet_id],
        }
    return request


def capacity_hint(message: str) -> str:
    if "capacity" in message.lower():
        return (
            "Not enough capacity for this instance type in the zone. Move the instance groups to another zone "
            "(PATCH the cluster's availability_zone) or use a training plan, then retry; finished phases are "
            "not redone."
        )
    return "Fix what the message says, then retry the operation; finished phases are not redone."


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    sagemaker = cloud_of(cluster).client("sagemaker")
    name = hyperpod_name(cluster)
    try:
        described = sagemaker.describe_cluster(ClusterName=name)
    except sagemaker.exceptions.ResourceNotFound:
        described = None

    if (
        described is not None
        and described["ClusterStatus"] == "Failed"
        and (ctx.phase.state.get("failed_arn") == described["ClusterArn"])
    ):
        # A retry after a failed create: the failed cluster goes first, then a new one with the
        # (possibly changed) request is created.
        sagemaker.delete_cluster(ClusterName=name)
        ctx.record(failed_arn=None, deleting_failed=described["ClusterArn"])
        return Wait(POLL_SECONDS, f"removing the failed HyperPod cluster {name} before creating it again")
    if described is not None and described["ClusterStatus"] == "Deleting":
        return Wait(POLL_SECONDS, f"the previous HyperPod cluster {name} is being deleted")

    if described is None:
        groups = list(cluster.instance_groups.all())
        for zone in sorted({g.availability_zone for g in groups}):
            ensure_compute_subnet(cluster, zone)
        groups = list(cluster.instance_groups.all())
        default_subnet = (
            next(g.subnet_id for g in groups if g.availability_zone == cluster.availability_zone)
            if any(g.availability_zone == cluster.availability_zone for g in groups)
            else groups[0].subnet_id
        )
        response = sagemaker.create_cluster(
            ClusterName=name,
            InstanceGroups=[instance_group_request(cluster, g) for g in groups],
            VpcConfig={"SecurityGroupIds": [cluster.network["security_group_id"]], "Subnets": [default_subnet]},
            Orchestrator={"Eks": {"ClusterArn": cluster.eks_cluster_arn}},
            NodeRecovery="Automatic",
            Tags=[{"Key": k, "Value": v} for k, v in cluster.tags().items()],
        )
        ctx.record(cluster_arn=response["ClusterArn"], cluster_name=name)
        return Wait(FIRST_POLL_SECONDS, f"HyperPod cluster {name} creating (instances start in several minutes)")

    ctx.record(cluster_arn=described["ClusterArn"], cluster_name=name)
    status = described["ClusterStatus"]
    groups_status = {g["InstanceGroupName"]: g.get("Status", "") for g in described.get("InstanceGroups", [])}
    for group_name, group_status in groups_status.items():
        InstanceGroup.objects.filter(cluster=cluster, name=group_name).update(status=group_status)
    if status == "Failed":
        message = described.get("FailureMessage") or "HyperPod reported the cluster Failed."
        ctx.record(failed_arn=described["ClusterArn"])
        return Fail(
            f"HyperPod cluster {name} failed: {message}", hint=capacity_hint(message), code="HyperPodCreateFailed"
        )
    if status != "InService":
        counts = ", ".join(
            f"{g['InstanceGroupName']} {g.get('CurrentCount', 0)}/{g.get('TargetCount', 0)}"
            for g in described.get("InstanceGroups", [])
        )
        return Wait(POLL_SECONDS, f"HyperPod cluster {name} is {status} ({counts})")
    Cluster.objects.filter(pk=cluster.pk).update(
        hyperpod_cluster_name=name, hyperpod_cluster_arn=described["ClusterArn"]
    )
    return Done(f"HyperPod cluster {name} InService")
