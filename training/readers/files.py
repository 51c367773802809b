"""The team's shared bucket (the one mounted at /s3 in pods): list objects, check a path. Reads only."""

from __future__ import annotations

from clusters.models import Cluster, Storage, StorageKind, StorageStatus
from instantstart.cloud.aws import team_cloud
from instantstart.errors import StateConflict, cloud_read


def shared_storage(cluster: Cluster, kind: str) -> Storage | None:
    """The cluster's attached storage of ``kind`` that jobs mount (the managed one first)."""
    return (
        Storage.objects.filter(cluster=cluster, kind=kind, status=StorageStatus.ATTACHED)
        .order_by("-managed", "name")
        .first()
    )


def shared_bucket(cluster: Cluster) -> str:
    storage = shared_storage(cluster, StorageKind.S3)
    if storage is None or not storage.bucket:
        raise StateConflict(
            "The cluster has no attached S3 storage: attach a bucket first (POST /api/v1/clusters/{id}/storage/)."
        )
    return storage.bucket


@cloud_read()
def list_files(cluster: Cluster, prefix: str = "", limit: int = 1000) -> list[dict]:
    """Objects of the shared bucket under ``prefix``: {path, size, modified, mount_path}."""
    bucket = shared_bucket(cluster)
    s3 = team_cloud(cluster.team, cluster.region).client("s3")
    found = s3.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=limit).get("Contents", [])
    return [
        {
            "path": item["Key"],
            "size": item["Size"],
            "modified": item["LastModified"].isoformat(),
            "mount_path": f"/s3/{item['Key']}",
        }
        for item in found
    ]


@cloud_read()
def read_file(cluster: Cluster, key: str, max_bytes: int = 1 << 20) -> bytes | None:
    """The content of an object of the shared bucket (at most ``max_bytes``), or None when it does not exist."""
    bucket = shared_bucket(cluster)
    s3 = team_cloud(cluster.team, cluster.region).client("s3")
    try:
        answer = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{max_bytes - 1}")
    except s3.exceptions.NoSuchKey:
        return None
    except s3.exceptions.ClientError as exc:
        if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (404, 416):
            return b"" if exc.response["ResponseMetadata"]["HTTPStatusCode"] == 416 else None
        raise
    return answer["Body"].read()


@cloud_read()
def file_exists(cluster: Cluster, key: str) -> bool:
    bucket = shared_bucket(cluster)
    s3 = team_cloud(cluster.team, cluster.region).client("s3")
    try:
        s3.head_object(Bucket=bucket, Key=key)
    except s3.exceptions.ClientError as exc:
        if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (403, 404):
            return False
        raise
    return True
