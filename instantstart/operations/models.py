"""Operations (persisted, resumable units of cloud work), their phases, and the audit trail."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils import timezone

from instantstart.tenancy.access import Via
from instantstart.tenancy.models import ApiToken, Team
from instantstart.tenancy.visibility import TeamOwnedQuerySet


class OperationStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # created, no worker has picked it up yet
    RUNNING = "running", "Running"  # a phase is in progress (waiting between polls counts)
    SUCCEEDED = "succeeded", "Succeeded"  # every phase finished
    FAILED = "failed", "Failed"  # a phase failed; retry resumes at that phase
    CANCELLED = "cancelled", "Cancelled"  # stopped on request; nothing further runs


TERMINAL = (OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED)
ACTIVE = (OperationStatus.PENDING, OperationStatus.RUNNING)


class PhaseStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # not reached yet
    RUNNING = "running", "Running"  # started; may be waiting for the cloud
    SUCCEEDED = "succeeded", "Succeeded"  # done; never redone by a retry
    FAILED = "failed", "Failed"  # stopped with an error; a retry runs it again
    CANCELLED = "cancelled", "Cancelled"  # the operation was cancelled while this phase was open


class OperationQuerySet(TeamOwnedQuerySet):
    def active(self) -> OperationQuerySet:
        return self.filter(status__in=ACTIVE)


class Operation(models.Model):
    """One long piece of AWS/Kubernetes work, advanced a step at a time by workers."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="operations")
    kind = models.CharField(max_length=64, db_index=True)
    target_type = models.ForeignKey(ContentType, null=True, blank=True, on_delete=models.SET_NULL)
    target_id = models.CharField(max_length=64, blank=True, db_index=True)
    target_repr = models.CharField(max_length=200, blank=True)
    params = models.JSONField(default=dict, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.CharField(max_length=10, choices=Via.CHOICES)
    status = models.CharField(
        max_length=10, choices=OperationStatus.choices, default=OperationStatus.PENDING, db_index=True
    )
    error_code = models.CharField(max_length=100, blank=True)
    error_message = models.TextField(blank=True)
    error_hint = models.TextField(blank=True)
    idempotency_key = models.CharField(max_length=200, blank=True)
    cancel_requested = models.BooleanField(default=False)
    # Lease: a worker owns the operation while lease_until is in the future (conditional UPDATE).
    lease_token = models.UUIDField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    # When the next advance is due; the sweep re-enqueues operations whose wake-up has passed.
    wake_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # When the advance message still waiting for a worker was sent; null when none is (a worker took
    # it, or the wait is longer than a broker may hold a message and the sweep sends it when due).
    # The sweep sends a message only where none is outstanding, so a backlog gets no duplicates.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # Steps run so far (every advance, including those run by a same-task hand-off).
    advance_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = OperationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="operation_idempotency_key_unique_per_team",
            )
        ]
        indexes = [models.Index(fields=["team", "target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.target_repr} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def can_cancel(self) -> bool:
        return self.status in ACTIVE

    @property
    def can_retry(self) -> bool:
        return self.status in (OperationStatus.FAILED, OperationStatus.CANCELLED)

    @property
    def elapsed_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()

    def current_phase(self) -> Phase | None:
        return self.phases.exclude(status=PhaseStatus.SUCCEEDED).order_by("index").first()


class Phase(models.Model):
    """One ordered step of an operation, with what it recorded (e.g. submitted resource ids)."""

    operation = models.ForeignKey(Operation, on_delete=models.CASCADE, related_name="phases")
    index = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=PhaseStatus.choices, default=PhaseStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    transient_failures = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    state = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["operation", "index"], name="phase_index_unique")]

    def __str__(self) -> str:
        return f"{self.index}. {self.name} ({self.status})"

    @property
    def elapsed_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()


class AuditEventQuerySet(TeamOwnedQuerySet):
    pass


class AuditEvent(models.Model):
    """Who did what, in which team, through which face. Never holds secrets."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    via = models.CharField(max_length=10, choices=Via.CHOICES)
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_repr = models.CharField(max_length=200, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.action} {self.target_repr} by {self.actor} via {self.via}"


class IdempotencyRecord(models.Model):
    """The stored answer to a mutating request sent with an Idempotency-Key.

    Inserted before the request runs (the unique constraint makes a concurrent duplicate fail
    fast), completed with the response afterwards; a repeat gets the stored response.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "key"], name="idempotency_record_unique")]


from .models_health import WorkerHeartbeat  # noqa: E402,F401  (registered with this app)
