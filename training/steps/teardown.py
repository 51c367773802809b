"""Phase `training` of `cluster.delete`: what the cluster's jobs made outside Kubernetes, its MLflow
tracking server and the role its jobs' pods log to it with (their ServiceAccount and pod identity
association went with the EKS cluster in the phase before). Each is deleted when present, so a
repeat finds nothing; the cluster's execution role, which the server runs as, goes in a later phase."""

from __future__ import annotations

from clusters.steps.base import cloud_of, cluster_of
from features.steps.identity import remove_role
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Wait

from ..readers.mlflow import describe_tracking_server, tracking_server_name
from .identity import role_name

# A server in these states takes no delete yet; Deleting is waited for too.
BUSY = {"Creating", "Updating", "Starting", "Stopping", "MaintenanceInProgress", "Deleting"}


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    cloud = cloud_of(cluster)
    server = tracking_server_name(cluster)
    described = describe_tracking_server(cluster)
    if described is not None:
        status = described.get("TrackingServerStatus", "")
        if status not in BUSY:
            cloud.client("sagemaker").delete_mlflow_tracking_server(TrackingServerName=server)
            ctx.record(tracking_server_deleted=True)
        return Wait(30, f"MLflow tracking server {server}: {status or 'deleting'}")
    gone = [f"MLflow tracking server {server}"] if ctx.state.get("tracking_server_deleted") else []
    if remove_role(cloud.client("iam"), role_name(cluster)):
        gone.append(role_name(cluster))
    return Done(f"deleted: {', '.join(gone)}" if gone else "nothing of training to delete")
