"""`job.submit`: validate (feature, schema) → apply (MLflow server and the pods' identity, config, the job)
→ running (follow).

The running phase is the job's one reader: every poll reads the custom object, its pods and events, and
the log of each pod that has no followed stream (log_streams.py) from where its stored lines stop,
stores the new lines with the job's next sequence numbers (log_store.py), and waits again (never
sleeps). It ends when the job does, after one more read of every pod's log.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from kubernetes import client as k8s

from features.gate import FeatureRequired, require_feature
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..manifests import GROUP_VERSION, PLURAL, config_map
from ..models import Job, JobStatus
from ..readers import mlflow as mlflow_reader
from ..readers.cluster import kube
from ..readers.jobs import read_job
from ..readers.logs import read_pod_log
from ..readers.schema import crd_schema, schema_errors
from ..recipes import FEATURE
from . import log_streams
from .identity import ensure_pod_identity
from .log_store import Numberer, since_of, store


def job_of(ctx: StepContext) -> Job:
    return Job.objects.select_related("cluster__team").get(pk=ctx.operation.target_id)


def _fail_job(job: Job, message: str) -> None:
    Job.objects.filter(pk=job.pk).exclude(status__in=JobStatus.terminal()).update(
        status=JobStatus.FAILED, status_message=message, finished_at=timezone.now()
    )


def validate(ctx: StepContext):
    """The feature is on and the manifest validates against the CRD the cluster serves."""
    job = job_of(ctx)
    try:
        # Checked again here: the feature may have been turned off since the request was accepted.
        require_feature(job.cluster, FEATURE[job.kind], "A training job")
    except FeatureRequired as refused:
        _fail_job(job, refused.message)
        return Fail(refused.message, hint=refused.hint, code=refused.code)
    group, version = GROUP_VERSION[job.kind]
    schema = crd_schema(job.cluster, job.kind, version)
    if schema is None:
        return Fail(f"The cluster serves no {job.kind} {version}.", hint="Enable the feature the job needs.")
    errors = schema_errors(job.manifest, schema)
    if errors:
        message = f"The {job.kind} manifest does not match the CRD schema: " + "; ".join(errors[:5])
        _fail_job(job, message)
        return Fail(message, code="invalid_manifest")
    return Done(f"{job.kind} manifest validated against {group}/{version}")


def _ensure_tracking_server(ctx: StepContext, job: Job):
    """The cluster's MLflow tracking server exists and is ready (created once, by name)."""
    cluster = job.cluster
    described = mlflow_reader.describe_tracking_server(cluster)
    if described is None:
        from clusters.steps.base import aws_tags
        from instantstart.cloud.aws import team_cloud

        from ..readers.files import shared_bucket

        team_cloud(cluster.team, cluster.region).client("sagemaker").create_mlflow_tracking_server(
            TrackingServerName=mlflow_reader.tracking_server_name(cluster),
            ArtifactStoreUri=f"s3://{shared_bucket(cluster)}/{mlflow_reader.ARTIFACTS}",
            TrackingServerSize="Small",
            RoleArn=cluster.identity.get("execution_role_arn", ""),
            Tags=aws_tags(cluster),
        )
        ctx.record(tracking_server=mlflow_reader.tracking_server_name(cluster))
        return Wait(30, "Creating the MLflow tracking server")
    status = described.get("TrackingServerStatus")
    if status in mlflow_reader.FAILED:
        return Fail(f"The cluster's MLflow tracking server is {status}.", hint="Start it, or submit with mlflow off.")
    if status not in mlflow_reader.READY:
        return Wait(30, f"MLflow tracking server {status}")
    return None


def apply(ctx: StepContext):
    """Create the job (and its inline config) unless it exists; checked by name first."""
    job = job_of(ctx)
    if job.spec.get("mlflow"):
        waiting = _ensure_tracking_server(ctx, job)
        if waiting is not None:
            return waiting
        ensure_pod_identity(ctx, job)  # before the pods that run as its ServiceAccount
    api = kube(job.cluster)
    if (cm := config_map(job, job.spec)) is not None:
        core = k8s.CoreV1Api(api)
        try:
            core.read_namespaced_config_map(cm["metadata"]["name"], job.namespace)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
            core.create_namespaced_config_map(job.namespace, cm)
    custom = k8s.CustomObjectsApi(api)
    group, version = GROUP_VERSION[job.kind]
    try:
        existing = custom.get_namespaced_custom_object(group, version, job.namespace, PLURAL[job.kind], job.k8s_name)
    except k8s.ApiException as exc:
        if exc.status != 404:
            raise
        existing = None
    if existing is None:
        created = custom.create_namespaced_custom_object(group, version, job.namespace, PLURAL[job.kind], job.manifest)
        uid = (created or {}).get("metadata", {}).get("uid", "")
    else:
        uid = existing["metadata"].get("uid", "")
    ctx.record(uid=uid)
    return Done(f"{job.kind} {job.namespace}/{job.k8s_name} applied")


def _poll_seconds() -> float:
    """The collector's poll, in real seconds whatever the operations' poll scale (logs are read live)."""
    real = float(getattr(settings, "TRAINING_LOG_POLL_SECONDS", 0.25))
    scale = float(settings.OPERATIONS.get("POLL_SCALE", 1.0)) or 1.0
    return real / scale


def collect_logs(ctx: StepContext, job: Job, pods: list[dict]) -> int:
    """Read each started pod's log from its cursor and store the new lines; how many were new."""
    cursors = job.log_cursors or {}
    if not cursors and ctx.state.get("cursors"):  # a job followed before the cursors moved to its row
        cursors = ctx.state["cursors"]
        Job.objects.filter(pk=job.pk, log_cursors={}).update(log_cursors=cursors)
    reads = []
    for pod in pods:
        if pod["phase"] == "Pending":
            continue
        lines = read_pod_log(job.cluster, job.namespace, pod["name"], since_of(cursors.get(pod["name"])))
        reads.append((pod["name"], list(Numberer().number(lines))))
    return store(job.pk, reads)


def follow(ctx: StepContext):
    """Read the job's state, pods, events and new log lines; wait again until the job has ended."""
    job = job_of(ctx)
    if job.status == JobStatus.CANCELLED:
        return Done("Cancelled")
    state = read_job(job)
    if not state.exists:
        if job.status in JobStatus.terminal():
            return Done(f"Job {job.status}")
        _fail_job(job, "The job's object is gone from the cluster.")
        return Done("The job's object is gone from the cluster")
    terminal = state.status in JobStatus.terminal()
    streamed = set() if terminal else log_streams.follow_pods(job, state.pods)
    collect_logs(ctx, job, [pod for pod in state.pods if pod["name"] not in streamed])
    updates = {
        "status": state.status,
        "status_message": state.message[:4000],
        "restarts_used": state.restarts,
        "pods": state.pods,
        "faulty_nodes": state.faulty_nodes,
        "events": state.events,
    }
    if state.hang:
        updates["hang_detected"] = True
    if state.status != JobStatus.PENDING and not job.started_at:
        updates["started_at"] = state.started_at or timezone.now()
    if terminal and not ctx.state.get("final_read"):
        # One more read first: the last lines the pods printed before the status changed. The job shows
        # its end only after that, so whoever sees the end has every line.
        updates["status"] = job.status
        Job.objects.filter(pk=job.pk).exclude(status=JobStatus.CANCELLED).update(**updates)
        ctx.record(final_read=True)
        return Wait(_poll_seconds(), f"Job {state.status}; reading the last log lines")
    if terminal:
        updates["finished_at"] = state.finished_at or timezone.now()
    Job.objects.filter(pk=job.pk).exclude(status=JobStatus.CANCELLED).update(**updates)
    if terminal:
        return Done(f"Job {state.status}")
    return Wait(_poll_seconds(), f"Job {state.status}")
