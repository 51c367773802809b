"""Every write of the features app: record the desired state and start `features.update`."""

from __future__ import annotations

from django.db import transaction

from clusters.models import Cluster, ClusterStatus
from instantstart.errors import StateConflict
from instantstart.operations.models import Operation
from instantstart.operations.services import start_operation
from instantstart.tenancy.access import Access

from .models import ClusterFeature, GroupAutoscaling
from .planning import Plan, describe
from .selectors import KIND, running_update


def require_ready(cluster: Cluster) -> None:
    """Features change only on an active (or imported) cluster with its EKS control plane recorded."""
    if cluster.status not in (ClusterStatus.ACTIVE, ClusterStatus.IMPORTED) or not cluster.eks_cluster_name:
        raise StateConflict(f"The cluster is {cluster.status}: features change only once it is active.")


def replayed_update(access: Access, idempotency_key: str) -> Operation | None:
    if not idempotency_key:
        return None
    return Operation.objects.visible_to(access).filter(kind=KIND, idempotency_key=idempotency_key).first()


def update_features(
    *, access: Access, cluster: Cluster, request: dict[str, dict], plan: Plan, idempotency_key: str = ""
) -> Operation | None:
    """Record what was asked and, when the actual state differs, start `features.update` with exactly
    the plan's phases (in plan order). Returns None when nothing differs (nothing starts)."""
    replayed = replayed_update(access, idempotency_key)
    if replayed is not None:
        return replayed
    running = running_update(cluster)
    if plan.changed and running is not None:
        raise StateConflict(
            f"Features are already changing on this cluster (operation {running.pk}); wait for it to finish."
        )
    with transaction.atomic():
        _record_desired(cluster, request, plan)
        if not plan.changed:
            return None
        operation, created = start_operation(
            access=access,
            kind=KIND,
            target=cluster,
            idempotency_key=idempotency_key,
            params={"plan": plan.actions, "settings": plan.settings, "summary": describe(plan)},
            audit_action="features.update",
            audit_summary={"cluster": cluster.name, "request": request, "plan": plan.phase_names()},
        )
        if created:
            _keep_planned_phases(operation, plan.phase_names())
    return operation


def _keep_planned_phases(operation: Operation, names: list[str]) -> None:
    """The kind lists every (action, feature) step; this operation holds only the planned ones, in order."""
    operation.phases.exclude(name__in=names).delete()
    phases = {p.name: p for p in operation.phases.all()}
    offset = len(names) + 1000  # two passes keep (operation, index) unique while renumbering
    for index, name in enumerate(names):
        phases[name].index = offset + index
        phases[name].save(update_fields=["index"])
    for index, name in enumerate(names):
        phases[name].index = index
        phases[name].save(update_fields=["index"])


def _record_desired(cluster: Cluster, request: dict[str, dict], plan: Plan) -> None:
    for name, entry in request.items():
        record, _ = ClusterFeature.objects.get_or_create(cluster=cluster, name=name)
        record.desired = plan.targets[name]
        if entry.get("enabled") is False:
            record.installed = False
        if name in plan.settings:
            record.settings = plan.settings[name]
        record.save()
    for name in plan.auto_installed:
        record, created = ClusterFeature.objects.get_or_create(cluster=cluster, name=name)
        record.desired = True
        record.installed = True
        record.save()
    for name in plan.auto_removed:
        ClusterFeature.objects.filter(cluster=cluster, name=name).update(desired=False, installed=False)


def set_group_autoscaling(*, access: Access, group, wanted: dict | None, actual: dict, idempotency_key: str = ""):
    """Explicit diff of a group's ``autoscaling`` against HyperPod and its NodePool; starts
    `instance_group.autoscaling` when they differ, else returns None (nothing starts)."""
    replayed = (
        Operation.objects.visible_to(access).filter(idempotency_key=idempotency_key).first()
        if (idempotency_key)
        else None
    )
    if replayed is not None:
        return replayed
    if actual["autoscaling"] == wanted or (wanted is None and actual["autoscaling"] is None):
        return None
    with transaction.atomic():
        if wanted is None:
            GroupAutoscaling.objects.filter(group=group).delete()
        else:
            GroupAutoscaling.objects.update_or_create(
                group=group, defaults={"minimum": wanted["min"], "maximum": wanted["max"]}
            )
        operation, _ = start_operation(
            access=access,
            kind="instance_group.autoscaling",
            target=group,
            idempotency_key=idempotency_key,
            params={"autoscaling": wanted},
            audit_action="instance_group.autoscaling",
            audit_summary={"cluster": group.cluster.name, "group": group.name, "autoscaling": wanted},
        )
    return operation
