"""Storage of the team's account that a cluster may mount: does the bucket or file system exist. Reads only."""

from __future__ import annotations

from instantstart.cloud.aws import team_cloud
from instantstart.errors import cloud_read

from ..models import Cluster


@cloud_read()
def bucket_exists(cluster: Cluster, bucket: str) -> bool:
    """Whether the bucket exists and the team's role may reach it (HeadBucket)."""
    s3 = team_cloud(cluster.team, cluster.region).client("s3")
    try:
        s3.head_bucket(Bucket=bucket)
    except s3.exceptions.ClientError as exc:
        # HeadBucket answers a bare 404 or 403 (no error body): both mean this bucket is not for us.
        if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (403, 404):
            return False
        raise
    return True


@cloud_read()
def file_system_exists(cluster: Cluster, file_system_id: str) -> bool:
    """Whether the FSx file system exists in the cluster's region."""
    fsx = team_cloud(cluster.team, cluster.region).client("fsx")
    try:
        fsx.describe_file_systems(FileSystemIds=[file_system_id])
    except fsx.exceptions.FileSystemNotFound:
        return False
    return True
