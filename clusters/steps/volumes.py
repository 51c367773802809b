"""Phases of `storage.attach` and `storage.detach`: mount or unmount existing storage. Data is never deleted."""

from __future__ import annotations

from instantstart.cloud.kube import api_client, apply, delete
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail

from ..models import Storage, StorageKind, StorageStatus
from .base import cloud_of
from .storage import volume_manifests


def _storage(ctx: StepContext) -> Storage:
    return Storage.objects.select_related("cluster__team").get(pk=ctx.operation.target_id)


def mount(ctx: StepContext):
    storage = _storage(ctx)
    cluster = storage.cluster
    cloud = cloud_of(cluster)
    fsx = None
    if storage.kind == StorageKind.FSX:
        fsx = cloud.client("fsx").describe_file_systems(FileSystemIds=[storage.file_system_id])["FileSystems"][0]
        if fsx["Lifecycle"] != "AVAILABLE":
            return Fail(
                f"FSx file system {storage.file_system_id} is {fsx['Lifecycle']}, not AVAILABLE.",
                hint="Wait until it is available, then retry.",
                code="FsxNotAvailable",
            )
    api = api_client(cloud, cluster.eks_cluster_name)
    for manifest in volume_manifests(storage, cluster.region, fsx):
        apply(api, manifest)
    Storage.objects.filter(pk=storage.pk).update(status=StorageStatus.ATTACHED)
    return Done(f"mounted as {storage.namespace}/{storage.claim_name}")


def unmount(ctx: StepContext):
    storage = _storage(ctx)
    cluster = storage.cluster
    api = api_client(cloud_of(cluster), cluster.eks_cluster_name)
    delete(api, "v1", "PersistentVolumeClaim", storage.claim_name, storage.namespace)
    delete(api, "v1", "PersistentVolume", f"{storage.namespace}-{storage.name}")
    Storage.objects.filter(pk=storage.pk).update(status=StorageStatus.DETACHED)
    return Done(f"unmounted {storage.namespace}/{storage.claim_name}; the data stays")
