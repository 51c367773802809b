"""Reads about clusters that are more than a filter."""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType

from instantstart.operations.models import ACTIVE, Operation

from .models import ActiveCluster, Cluster


def operations_of(cluster: Cluster):
    return Operation.objects.filter(
        team=cluster.team, target_type=ContentType.objects.get_for_model(Cluster), target_id=str(cluster.pk)
    )


def last_operation(cluster: Cluster) -> Operation | None:
    return operations_of(cluster).prefetch_related("phases").order_by("-created_at").first()


def running_operation(cluster: Cluster) -> Operation | None:
    return operations_of(cluster).filter(status__in=ACTIVE).first()


def active_cluster(user, team) -> Cluster | None:
    """The user's active cluster in the team; falls back to the team's only cluster."""
    chosen = ActiveCluster.objects.filter(user=user, team=team).select_related("cluster").first()
    if chosen and chosen.cluster.status != "deleted":
        return chosen.cluster
    clusters = list(Cluster.objects.filter(team=team).exclude(status="deleted")[:2])
    return clusters[0] if len(clusters) == 1 else None
