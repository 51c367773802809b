"""Phase `preflight`: the same checks as POST /api/v1/preflight/, against the recorded request."""

from __future__ import annotations

from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail

from ..readers.preflight import run_preflight
from .base import cluster_of
from .eks import eks_name
from .hyperpod import hyperpod_name


def request_of(cluster) -> dict:
    return {
        "cluster_id": str(cluster.pk),
        "new_hyperpod_cluster_name": hyperpod_name(cluster),
        "region": cluster.region,
        "availability_zone": cluster.availability_zone,
        "instance_groups": [
            {
                "name": g.name,
                "instance_type": g.instance_type,
                "count": g.count,
                "capacity_type": g.capacity_type,
                "training_plan_arn": g.training_plan_arn,
                "availability_zone": g.availability_zone,
            }
            for g in cluster.instance_groups.all()
        ],
    }


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    checks = run_preflight(cluster.team, request_of(cluster), eks_name=eks_name(cluster))
    ctx.record(checks=[c.as_dict() for c in checks])
    failed = [c for c in checks if not c.ok]
    if failed:
        return Fail(
            "; ".join(c.message for c in failed),
            hint="Fix what the failed checks say (quota, zone, training plan), then retry.",
            code="PreflightFailed",
        )
    return Done(f"{len(checks)} checks passed")
