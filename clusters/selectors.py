"""Database reads about clusters that are more than a filter, and the one lookup per object.

``get_cluster``, ``get_group`` and ``get_storage`` are how every face (viewsets, portal views,
serializers, tools through REST) finds an object of the caller's team: through ``visible_to``, and
``NotFound`` (a 404 everywhere) for anything else — another team's object included.
"""

from __future__ import annotations

import uuid

from django.contrib.contenttypes.models import ContentType
from django.db.models import Q

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
    """The operations whose target is the cluster itself (create, delete, nodes): one runs at a time."""
    return Operation.objects.filter(target_type=ContentType.objects.get_for_model(Cluster), target_id=str(cluster.pk))


def _about_clusters(clusters: list[Cluster]) -> Q:
    """Operations whose target is one of the clusters or one of their groups, nodes or storage.

    Group and storage operations carry ``params.cluster_id`` (a deleted group's row is gone); those
    started before they did are found by their target's row."""
    ids = [str(cluster.pk) for cluster in clusters]
    groups = InstanceGroup.objects.filter(cluster__in=clusters).values_list("pk", flat=True)
    storages = Storage.objects.filter(cluster__in=clusters).values_list("pk", flat=True)
    return (
        Q(target_type=ContentType.objects.get_for_model(Cluster), target_id__in=ids)
        | Q(params__cluster_id__in=ids)
        | Q(target_type=ContentType.objects.get_for_model(InstanceGroup), target_id__in=[str(g) for g in groups])
        | Q(target_type=ContentType.objects.get_for_model(Storage), target_id__in=[str(s) for s in storages])
    )


def cluster_operations(cluster: Cluster):
    """Every operation about the cluster: its own, and those of its groups, nodes and storage."""
    return Operation.objects.filter(team_id=cluster.team_id).filter(_about_clusters([cluster]))


def last_operation(cluster: Cluster) -> Operation | None:
    """The latest operation about the cluster (a scale after the create is the latest)."""
    return cluster_operations(cluster).prefetch_related("phases").order_by("-created_at").first()


def running_operation(cluster: Cluster) -> Operation | None:
    return operations_of(cluster).filter(status__in=ACTIVE).first()


def last_operations(access: Access, clusters: list[Cluster]) -> dict[str, Operation]:
    """The latest operation of each cluster, by cluster id, in one query (a list shows one per row)."""
    latest: dict[str, Operation] = {}
    if not clusters:
        return latest
    owners = _owners(clusters)
    operations = Operation.objects.visible_to(access).filter(_about_clusters(clusters)).order_by("-created_at")
    for operation in operations.only("id", "kind", "status", "target_type", "target_id", "params", "created_at"):
        owner = (operation.params or {}).get("cluster_id") or owners.get(operation.target_id, operation.target_id)
        latest.setdefault(owner, operation)
    return latest


def _owners(clusters: list[Cluster]) -> dict[str, str]:
    """Group and storage ids → their cluster's id."""
    owners: dict[str, str] = {}
    for model in (InstanceGroup, Storage):
        for pk, cluster_id in model.objects.filter(cluster__in=clusters).values_list("pk", "cluster_id"):
            owners[str(pk)] = str(cluster_id)
    return owners


def running_group_operations(cluster: Cluster, groups: list[InstanceGroup]) -> dict[str, Operation]:
    """The operation running on each of the groups, by group id (a group runs one at a time)."""
    running = Operation.objects.filter(
        target_type=ContentType.objects.get_for_model(InstanceGroup),
        target_id__in=[str(group.pk) for group in groups],
        status__in=ACTIVE,
    ).order_by("created_at")
    return {operation.target_id: operation for operation in running}


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


def fleet(access: Access) -> list[dict]:
    """What the team's clusters run, from what the operations recorded: per cluster its instances by
    type, its nodes by health and its estimated cost per hour (the dashboard's figures)."""
    from instantstart.pricing import hourly_cost

    rows = []
    clusters = Cluster.objects.visible_to(access).prefetch_related("instance_groups").order_by("name")
    for cluster in clusters:
        instances: dict[str, int] = {}
        for group in cluster.instance_groups.all():
            instances[group.instance_type] = instances.get(group.instance_type, 0) + group.count
        # Instances cost from when HyperPod runs them: an active cluster, or any with nodes registered.
        runs = cluster.status in ("active", "imported") or bool((cluster.node_summary or {}).get("total"))
        cost, unpriced = hourly_cost(instances) if runs else (None, [])
        rows.append(
            {
                "cluster": cluster,
                "instances": instances if runs else {},
                "by_health": (cluster.node_summary or {}).get("by_health") or {},
                "cost": cost,
                "unpriced": unpriced,
            }
        )
    return rows
