"""Approvals: a costly change an agent asked for, held until a team admin decides (agent_tools.approvals)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from instantstart.operations.models import Operation
from instantstart.tenancy.models import ApiToken, Team
from instantstart.tenancy.visibility import TeamOwnedQuerySet


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # held: nothing started
    APPROVED = "approved", "Approved"  # a team admin said yes; the change runs when the agent resumes
    REJECTED = "rejected", "Rejected"  # a team admin said no; nothing was or will be created


class Approval(models.Model):
    """One held tool call: what the agent asked for, what it would cost, who decided, what it started."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="approvals")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    token = models.ForeignKey(ApiToken, null=True, on_delete=models.SET_NULL, related_name="approvals")
    tool = models.CharField(max_length=100)
    arguments = models.JSONField(default=dict, blank=True)
    # {usd_per_hour, threshold, instances: {type: count}, unknown_types: [...], source}
    estimate = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    # Once approved and run: the tool's answer (HTTP status and body) and the operation it started.
    executed_at = models.DateTimeField(null=True, blank=True)
    result_status = models.PositiveSmallIntegerField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TeamOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.tool} ({self.status})"
