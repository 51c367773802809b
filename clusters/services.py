"""Every write to clusters, and every state rule the faces share.

Viewsets, portal views and (through REST) MCP tools call these after their serializer validated
the input. A rule that needs the actual cloud state reads it through ``readers/`` first (never
inside a transaction); a refusal is a domain error (StateConflict, NotFound) that each face shows
in its own way. Steps do the cloud writes.
"""

from __future__ import annotations

from django.db import transaction

from instantstart.errors import StateConflict
from instantstart.operations.audit import record_audit
from instantstart.operations.models import Operation
from instantstart.operations.services import start_operation
from instantstart.tenancy.access import Access

from .manifests import team_namespace
from .models import (
    ActiveCluster,
    CapacityType,
    Cluster,
    ClusterStatus,
    InstanceGroup,
    InstanceGroupStatus,
    Storage,
    StorageChoice,
    StorageStatus,
)
from .readers.nodes import actual_count, get_node, workloads_on
from .selectors import running_operation

NODE_ACTIONS = ("reboot", "replace", "delete")


def _replayed(access: Access, idempotency_key: str) -> Operation | None:
    """The operation an earlier request with this key started (the service-level half of idempotency)."""
    if not idempotency_key:
        return None
    return Operation.objects.visible_to(access).filter(idempotency_key=idempotency_key).first()


def group_node_config(group: dict) -> dict:
    """The model fields of a validated group's nodes (the one group serializer's output, in a
    create and an add alike): minimum count, labels, taints in HyperPod's shape, EBS size."""
    taints = [
        {"Key": t["key"], **({"Value": t["value"]} if t.get("value") else {}), "Effect": t["effect"]}
        for t in group.get("taints", [])
    ]  # HyperPod refuses an empty Value: a taint without one leaves it out
    return {
        "min_count": group.get("min_count", 0),
        "labels": dict(group.get("labels", {})),
        "taints": taints,
        "ebs_volume_gb": group.get("ebs_volume_gb", 500),
    }


def create_cluster(*, access: Access, data: dict, idempotency_key: str = "") -> tuple[Cluster, Operation, bool]:
    """Record the desired cluster and start `cluster.create`. Returns (cluster, operation, created)."""
    replayed = _replayed(access, idempotency_key)
    if replayed is not None:
        return Cluster.objects.get(pk=replayed.target_id), replayed, False
    with transaction.atomic():
        cluster = Cluster.objects.create(
            team=access.team,
            name=data["name"],
            region=data["region"],
            availability_zone=data["availability_zone"],
            kubernetes_version=data["kubernetes_version"],
            storage=data["storage"],
            created_by=access.user if getattr(access.user, "pk", None) else None,
        )
        for group in data["instance_groups"]:
            InstanceGroup.objects.create(
                cluster=cluster,
                name=group["name"],
                instance_type=group["instance_type"],
                count=group["count"],
                capacity_type=group["capacity_type"],
                training_plan_arn=group.get("training_plan_arn", ""),
                efa_only=group["efa_only"],
                deep_health_checks=group.get("deep_health_checks", []),
                availability_zone=group.get("availability_zone") or data["availability_zone"],
                status=InstanceGroupStatus.CREATING,
                **group_node_config(group),
            )
        if data["storage"] != StorageChoice.NONE:
            Storage.objects.create(
                cluster=cluster,
                name="shared",
                kind=data["storage"],
                namespace=team_namespace(cluster),
                claim_name="shared",
                managed=True,
            )
        if access.user is not None and getattr(access.user, "pk", None):
            ActiveCluster.objects.get_or_create(user=access.user, team=access.team, defaults={"cluster": cluster})
        operation, created = start_operation(
            access=access,
            kind="cluster.create",
            target=cluster,
            idempotency_key=idempotency_key,
            audit_action="cluster.create",
            audit_summary=_summary(data),
        )
    return cluster, operation, created


def _summary(data: dict) -> dict:
    return {
        "name": data["name"],
        "region": data["region"],
        "availability_zone": data["availability_zone"],
        "storage": data.get("storage"),
        "instance_groups": [
            {k: g.get(k) for k in ("name", "instance_type", "count", "capacity_type", "efa_only")}
            for g in data["instance_groups"]
        ],
    }


def delete_cluster(
    *, access: Access, cluster: Cluster, force: bool = False, idempotency_key: str = ""
) -> Operation | None:
    """Start `cluster.delete` (reverse teardown), or return the deletion already running.

    Refused while another operation runs on the cluster, unless ``force`` (which asks that one to
    cancel). An imported cluster is not torn down: it is forgotten, and None comes back.
    """
    if not cluster.managed:
        forget_cluster(access=access, cluster=cluster)
        return None
    running = running_operation(cluster)
    if running is not None and running.kind == "cluster.delete":
        return running
    if running is not None and not force:
        raise StateConflict(
            f"Operation {running.kind} ({running.pk}) is still running on this cluster: cancel it first, "
            "or delete with force=true."
        )
    with transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(status=ClusterStatus.DELETING)
        if running is not None:
            Operation.objects.filter(pk=running.pk).update(cancel_requested=True)
        operation, _ = start_operation(
            access=access,
            kind="cluster.delete",
            target=cluster,
            idempotency_key=idempotency_key,
            audit_action="cluster.delete",
            audit_summary={"name": cluster.name, "force": force},
        )
    return operation


def change_zone(*, access: Access, cluster: Cluster, zone: str) -> bool:
    """Move a failed cluster's non-training-plan instance groups to another zone, before a retry.

    Explicit diff: the zone it already has changes nothing and answers False (on any status).
    """
    if zone == cluster.availability_zone:
        return False
    if cluster.status != ClusterStatus.FAILED:
        raise StateConflict("The zone can change only while the cluster's creation has failed.")
    with transaction.atomic():
        old = cluster.availability_zone
        cluster.availability_zone = zone
        cluster.save(update_fields=["availability_zone", "updated_at"])
        cluster.instance_groups.exclude(capacity_type=CapacityType.TRAINING_PLAN).filter(availability_zone=old).update(
            availability_zone=zone, subnet_id=""
        )
        record_audit(access=access, action="cluster.change_zone", target=cluster, summary={"from": old, "to": zone})
    return True


def set_active_cluster(*, access: Access, cluster: Cluster) -> Cluster:
    """Make the cluster the caller's active one in this team."""
    ActiveCluster.objects.update_or_create(user=access.user, team=access.team, defaults={"cluster": cluster})
    return cluster


def import_cluster(
    *, access: Access, name: str, region: str, eks_cluster_name: str, idempotency_key: str = ""
) -> tuple[Cluster, Operation]:
    """Adopt an existing EKS (+ HyperPod) cluster without recreating anything: `cluster.import` reads it."""
    replayed = _replayed(access, idempotency_key)
    if replayed is not None:
        return Cluster.objects.get(pk=replayed.target_id), replayed
    with transaction.atomic():
        cluster = Cluster.objects.create(
            team=access.team,
            name=name,
            region=region,
            availability_zone="",
            storage=StorageChoice.NONE,
            status=ClusterStatus.IMPORTED,
            managed=False,
            eks_cluster_name=eks_cluster_name,
            created_by=access.user if getattr(access.user, "pk", None) else None,
        )
        operation, _ = start_operation(
            access=access,
            kind="cluster.import",
            target=cluster,
            idempotency_key=idempotency_key,
            audit_action="cluster.import",
            audit_summary={"name": name, "region": region, "eks": eks_cluster_name},
        )
    return cluster, operation


def forget_cluster(*, access: Access, cluster: Cluster) -> Cluster:
    """Stop managing an imported cluster. Nothing in the cloud changes."""
    with transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(status=ClusterStatus.DELETED)
        record_audit(access=access, action="cluster.forget", target=cluster, summary={"name": cluster.name})
    cluster.refresh_from_db()
    return cluster


def reconcile_cluster(*, access: Access, cluster: Cluster, idempotency_key: str = "") -> Operation:
    """Record the actual state and put back what went missing (`cluster.reconcile`)."""
    running = running_operation(cluster)
    if running is not None:
        raise StateConflict(f"Operation {running.kind} ({running.pk}) is still running on this cluster.")
    operation, _ = start_operation(
        access=access,
        kind="cluster.reconcile",
        target=cluster,
        idempotency_key=idempotency_key,
        audit_action="cluster.reconcile",
        audit_summary={"name": cluster.name},
    )
    return operation


def attach_storage(
    *, access: Access, cluster: Cluster, data: dict, idempotency_key: str = ""
) -> tuple[Storage, Operation]:
    """Mount an existing S3 bucket or FSx file system into the team namespace (`storage.attach`)."""
    replayed = _replayed(access, idempotency_key)
    if replayed is not None:
        return Storage.objects.get(pk=replayed.target_id), replayed
    with transaction.atomic():
        storage = Storage.objects.create(
            cluster=cluster,
            name=data["name"],
            kind=data["kind"],
            bucket=data.get("bucket", ""),
            file_system_id=data.get("file_system_id", ""),
            namespace=team_namespace(cluster),
            claim_name=data["name"],
            managed=False,
            status=StorageStatus.ATTACHING,
        )
        operation, _ = start_operation(
            access=access,
            kind="storage.attach",
            target=storage,
            params={"cluster_id": str(cluster.pk)},  # the cluster's Operations tab finds it by this
            idempotency_key=idempotency_key,
            audit_action="storage.attach",
            audit_summary={"cluster": cluster.name, **data},
        )
    return storage, operation


def detach_storage(*, access: Access, storage: Storage, idempotency_key: str = "") -> Operation:
    """Unmount storage from the cluster (`storage.detach`); the bucket or file system and its data stay."""
    with transaction.atomic():
        Storage.objects.filter(pk=storage.pk).update(status=StorageStatus.DETACHING)
        operation, _ = start_operation(
            access=access,
            kind="storage.detach",
            target=storage,
            params={"cluster_id": str(storage.cluster_id)},
            idempotency_key=idempotency_key,
            audit_action="storage.detach",
            audit_summary={"cluster": storage.cluster.name, "name": storage.name},
        )
    return operation


def add_instance_group(
    *, access: Access, cluster: Cluster, data: dict, idempotency_key: str = ""
) -> tuple[InstanceGroup, Operation]:
    """Record the new group and start `instance_group.add` (subnet placement + UpdateCluster in one operation)."""
    replayed = _replayed(access, idempotency_key)
    if replayed is not None:
        return InstanceGroup.objects.get(pk=replayed.target_id), replayed
    require_hyperpod(cluster)
    with transaction.atomic():
        group = InstanceGroup.objects.create(
            cluster=cluster,
            name=data["name"],
            instance_type=data["instance_type"],
            count=data["count"],
            capacity_type=data["capacity_type"],
            training_plan_arn=data.get("training_plan_arn", ""),
            efa_only=data["efa_only"],
            deep_health_checks=data.get("deep_health_checks", []),
            availability_zone=data["availability_zone"],
            **group_node_config(data),
            status=InstanceGroupStatus.CREATING,
        )
        operation, _ = start_operation(
            access=access,
            kind="instance_group.add",
            target=group,
            params={"cluster_id": str(cluster.pk)},
            idempotency_key=idempotency_key,
            audit_action="instance_group.add",
            audit_summary={
                "cluster": cluster.name,
                **{
                    k: data.get(k)
                    for k in ("name", "instance_type", "count", "capacity_type", "efa_only", "availability_zone")
                },
            },
        )
    return group, operation


def require_hyperpod(cluster: Cluster) -> None:
    """Instance groups and nodes change only on an active cluster whose HyperPod cluster is recorded."""
    if cluster.status != ClusterStatus.ACTIVE:
        raise StateConflict(
            f"The cluster is {cluster.status}: instance groups and nodes change only once it is active."
        )
    if not cluster.hyperpod_cluster_name:
        raise StateConflict("The cluster has no HyperPod cluster recorded: reconcile it first.")


def scale_instance_group(
    *, access: Access, group: InstanceGroup, changes: dict, idempotency_key: str = ""
) -> tuple[Operation | None, int]:
    """Explicit diff against the count HyperPod actually has (read now, not what InstantStart recorded).

    Returns (None, actual) when the group already matches — nothing starts — else
    (`instance_group.scale`, actual).
    """
    require_hyperpod(group.cluster)
    actual = actual_count(group.cluster, group)
    wanted = changes.get("count", actual)
    if wanted == actual and changes.get("min_count", group.min_count) == group.min_count:
        if group.count != actual:
            InstanceGroup.objects.filter(pk=group.pk).update(count=actual)  # record what is true
        return None, actual
    operation, _ = start_operation(
        access=access,
        kind="instance_group.scale",
        target=group,
        idempotency_key=idempotency_key,
        params={
            "count": wanted,
            **({"min_count": changes["min_count"]} if "min_count" in changes else {}),
            "from_count": actual,  # shown as "count 2 → 3"
            "cluster_id": str(group.cluster_id),
        },
        audit_action="instance_group.scale",
        audit_summary={"cluster": group.cluster.name, "group": group.name, "from": actual, "to": wanted},
    )
    return operation, actual


def delete_instance_group(
    *, access: Access, group: InstanceGroup, force: bool = False, idempotency_key: str = ""
) -> Operation:
    """Start `instance_group.delete`; the group's compute subnet stays for later groups in that zone.

    Refused while workloads run on the group's nodes (read from Kubernetes now), unless ``force``.
    """
    require_hyperpod(group.cluster)
    if not force:
        busy = workloads_on(group.cluster, group)
        if busy:
            raise StateConflict(
                f"Workloads run on {group.name}: {', '.join(busy[:5])}"
                + (f" and {len(busy) - 5} more" if len(busy) > 5 else "")
                + "; stop them first, or delete with force=true."
            )
    with transaction.atomic():
        InstanceGroup.objects.filter(pk=group.pk).update(status=InstanceGroupStatus.DELETING)
        operation, _ = start_operation(
            access=access,
            kind="instance_group.delete",
            target=group,
            params={"cluster_id": str(group.cluster_id)},
            idempotency_key=idempotency_key,
            audit_action="instance_group.delete",
            audit_summary={"cluster": group.cluster.name, "group": group.name},
        )
    return operation


def node_action(*, access: Access, cluster: Cluster, node: str, action: str, idempotency_key: str = "") -> Operation:
    """Reboot, replace or delete one node (by instance id or node name) through HyperPod (`node.<action>`)."""
    if action not in NODE_ACTIONS:
        raise ValueError(f"unknown node action {action!r}")
    require_hyperpod(cluster)
    found = get_node(cluster, node)
    operation, _ = start_operation(
        access=access,
        kind=f"node.{action}",
        target=cluster,
        idempotency_key=idempotency_key,
        params={"action": action, "instance_id": found["instance_id"], "instance_group": found["instance_group"]},
        audit_action=f"node.{action}",
        audit_summary={"cluster": cluster.name, "node": found["name"], "instance_group": found["instance_group"]},
    )
    return operation
