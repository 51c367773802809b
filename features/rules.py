"""Training rules that depend on the cluster's features, as checks a job submission calls.

Elastic training (HyperPodPyTorchJob ``spec.elasticPolicy``) is not available on Spot capacity nor
together with managed tiered checkpointing (the HyperPod training operator's documented limits).
The training app calls :func:`check_elastic` from its submission serializer or service::

    from features.rules import check_elastic
    check_elastic(cluster, group)        # raises ElasticNotAllowed (a 409 naming why)

``elastic_problems`` returns the reasons instead, for a serializer that reports them as field errors.
"""

from __future__ import annotations

from clusters.models import CapacityType, Cluster, InstanceGroup
from instantstart.cloud.aws import team_cloud
from instantstart.errors import StateConflict, cloud_read


class ElasticNotAllowed(StateConflict):
    """Elastic training cannot run here (409 ``elastic_not_allowed``)."""

    default_code = "elastic_not_allowed"


@cloud_read()
def tiered_checkpointing_on(cluster: Cluster) -> bool:
    """Whether the HyperPod cluster has TieredStorageConfig Mode Enable (read from DescribeCluster now)."""
    if not cluster.hyperpod_cluster_name:
        return False
    sagemaker = team_cloud(cluster.team, cluster.region).client("sagemaker")
    described = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    return (described.get("TieredStorageConfig") or {}).get("Mode") == "Enable"


def elastic_problems(cluster: Cluster, group: InstanceGroup | str | None) -> list[str]:
    """Why an elastic job on ``group`` (an instance group, or its name) of ``cluster`` is refused; [] if it is not."""
    problems = []
    if isinstance(group, str):
        group = cluster.instance_groups.filter(name=group).first()
    if group is not None and group.capacity_type == CapacityType.SPOT:
        problems.append(
            f"Elastic training does not run on Spot capacity: instance group {group.name} is Spot. "
            "Use an on-demand or training-plan group, or submit without elasticPolicy."
        )
    if tiered_checkpointing_on(cluster):
        problems.append(
            "Elastic training cannot be combined with managed tiered checkpointing, which is enabled on this "
            'cluster: submit without elasticPolicy, or disable it (PATCH features {"tiered_checkpointing": false}).'
        )
    return problems


def check_elastic(cluster: Cluster, group: InstanceGroup | str | None) -> None:
    """Raise :class:`ElasticNotAllowed` when an elastic job may not run on ``group`` of ``cluster``."""
    problems = elastic_problems(cluster, group)
    if problems:
        raise ElasticNotAllowed(" ".join(problems))
