"""Phase `verify`: the cluster's nodes registered in Kubernetes, schedulable, health labels read."""

from __future__ import annotations

from kubernetes import client as k8s

from instantstart.cloud.kube import api_client
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..models import Cluster
from .base import cloud_of, cluster_of

POLL_SECONDS = 20
MAX_POLLS = 45  # ~15 minutes for nodes to join after HyperPod says InService
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"


def node_summary(cluster: Cluster) -> dict:
    """Nodes of the cluster by instance group and by health, read from Kubernetes."""
    api = api_client(cloud_of(cluster), cluster.eks_cluster_name)
    nodes = k8s.CoreV1Api(api).list_node(label_selector=GROUP_LABEL).items
    by_health: dict[str, int] = {}
    by_group: dict[str, int] = {}
    ready = 0
    for node in nodes:
        labels = node.metadata.labels or {}
        health = labels.get(HEALTH_LABEL, "Unknown")
        by_health[health] = by_health.get(health, 0) + 1
        group = labels.get(GROUP_LABEL, "")
        by_group[group] = by_group.get(group, 0) + 1
        conditions = {c.type: c.status for c in (node.status.conditions or [])} if node.status else {}
        if conditions.get("Ready") == "True" and not (node.spec and node.spec.unschedulable):
            ready += 1
    return {"total": len(nodes), "ready": ready, "by_health": by_health, "by_group": by_group}


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    expected = sum(cluster.instance_groups.values_list("count", flat=True))
    summary = node_summary(cluster)
    Cluster.objects.filter(pk=cluster.pk).update(node_summary=summary)
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
