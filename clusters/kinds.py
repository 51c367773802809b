"""Operation kinds of the clusters app."""

from __future__ import annotations

from features.steps import reconcile as reconcile_features
from features.steps import teardown as teardown_features
from instantstart.operations.models import Operation, OperationStatus
from instantstart.operations.registry import OperationKind, Step, register
from instantstart.tenancy.roles import Role
from training.steps import teardown as teardown_training

from .models import Cluster, ClusterStatus, InstanceGroup, InstanceGroupStatus, Storage, StorageStatus
from .steps import (
    adopt,
    dependencies,
    eks,
    groups,
    hyperpod,
    identity,
    network,
    node_ops,
    preflight,
    storage,
    teardown,
    verify,
    volumes,
)
from .steps.verify import NO_NODES


def _created(operation: Operation) -> None:
    status = {OperationStatus.SUCCEEDED: ClusterStatus.ACTIVE}.get(operation.status, ClusterStatus.FAILED)
    Cluster.objects.filter(pk=operation.target_id).exclude(status=ClusterStatus.DELETED).update(status=status)


def _busy(status: str):
    def mark(operation: Operation) -> None:
        Cluster.objects.filter(pk=operation.target_id).exclude(status=ClusterStatus.DELETED).update(status=status)

    return mark


def _deleted(operation: Operation) -> None:
    if operation.status == OperationStatus.SUCCEEDED:
        # Nothing runs any more: a deleted cluster shows no nodes (its page stays for history).
        Cluster.objects.filter(pk=operation.target_id).update(status=ClusterStatus.DELETED, node_summary=NO_NODES)
    else:
        Cluster.objects.filter(pk=operation.target_id).update(status=ClusterStatus.FAILED)


CLUSTER_CREATE = register(
    OperationKind(
        name="cluster.create",
        title="Create cluster",
        role=Role.ADMIN,
        on_finish=_created,
        on_retry=_busy(ClusterStatus.CREATING),
        steps=(
            Step("preflight", preflight.run, title="Preflight: quotas, zones, training plans, name"),
            Step("network", network.run, title="Network: VPC, subnets, NAT, security group, S3 endpoint"),
            Step("identity", identity.run, title="Identity: cluster and execution roles, lifecycle scripts"),
            Step("eks", eks.run, title="EKS control plane and access"),
            Step("dependencies", dependencies.run, title="Add-ons and base manifests"),
            Step("hyperpod", hyperpod.run, title="HyperPod cluster and instance groups"),
            Step("storage", storage.run, title="Shared storage"),
            Step("verify", verify.run, title="Verify nodes"),
        ),
    )
)

CLUSTER_DELETE = register(
    OperationKind(
        name="cluster.delete",
        title="Delete cluster",
        role=Role.ADMIN,
        on_finish=_deleted,
        on_retry=_busy(ClusterStatus.DELETING),
        steps=(
            Step("storage", teardown.storage, title="Remove shared storage"),
            Step("hyperpod", teardown.hyperpod, title="Delete the HyperPod cluster"),
            Step("eks", teardown.eks, title="Delete the EKS control plane"),
            Step("features", teardown_features.run, title="Delete the features' roles"),
            Step("training", teardown_training.run, title="Delete the MLflow server and training pods' role"),
            Step("identity", teardown.identity, title="Delete roles and lifecycle scripts"),
            Step("network", teardown.network, title="Delete the network"),
        ),
    )
)


def _imported(operation: Operation) -> None:
    status = ClusterStatus.ACTIVE if operation.status == OperationStatus.SUCCEEDED else ClusterStatus.FAILED
    Cluster.objects.filter(pk=operation.target_id).update(status=status)


CLUSTER_IMPORT = register(
    OperationKind(
        name="cluster.import",
        title="Import cluster",
        role=Role.ADMIN,
        on_finish=_imported,
        steps=(Step("read", adopt.read_cloud, title="Read the EKS and HyperPod clusters as they are"),),
    )
)

CLUSTER_RECONCILE = register(
    OperationKind(
        name="cluster.reconcile",
        title="Reconcile cluster",
        role=Role.ADMIN,
        steps=(
            Step("read", adopt.read_cloud, title="Record the actual state"),
            Step("manifests", adopt.reapply_manifests, title="Re-apply base manifests and volumes"),
            Step("features", reconcile_features.run, title="Put drifted features back (features.update)"),
        ),
    )
)


def _attached(operation: Operation) -> None:
    if operation.status == OperationStatus.FAILED:
        Storage.objects.filter(pk=operation.target_id).update(status=StorageStatus.FAILED)


def _detached(operation: Operation) -> None:
    if operation.status == OperationStatus.SUCCEEDED:
        Storage.objects.filter(pk=operation.target_id, managed=False).delete()
    elif operation.status == OperationStatus.FAILED:
        Storage.objects.filter(pk=operation.target_id).update(status=StorageStatus.FAILED)


def _storage_busy(status: str):
    def mark(operation: Operation) -> None:
        Storage.objects.filter(pk=operation.target_id).update(status=status)

    return mark


STORAGE_ATTACH = register(
    OperationKind(
        name="storage.attach",
        title="Attach storage",
        role=Role.ADMIN,
        on_finish=_attached,
        on_retry=_storage_busy(StorageStatus.ATTACHING),
        steps=(Step("mount", volumes.mount, title="Mount as a volume and claim"),),
    )
)

STORAGE_DETACH = register(
    OperationKind(
        name="storage.detach",
        title="Detach storage",
        role=Role.ADMIN,
        on_finish=_detached,
        on_retry=_storage_busy(StorageStatus.DETACHING),
        steps=(Step("unmount", volumes.unmount, title="Remove the volume and claim (data stays)"),),
    )
)


def _group_added(operation: Operation) -> None:
    if operation.status == OperationStatus.FAILED:
        InstanceGroup.objects.filter(pk=operation.target_id).update(status=InstanceGroupStatus.FAILED)


def _group_deleted(operation: Operation) -> None:
    if operation.status == OperationStatus.SUCCEEDED:
        InstanceGroup.objects.filter(pk=operation.target_id).delete()


GROUP_ADD = register(
    OperationKind(
        name="instance_group.add",
        title="Add instance group",
        role=Role.ADMIN,
        on_finish=_group_added,
        steps=(
            Step("placement", groups.place, title="Compute subnet in the group's zone"),
            Step("hyperpod", groups.add, title="Add the group to the HyperPod cluster"),
        ),
    )
)

GROUP_SCALE = register(
    OperationKind(
        name="instance_group.scale",
        title="Scale instance group",
        role=Role.ADMIN,
        steps=(Step("hyperpod", groups.scale, title="Change the group's instance count"),),
    )
)

GROUP_DELETE = register(
    OperationKind(
        name="instance_group.delete",
        title="Delete instance group",
        role=Role.ADMIN,
        on_finish=_group_deleted,
        steps=(Step("hyperpod", groups.delete, title="Remove the group (its subnet stays)"),),
    )
)


def _node_deleted(operation: Operation) -> None:
    # HyperPod lowers the group's count when a node is deleted; keep the record true.
    if operation.status == OperationStatus.SUCCEEDED:
        group = InstanceGroup.objects.filter(
            cluster_id=operation.target_id, name=operation.params.get("instance_group")
        ).first()
        if group is not None and group.count > 0:
            InstanceGroup.objects.filter(pk=group.pk).update(count=group.count - 1)


for _action in ("reboot", "replace", "delete"):
    register(
        OperationKind(
            name=f"node.{_action}",
            on_finish=_node_deleted if _action == "delete" else None,
            title=f"{_action.capitalize()} node",
            role=Role.ADMIN,
            steps=(
                Step("submit", node_ops.submit, title=f"Ask HyperPod to {_action} the node"),
                Step(
                    "wait",
                    node_ops.wait,
                    title="Wait until the node is back"
                    if _action == "reboot"
                    else "Wait until the node is gone"
                    if _action == "delete"
                    else "Wait for the replacement",
                ),
            ),
        )
    )
