"""Preflight: what must hold before a cluster (or more capacity) can be created. Reads only.

The same checks serve ``POST /api/v1/preflight/``, the portal's preflight button, the create's
`preflight` phase and the quota checks of adding or scaling an instance group.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

from instantstart.cloud.aws import TeamCloud, team_cloud
from instantstart.cloud.errors import classify
from instantstart.errors import cloud_read
from instantstart.tenancy.models import Team

from ..models import CapacityType, Cluster
from ..steps.eks import eks_name as eks_name_of
from . import catalog


@dataclass
class Check:
    name: str
    ok: bool
    message: str

    def as_dict(self) -> dict:
        return asdict(self)


def _sagemaker_quotas(cloud: TeamCloud, region: str) -> dict[str, float]:
    quotas = cloud.client("service-quotas", region)
    values: dict[str, float] = {}
    kwargs: dict = {"ServiceCode": "sagemaker"}
    while True:
        page = quotas.list_service_quotas(**kwargs)
        values.update({q["QuotaName"]: q["Value"] for q in page.get("Quotas", [])})
        if not page.get("NextToken"):
            return values
        kwargs["NextToken"] = page["NextToken"]


TOTAL_QUOTA = "Total number of instances allowed across SageMaker HyperPod clusters"


@dataclass
class Usage:
    """Instances that exist in the account's HyperPod clusters of one region (every cluster of the
    account, not only InstantStart's): SageMaker's "for cluster usage" quotas count all of them."""

    by_type: Counter
    by_cluster: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_type.values())


def hyperpod_usage(cloud: TeamCloud, region: str, *, exclude: str | None = None) -> Usage:
    """What every HyperPod cluster of the account in the region runs (``exclude``: a cluster whose
    instances the request itself describes, a create's own cluster when its preflight runs again)."""
    sagemaker = cloud.client("sagemaker", region)
    by_type: Counter = Counter()
    by_cluster: dict[str, int] = {}
    kwargs: dict = {}
    while True:
        page = sagemaker.list_clusters(**kwargs)
        for summary in page.get("ClusterSummaries", []):
            if summary["ClusterName"] == exclude:
                continue
            try:
                described = sagemaker.describe_cluster(ClusterName=summary["ClusterName"])
            except sagemaker.exceptions.ResourceNotFound:
                continue  # deleted between the list and the describe
            for group in described.get("InstanceGroups", []):
                # A group being scaled up holds its target while it launches; one scaled down keeps
                # its instances until they are gone.
                count = max(group.get("CurrentCount", 0), group.get("TargetCount", 0))
                by_type[group.get("InstanceType", "")] += count
                by_cluster[summary["ClusterName"]] = by_cluster.get(summary["ClusterName"], 0) + count
        if not page.get("NextToken"):
            return Usage(by_type, by_cluster)
        kwargs["NextToken"] = page["NextToken"]


def _quota_check(name: str, quota_name: str, quota: float, used: int, needed: int) -> Check:
    """A quota against what is already in use: "4 of 4 in use; the request needs 2 more"."""
    ok = used + needed <= quota
    message = f"Quota '{quota_name}': {used} of {int(quota)} in use; the request needs {needed} more."
    if not ok:
        message += " Request an increase in Service Quotas, or use a training plan."
    return Check(name, ok, message)


def preflight_new_cluster(team: Team, request: dict) -> list[Check]:
    """Checks for a new cluster (what ClusterCreateSerializer accepted), its EKS name probed too."""
    probe = Cluster(team=team, name=request["name"])  # never saved: it only names what the create would
    return run_preflight(team, request, eks_name=eks_name_of(probe))


def quota_refusals(team: Team, request: dict) -> list[str]:
    """What the quotas and training plans refuse of a request for capacity (nothing: an empty list)."""
    return [
        check.message
        for check in run_preflight(team, request)
        if not check.ok and check.name.startswith(("quota", "training_plan"))
    ]


@cloud_read()
def run_preflight(team: Team, request: dict, *, eks_name: str | None = None) -> list[Check]:
    """Checks for a validated request: region, zone and instance groups (and its EKS name, if given)."""
    region = request["region"]
    checks: list[Check] = []
    try:
        cloud = team_cloud(team, region)
    except Exception as exc:  # noqa: BLE001 - any failure to assume the role is the finding
        classified = classify(exc)
        detail = classified.message if classified else str(exc)
        return [Check("role_assumable", False, f"Cannot assume the team's AWS role: {detail}")]
    checks.append(Check("role_assumable", True, f"Assumed the team's role in account {cloud.account_id}."))

    if eks_name:
        eks = cloud.client("eks", region)
        try:
            existing = eks.describe_cluster(name=eks_name)["cluster"]
            owned = existing.get("tags", {}).get("instantstart:cluster-id") == request.get("cluster_id")
            checks.append(
                Check(
                    "name_free",
                    owned,
                    "The EKS cluster already exists and is this cluster's own."
                    if owned
                    else f"An EKS cluster named {eks_name} already exists in the account.",
                )
            )
        except eks.exceptions.ResourceNotFoundException:
            checks.append(Check("name_free", True, f"No EKS cluster named {eks_name} in {region} yet."))

    groups = request["instance_groups"]
    quotas = _sagemaker_quotas(cloud, region)
    # The request's groups are additions: to a new cluster, or to ``hyperpod_cluster_name``.
    usage = hyperpod_usage(cloud, region, exclude=request.get("new_hyperpod_cluster_name"))
    needed = Counter()
    for group in groups:
        if group["capacity_type"] != CapacityType.TRAINING_PLAN:
            needed[group["instance_type"]] += group["count"]
    for instance_type, count in sorted(needed.items()):
        quota = quotas.get(f"{instance_type} for cluster usage")
        if quota is None:
            checks.append(
                Check(
                    f"quota:{instance_type}",
                    False,
                    f"No SageMaker quota '{instance_type} for cluster usage' in {region}.",
                )
            )
            continue
        checks.append(
            _quota_check(
                f"quota:{instance_type}",
                f"{instance_type} for cluster usage",
                quota,
                usage.by_type[instance_type],
                count,
            )
        )
    added = sum(needed.values())
    total_quota = quotas.get(TOTAL_QUOTA)
    if total_quota is not None and added:
        checks.append(_quota_check("quota:total_instances", TOTAL_QUOTA, total_quota, usage.total, added))
    per_cluster = quotas.get("Maximum number of instances per cluster")
    if per_cluster is not None:
        own = usage.by_cluster.get(request.get("hyperpod_cluster_name") or "", 0)
        total = own + sum(g["count"] for g in groups)
        checks.append(
            Check(
                "quota:instances_per_cluster",
                per_cluster >= total,
                f"At most {int(per_cluster)} instances per cluster; the cluster would have {total}.",
            )
        )

    plans = (
        {p["arn"]: p for p in catalog.training_plans(team, region)}
        if any(g["capacity_type"] == CapacityType.TRAINING_PLAN for g in groups)
        else {}
    )
    # One describe per distinct type, however many groups share it.
    infos = {t: catalog.instance_type_info(team, region, t) for t in sorted({g["instance_type"] for g in groups})}
    for group in groups:
        info = infos[group["instance_type"]]
        zone = group.get("availability_zone") or request["availability_zone"]
        offered = info is not None and zone in info.zones
        checks.append(
            Check(
                f"offered:{group['name']}",
                offered,
                f"{group['instance_type']} is offered in {zone}."
                if offered
                else f"{group['instance_type']} is not offered in {zone}.",
            )
        )
        if group["capacity_type"] == CapacityType.TRAINING_PLAN:
            plan = plans.get(group["training_plan_arn"])
            if plan is None:
                checks.append(Check(f"training_plan:{group['name']}", False, "The training plan was not found."))
                continue
            enough = plan["available_instances"] >= group["count"]
            zone_note = f" in {', '.join(plan['zones'])}" if plan["zones"] else ""
            checks.append(
                Check(
                    f"training_plan:{group['name']}",
                    enough and plan["status"] in ("Active", "Scheduled"),
                    f"Plan {plan['name']} ({plan['status']}) has {plan['available_instances']} instances "
                    f"available{zone_note}; the group needs {group['count']}.",
                )
            )
    return checks
