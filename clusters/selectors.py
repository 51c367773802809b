"""Database reads about clusters that are more than a filter, and the one lookup per object.

``get_cluster``, ``get_group`` and ``get_storage`` are how every face (viewsets, portal views,
serializers, tools through REST) finds an object of the caller's team: through ``visible_to``, and
``NotFound`` (a 404 everywhere) for anything else — another team's object included.
"""

from __future__ import annotations

import uuid

from django.contrib.contenttypes.models import ContentType

from instantstart.errors import NotFound
from instantstart.operations.models import ACTIVE, Operation
from instantstart.tenancy.access import Access

from .models import ActiveCluster, Cluster, InstanceGroup, Storage


def get_cluster(access: Access, pk, *, with_history: bool = False) -> Cluster:
    """The caller's cluster; ``with_history`` also finds a deleted one (its page stays for history)."""
    clusters = Cluster.objects.owned_by(access) if with_history else Cluster.objects.visible_to(access)
    try:
        return clusters.select_related("team").get(pk=uuid.UUID(str(pk)))
    except (ValueError, Cluster.DoesNotExist):
        raise NotFound() from None


def get_group(access: Access, cluster_pk, name: str) -> InstanceGroup:
    """An instance group of one of the caller's clusters, by its name."""
    group = (
        InstanceGroup.objects.visible_to(access)
        .select_related("cluster__team")
        .filter(cluster_id=get_cluster(access, cluster_pk).pk, name=name)
        .first()
    )
    if group is None:
        raise NotFound()
    return group


def get_storage(access: Access, cluster_pk, pk) -> Storage:
    """A storage of one of the caller's clusters; another cluster's storage is not found here."""
    cluster = get_cluster(access, cluster_pk)
    try:
        return Storage.objects.visible_to(access).select_related("cluster").get(cluster=cluster, pk=uuid.UUID(str(pk)))
    except (ValueError, Storage.DoesNotExist):
        raise NotFound() from None


def operations_of(cluster: Cluster):
    """The operations whose target is the cluster (not those of its groups or storage)."""
    return Operation.objects.filter(target_type=ContentType.objects.get_for_model(Cluster), target_id=str(cluster.pk))


def last_operation(cluster: Cluster) -> Operation | None:
    return operations_of(cluster).prefetch_related("phases").order_by("-created_at").first()


def running_operation(cluster: Cluster) -> Operation | None:
    return operations_of(cluster).filter(status__in=ACTIVE).first()


def last_operations(access: Access, clusters: list[Cluster]) -> dict[str, Operation]:
    """The latest operation of each cluster, by cluster id, in one query (a list shows one per row)."""
    latest: dict[str, Operation] = {}
    operations = (
        Operation.objects.visible_to(access)
        .filter(
            target_type=ContentType.objects.get_for_model(Cluster),
            target_id__in=[str(cluster.pk) for cluster in clusters],
        )
        .order_by("-created_at")
    )
    for operation in operations.only("id", "kind", "status", "target_id", "created_at"):
        latest.setdefault(operation.target_id, operation)
    return latest


def running_group_operations(cluster: Cluster, groups: list[InstanceGroup]) -> dict[str, Operation]:
    """The operation running on each of the groups, by group id (a group runs one at a time)."""
    running = Operation.objects.filter(
        target_type=ContentType.objects.get_for_model(InstanceGroup),
        target_id__in=[str(group.pk) for group in groups],
        status__in=ACTIVE,
    ).order_by("created_at")
    return {operation.target_id: operation for operation in running}


def group_operation_of(cluster: Cluster, operation: Operation) -> bool:
    """Whether the operation targets one of the cluster's instance groups."""
    return operation.target_type == ContentType.objects.get_for_model(InstanceGroup) and (
        cluster.instance_groups.filter(pk=operation.target_id).exists()
    )


def active_cluster(access: Access) -> Cluster | None:
    """The caller's active cluster in the team; falls back to the team's only cluster."""
    visible = Cluster.objects.visible_to(access)
    if access.user is not None and getattr(access.user, "pk", None):
        chosen = ActiveCluster.objects.filter(user=access.user, team=access.team).values_list("cluster_id", flat=True)
        found = visible.filter(pk__in=chosen).first()
        if found is not None:
            return found
    clusters = list(visible[:2])
    return clusters[0] if len(clusters) == 1 else None
