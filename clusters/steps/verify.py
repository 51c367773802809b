"""Phase `verify`: the cluster's nodes registered in Kubernetes, schedulable, health labels read."""

from __future__ import annotations

from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..models import Cluster
from ..readers.nodes import node_summary
from .base import cluster_of

POLL_SECONDS = 20
MAX_POLLS = 45  # ~15 minutes for nodes to join after HyperPod says InService


# What a cluster with no nodes shows (a deleted one): none registered, none ready.
NO_NODES = {"total": 0, "ready": 0, "by_health": {}, "by_group": {}}


def refresh_node_summary(cluster: Cluster) -> dict:
    """Read the cluster's nodes from Kubernetes and record them: every group and node operation ends
    with this, so the header, lists and REST ``nodes`` say what kubectl says."""
    summary = node_summary(cluster)
    Cluster.objects.filter(pk=cluster.pk).update(node_summary=summary)
    return summary


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    expected = sum(cluster.instance_groups.values_list("count", flat=True))
    summary = refresh_node_summary(cluster)
    polls = ctx.phase.state.get("polls", 0) + 1
    ctx.record(polls=polls, summary=summary)
    if summary["total"] >= expected and summary["ready"] >= expected:
        health = ", ".join(f"{n} {h}" for h, n in sorted(summary["by_health"].items()))
        return Done(f"{summary['total']} nodes registered and schedulable ({health})")
    if polls >= MAX_POLLS:
        return Fail(
            f"Only {summary['ready']} of {expected} nodes are registered and schedulable.",
            hint="Open the cluster's nodes to see their health; retry the operation to check again.",
            code="NodesMissing",
        )
    return Wait(POLL_SECONDS, f"{summary['ready']} of {expected} nodes ready")
