"""Inference endpoints (managed InferenceEndpointConfig or self-managed vLLM / SGLang) and model downloads."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from clusters.models import Cluster, ClusterStatus
from instantstart.tenancy.visibility import TeamOwnedQuerySet

# A DNS-1035 label short enough for every derived object name (`<name>-router`, `<name>-scaled-object`).
ENDPOINT_NAME = RegexValidator(
    r"^[a-z]([-a-z0-9]{0,28}[a-z0-9])?$",
    "1 to 30 characters: lowercase letters, digits and dashes, starting with a letter.",
)


class Mode(models.TextChoices):
    MANAGED = "managed", "Managed (HyperPod inference operator)"
    SELF_MANAGED = "self_managed", "Self-managed (Deployment + Service)"


class Engine(models.TextChoices):
    VLLM = "vllm", "vLLM"
    SGLANG = "sglang", "SGLang"


class ServiceShape(models.TextChoices):
    EXTERNAL = "external", "External (network load balancer)"
    INTERNAL = "internal", "Internal (ClusterIP)"
    POOL = "pool", "Pool (warm workers, no Service)"


class Routing(models.TextChoices):
    PREFIXAWARE = "prefixaware", "Prefix-aware"
    KVAWARE = "kvaware", "KV-aware"
    SESSION = "session", "Session"
    ROUNDROBIN = "roundrobin", "Round robin"


class EndpointStatus(models.TextChoices):
    DEPLOYING = "deploying", "Deploying"  # endpoint.deploy is applying or waiting for the first ready replica
    READY = "ready", "Ready"  # every desired replica is ready (read live on every GET)
    DEGRADED = "degraded", "Degraded"  # deployed, but fewer replicas are ready than desired (read live)
    FAILED = "failed", "Failed"  # the deploy or delete operation failed; its error says why, retry resumes it
    DELETING = "deleting", "Deleting"  # endpoint.delete is removing what the deploy created
    DELETED = "deleted", "Deleted"  # gone from the cluster; the row stays for history, the name is free again


class EndpointQuerySet(TeamOwnedQuerySet):
    team_path = "cluster__team"
    hidden = models.Q(status=EndpointStatus.DELETED) | models.Q(cluster__status=ClusterStatus.DELETED)


class Endpoint(models.Model):
    """A model served on a cluster: what the user asked for, and the objects the deploy applied."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=30, validators=[ENDPOINT_NAME])
    mode = models.CharField(max_length=16, choices=Mode.choices)
    engine = models.CharField(max_length=8, choices=Engine.choices, default=Engine.VLLM)
    # {"source": "s3"|"fsx"|"huggingface", "uri": ...} or {"source": "huggingface", "id": ...}
    model = models.JSONField()
    instance_group = models.CharField(max_length=63)
    instance_type = models.CharField(max_length=32, blank=True)
    replicas = models.PositiveIntegerField(default=1)
    gpus = models.PositiveIntegerField(default=1, help_text="GPUs per replica (tensor parallelism).")
    service = models.CharField(max_length=8, choices=ServiceShape.choices, default=ServiceShape.INTERNAL)
    router = models.BooleanField(default=False)
    autoscaling = models.JSONField(null=True, blank=True)  # {"min", "max", "target", "cooldown"}
    kv_cache = models.JSONField(null=True, blank=True)  # {"l1", "l2", "backend"} (managed)
    routing = models.CharField(max_length=12, choices=Routing.choices, blank=True)
    args = models.JSONField(default=list, blank=True)
    namespace = models.CharField(max_length=63)
    status = models.CharField(max_length=10, choices=EndpointStatus.choices, default=EndpointStatus.DEPLOYING)
    url = models.CharField(max_length=512, blank=True, help_text="The load balancer's address (external).")
    # Every object the deploy applied, as applied: what delete removes and what GET shows.
    manifest = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = EndpointQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "name"],
                condition=~models.Q(status=EndpointStatus.DELETED),
                name="endpoint_name_unique_per_cluster",
                violation_error_message="An endpoint with this name already exists on the cluster.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class DownloadKind(models.TextChoices):
    MODEL = "model", "Model"
    DATASET = "dataset", "Dataset"


class DownloadTarget(models.TextChoices):
    S3 = "s3", "The cluster's S3 bucket"
    FSX = "fsx", "The cluster's FSx file system"


class DownloadStatus(models.TextChoices):
    DOWNLOADING = "downloading", "Downloading"  # model.download's Job runs; progress comes from its log
    READY = "ready", "Ready"  # the Job succeeded: the files are at `uri`, mountable at `mount_path`
    FAILED = "failed", "Failed"  # the Job failed (gated repo without a token, bad id…); the operation says why


class ModelDownloadQuerySet(TeamOwnedQuerySet):
    team_path = "cluster__team"
    hidden = models.Q(cluster__status=ClusterStatus.DELETED)


class ModelDownload(models.Model):
    """A Hugging Face model or dataset downloaded by a Kubernetes Job to the cluster's shared storage."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="model_downloads")
    repo_id = models.CharField(max_length=200, help_text="The Hugging Face id, e.g. Qwen/Qwen3-0.6B.")
    kind = models.CharField(max_length=8, choices=DownloadKind.choices, default=DownloadKind.MODEL)
    source = models.CharField(max_length=16, default="huggingface")
    target = models.CharField(max_length=4, choices=DownloadTarget.choices, default=DownloadTarget.S3)
    revision = models.CharField(max_length=100, blank=True)
    namespace = models.CharField(max_length=63)
    job_name = models.CharField(max_length=63)
    # The token lives only in this Secret (never in the row, the operation or an answer).
    secret_name = models.CharField(max_length=63, blank=True)
    status = models.CharField(max_length=12, choices=DownloadStatus.choices, default=DownloadStatus.DOWNLOADING)
    progress = models.JSONField(default=dict, blank=True)  # {"files_done", "files_total", "percent", "last_line"}
    size_bytes = models.BigIntegerField(null=True, blank=True)
    uri = models.CharField(max_length=512, blank=True)  # s3://bucket/models/<id> or the FSx path
    mount_path = models.CharField(max_length=512, blank=True)  # /s3/models/<id> or /fsx/models/<id>
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ModelDownloadQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.repo_id}"
