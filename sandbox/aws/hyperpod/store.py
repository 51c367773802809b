"""The HyperPod cluster records of the sandbox and how they read back: lookup, events, validation of
roles, VPCs and training plans, and the DescribeCluster view of a cluster and its groups.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from sandbox.aws.eks_clusters import subnet_zone
from sandbox.aws.handlers import Ctx
from sandbox.aws.hyperpod import settings
from sandbox.aws.protocol import AwsError
from sandbox.aws.world import World

IMAGE_RELEASE = "2025-06-01"

IMAGE_ID = "ami-0hyperpodeks000001"

ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def _not_found(name: str) -> AwsError:
    return AwsError("ResourceNotFound", f"Cluster {name} not found.", 400)


def table(world: World, account: str, region: str) -> dict[str, Any]:
    return world.table("hp_clusters", account, region)


def lookup(ctx: Ctx, name_or_arn: str) -> dict[str, Any]:
    name = name_or_arn.rsplit("/", 1)[-1] if name_or_arn.startswith("arn:") else name_or_arn
    c = table(ctx.world, ctx.account, ctx.region).get(name)
    if c is None:
        raise _not_found(name_or_arn)
    return c


def event(
    world: World,
    c: dict[str, Any],
    desc: str,
    level: str = "Info",
    rtype: str = "Cluster",
    group: str | None = None,
    instance: str | None = None,
) -> None:
    ev = {
        "EventId": str(uuid.uuid4()),
        "ClusterArn": c["ClusterArn"],
        "ClusterName": c["ClusterName"],
        "ResourceType": rtype,
        "EventTime": world.now(),
        "Description": desc,
        "EventLevel": level,
    }
    if group:
        ev["InstanceGroupName"] = group
    if instance:
        ev["InstanceId"] = instance
    c["_events"].append(ev)
    del c["_events"][:-500]


def paginate(items: list[Any], p: dict[str, Any], default: int = 100) -> tuple[list[Any], str | None]:
    start = int(p.get("NextToken") or 0)
    size = int(p.get("MaxResults") or default)
    page = items[start : start + size]
    return page, (str(start + size) if start + size < len(items) else None)


def eks_cluster_for(account: str, region: str, arn: str) -> Any | None:
    from sandbox.aws.eks_clusters import moto_cluster

    if not arn.startswith("arn:aws:eks:"):
        return None
    parts = arn.split(":")
    if len(parts) < 6 or parts[4] != account:
        return None
    return moto_cluster(account, parts[3], parts[5].split("/", 1)[-1])


def validate_role(ctx: Ctx, role_arn: str) -> None:
    from moto.iam.models import iam_backends

    name = role_arn.rsplit("/", 1)[-1]
    iam = iam_backends[ctx.account]["aws"]
    if not any(r.name == name for r in iam.roles.values()):
        raise AwsError(
            "ValidationException",
            f"Role {role_arn} does not exist or is not assumable by SageMaker. Please provide a valid execution role.",
            400,
        )


def validate_vpc(ctx: Ctx, vpc: dict[str, Any] | None) -> None:
    from moto.ec2.models import ec2_backends

    if not vpc:
        return
    ec2 = ec2_backends[ctx.account][ctx.region]
    for subnet in vpc.get("Subnets") or []:
        try:
            ec2.get_subnet(subnet)
        except Exception:
            raise AwsError(
                "ValidationException", f"Subnet {subnet} does not exist in the account's {ctx.region} region.", 400
            )
    known = {g.id for g in ec2.describe_security_groups()}
    for sg in vpc.get("SecurityGroupIds") or []:
        if sg not in known:
            raise AwsError("ValidationException", f"Security group {sg} does not exist.", 400)


def require_in_service(c: dict[str, Any]) -> None:
    if c["ClusterStatus"] != "InService":
        raise AwsError(
            "ConflictException",
            f"Cluster {c['ClusterName']} is in {c['ClusterStatus']} status. "
            "Operation is allowed only when the cluster is InService.",
            400,
        )


def require_plan(
    ctx: Ctx, arn: str, group: dict[str, Any] | None = None, vpc: dict[str, Any] | None = None, already: int = 0
) -> None:
    """The plan exists, has room for the group's extra instances, and reserves capacity in a zone
    the group's subnets are in."""
    plans = ctx.world.table("training_plans", ctx.account, ctx.region)
    tp = next((tp for tp in plans.values() if tp["TrainingPlanArn"] == arn), None)
    if tp is None:
        raise AwsError("ValidationException", f"Training plan {arn} does not exist.", 400)
    if group is None:
        return
    if tp["Status"] in ("Expired", "Failed"):
        raise AwsError("ValidationException", f"Training plan {arn} is {tp['Status']}.", 400)
    extra = int(group.get("InstanceCount", 0)) - already
    if extra > int(tp.get("AvailableInstanceCount", 0)):
        raise AwsError(
            "ValidationException",
            f"Instance group {group['InstanceGroupName']} requests "
            f"{group.get('InstanceCount')} instances but training plan {tp['TrainingPlanName']} has "
            f"{tp.get('AvailableInstanceCount', 0)} available.",
            400,
        )
    zones = {rc.get("AvailabilityZone") for rc in tp.get("ReservedCapacitySummaries", [])} - {None}
    subnets = (group.get("OverrideVpcConfig") or {}).get("Subnets") or (vpc or {}).get("Subnets") or []
    subnet_zones = {subnet_zone(ctx.account, ctx.region, s) for s in subnets}
    if zones and subnet_zones and not zones & subnet_zones:
        raise AwsError(
            "ValidationException",
            f"The subnets of instance group {group['InstanceGroupName']} "
            f"({', '.join(sorted(subnet_zones))}) are not in the Availability Zone of training plan "
            f"{tp['TrainingPlanName']} ({', '.join(sorted(zones))}).",
            400,
        )


def validate_kubernetes_config(groups: list[dict[str, Any]]) -> None:
    """What the model's patterns let through but Kubernetes refuses (a name part over 63
    characters, a prefix over 253, a taint repeated for one effect): the node could never
    register, so the request is refused up front."""
    from sandbox.kube.names import label_value_errors, qualified_name_errors

    for g in groups:
        kc = g.get("KubernetesConfig") or {}
        name = g.get("InstanceGroupName")
        for key, value in (kc.get("Labels") or {}).items():
            for msg in qualified_name_errors(key) + [f"value {m}" for m in label_value_errors(value)]:
                raise AwsError(
                    "ValidationException",
                    f"Invalid Kubernetes label '{key}: {value}' for instance group {name}: {msg}.",
                    400,
                )
        seen = set()
        for t in kc.get("Taints") or []:
            for msg in qualified_name_errors(t.get("Key", "")):
                raise AwsError(
                    "ValidationException",
                    f"Invalid Kubernetes taint key '{t.get('Key')}' for instance group {name}: {msg}.",
                    400,
                )
            if (t.get("Key"), t.get("Effect")) in seen:
                raise AwsError(
                    "ValidationException",
                    f"Duplicate Kubernetes taint '{t.get('Key')}:{t.get('Effect')}' for instance group {name}: "
                    "taints must be unique by key and effect.",
                    400,
                )
            seen.add((t.get("Key"), t.get("Effect")))


def group_spec(raw: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(raw)
    spec.setdefault("ThreadsPerCore", 1)
    return spec


def _group_view(c: dict[str, Any], g: dict[str, Any]) -> dict[str, Any]:
    spec = g["spec"]
    name = spec["InstanceGroupName"]
    nodes = [n for n in c["_nodes"].values() if n["InstanceGroupName"] == name]
    out: dict[str, Any] = {
        "CurrentCount": sum(1 for n in nodes if n["Status"] == "Running"),
        "TargetCount": spec.get("InstanceCount", 0),
        "InstanceGroupName": name,
        "InstanceType": spec.get("InstanceType"),
        "ExecutionRole": spec.get("ExecutionRole"),
        "ThreadsPerCore": spec.get("ThreadsPerCore", 1),
        "Status": g["Status"],
        "CurrentImageReleaseVersion": c.get("_image", IMAGE_RELEASE),
        "DesiredImageReleaseVersion": c.get("_image", IMAGE_RELEASE),
        "ImageVersionStatus": "UpToDate",
    }
    if "MinInstanceCount" in spec:
        out["MinCount"] = spec["MinInstanceCount"]
    for k in (
        "LifeCycleConfig",
        "InstanceStorageConfigs",
        "OnStartDeepHealthChecks",
        "TrainingPlanArn",
        "OverrideVpcConfig",
        "ScheduledUpdateConfig",
        "CapacityRequirements",
        "NetworkInterface",
    ):
        if k in spec:
            out[k] = spec[k]
    if spec.get("TrainingPlanArn"):
        out["TrainingPlanStatus"] = "Active"
    kc = spec.get("KubernetesConfig")
    if kc:
        out["KubernetesConfig"] = {
            "CurrentLabels": kc.get("Labels", {}),
            "DesiredLabels": kc.get("Labels", {}),
            "CurrentTaints": kc.get("Taints", []),
            "DesiredTaints": kc.get("Taints", []),
        }
    return out


def describe(c: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in c.items() if not k.startswith("_")}
    out["InstanceGroups"] = [_group_view(c, g) for g in c["_groups"].values()]
    settings.view(c, out)
    return out


def zone_id(zone: str, account: str | None = None, subnet: str | None = None) -> str:
    """The zone's id as EC2 reports it for the node's subnet (zone names map to ids per account);
    derived from the name when there is no subnet to ask."""
    if account and subnet:
        from moto.ec2.models import ec2_backends

        try:
            return ec2_backends[account][zone[:-1]].get_subnet(subnet).availability_zone_id
        except Exception:  # noqa: BLE001 - moto raises its own InvalidSubnetID error
            pass
    region, letter = zone[:-1], zone[-1]
    short = "".join(w[0] for w in region.split("-")[:2]) + region.rsplit("-", 1)[-1]
    return f"{short}-az{ord(letter) - ord('a') + 1}"
