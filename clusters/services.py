"""Every write to clusters. Views, viewsets and MCP tools call these; steps do the cloud work."""

from __future__ import annotations

from django.db import transaction

from instantstart.operations.audit import record_audit
from instantstart.operations.models import Operation
from instantstart.operations.services import start_operation
from instantstart.tenancy.access import Access

from .manifests import team_namespace
from .models import ActiveCluster, CapacityType, Cluster, ClusterStatus, InstanceGroup, Storage, StorageChoice
from .selectors import running_operation


class ClusterStateError(Exception):
    """The cluster is not in a state that allows the change."""


def create_cluster(*, access: Access, data: dict, idempotency_key: str = "") -> tuple[Cluster, Operation, bool]:
    """Record the desired cluster and start `cluster.create`. Returns (cluster, operation, created)."""
    if idempotency_key:
        existing = Operation.objects.filter(team=access.team, idempotency_key=idempotency_key).first()
        if existing is not None:
            return Cluster.objects.get(pk=existing.target_id), existing, False
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
                availability_zone=group.get("availability_zone", data["availability_zone"]),
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


def delete_cluster(*, access: Access, cluster: Cluster, force: bool = False, idempotency_key: str = "") -> Operation:
    """Start `cluster.delete` (reverse teardown). Refused while another operation runs on the cluster."""
    running = running_operation(cluster)
    if running is not None and running.kind == "cluster.delete":
        return running
    if running is not None and not force:
        raise ClusterStateError(
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


def change_zone(*, access: Access, cluster: Cluster, zone: str) -> Cluster:
    """Move a failed cluster's non-training-plan instance groups to another zone, before a retry."""
    if cluster.status != ClusterStatus.FAILED:
        raise ClusterStateError("The zone can change only while the cluster's creation has failed.")
    with transaction.atomic():
        old = cluster.availability_zone
        cluster.availability_zone = zone
        cluster.save(update_fields=["availability_zone", "updated_at"])
        cluster.instance_groups.exclude(capacity_type=CapacityType.TRAINING_PLAN).filter(availability_zone=old).update(
            availability_zone=zone, subnet_id=""
        )
        record_audit(access=access, action="cluster.change_zone", target=cluster, summary={"from": old, "to": zone})
    return cluster


def set_active_cluster(*, access: Access, cluster: Cluster) -> Cluster:
    """Make the cluster the caller's active one in this team."""
    ActiveCluster.objects.update_or_create(user=access.user, team=access.team, defaults={"cluster": cluster})
    return cluster


def import_cluster(
    *, access: Access, name: str, region: str, eks_cluster_name: str, idempotency_key: str = ""
) -> tuple[Cluster, Operation]:
    """Adopt an existing EKS (+ HyperPod) cluster without recreating anything: `cluster.import` reads it."""
    if idempotency_key:
        existing = Operation.objects.filter(team=access.team, idempotency_key=idempotency_key).first()
        if existing is not None:
            return Cluster.objects.get(pk=existing.target_id), existing
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
        raise ClusterStateError(f"Operation {running.kind} ({running.pk}) is still running on this cluster.")
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
    if idempotency_key:
        existing = Operation.objects.filter(team=access.team, idempotency_key=idempotency_key).first()
        if existing is not None:
            return Storage.objects.get(pk=existing.target_id), existing
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
            status="attaching",
        )
        operation, _ = start_operation(
            access=access,
            kind="storage.attach",
            target=storage,
            idempotency_key=idempotency_key,
            audit_action="storage.attach",
            audit_summary={"cluster": cluster.name, **data},
        )
    return storage, operation


def detach_storage(*, access: Access, storage: Storage, idempotency_key: str = "") -> Operation:
    """Unmount storage from the cluster (`storage.detach`); the bucket or file system and its data stay."""
    with transaction.atomic():
        Storage.objects.filter(pk=storage.pk).update(status="detaching")
        operation, _ = start_operation(
            access=access,
            kind="storage.detach",
            target=storage,
            idempotency_key=idempotency_key,
            audit_action="storage.detach",
            audit_summary={"cluster": storage.cluster.name, "name": storage.name},
        )
    return operation
