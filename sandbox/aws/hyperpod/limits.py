"""SageMaker's account-level instance quotas for HyperPod, enforced as the service enforces them.

"<type> for cluster usage", "Total number of instances allowed across SageMaker HyperPod clusters"
and "Maximum number of instances per cluster" (values from sandbox/aws/quotas.py, adjustable per
account) count the instances of every HyperPod cluster of the account and region, not only the
cluster being created or changed. A CreateCluster or UpdateCluster that would go beyond one fails
with ResourceLimitExceeded, in SageMaker's words, and changes nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sandbox.aws.handlers import Ctx
from sandbox.aws.hyperpod.store import table
from sandbox.aws.protocol import AwsError
from sandbox.aws.quotas import quota_value

TOTAL = "Total number of instances allowed across SageMaker HyperPod clusters"
PER_CLUSTER = "Maximum number of instances per cluster"


def _exceeded(name: str, limit: float, usage: int, delta: int) -> AwsError:
    return AwsError(
        "ResourceLimitExceeded",
        f"The account-level service limit '{name}' is {limit:g} Instances, with current utilization of "
        f"{usage} Instances and a request delta of {delta} Instances. Please use AWS Service Quotas to request "
        "an increase for this quota. If AWS Service Quotas is not available, contact AWS support to request an "
        "increase for this quota.",
        400,
    )


def _check(ctx: Ctx, name: str, usage: int, delta: int) -> None:
    if delta <= 0:
        return
    limit = quota_value(ctx.world, ctx.account, ctx.region, "sagemaker", name)
    if limit is not None and usage + delta > limit:
        raise _exceeded(name, limit, usage, delta)


def require_quota(ctx: Ctx, delta: Counter[str], cluster: dict[str, Any] | None = None) -> None:
    """delta: instance type -> instances the request adds. Usage is every instance that exists in
    the account's HyperPod clusters of this region (terminating ones until they are gone)."""
    in_use: Counter[str] = Counter()
    for c in table(ctx.world, ctx.account, ctx.region).values():
        for n in c["_nodes"].values():
            in_use[n["InstanceType"]] += 1
    for itype in sorted(delta):
        _check(ctx, f"{itype} for cluster usage", in_use[itype], delta[itype])
    added = sum(d for d in delta.values() if d > 0)
    _check(ctx, TOTAL, sum(in_use.values()), added)
    _check(ctx, PER_CLUSTER, len(cluster["_nodes"]) if cluster else 0, added)


def create_delta(groups: list[dict[str, Any]]) -> Counter[str]:
    out: Counter[str] = Counter()
    for g in groups:
        out[g.get("InstanceType", "")] += int(g.get("InstanceCount", 0))
    return out


def update_delta(c: dict[str, Any], groups: list[dict[str, Any]]) -> Counter[str]:
    """Instances an UpdateCluster adds: per upserted group, its new count minus the nodes it keeps."""
    out: Counter[str] = Counter()
    for raw in groups:
        name = raw["InstanceGroupName"]
        old = c["_groups"].get(name)
        itype = raw.get("InstanceType") or (old or {"spec": {}})["spec"].get("InstanceType", "")
        have = sum(1 for n in c["_nodes"].values() if n["InstanceGroupName"] == name and n["_op"] is None)
        extra = int(raw.get("InstanceCount", 0)) - have
        if extra > 0:
            out[itype] += extra
    return out
