"""The cluster's MLflow tracking server and a job's metrics in it. Reads only.

Production: SageMaker managed MLflow, read through its ARN with the `sagemaker-mlflow` plugin (SigV4).
Sandbox: a real `mlflow server` on 127.0.0.1 whose URL DescribeMlflowTrackingServer returns.
Each job logs to an experiment named after its Kubernetes name (one run per attempt).
"""

from __future__ import annotations

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from instantstart.errors import StateConflict, cloud_read

from ..models import Job

ARTIFACTS = "mlflow"  # the tracking server's artifact store: s3://<the shared bucket>/mlflow
READY = {"Created", "Updated", "Started", "MaintenanceComplete"}
FAILED = {"CreateFailed", "UpdateFailed", "StartFailed", "Stopped", "Stopping", "DeleteFailed", "Deleting"}
# What the charts call loss and throughput, per recipe's own metric keys (the first present wins).
ALIASES = {
    "loss": ("loss", "actor/pg_loss", "train_loss"),
    "throughput": ("throughput", "perf/throughput", "train_speed_iter/s_", "train_samples_per_second"),
}


def tracking_server_name(cluster: Cluster) -> str:
    return f"{cluster.resource_prefix}-mlflow"


def tracking_server_arn(cluster: Cluster) -> str:
    cloud = team_cloud(cluster.team, cluster.region)
    return (
        f"arn:aws:sagemaker:{cluster.region}:{cloud.account_id}:mlflow-tracking-server/{tracking_server_name(cluster)}"
    )


@cloud_read()
def describe_tracking_server(cluster: Cluster) -> dict | None:
    sagemaker = team_cloud(cluster.team, cluster.region).client("sagemaker")
    try:
        return sagemaker.describe_mlflow_tracking_server(TrackingServerName=tracking_server_name(cluster))
    except sagemaker.exceptions.ResourceNotFound:
        return None


def _tracking_uri(cluster: Cluster, described: dict) -> str:
    cloud = team_cloud(cluster.team, cluster.region)
    # The managed server's URL needs SigV4: the sagemaker-mlflow plugin resolves the ARN. The sandbox's
    # server is plain HTTP on 127.0.0.1.
    return described["TrackingServerUrl"] if cloud.endpoint_url else described["TrackingServerArn"]


@cloud_read()
def job_metrics(job: Job) -> dict:
    """{"metrics": {key: [{step, value, ts}]}, "runs": [...]} of every run of the job's experiment."""
    from mlflow.tracking import MlflowClient  # heavy: imported only when metrics are read

    if not job.spec.get("mlflow"):
        raise StateConflict("The job was submitted with mlflow off: it logs no metrics.")
    described = describe_tracking_server(job.cluster)
    if described is None or described.get("TrackingServerStatus") not in READY:
        return {"metrics": {}, "runs": []}
    client = MlflowClient(tracking_uri=_tracking_uri(job.cluster, described))
    experiment = client.get_experiment_by_name(experiment_name(job))
    if experiment is None:
        return {"metrics": {}, "runs": []}
    runs = client.search_runs([experiment.experiment_id], order_by=["attribute.start_time ASC"], max_results=100)
    series: dict[str, list[dict]] = {}
    for run in runs:
        for key in run.data.metrics:
            for point in client.get_metric_history(run.info.run_id, key):
                series.setdefault(key, []).append(
                    {"step": point.step, "value": point.value, "ts": point.timestamp, "run": run.info.run_name}
                )
    for points in series.values():
        points.sort(key=lambda p: (p["ts"], p["step"]))
    for alias, keys in ALIASES.items():
        if alias not in series:
            found = next((series[k] for k in keys if k in series), None)
            if found is not None:
                series[alias] = found
    return {
        "metrics": series,
        "runs": [
            {"id": r.info.run_id, "name": r.info.run_name, "status": r.info.status, "start_time": r.info.start_time}
            for r in runs
        ],
    }


def experiment_name(job: Job) -> str:
    return job.k8s_name
