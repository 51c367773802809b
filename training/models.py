"""Training jobs (a HyperPodPyTorchJob or a RayJob made from a recipe) and every line their pods print."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from clusters.models import Cluster, ClusterStatus
from instantstart.tenancy.visibility import TeamOwnedQuerySet


class Recipe(models.TextChoices):
    PYTORCH = "pytorch", "PyTorch script (torchrun)"
    LLAMA_FACTORY = "llama_factory", "LLaMA-Factory"
    MS_SWIFT = "ms_swift", "MS-Swift"
    VERL = "verl", "VERL (RL on Ray)"


class JobKind(models.TextChoices):
    HYPERPOD = "HyperPodPyTorchJob", "HyperPodPyTorchJob"
    RAY = "RayJob", "RayJob"


class JobStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # recorded; the manifest is being validated/applied or its pods start
    RUNNING = "running", "Running"  # the operator reports the job running
    RESTARTING = "restarting", "Restarting"  # a fault (crash, node) is being remediated within the budget
    HUNG = "hung", "Hung"  # log monitoring found the job hanging; the operator restarts it if budget remains
    SUCCEEDED = "succeeded", "Succeeded"  # finished successfully
    FAILED = "failed", "Failed"  # the operator gave up (budget exhausted, program error) or the submit failed
    CANCELLED = "cancelled", "Cancelled"  # deleted on request; its logs stay readable

    @classmethod
    def terminal(cls) -> frozenset[str]:
        return frozenset({cls.SUCCEEDED, cls.FAILED, cls.CANCELLED})


class JobQuerySet(TeamOwnedQuerySet):
    team_path = "cluster__team"
    hidden = models.Q(cluster__status=ClusterStatus.DELETED)


class Job(models.Model):
    """A training job of one cluster: the validated spec, the manifest sent, and the state last read."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="jobs")
    name = models.CharField(max_length=40)
    recipe = models.CharField(max_length=16, choices=Recipe.choices)
    kind = models.CharField(max_length=24, choices=JobKind.choices)
    namespace = models.CharField(max_length=63)
    k8s_name = models.CharField(max_length=63)
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.PENDING)
    status_message = models.TextField(blank=True)
    # The validated request (what resubmit sends again) and the manifest made from it.
    spec = models.JSONField(default=dict)
    manifest = models.JSONField(default=dict, blank=True)
    nodes = models.PositiveIntegerField(default=1)
    gpus = models.PositiveIntegerField(default=0)
    restarts_used = models.PositiveIntegerField(default=0)
    max_retries = models.PositiveIntegerField(default=0)
    hang_detected = models.BooleanField(default=False)
    # As last read from Kubernetes by the job's operation.
    pods = models.JSONField(default=list, blank=True)
    faulty_nodes = models.JSONField(default=list, blank=True)
    events = models.JSONField(default=list, blank=True)
    # The last sequence number given to a log line of this job (LogLine.seq), advanced by the collector.
    last_seq = models.PositiveBigIntegerField(default=0)
    # per pod: the last stored log line's kubelet timestamp and how many stored lines carry it (log_store.py)
    log_cursors = models.JSONField(default=dict, blank=True)
    resubmitted_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "k8s_name"], name="job_k8s_name_unique_per_cluster"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"

    @property
    def is_terminal(self) -> bool:
        return self.status in JobStatus.terminal()

    @property
    def can_cancel(self) -> bool:
        return not self.is_terminal


class LogLineQuerySet(TeamOwnedQuerySet):
    team_path = "job__cluster__team"
    hidden = models.Q(job__cluster__status=ClusterStatus.DELETED)


class LogLine(models.Model):
    """One line a pod of a job printed, numbered per job in the order it was collected."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="log_lines")
    seq = models.PositiveBigIntegerField()
    pod = models.CharField(max_length=253)
    ts = models.DateTimeField(null=True, blank=True)
    text = models.TextField()

    objects = LogLineQuerySet.as_manager()

    class Meta:
        ordering = ["job", "seq"]
        constraints = [models.UniqueConstraint(fields=["job", "seq"], name="log_line_seq_unique_per_job")]

    def __str__(self) -> str:
        return f"{self.job_id}#{self.seq}"

    @staticmethod
    def data(seq: int, pod: str, ts, text: str) -> dict:
        """A line as every face shows it: REST's logs answer and the socket's frames."""
        return {"seq": seq, "pod": pod, "ts": ts.isoformat() if ts else None, "text": text}
