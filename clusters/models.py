"""Clusters (an EKS control plane with a HyperPod cluster), their instance groups, compute
subnets and storage, and each user's active cluster."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from clusters.readers.catalog import DEFAULT_KUBERNETES_VERSION
from instantstart.tenancy.models import Team
from instantstart.tenancy.visibility import TeamOwnedQuerySet

NAME_VALIDATOR = RegexValidator(
    r"^[a-z][a-z0-9-]{1,30}[a-z0-9]$",
    "3 to 32 characters: lowercase letters, digits and dashes, starting with a letter.",
)


class ClusterStatus(models.TextChoices):
    CREATING = "creating", "Creating"  # cluster.create is running
    ACTIVE = "active", "Active"  # control plane and HyperPod InService
    FAILED = "failed", "Failed"  # the last create/update failed at a phase; retryable
    DELETING = "deleting", "Deleting"  # cluster.delete is running
    DELETED = "deleted", "Deleted"  # torn down; kept for history, name free again
    IMPORTED = "imported", "Imported"  # adopted from the account; InstantStart did not create it


class StorageChoice(models.TextChoices):
    S3 = "s3", "S3 bucket (Mountpoint for S3)"
    FSX = "fsx", "FSx for Lustre"
    NONE = "none", "No shared storage"


class ClusterQuerySet(TeamOwnedQuerySet):
    # A deleted cluster keeps its row (and its page) for history; lists and actions no longer see it.
    hidden = models.Q(status=ClusterStatus.DELETED)


class Cluster(models.Model):
    """An EKS control plane plus a HyperPod cluster and what they need, in one team's account."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="clusters")
    name = models.CharField(max_length=32, validators=[NAME_VALIDATOR])
    region = models.CharField(max_length=32)
    availability_zone = models.CharField(max_length=32)
    kubernetes_version = models.CharField(max_length=8, default=DEFAULT_KUBERNETES_VERSION)
    storage = models.CharField(max_length=8, choices=StorageChoice.choices, default=StorageChoice.S3)
    status = models.CharField(max_length=10, choices=ClusterStatus.choices, default=ClusterStatus.CREATING)
    managed = models.BooleanField(default=True, help_text="Created by InstantStart (not imported).")
    # What the cloud assigned, recorded by the operation's phases.
    eks_cluster_name = models.CharField(max_length=100, blank=True)
    eks_cluster_arn = models.CharField(max_length=2048, blank=True)
    eks_endpoint = models.CharField(max_length=2048, blank=True)
    hyperpod_cluster_name = models.CharField(max_length=63, blank=True)
    hyperpod_cluster_arn = models.CharField(max_length=2048, blank=True)
    vpc_id = models.CharField(max_length=32, blank=True)
    vpc_cidr = models.CharField(max_length=18, default="10.0.0.0/16")
    network = models.JSONField(default=dict, blank=True)
    identity = models.JSONField(default=dict, blank=True)
    versions = models.JSONField(default=dict, blank=True)
    # Node counts by health as last read from Kubernetes: {"total": n, "by_health": {...}}.
    node_summary = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ClusterQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "name"],
                condition=~models.Q(status=ClusterStatus.DELETED),
                name="cluster_name_unique_per_team",
                violation_error_message="A cluster with this name already exists in the team.",
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def resource_prefix(self) -> str:
        """Deterministic names of everything the cluster owns: `is-<team>-<cluster>`."""
        return f"is-{self.team.slug}-{self.name}"[:48]

    def tags(self) -> dict[str, str]:
        return {
            "managed-by": "instantstart",
            "instantstart:team": self.team.slug,
            "instantstart:cluster": self.name,
            "instantstart:cluster-id": str(self.pk),
        }


class CapacityType(models.TextChoices):
    ON_DEMAND = "on_demand", "On-demand"
    SPOT = "spot", "Spot"
    TRAINING_PLAN = "training_plan", "Training plan"


class DeepHealthCheck(models.TextChoices):
    INSTANCE_STRESS = "InstanceStress", "Instance stress (GPU, DCGM)"
    INSTANCE_CONNECTIVITY = "InstanceConnectivity", "Instance connectivity (EFA, NCCL)"


class InstanceGroupStatus(models.TextChoices):
    """HyperPod's InstanceGroupStatus (botocore's sagemaker model), as the last read recorded it.

    Blank until HyperPod reports the group (a group of a cluster whose create has not reached HyperPod).
    """

    IN_SERVICE = "InService", "In service"  # the group runs its target count; changes are accepted
    CREATING = "Creating", "Creating"  # instances are launching (recorded by InstantStart at add, too)
    UPDATING = "Updating", "Updating"  # an UpdateCluster (scale, change) is being applied
    FAILED = "Failed", "Failed"  # HyperPod could not create or update the group; see the operation
    DEGRADED = "Degraded", "Degraded"  # some instances failed; the group runs below its target
    SYSTEM_UPDATING = "SystemUpdating", "System updating"  # HyperPod patches the instances' software
    DELETING = "Deleting", "Deleting"  # being removed (recorded by InstantStart when the delete starts)

    @classmethod
    def settling(cls) -> frozenset[str]:
        """States HyperPod leaves on its own: a page showing one keeps polling."""
        return frozenset({cls.CREATING, cls.UPDATING, cls.SYSTEM_UPDATING, cls.DELETING})


class InstanceGroupQuerySet(TeamOwnedQuerySet):
    team_path = "cluster__team"
    hidden = models.Q(cluster__status=ClusterStatus.DELETED)


class InstanceGroup(models.Model):
    """A HyperPod instance group: one instance type, one capacity type, one subnet."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="instance_groups")
    name = models.CharField(
        max_length=63,
        validators=[RegexValidator(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$", "Letters, digits and dashes.")],
    )
    instance_type = models.CharField(max_length=32, help_text="ml.* instance type, e.g. ml.p5.48xlarge")
    count = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(1000)])
    min_count = models.PositiveIntegerField(default=0)
    capacity_type = models.CharField(max_length=16, choices=CapacityType.choices, default=CapacityType.ON_DEMAND)
    training_plan_arn = models.CharField(max_length=2048, blank=True)
    efa_only = models.BooleanField(default=False)
    deep_health_checks = models.JSONField(default=list, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    ebs_volume_gb = models.PositiveIntegerField(default=500)
    availability_zone = models.CharField(max_length=32)
    subnet_id = models.CharField(max_length=32, blank=True)
    status = models.CharField(max_length=32, choices=InstanceGroupStatus.choices, blank=True)

    objects = InstanceGroupQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "name"],
                name="instance_group_name_unique_per_cluster",
                violation_error_message="An instance group with this name already exists in the cluster.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class ComputeSubnetQuerySet(TeamOwnedQuerySet):
    team_path = "cluster__team"
    hidden = models.Q(cluster__status=ClusterStatus.DELETED)


class ComputeSubnet(models.Model):
    """A /20 subnet for accelerator fleets in one zone of a cluster's VPC (from one allocator)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="compute_subnets")
    availability_zone = models.CharField(max_length=32)
    cidr = models.CharField(max_length=18)
    subnet_id = models.CharField(max_length=32, blank=True)

    objects = ComputeSubnetQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "availability_zone"], name="one_compute_subnet_per_zone"),
            models.UniqueConstraint(fields=["cluster", "cidr"], name="compute_subnet_cidr_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.cidr} in {self.availability_zone}"


class StorageKind(models.TextChoices):
    S3 = "s3", "S3 bucket"
    FSX = "fsx", "FSx for Lustre"


class StorageStatus(models.TextChoices):
    """Where the storage's volume + claim are in the team namespace (the data itself is never touched)."""

    ATTACHING = "attaching", "Attaching"  # storage.attach (or the create's storage phase) is mounting it
    ATTACHED = "attached", "Attached"  # the PersistentVolume and claim exist: workloads can mount it
    DETACHING = "detaching", "Detaching"  # storage.detach is removing the volume and claim
    DETACHED = "detached", "Detached"  # unmounted (the cluster was deleted); the bucket or file system stays
    FAILED = "failed", "Failed"  # the attach or detach failed; its operation says why, retry resumes it


class StorageQuerySet(TeamOwnedQuerySet):
    team_path = "cluster__team"
    # Detached storage is no longer part of the cluster; a deleted cluster's storage goes with it.
    hidden = models.Q(cluster__status=ClusterStatus.DELETED) | models.Q(status=StorageStatus.DETACHED)


class Storage(models.Model):
    """Shared storage mounted into the cluster as a PersistentVolume + claim in the team namespace."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="storages")
    name = models.CharField(max_length=63, validators=[NAME_VALIDATOR])
    kind = models.CharField(max_length=4, choices=StorageKind.choices)
    bucket = models.CharField(max_length=63, blank=True)
    file_system_id = models.CharField(max_length=32, blank=True)
    namespace = models.CharField(max_length=63, default="default")
    claim_name = models.CharField(max_length=63, blank=True)
    status = models.CharField(max_length=16, choices=StorageStatus.choices, default=StorageStatus.ATTACHING)
    managed = models.BooleanField(default=True, help_text="Created with the cluster (deleted with it).")

    objects = StorageQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="storage_name_unique_per_cluster")]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class ActiveCluster(models.Model):
    """Each user's active cluster in a team: workload pages and tools default to it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="one_active_cluster_per_user_team")]

    def __str__(self) -> str:
        return f"{self.user} → {self.cluster}"
