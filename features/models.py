"""What a team asked for on a cluster's Advanced features panel (desired state; the actual state is
always read from AWS and Kubernetes, never from here)."""

from __future__ import annotations

from django.db import models

from clusters.models import Cluster, ClusterStatus, InstanceGroup
from instantstart.tenancy.visibility import TeamOwnedQuerySet


class ClusterFeatureQuerySet(TeamOwnedQuerySet):
    team_path = "cluster__team"
    hidden = models.Q(cluster__status=ClusterStatus.DELETED)


class ClusterFeature(models.Model):
    """The desired state of one feature (or dependency) on one cluster.

    ``installed`` is true when InstantStart installed a dependency for a feature: only such a
    dependency is removed again when nothing needs it (add-ons of the cluster create stay).
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="features")
    name = models.CharField(max_length=32)
    desired = models.BooleanField(default=False)
    settings = models.JSONField(default=dict, blank=True)
    installed = models.BooleanField(default=False, help_text="Installed by InstantStart as a dependency.")
    updated_at = models.DateTimeField(auto_now=True)

    objects = ClusterFeatureQuerySet.as_manager()

    class Meta:
        ordering = ["cluster", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="one_feature_row_per_cluster")]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class GroupAutoscalingQuerySet(TeamOwnedQuerySet):
    team_path = "group__cluster__team"
    hidden = models.Q(group__cluster__status=ClusterStatus.DELETED)


class GroupAutoscaling(models.Model):
    """What a team asked for an instance group under managed autoscaling: between ``minimum`` and
    ``maximum`` nodes (the group's MinInstanceCount and its NodePool's node limit)."""

    group = models.OneToOneField(InstanceGroup, on_delete=models.CASCADE, related_name="autoscaling")
    minimum = models.PositiveIntegerField()
    maximum = models.PositiveIntegerField()
    updated_at = models.DateTimeField(auto_now=True)

    objects = GroupAutoscalingQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.group} {self.minimum}-{self.maximum}"
