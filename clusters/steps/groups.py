"""Phases of instance group operations: add, scale, delete — each one UpdateCluster, then polls.

UpdateCluster is a partial upsert: a request carries only the group being added or changed.
HyperPod accepts it only while the cluster is InService, so a step waits its turn.
"""

from __future__ import annotations

from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..models import InstanceGroup
from .base import cloud_of
from .hyperpod import capacity_hint, instance_group_request
from .network import ensure_compute_subnet
from .verify import refresh_node_summary

POLL_SECONDS = 20


def _group(ctx: StepContext) -> InstanceGroup:
    return InstanceGroup.objects.select_related("cluster__team").get(pk=ctx.operation.target_id)


def _describe(sagemaker, cluster) -> dict:
    return sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)


def _actual(described: dict, name: str) -> dict | None:
    return next((g for g in described.get("InstanceGroups", []) if g["InstanceGroupName"] == name), None)


def place(ctx: StepContext):
    """Settle the subnet: the zone's /20 compute subnet, allocated now if the zone has none."""
    group = _group(ctx)
    subnet = ensure_compute_subnet(group.cluster, group.availability_zone)
    ctx.record(subnet_id=subnet.subnet_id, cidr=subnet.cidr)
    return Done(f"compute subnet {subnet.subnet_id} ({subnet.cidr}) in {group.availability_zone}")


def _submit_and_poll(ctx: StepContext, *, request: dict | None, delete: bool = False, expect_count: int | None = None):
    group = _group(ctx)
    cluster = group.cluster
    sagemaker = cloud_of(cluster).client("sagemaker")
    described = _describe(sagemaker, cluster)
    if not ctx.phase.state.get("submitted"):
        if described["ClusterStatus"] != "InService":
            return Wait(POLL_SECONDS, f"HyperPod cluster is {described['ClusterStatus']}; waiting to submit")
        if delete:
            if _actual(described, group.name) is not None:
                sagemaker.update_cluster(ClusterName=cluster.hyperpod_cluster_name, InstanceGroupsToDelete=[group.name])
        else:
            sagemaker.update_cluster(ClusterName=cluster.hyperpod_cluster_name, InstanceGroups=[request])
        ctx.record(submitted=True)
        return Wait(POLL_SECONDS, "update submitted")
    actual = _actual(described, group.name)
    if delete:
        if actual is None and described["ClusterStatus"] == "InService":
            return _nodes_settled(ctx, cluster, group.name, 0, f"group {group.name} deleted")
        return Wait(POLL_SECONDS, f"group {group.name} deleting")
    if actual is None:
        return Wait(POLL_SECONDS, f"group {group.name} not visible yet")
    InstanceGroup.objects.filter(pk=group.pk).update(status=actual.get("Status", ""))
    if actual.get("Status") == "Failed" or (
        described["ClusterStatus"] == "InService"
        and described.get("FailureMessage")
        and actual.get("CurrentCount", 0) < (expect_count or 0)
    ):
        message = described.get("FailureMessage") or f"Instance group {group.name} failed."
        return Fail(message, hint=capacity_hint(message), code="InstanceGroupFailed")
    if described["ClusterStatus"] != "InService" or actual.get("Status") != "InService":
        return Wait(
            POLL_SECONDS,
            f"group {group.name} {actual.get('Status')} "
            f"({actual.get('CurrentCount', 0)}/{actual.get('TargetCount', 0)})",
        )
    if expect_count is not None and actual.get("CurrentCount", 0) != expect_count:
        return Wait(POLL_SECONDS, f"group {group.name} at {actual.get('CurrentCount', 0)}/{expect_count}")
    return _nodes_settled(
        ctx,
        cluster,
        group.name,
        actual.get("CurrentCount", 0),
        f"group {group.name} InService with {actual.get('CurrentCount', 0)} instances",
    )


NODE_POLLS = 15  # ~5 minutes for Kubernetes to show the nodes HyperPod reports


def _nodes_settled(ctx: StepContext, cluster, group_name: str, expected: int, message: str):
    """HyperPod is done: wait (a while) until Kubernetes shows the group's nodes, and record the
    cluster's node counts either way, so every page and the REST ``nodes`` say what kubectl says."""
    summary = refresh_node_summary(cluster)
    registered = (summary.get("by_group") or {}).get(group_name, 0)
    polls = ctx.phase.state.get("node_polls", 0) + 1
    if registered != expected and polls < NODE_POLLS:
        ctx.record(node_polls=polls)
        return Wait(POLL_SECONDS, f"{message}; {registered} of {expected} nodes in Kubernetes")
    return Done(f"{message}; {registered} nodes in Kubernetes, {summary['total']} in the cluster")


def add(ctx: StepContext):
    group = _group(ctx)
    group.refresh_from_db()
    return _submit_and_poll(ctx, request=instance_group_request(group.cluster, group), expect_count=group.count)


def scale(ctx: StepContext):
    group = _group(ctx)
    count = int(ctx.params["count"])
    request = instance_group_request(group.cluster, group)
    request["InstanceCount"] = count
    if "min_count" in ctx.params:
        request["MinInstanceCount"] = int(ctx.params["min_count"])
    result = _submit_and_poll(ctx, request=request, expect_count=count)
    if isinstance(result, Done):
        InstanceGroup.objects.filter(pk=group.pk).update(
            count=count, **({"min_count": int(ctx.params["min_count"])} if "min_count" in ctx.params else {})
        )
    return result


def delete(ctx: StepContext):
    return _submit_and_poll(ctx, request=None, delete=True)
