"""Every write to endpoints and model downloads, and every state rule the faces share.

Viewsets, portal views and (through REST) MCP tools call these after their serializer validated the
input. Feature checks read the cluster now (features.gate) and refuse with 409 before anything is
recorded or applied; steps do the Kubernetes writes.
"""

from __future__ import annotations

import uuid

from django.db import transaction

from clusters.manifests import team_namespace
from clusters.models import Cluster, ClusterStatus
from features.gate import require_feature
from instantstart.errors import NotFound, StateConflict
from instantstart.operations.audit import record_audit
from instantstart.operations.models import ACTIVE, Operation
from instantstart.operations.services import start_operation
from instantstart.tenancy.access import Access

from .manifests import IEC_API, endpoint_objects, label_value
from .models import DownloadStatus, Endpoint, EndpointStatus, Mode, ModelDownload, ServiceShape
from .readers.cluster_api import kube_of
from .readers.crd import validate_custom_object
from .readers.endpoints import desired_replicas, pool_workers
from .steps.downloads import write_token_secret
from .steps.workers import relabel

IEC_CRD = "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com"
SCALED_OBJECT_CRD = "scaledobjects.keda.sh"


def _replayed(access: Access, idempotency_key: str) -> Operation | None:
    if not idempotency_key:
        return None
    return Operation.objects.visible_to(access).filter(idempotency_key=idempotency_key).first()


def _require_active(cluster: Cluster) -> None:
    if cluster.status not in (ClusterStatus.ACTIVE, ClusterStatus.IMPORTED) or not cluster.eks_cluster_name:
        raise StateConflict(f"The cluster is {cluster.status}: endpoints deploy only on an active cluster.")


def _check_features(cluster: Cluster, data: dict) -> None:
    if data["mode"] == Mode.MANAGED:
        require_feature(cluster, "inference_operator", "A managed endpoint")
    if data.get("autoscaling"):
        require_feature(cluster, "keda", "Autoscaling an endpoint")


def _running(endpoint: Endpoint) -> Operation | None:
    return Operation.objects.filter(target_id=str(endpoint.pk), status__in=ACTIVE).order_by("created_at").first()


def deploy_endpoint(
    *, access: Access, cluster: Cluster, data: dict, idempotency_key: str = ""
) -> tuple[Endpoint, Operation]:
    """Record the endpoint and start `endpoint.deploy`; a managed manifest is checked against the CRD first."""
    replayed = _replayed(access, idempotency_key)
    if replayed is not None:
        return Endpoint.objects.get(pk=replayed.target_id), replayed
    _require_active(cluster)
    _check_features(cluster, data)
    endpoint = Endpoint(
        cluster=cluster,
        name=data["name"],
        mode=data["mode"],
        engine=data["engine"],
        model=data["model"],
        instance_group=data["instance_group"],
        instance_type=data.get("instance_type", ""),
        replicas=data["replicas"],
        gpus=data["gpus"],
        service=data["service"],
        router=data["router"],
        autoscaling=dict(data["autoscaling"]) if data.get("autoscaling") else None,
        kv_cache=dict(data["kv_cache"]) if data.get("kv_cache") else None,
        routing=data.get("routing", ""),
        args=list(data.get("args") or []),
        namespace=team_namespace(cluster),
        created_by=access.user if getattr(access.user, "pk", None) else None,
    )
    objects = endpoint_objects(endpoint, bucket_region=cluster.region, fsx_id=_fsx_id(cluster))
    api = kube_of(cluster)
    for manifest in objects:
        if manifest["apiVersion"] == IEC_API:
            validate_custom_object(api, IEC_CRD, manifest)
        elif manifest["apiVersion"].startswith("keda.sh/"):
            validate_custom_object(api, SCALED_OBJECT_CRD, manifest)
    with transaction.atomic():
        endpoint.manifest = objects
        endpoint.save()
        operation, _ = start_operation(
            access=access,
            kind="endpoint.deploy",
            target=endpoint,
            idempotency_key=idempotency_key,
            audit_action="endpoint.deploy",
            audit_summary={k: v for k, v in data.items() if k != "args"},
        )
    return endpoint, operation


def _fsx_id(cluster: Cluster) -> str:
    fsx = cluster.storages.filter(kind="fsx").first()
    return fsx.file_system_id if fsx else ""


def scale_endpoint(*, access: Access, endpoint: Endpoint, replicas: int, idempotency_key: str = "") -> Operation | None:
    """Explicit diff: the count the cluster already runs changes nothing (None); else `endpoint.scale`."""
    replayed = _replayed(access, idempotency_key)
    if replayed is not None:
        return replayed
    if endpoint.autoscaling:
        raise StateConflict(
            f"Endpoint {endpoint.name} is autoscaled between {endpoint.autoscaling['min']} and "
            f"{endpoint.autoscaling['max']} replicas: KEDA sets the count.",
            hint="Deploy it again with other autoscaling bounds to change them.",
        )
    if endpoint.status in (EndpointStatus.DELETING, EndpointStatus.DELETED):
        raise StateConflict(f"Endpoint {endpoint.name} is {endpoint.status}.")
    if desired_replicas(endpoint) == replicas:
        return None
    running = _running(endpoint)
    if running is not None:
        raise StateConflict(f"Operation {running.kind} ({running.pk}) is still running on this endpoint.")
    with transaction.atomic():
        Endpoint.objects.filter(pk=endpoint.pk).update(status=EndpointStatus.DEPLOYING)
        operation, _ = start_operation(
            access=access,
            kind="endpoint.scale",
            target=endpoint,
            params={"replicas": replicas},
            idempotency_key=idempotency_key,
            audit_action="endpoint.scale",
            audit_summary={"name": endpoint.name, "from": endpoint.replicas, "to": replicas},
        )
    return operation


def delete_endpoint(*, access: Access, endpoint: Endpoint, idempotency_key: str = "") -> Operation:
    """Start `endpoint.delete` (or return the one running): it removes exactly what the deploy applied."""
    replayed = _replayed(access, idempotency_key)
    if replayed is not None:
        return replayed
    running = _running(endpoint)
    if running is not None and running.kind == "endpoint.delete":
        return running
    with transaction.atomic():
        if running is not None:
            Operation.objects.filter(pk=running.pk).update(cancel_requested=True)
        Endpoint.objects.filter(pk=endpoint.pk).update(status=EndpointStatus.DELETING)
        operation, _ = start_operation(
            access=access,
            kind="endpoint.delete",
            target=endpoint,
            idempotency_key=idempotency_key,
            audit_action="endpoint.delete",
            audit_summary={"name": endpoint.name},
        )
    return operation


def assign_worker(*, access: Access, endpoint: Endpoint, pod: str, model: str) -> dict:
    """Point a pool's warm worker at another model: one label change on the pod, never a restart.

    Returns {"pod", "model", "changed"}; the label it already has changes nothing.
    """
    if endpoint.service != ServiceShape.POOL:
        raise StateConflict(f"Endpoint {endpoint.name} is not a pool: only a pool's workers are reassigned.")
    found = next((w for w in pool_workers(endpoint) if w["name"] == pod), None)
    if found is None:
        raise NotFound(f"No worker {pod} in pool {endpoint.name}.")
    value = label_value(model)
    if found["model"] == value:
        return {"pod": pod, "model": value, "changed": False}
    relabel(endpoint, pod, value)
    record_audit(
        access=access,
        action="endpoint.assign_worker",
        target=endpoint,
        summary={"pod": pod, "model": value, "from": found["model"]},
    )
    return {"pod": pod, "model": value, "changed": True}


# --- model downloads ---------------------------------------------------------------------------


def download_model(
    *, access: Access, cluster: Cluster, data: dict, idempotency_key: str = ""
) -> tuple[ModelDownload, Operation]:
    """Record the download and start `model.download`; a token goes only into a Secret, written first."""
    replayed = _replayed(access, idempotency_key)
    if replayed is not None:
        return ModelDownload.objects.get(pk=replayed.target_id), replayed
    _require_active(cluster)
    pk = uuid.uuid4()
    download = ModelDownload(
        pk=pk,
        cluster=cluster,
        repo_id=data["id"],
        kind=data["kind"],
        source=data["source"],
        target=data["target"],
        revision=data.get("revision", ""),
        namespace=team_namespace(cluster),
        job_name=f"hf-download-{pk.hex[:12]}",
        created_by=access.user if getattr(access.user, "pk", None) else None,
    )
    folder = "datasets" if data["kind"] == "dataset" else "models"
    if data["target"] == "s3":
        bucket = data["bucket"]
        download.uri = f"s3://{bucket}/{folder}/{data['id']}"
        download.mount_path = f"/s3/{folder}/{data['id']}"
    else:
        download.uri = download.mount_path = f"/fsx/{folder}/{data['id']}"
    if data.get("token"):
        download.secret_name = f"hf-token-{pk.hex[:12]}"
        write_token_secret(download, data["token"])
    with transaction.atomic():
        download.status = DownloadStatus.DOWNLOADING
        download.save()
        operation, _ = start_operation(
            access=access,
            kind="model.download",
            target=download,
            idempotency_key=idempotency_key,
            audit_action="model.download",
            audit_summary={k: v for k, v in data.items() if k not in ("token", "bucket")},
        )
    return download, operation
