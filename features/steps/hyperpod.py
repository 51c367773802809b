"""HyperPod cluster settings behind a feature (TieredStorageConfig): one UpdateCluster with only the
setting that differs, then poll DescribeCluster until the cluster is InService with it."""

from __future__ import annotations

from instantstart.operations.context import StepContext
from instantstart.operations.results import Fail, Wait

POLL_SECONDS = 10


def _matches(described: dict, wanted: dict) -> bool:
    config = described.get("TieredStorageConfig") or {}
    if wanted["Mode"] == "Disable":
        return config.get("Mode") != "Enable"
    return config.get("Mode") == "Enable" and config.get("InstanceMemoryAllocationPercentage") == wanted.get(
        "InstanceMemoryAllocationPercentage"
    )


def tiered_storage(ctx: StepContext, cluster, cloud, wanted: dict):
    """Bring TieredStorageConfig to ``wanted``; None when it is there and the cluster is InService."""
    sagemaker = cloud.client("sagemaker")
    described = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    status = described["ClusterStatus"]
    if _matches(described, wanted) and status == "InService":
        return None
    if status == "Failed":
        return Fail(
            f"The HyperPod cluster is Failed: {described.get('FailureMessage', '')}",
            hint="Look at the cluster's events, then retry.",
            code="HyperPodFailed",
        )
    if not _matches(described, wanted) and ctx.state.get("submitted") != wanted:
        if status != "InService":
            return Wait(POLL_SECONDS, f"waiting for the HyperPod cluster ({status}) before changing it")
        sagemaker.update_cluster(ClusterName=cluster.hyperpod_cluster_name, TieredStorageConfig=wanted)
        ctx.record(submitted=wanted)
    return Wait(POLL_SECONDS, "waiting for HyperPod to apply TieredStorageConfig")


def autoscaling(ctx: StepContext, cluster, cloud, role_arn: str | None, enable: bool):
    """Turn HyperPod managed Karpenter on (with ``role_arn`` as ClusterRole) or off; None when it is so."""
    sagemaker = cloud.client("sagemaker")
    described = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    config = described.get("AutoScaling") or {}
    status = config.get("Status")
    if enable and config.get("Mode") == "Enable" and status == "InService":
        return None
    if not enable and not config:
        return None
    submitted = ctx.state.get("autoscaling_submitted")
    if enable and submitted and status == "Failed":
        ctx.record(autoscaling_submitted=None)  # a retry submits again
        return Fail(
            f"HyperPod could not enable autoscaling: {config.get('FailureMessage', 'Failed')}",
            hint="Fix what the message names (the ClusterRole's permissions), then retry the operation.",
            code="AutoScalingFailed",
        )
    if not submitted:
        if described["ClusterStatus"] != "InService":
            return Wait(POLL_SECONDS, f"waiting for the HyperPod cluster ({described['ClusterStatus']})")
        if enable:
            sagemaker.update_cluster(
                ClusterName=cluster.hyperpod_cluster_name,
                AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"},
                ClusterRole=role_arn,
                NodeProvisioningMode="Continuous",
                NodeRecovery="Automatic",
            )
        elif config.get("Mode") == "Enable":
            sagemaker.update_cluster(ClusterName=cluster.hyperpod_cluster_name, AutoScaling={"Mode": "Disable"})
        ctx.record(autoscaling_submitted=True)
    return Wait(POLL_SECONDS, f"waiting for HyperPod AutoScaling ({status or 'submitted'})")
