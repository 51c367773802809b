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
        else:
            ok = quota >= count
            checks.append(
                Check(
                    f"quota:{instance_type}",
                    ok,
                    f"Quota '{instance_type} for cluster usage' is {int(quota)}; the request needs {count}."
                    + ("" if ok else " Request an increase in Service Quotas, or use a training plan."),
                )
            )
    total = sum(g["count"] for g in groups)
    per_cluster = quotas.get("Maximum number of instances per cluster")
    if per_cluster is not None:
        checks.append(
            Check(
                "quota:instances_per_cluster",
                per_cluster >= total,
                f"At most {int(per_cluster)} instances per cluster; the request has {total}.",
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
