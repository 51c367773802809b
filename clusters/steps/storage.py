"""Phase `storage`: the team's shared S3 bucket (Mountpoint for S3 CSI) or FSx for Lustre,
as a PersistentVolume + claim in the team namespace. A failure here leaves the cluster running."""

from __future__ import annotations

from instantstart.cloud.kube import api_client, apply
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..manifests import MANAGED_LABELS
from ..models import Cluster, Storage, StorageKind, StorageStatus
from .base import client_token, cloud_of, cluster_of

POLL_SECONDS = 30
FSX_CAPACITY_GIB = 1200


def shared_bucket(cluster: Cluster, account_id: str) -> str:
    return f"is-{cluster.pk.hex[:12]}-shared-{account_id}"


def volume_manifests(storage: Storage, region: str, fsx: dict | None = None) -> list[dict]:
    pv_name = f"{storage.namespace}-{storage.name}"
    if storage.kind == StorageKind.S3:
        csi = {
            "driver": "s3.csi.aws.com",
            "volumeHandle": f"s3-csi-{storage.bucket}",
            "volumeAttributes": {"bucketName": storage.bucket},
        }
        mount_options = ["allow-delete", "allow-other", f"region {region}"]
    else:
        csi = {
            "driver": "fsx.csi.aws.com",
            "volumeHandle": storage.file_system_id,
            "volumeAttributes": {"dnsname": fsx["DNSName"], "mountname": fsx["LustreConfiguration"]["MountName"]},
        }
        mount_options = ["flock"]
    labels = {**MANAGED_LABELS, "instantstart/storage": storage.name}
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "labels": labels},
            "spec": {
                "capacity": {"storage": f"{FSX_CAPACITY_GIB}Gi"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "mountOptions": mount_options,
                "claimRef": {"namespace": storage.namespace, "name": storage.claim_name},
                "csi": csi,
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": storage.claim_name, "namespace": storage.namespace, "labels": labels},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": pv_name,
                "resources": {"requests": {"storage": f"{FSX_CAPACITY_GIB}Gi"}},
            },
        },
    ]


def ensure_bucket(s3, cluster: Cluster, bucket: str) -> None:
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if bucket in existing:
        return
    kwargs = {"Bucket": bucket}
    if cluster.region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": cluster.region}
    s3.create_bucket(**kwargs)
    s3.put_bucket_tagging(
        Bucket=bucket, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in cluster.tags().items()]}
    )


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    storages = list(cluster.storages.filter(managed=True))
    if not storages:
        return Done("no shared storage chosen")
    cloud = cloud_of(cluster)
    for storage in storages:
        fsx_description = None
        if storage.kind == StorageKind.S3:
            if not storage.bucket:
                storage.bucket = shared_bucket(cluster, cloud.account_id)
                storage.save(update_fields=["bucket"])
            ensure_bucket(cloud.client("s3"), cluster, storage.bucket)
        else:
            fsx = cloud.client("fsx")
            if not storage.file_system_id:
                subnet = cluster.compute_subnets.get(availability_zone=cluster.availability_zone).subnet_id
                created = fsx.create_file_system(
                    FileSystemType="LUSTRE",
                    StorageCapacity=FSX_CAPACITY_GIB,
                    SubnetIds=[subnet],
                    SecurityGroupIds=[cluster.network["security_group_id"]],
                    LustreConfiguration={
                        "DeploymentType": "PERSISTENT_2",
                        "PerUnitStorageThroughput": 250,
                        "DataCompressionType": "LZ4",
                    },
                    ClientRequestToken=client_token(cluster, f"fsx-{storage.name}"),
                    Tags=[{"Key": k, "Value": v} for k, v in cluster.tags().items()],
                )["FileSystem"]
                storage.file_system_id = created["FileSystemId"]
                storage.save(update_fields=["file_system_id"])
                ctx.record(**{f"fsx_{storage.name}": created["FileSystemId"]})
            fsx_description = fsx.describe_file_systems(FileSystemIds=[storage.file_system_id])["FileSystems"][0]
            lifecycle = fsx_description["Lifecycle"]
            if lifecycle == "FAILED":
                reason = (fsx_description.get("FailureDetails") or {}).get("Message", "no reason given")
                return Fail(
                    f"FSx file system {storage.file_system_id} failed: {reason}",
                    hint="Retry the operation; the cluster itself keeps running.",
                    code="FsxFailed",
                )
            if lifecycle != "AVAILABLE":
                return Wait(POLL_SECONDS, f"FSx file system {storage.file_system_id} is {lifecycle}")
        api = api_client(cloud, cluster.eks_cluster_name)
        for manifest in volume_manifests(storage, cluster.region, fsx_description):
            apply(api, manifest)
        Storage.objects.filter(pk=storage.pk).update(status=StorageStatus.ATTACHED)
    names = ", ".join(f"{s.name} ({s.kind}) as {s.namespace}/{s.claim_name}" for s in storages)
    return Done(f"shared storage mounted: {names}")
