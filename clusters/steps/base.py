"""What every cluster step shares: its cluster, its cloud, tags, and check-before-create."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from instantstart.cloud.aws import TeamCloud, team_cloud
from instantstart.operations.context import StepContext

from ..models import Cluster


def cluster_of(ctx: StepContext) -> Cluster:
    return Cluster.objects.select_related("team").get(pk=ctx.operation.target_id)


def cloud_of(cluster: Cluster) -> TeamCloud:
    return team_cloud(cluster.team, cluster.region)


def aws_tags(cluster: Cluster, name: str | None = None) -> list[dict[str, str]]:
    tags = dict(cluster.tags())
    if name:
        tags["Name"] = name
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def tag_specs(cluster: Cluster, resource_type: str, name: str) -> list[dict]:
    return [{"ResourceType": resource_type, "Tags": aws_tags(cluster, name)}]


def owned_filter(cluster: Cluster, name: str | None = None) -> list[dict]:
    """EC2 filters that find what this cluster created (by its id tag, and by Name)."""
    filters = [{"Name": "tag:instantstart:cluster-id", "Values": [str(cluster.pk)]}]
    if name:
        filters.append({"Name": "tag:Name", "Values": [name]})
    return filters


def ensure(ctx: StepContext, key: str, find: Callable[[], Any], create: Callable[[], Any]) -> Any:
    """Check before create, and record before going on.

    The recorded value wins; else an existing resource found by its deterministic name/tags is
    adopted; only then is it created. The id is recorded at once, so a resumed phase never
    creates it twice.
    """
    if key in ctx.phase.state:
        return ctx.phase.state[key]
    found = find()
    value = found if found is not None else create()
    ctx.record(**{key: value})
    return value


def client_token(cluster: Cluster, purpose: str) -> str:
    """A deterministic idempotency token: the same request after a crash is the same request."""
    return f"{str(cluster.pk).replace('-', '')[:24]}-{purpose}"[:64]


def owned_by(cluster: Cluster, resource: dict) -> bool:
    """Whether an EC2 resource carries this cluster's id tag (checked here, not only in the filter)."""
    return any(
        t.get("Key") == "instantstart:cluster-id" and t.get("Value") == str(cluster.pk)
        for t in resource.get("Tags", [])
    )


def owned_nat_gateways(ec2, cluster: Cluster, vpc_ids: list[str]) -> list[dict]:
    """This cluster's NAT gateways, not yet deleted. Filtered by VPC and checked by tag: some EC2
    implementations (the sandbox's moto among them) ignore tag filters on DescribeNatGateways."""
    if not vpc_ids:
        return []
    found = ec2.describe_nat_gateways(Filters=[{"Name": "vpc-id", "Values": vpc_ids}])["NatGateways"]
    return [n for n in found if owned_by(cluster, n) and n["State"] not in ("deleted",)]
