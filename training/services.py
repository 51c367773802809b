"""Every write to training jobs and the shared files, and the state rules the faces share.

Viewsets, portal views and (through REST) MCP tools call these after their serializer validated the
input. Steps do the Kubernetes writes; the file upload is one synchronous S3 put (no operation: it
either is stored or the request fails).
"""

from __future__ import annotations

import uuid

from django.db import transaction

from clusters.manifests import team_namespace
from clusters.models import Cluster, ClusterStatus
from features.gate import require_feature
from instantstart.cloud.aws import team_cloud
from instantstart.errors import StateConflict, cloud_read
from instantstart.operations.audit import record_audit
from instantstart.operations.models import ACTIVE, Operation
from instantstart.operations.services import cancel_operation, start_operation
from instantstart.tenancy.access import Access

from .manifests import manifest_for
from .models import Job
from .readers import mlflow as mlflow_reader
from .readers.files import shared_bucket
from .recipes import FEATURE, KIND
from .selectors import operations_of


def _replayed(access: Access, idempotency_key: str) -> Operation | None:
    if not idempotency_key:
        return None
    return Operation.objects.visible_to(access).filter(idempotency_key=idempotency_key).first()


def _summary(spec: dict) -> dict:
    keys = ("name", "recipe", "instance_group", "nodes", "gpus_per_node", "image", "storage", "mlflow", "max_retries")
    return {key: spec.get(key) for key in keys}


def submit_job(
    *, access: Access, cluster: Cluster, spec: dict, idempotency_key: str = "", resubmitted_from: Job | None = None
) -> tuple[Job, Operation]:
    """Record the job with its manifest and start `job.submit` (validate → apply → running).

    Refused with 409 ``feature_required`` when the cluster lacks the operator the recipe needs.
    """
    replayed = _replayed(access, idempotency_key)
    if replayed is not None:
        return Job.objects.get(pk=replayed.target_id), replayed
    if cluster.status != ClusterStatus.ACTIVE:
        raise StateConflict(f"The cluster is {cluster.status}: jobs run only on an active cluster.")
    kind = KIND[spec["recipe"]]
    require_feature(cluster, FEATURE[kind], "A training job")
    spec = dict(spec)
    if spec.get("mlflow"):
        spec["mlflow_tracking_uri"] = mlflow_reader.tracking_server_arn(cluster)
    job_id = uuid.uuid4()
    job = Job(
        id=job_id,
        cluster=cluster,
        name=spec["name"],
        recipe=spec["recipe"],
        kind=kind,
        namespace=team_namespace(cluster),
        k8s_name=f"{spec['name']}-{job_id.hex[:5]}",
        spec=spec,
        nodes=spec["nodes"],
        gpus=spec["nodes"] * spec["gpus_per_node"],
        max_retries=spec["max_retries"],
        resubmitted_from=resubmitted_from,
        created_by=access.user if getattr(access.user, "pk", None) else None,
    )
    job.manifest = manifest_for(job, spec)
    with transaction.atomic():
        job.save()
        operation, _ = start_operation(
            access=access,
            kind="job.submit",
            target=job,
            idempotency_key=idempotency_key,
            audit_action="job.resubmit" if resubmitted_from else "job.submit",
            audit_summary=_summary(spec),
        )
    return job, operation


def resubmit_job(*, access: Access, job: Job, spec: dict, idempotency_key: str = "") -> tuple[Job, Operation]:
    """Start a job's request again as a new job (same name, a new Kubernetes name); the old one stays.

    ``spec`` is the request validated again (serializers.jobs.resubmission).
    """
    return submit_job(
        access=access, cluster=job.cluster, spec=spec, idempotency_key=idempotency_key, resubmitted_from=job
    )


def cancel_job(*, access: Access, job: Job, idempotency_key: str = "") -> Operation:
    """Stop following the job and delete it from the cluster (202). Repeatable; logs stay readable.

    A job that already ended cannot be cancelled (409); a cancel already running is returned.
    """
    running = operations_of(job).filter(status__in=ACTIVE)
    existing = running.filter(kind="job.cancel").first()
    if existing is not None:
        return existing
    if job.is_terminal:
        raise StateConflict(f"The job already ended: {job.status}.")
    for operation in running.filter(kind="job.submit"):
        cancel_operation(access=access, operation=operation)
    with transaction.atomic():
        operation, _ = start_operation(
            access=access,
            kind="job.cancel",
            target=job,
            idempotency_key=idempotency_key,
            audit_action="job.cancel",
            audit_summary={"name": job.name, "k8s_name": job.k8s_name},
        )
    return operation


@cloud_read()
def upload_file(*, access: Access, cluster: Cluster, path: str, upload) -> dict:
    """Store one file in the team's shared bucket at ``path``; it appears in pods at /s3/<path>."""
    bucket = shared_bucket(cluster)
    s3 = team_cloud(cluster.team, cluster.region).client("s3")
    # One PUT (the portal and REST take files of a script's or a config's size; big datasets go by the CLI).
    s3.put_object(Bucket=bucket, Key=path, Body=upload.read())
    size = s3.head_object(Bucket=bucket, Key=path)["ContentLength"]
    record_audit(access=access, action="file.upload", target=cluster, summary={"path": path, "size": size})
    return {"path": path, "size": size, "mount_path": f"/s3/{path}"}
