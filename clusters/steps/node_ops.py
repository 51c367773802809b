"""Phases of node operations: reboot, replace, delete through HyperPod's batch node APIs, polled
until the node is back (or gone)."""

from __future__ import annotations

from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..readers.nodes import find_node, group_settled
from .base import cloud_of, cluster_of
from .verify import refresh_node_summary

POLL_SECONDS = 15
_CALLS = {
    "reboot": "batch_reboot_cluster_nodes",
    "replace": "batch_replace_cluster_nodes",
    "delete": "batch_delete_cluster_nodes",
}


def submit(ctx: StepContext):
    cluster = cluster_of(ctx)
    action, instance_id = ctx.params["action"], ctx.params["instance_id"]
    if not ctx.phase.state.get("submitted"):
        sagemaker = cloud_of(cluster).client("sagemaker")
        answer = getattr(sagemaker, _CALLS[action])(ClusterName=cluster.hyperpod_cluster_name, NodeIds=[instance_id])
        failed = answer.get("Failed") or []
        if failed:
            error = failed[0]
            return Fail(
                f"HyperPod refused to {action} {instance_id}: {error.get('Message')}",
                hint="Check the node's status; a node must be Running to be acted on.",
                code=error.get("Code") or error.get("ErrorCode") or "NodeActionFailed",
            )
        ctx.record(submitted=True)
    return Done(f"{action} of {instance_id} submitted")


def wait(ctx: StepContext):
    result = _wait(ctx)
    if isinstance(result, Done):
        refresh_node_summary(cluster_of(ctx))  # the cluster's counts follow what the action changed
    return result


def _wait(ctx: StepContext):
    cluster = cluster_of(ctx)
    action, instance_id = ctx.params["action"], ctx.params["instance_id"]
    sagemaker = cloud_of(cluster).client("sagemaker")
    try:
        described = sagemaker.describe_cluster_node(ClusterName=cluster.hyperpod_cluster_name, NodeId=instance_id)
        status = described["NodeDetails"]["InstanceStatus"]["Status"]
    except sagemaker.exceptions.ResourceNotFound:
        status = None
    if action == "reboot":
        node = find_node(cluster, instance_id) if status == "Running" else None
        if node and node["ready"] and node["health"] == "Schedulable":
            return Done(f"{instance_id} is back: Running, Ready, Schedulable")
        return Wait(POLL_SECONDS, f"{instance_id} rebooting ({status or 'unknown'})")
    if status is not None:
        return Wait(POLL_SECONDS, f"{instance_id} {status}")
    if action == "replace":
        settled, message = group_settled(cluster, ctx.params["instance_group"])
        if not settled:
            return Wait(POLL_SECONDS, message)
        return Done(f"{instance_id} replaced: {message}")
    return Done(f"{instance_id} deleted")
