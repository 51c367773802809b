"""SageMaker HyperPod clusters, implemented here end to end (moto's model drops fields and has no
update/node operations). Shapes follow the botocore sagemaker model; timings follow world.DURATIONS.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from sandbox.aws.app import Ctx, handles
from sandbox.aws.eks_clusters import capacity_failure_message, subnet_zone
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World, new_id

IMAGE_RELEASE = "2025-06-01"
IMAGE_ID = "ami-0hyperpodeks000001"
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def _not_found(name: str) -> AwsError:
    return AwsError("ResourceNotFound", f"Cluster {name} not found.", 400)


def _table(world: World, account: str, region: str) -> dict[str, Any]:
    return world.table("hp_clusters", account, region)


def _lookup(ctx: Ctx, name_or_arn: str) -> dict[str, Any]:
    name = name_or_arn.rsplit("/", 1)[-1] if name_or_arn.startswith("arn:") else name_or_arn
    c = _table(ctx.world, ctx.account, ctx.region).get(name)
    if c is None:
        raise _not_found(name_or_arn)
    return c


def _event(
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


def _eks_cluster_for(account: str, region: str, arn: str) -> Any | None:
    from sandbox.aws.eks_clusters import moto_cluster

    if not arn.startswith("arn:aws:eks:"):
        return None
    parts = arn.split(":")
    if len(parts) < 6 or parts[4] != account:
        return None
    return moto_cluster(account, parts[3], parts[5].split("/", 1)[-1])


def _validate_role(ctx: Ctx, role_arn: str) -> None:
    from moto.iam.models import iam_backends

    name = role_arn.rsplit("/", 1)[-1]
    iam = iam_backends[ctx.account]["aws"]
    if not any(r.name == name for r in iam.roles.values()):
        raise AwsError(
            "ValidationException",
            f"Role {role_arn} does not exist or is not assumable by SageMaker. Please provide a valid execution role.",
            400,
        )


def _validate_vpc(ctx: Ctx, vpc: dict[str, Any] | None) -> None:
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


def _subnets(c: dict[str, Any], g: dict[str, Any]) -> list[str]:
    spec = g["spec"]
    return list((spec.get("OverrideVpcConfig") or {}).get("Subnets") or (c.get("VpcConfig") or {}).get("Subnets") or [])


def _capacity_fault(
    world: World, account: str, region: str, c: dict[str, Any], g: dict[str, Any]
) -> tuple[list[str], str | None]:
    """Subnets a group can launch in, and the failure message when it can launch nowhere."""
    itype = g["spec"].get("InstanceType", "")
    subnets = _subnets(c, g) or [""]
    ok, bad_zone = [], None
    for s in subnets:
        zone = subnet_zone(account, region, s) if s else f"{region}a"
        f = world.faults.peek("insufficient_capacity", instance_type=itype, availability_zone=zone, account=account)
        if f:
            bad_zone = zone
        else:
            ok.append(s)
    if ok:
        return ok, None
    return [], (
        f"Instance group {g['spec']['InstanceGroupName']} failed to provision {itype} instances: "
        + capacity_failure_message(itype, bad_zone or "")
        + " (Service: AmazonEC2; Status Code: 500; Error Code: InsufficientInstanceCapacity)"
    )


def _new_node(
    world: World,
    account: str,
    region: str,
    c: dict[str, Any],
    g: dict[str, Any],
    subnet: str,
    start: float,
    ready_at: float,
    logical_id: str | None = None,
) -> dict[str, Any]:
    iid = new_id("i-", 17)
    zone = subnet_zone(account, region, subnet) if subnet else f"{region}a"
    spec = g["spec"]
    octet = int(iid[-4:], 16)
    node = {
        "InstanceId": iid,
        "InstanceGroupName": spec["InstanceGroupName"],
        "InstanceType": spec["InstanceType"],
        "LaunchTime": start,
        "Status": "Pending",
        "Message": "",
        "NodeLogicalId": logical_id or str(uuid.uuid4()),
        "_subnet": subnet,
        "_zone": zone,
        "_ready_at": ready_at,
        "_dhc_at": start + (ready_at - start) * 0.6 if spec.get("OnStartDeepHealthChecks") else None,
        "_health": "Schedulable",
        "_dhc": None,
        "_fault": None,
        "_op": None,
        "_op_due": None,
        "PrivatePrimaryIp": f"10.1.{octet // 256 % 256}.{octet % 256}",
        "CapacityType": "Spot" if "Spot" in (spec.get("CapacityRequirements") or {}) else "OnDemand",
    }
    node["PrivateDnsHostname"] = f"ip-{node['PrivatePrimaryIp'].replace('.', '-')}.{region}.compute.internal"
    c["_nodes"][iid] = node
    return node


def _launch_nodes(
    world: World, account: str, region: str, c: dict[str, Any], g: dict[str, Any], count: int, duration: float
) -> str | None:
    """Schedule `count` new nodes over `duration` seconds; returns a failure message on no capacity."""
    if count <= 0:
        return None
    subnets, failure = _capacity_fault(world, account, region, c, g)
    if failure:
        return failure
    now = world.now()
    for i in range(count):
        ready = now + duration * (0.45 + 0.5 * (i + 1) / count)
        _new_node(world, account, region, c, g, subnets[i % len(subnets)], now, ready)
    return None


def _group_spec(raw: dict[str, Any]) -> dict[str, Any]:
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


def _describe(c: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in c.items() if not k.startswith("_")}
    out["InstanceGroups"] = [_group_view(c, g) for g in c["_groups"].values()]
    if c.get("AutoScaling"):
        out["AutoScaling"] = {
            **c["AutoScaling"],
            "Status": "InService" if c["ClusterStatus"] != "Creating" else "Creating",
        }
    return out


@handles("sagemaker", "CreateCluster")
def create_cluster(ctx: Ctx) -> Response:
    p = ctx.params
    name = p["ClusterName"]
    tbl = _table(ctx.world, ctx.account, ctx.region)
    if name in tbl:
        raise AwsError("ResourceInUse", f"Cluster with name {name} already exists. Choose a different name.", 400)
    orch = p.get("Orchestrator") or {}
    eks_arn = (orch.get("Eks") or {}).get("ClusterArn")
    if eks_arn:
        eks = _eks_cluster_for(ctx.account, ctx.region, eks_arn)
        if eks is None:
            raise AwsError("ValidationException", f"The EKS cluster {eks_arn} does not exist.", 400)
        if eks.status != "ACTIVE":
            raise AwsError(
                "ValidationException",
                f"The EKS cluster {eks_arn} is not in ACTIVE state (current state: {eks.status}).",
                400,
            )
    _validate_vpc(ctx, p.get("VpcConfig"))
    groups = p.get("InstanceGroups") or []
    seen = set()
    for g in groups:
        if g["InstanceGroupName"] in seen:
            raise AwsError("ValidationException", f"Duplicate instance group name {g['InstanceGroupName']}.", 400)
        seen.add(g["InstanceGroupName"])
        if not g.get("InstanceType"):
            raise AwsError(
                "ValidationException", f"InstanceType is required for instance group {g['InstanceGroupName']}.", 400
            )
        _validate_role(ctx, g["ExecutionRole"])
        _validate_vpc(ctx, g.get("OverrideVpcConfig"))
        if g.get("TrainingPlanArn"):
            _require_plan(ctx, g["TrainingPlanArn"], g, p.get("VpcConfig"))
    now = ctx.world.now()
    c: dict[str, Any] = {
        "ClusterArn": f"arn:aws:sagemaker:{ctx.region}:{ctx.account}:cluster/{new_id('', 12, _ALNUM)}",
        "ClusterName": name,
        "ClusterStatus": "Creating",
        "CreationTime": now,
        "_groups": {},
        "_nodes": {},
        "_events": [],
        "_op": "create",
        "_due": ctx.world.due("hp_create"),
        "_tags": p.get("Tags") or [],
    }
    for k in (
        "VpcConfig",
        "Orchestrator",
        "NodeRecovery",
        "NodeProvisioningMode",
        "AutoScaling",
        "TieredStorageConfig",
        "ClusterRole",
        "RestrictedInstanceGroups",
    ):
        if k in p:
            c[k] = copy.deepcopy(p[k])
    c.setdefault("NodeRecovery", "Automatic")
    fault = ctx.world.faults.take("create_fails", service="sagemaker", name=name, account=ctx.account)
    if fault:
        c["_fail"] = fault.get("message") or (
            "An internal error occurred while creating the cluster. Please delete the cluster and try again."
        )
    duration = c["_due"] - now
    for raw in groups:
        g = {"spec": _group_spec(raw), "Status": "Creating"}
        c["_groups"][raw["InstanceGroupName"]] = g
        failure = _launch_nodes(ctx.world, ctx.account, ctx.region, c, g, raw.get("InstanceCount", 0), duration)
        if failure:
            g["_fail"] = failure
    tbl[name] = c
    _event(ctx.world, c, f"Cluster {name} creation started.")
    return ctx.ok({"ClusterArn": c["ClusterArn"]})


@handles("sagemaker", "DescribeCluster")
def describe_cluster(ctx: Ctx) -> Response:
    return ctx.ok(_describe(_lookup(ctx, ctx.params["ClusterName"])))


@handles("sagemaker", "ListClusters")
def list_clusters(ctx: Ctx) -> Response:
    p = ctx.params
    items = list(_table(ctx.world, ctx.account, ctx.region).values())
    if p.get("NameContains"):
        items = [c for c in items if p["NameContains"] in c["ClusterName"]]
    if p.get("TrainingPlanArn"):
        items = [
            c
            for c in items
            if any(g["spec"].get("TrainingPlanArn") == p["TrainingPlanArn"] for g in c["_groups"].values())
        ]
    key = "ClusterName" if p.get("SortBy") == "NAME" else "CreationTime"
    items.sort(key=lambda c: c[key], reverse=p.get("SortOrder", "Descending") == "Descending")
    page, token = _paginate(items, p)
    out = []
    for c in page:
        s = {k: c[k] for k in ("ClusterArn", "ClusterName", "CreationTime", "ClusterStatus")}
        plans = sorted(
            {g["spec"]["TrainingPlanArn"] for g in c["_groups"].values() if g["spec"].get("TrainingPlanArn")}
        )
        if plans:
            s["TrainingPlanArns"] = plans
        out.append(s)
    return ctx.ok({"ClusterSummaries": out, **({"NextToken": token} if token else {})})


def _paginate(items: list[Any], p: dict[str, Any], default: int = 100) -> tuple[list[Any], str | None]:
    start = int(p.get("NextToken") or 0)
    size = int(p.get("MaxResults") or default)
    page = items[start : start + size]
    return page, (str(start + size) if start + size < len(items) else None)


@handles("sagemaker", "DeleteCluster")
def delete_cluster(ctx: Ctx) -> Response:
    c = _lookup(ctx, ctx.params["ClusterName"])
    if c["ClusterStatus"] != "Deleting":
        c["ClusterStatus"] = "Deleting"
        c["_op"], c["_due"] = "delete", ctx.world.due("hp_delete")
        for g in c["_groups"].values():
            g["Status"] = "Deleting"
        for n in c["_nodes"].values():
            n["Status"], n["_op"], n["_op_due"] = "ShuttingDown", "delete", c["_due"]
        _event(ctx.world, c, f"Cluster {c['ClusterName']} deletion started.")
    return ctx.ok({"ClusterArn": c["ClusterArn"]})


def _require_in_service(c: dict[str, Any]) -> None:
    if c["ClusterStatus"] != "InService":
        raise AwsError(
            "ConflictException",
            f"Cluster {c['ClusterName']} is in {c['ClusterStatus']} status. "
            "Operation is allowed only when the cluster is InService.",
            400,
        )


@handles("sagemaker", "UpdateCluster")
def update_cluster(ctx: Ctx) -> Response:
    p = ctx.params
    c = _lookup(ctx, p["ClusterName"])
    _require_in_service(c)
    to_delete = p.get("InstanceGroupsToDelete") or []
    for name in to_delete:
        if name not in c["_groups"]:
            raise AwsError(
                "ValidationException", f"Instance group {name} does not exist in cluster {c['ClusterName']}.", 400
            )
    for raw in p.get("InstanceGroups") or []:
        old = c["_groups"].get(raw["InstanceGroupName"])
        if old and raw.get("InstanceType") and raw["InstanceType"] != old["spec"]["InstanceType"]:
            raise AwsError(
                "ValidationException",
                f"InstanceType cannot be updated for instance group {raw['InstanceGroupName']}.",
                400,
            )
        if raw.get("ExecutionRole"):
            _validate_role(ctx, raw["ExecutionRole"])
        _validate_vpc(ctx, raw.get("OverrideVpcConfig"))
        if raw.get("TrainingPlanArn"):
            old = c["_groups"].get(raw["InstanceGroupName"])
            have = (
                0
                if old is None
                else sum(1 for n in c["_nodes"].values() if n["InstanceGroupName"] == raw["InstanceGroupName"])
            )
            _require_plan(ctx, raw["TrainingPlanArn"], raw, c.get("VpcConfig"), already=have)
    world = ctx.world
    now = world.now()
    c["ClusterStatus"], c["_op"], c["_due"] = "Updating", "update", world.due("hp_update")
    c.pop("FailureMessage", None)
    duration = c["_due"] - now
    for k in ("NodeRecovery", "NodeProvisioningMode", "AutoScaling", "TieredStorageConfig", "ClusterRole"):
        if k in p:
            c[k] = copy.deepcopy(p[k])
    for raw in p.get("InstanceGroups") or []:
        name = raw["InstanceGroupName"]
        g = c["_groups"].get(name)
        if g is None:
            g = c["_groups"][name] = {"spec": _group_spec(raw), "Status": "Creating"}
            have = 0
        else:
            g["spec"] = _group_spec({**g["spec"], **raw})
            g["Status"] = "Updating"
            g.pop("_fail", None)
            have = sum(1 for n in c["_nodes"].values() if n["InstanceGroupName"] == name and n["_op"] is None)
        want = int(raw.get("InstanceCount", 0))
        if want > have:
            failure = _launch_nodes(world, ctx.account, ctx.region, c, g, want - have, duration)
            if failure:
                g["_fail"] = failure
        elif want < have:
            victims = sorted(
                (n for n in c["_nodes"].values() if n["InstanceGroupName"] == name and n["_op"] is None),
                key=lambda n: n["LaunchTime"],
                reverse=True,
            )[: have - want]
            for n in victims:
                n["Status"], n["_op"], n["_op_due"] = "ShuttingDown", "delete", now + duration * 0.5
    for name in to_delete:
        c["_groups"][name]["Status"] = "Deleting"
        for n in c["_nodes"].values():
            if n["InstanceGroupName"] == name:
                n["Status"], n["_op"], n["_op_due"] = "ShuttingDown", "delete", now + duration * 0.8
    _event(world, c, f"Cluster {c['ClusterName']} update started.")
    return ctx.ok({"ClusterArn": c["ClusterArn"]})


@handles("sagemaker", "UpdateClusterSoftware")
def update_software(ctx: Ctx) -> Response:
    c = _lookup(ctx, ctx.params["ClusterName"])
    _require_in_service(c)
    world = ctx.world
    c["ClusterStatus"], c["_op"], c["_due"] = "SystemUpdating", "software", world.due("hp_software_update")
    only = {g["InstanceGroupName"] for g in ctx.params.get("InstanceGroups") or []}
    c["_software_groups"] = sorted(only) if only else None
    for g in c["_groups"].values():
        if not only or g["spec"]["InstanceGroupName"] in only:
            g["Status"] = "SystemUpdating"
    for n in c["_nodes"].values():
        if n["Status"] == "Running" and (not only or n["InstanceGroupName"] in only):
            n["Status"] = "SystemUpdating"
    _event(world, c, f"Cluster {c['ClusterName']} software update started.")
    return ctx.ok({"ClusterArn": c["ClusterArn"]})


def _resolve_nodes(c: dict[str, Any], p: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    out: list[tuple[str, str, dict[str, Any] | None]] = []
    for nid in p.get("NodeIds") or []:
        out.append(("id", nid, c["_nodes"].get(nid)))
    for lid in p.get("NodeLogicalIds") or []:
        out.append(("logical", lid, next((n for n in c["_nodes"].values() if n["NodeLogicalId"] == lid), None)))
    return out


def _batch(ctx: Ctx, op: str) -> Response:
    c = _lookup(ctx, ctx.params["ClusterName"])
    if c["ClusterStatus"] in ("Creating", "Deleting", "Failed"):
        raise AwsError("ValidationException", f"Cluster {c['ClusterName']} is in {c['ClusterStatus']} status.", 400)
    world = ctx.world
    ok: list[str] = []
    ok_logical: list[str] = []
    failed: list[dict[str, Any]] = []
    failed_logical: list[dict[str, Any]] = []
    for kind, ident, node in _resolve_nodes(c, ctx.params):
        err = None
        if node is None:
            err = (
                "NodeIdNotFound" if op == "delete" else "InstanceIdNotFound",
                f"Node {ident} not found in cluster {c['ClusterName']}.",
            )
        elif node["_op"] is not None or node["Status"] != "Running":
            err = (
                "InvalidNodeStatus" if op == "delete" else "InvalidInstanceStatus",
                f"Node {ident} is in {node['Status']} status.",
            )
        if err:
            code_key = "Code" if op == "delete" else "ErrorCode"
            rec = {code_key: err[0], "Message": err[1]}
            if kind == "id":
                failed.append({"NodeId": ident, **rec})
            else:
                failed_logical.append({"NodeLogicalId": ident, **rec})
            continue
        assert node is not None
        if op == "reboot":
            node["Status"], node["Message"] = "Pending", "Rebooting"
            node["_op"], node["_op_due"], node["_health"] = (
                "reboot",
                world.due("hp_node_reboot"),
                "UnschedulablePendingReboot",
            )
        elif op == "replace":
            node["Status"], node["Message"] = "ShuttingDown", "Replacing"
            node["_op"], node["_op_due"], node["_health"] = (
                "replace",
                world.due("hp_node_replace", 0.3),
                "UnschedulablePendingReplacement",
            )
        else:
            node["Status"] = "ShuttingDown"
            node["_op"], node["_op_due"] = "delete", world.due("hp_node_delete")
            g = c["_groups"].get(node["InstanceGroupName"])
            if g:
                g["spec"]["InstanceCount"] = max(0, int(g["spec"].get("InstanceCount", 0)) - 1)
        _event(
            world,
            c,
            f"Node {node['InstanceId']} {op} requested.",
            rtype="Instance",
            group=node["InstanceGroupName"],
            instance=node["InstanceId"],
        )
        (ok if kind == "id" else ok_logical).append(ident)
    out: dict[str, Any] = {"Successful": ok, "Failed": failed}
    if ctx.params.get("NodeLogicalIds"):
        out["SuccessfulNodeLogicalIds"], out["FailedNodeLogicalIds"] = ok_logical, failed_logical
    return ctx.ok(out)


@handles("sagemaker", "BatchRebootClusterNodes")
def batch_reboot(ctx: Ctx) -> Response:
    return _batch(ctx, "reboot")


@handles("sagemaker", "BatchReplaceClusterNodes")
def batch_replace(ctx: Ctx) -> Response:
    return _batch(ctx, "replace")


@handles("sagemaker", "BatchDeleteClusterNodes")
def batch_delete(ctx: Ctx) -> Response:
    return _batch(ctx, "delete")


def _node_summary(c: dict[str, Any], n: dict[str, Any], logical: bool) -> dict[str, Any]:
    s = {
        "InstanceGroupName": n["InstanceGroupName"],
        "InstanceId": n["InstanceId"],
        "InstanceType": n["InstanceType"],
        "LaunchTime": n["LaunchTime"],
        "InstanceStatus": {"Status": n["Status"], **({"Message": n["Message"]} if n.get("Message") else {})},
        "PrivateDnsHostname": n["PrivateDnsHostname"],
        "CurrentImageReleaseVersion": c.get("_image", IMAGE_RELEASE),
        "ImageVersionStatus": "UpToDate",
    }
    if n.get("LastSoftwareUpdateTime"):
        s["LastSoftwareUpdateTime"] = n["LastSoftwareUpdateTime"]
    if logical:
        s["NodeLogicalId"] = n["NodeLogicalId"]
    return s


@handles("sagemaker", "ListClusterNodes")
def list_nodes(ctx: Ctx) -> Response:
    p = ctx.params
    c = _lookup(ctx, p["ClusterName"])
    nodes = list(c["_nodes"].values())
    if p.get("InstanceGroupNameContains"):
        nodes = [n for n in nodes if p["InstanceGroupNameContains"] in n["InstanceGroupName"]]
    if p.get("CreationTimeAfter"):
        nodes = [n for n in nodes if n["LaunchTime"] > float(p["CreationTimeAfter"])]
    if p.get("CreationTimeBefore"):
        nodes = [n for n in nodes if n["LaunchTime"] < float(p["CreationTimeBefore"])]
    key = "InstanceId" if p.get("SortBy") == "NAME" else "LaunchTime"
    nodes.sort(key=lambda n: (n[key], n["InstanceId"]), reverse=p.get("SortOrder", "Ascending") == "Descending")
    page, token = _paginate(nodes, p)
    logical = bool(p.get("IncludeNodeLogicalIds")) or c.get("NodeProvisioningMode") == "Continuous"
    return ctx.ok(
        {
            "ClusterNodeSummaries": [_node_summary(c, n, logical) for n in page],
            **({"NextToken": token} if token else {}),
        }
    )


@handles("sagemaker", "DescribeClusterNode")
def describe_node(ctx: Ctx) -> Response:
    p = ctx.params
    c = _lookup(ctx, p["ClusterName"])
    node = c["_nodes"].get(p.get("NodeId") or "") or next(
        (n for n in c["_nodes"].values() if p.get("NodeLogicalId") and n["NodeLogicalId"] == p["NodeLogicalId"]), None
    )
    if node is None:
        raise AwsError(
            "ResourceNotFound",
            f"Node {p.get('NodeId') or p.get('NodeLogicalId')} not found in cluster {c['ClusterName']}.",
            400,
        )
    g = c["_groups"].get(node["InstanceGroupName"], {"spec": {}})
    spec = g["spec"]
    d = _node_summary(c, node, True)
    d.pop("ImageVersionStatus", None)
    d.update(
        {
            "ThreadsPerCore": spec.get("ThreadsPerCore", 1),
            "PrivatePrimaryIp": node["PrivatePrimaryIp"],
            "Placement": {"AvailabilityZone": node["_zone"], "AvailabilityZoneId": _zone_id(node["_zone"])},
            "CapacityType": node["CapacityType"],
            "CurrentImageId": IMAGE_ID,
            "DesiredImageId": IMAGE_ID,
            "DesiredImageReleaseVersion": c.get("_image", IMAGE_RELEASE),
            "ImageVersionStatus": "UpToDate",
        }
    )
    for k in ("LifeCycleConfig", "InstanceStorageConfigs", "OverrideVpcConfig", "NetworkInterface"):
        if k in spec:
            d[k] = spec[k]
    kc = spec.get("KubernetesConfig")
    if kc:
        d["KubernetesConfig"] = {
            "CurrentLabels": kc.get("Labels", {}),
            "DesiredLabels": kc.get("Labels", {}),
            "CurrentTaints": kc.get("Taints", []),
            "DesiredTaints": kc.get("Taints", []),
        }
    return ctx.ok({"NodeDetails": d})


def _zone_id(zone: str) -> str:
    region, letter = zone[:-1], zone[-1]
    short = "".join(w[0] for w in region.split("-")[:2]) + region.rsplit("-", 1)[-1]
    return f"{short}-az{ord(letter) - ord('a') + 1}"


@handles("sagemaker", "ListClusterEvents")
def list_events(ctx: Ctx) -> Response:
    p = ctx.params
    c = _lookup(ctx, p["ClusterName"])
    evs = list(c["_events"])
    for key, field in (
        ("InstanceGroupName", "InstanceGroupName"),
        ("NodeId", "InstanceId"),
        ("ResourceType", "ResourceType"),
    ):
        if p.get(key):
            evs = [e for e in evs if e.get(field) == p[key]]
    if p.get("EventTimeAfter"):
        evs = [e for e in evs if e["EventTime"] > float(p["EventTimeAfter"])]
    if p.get("EventTimeBefore"):
        evs = [e for e in evs if e["EventTime"] < float(p["EventTimeBefore"])]
    evs.sort(key=lambda e: e["EventTime"], reverse=p.get("SortOrder", "Descending") == "Descending")
    page, token = _paginate(evs, p)
    return ctx.ok({"Events": page, **({"NextToken": token} if token else {})})


def _require_plan(
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


def plan_usage(world: World) -> None:
    """InUse/Available instance counts of every training plan from the clusters' nodes."""
    for account, region, plans in world.tables("training_plans"):
        used: dict[str, int] = {}
        for c in _table(world, account, region).values():
            for n in c["_nodes"].values():
                arn = c["_groups"].get(n["InstanceGroupName"], {"spec": {}})["spec"].get("TrainingPlanArn")
                if arn:
                    used[arn] = used.get(arn, 0) + 1
        for tp in plans.values():
            in_use = used.get(tp["TrainingPlanArn"], 0)
            if tp.get("InUseInstanceCount") != in_use:
                tp["InUseInstanceCount"] = in_use
                tp["AvailableInstanceCount"] = max(0, tp["TotalInstanceCount"] - in_use)
                world.touch()


# ---- the controller tick ----------------------------------------------------------------------
def tick_hyperpod(world: World) -> None:
    now = world.now()
    plan_usage(world)
    for account, region, tbl in world.tables("hp_clusters"):
        for name, c in list(tbl.items()):
            _tick_nodes(world, account, region, c, now)
            if c.get("_due") is not None and now >= c["_due"]:
                _finish_op(world, tbl, name, c, now)


def _tick_nodes(world: World, account: str, region: str, c: dict[str, Any], now: float) -> None:
    for iid, n in list(c["_nodes"].items()):
        op = n["_op"]
        if op and n["_op_due"] is not None and now >= n["_op_due"]:
            world.touch()
            if op == "reboot":
                n.update({"Status": "Running", "Message": "", "_op": None, "_op_due": None, "_health": "Schedulable"})
                _event(world, c, f"Node {iid} rebooted.", rtype="Instance", group=n["InstanceGroupName"], instance=iid)
            elif op == "replace":
                c["_nodes"].pop(iid)
                g = c["_groups"].get(n["InstanceGroupName"])
                if g is not None:
                    dur = world.due("hp_node_replace", 0.7) - now
                    new = _new_node(world, account, region, c, g, n["_subnet"], now, now + dur, n["NodeLogicalId"])
                    _event(
                        world,
                        c,
                        f"Node {iid} replaced by {new['InstanceId']}.",
                        rtype="Instance",
                        group=n["InstanceGroupName"],
                        instance=new["InstanceId"],
                    )
            elif op == "delete":
                c["_nodes"].pop(iid)
                _event(
                    world, c, f"Node {iid} terminated.", rtype="Instance", group=n["InstanceGroupName"], instance=iid
                )
            continue
        if n["Status"] == "Pending" and op is None:
            if n.get("_dhc_at") and now >= n["_dhc_at"] and now < n["_ready_at"]:
                n["Status"], n["_dhc"] = "DeepHealthCheckInProgress", "InProgress"
                world.touch()
            elif now >= n["_ready_at"]:
                _node_ready(world, c, n)
        elif n["Status"] == "DeepHealthCheckInProgress" and now >= n["_ready_at"]:
            _node_ready(world, c, n)
        if n["Status"] == "Running" and n["_op"] is None and n["_fault"] is None:
            f = world.faults.take(
                "deep_health_fail",
                cluster=c["ClusterName"],
                instance_group=n["InstanceGroupName"],
                instance_id=iid,
                account=account,
            )
            if f:
                _apply_health_fault(world, c, n, f, now)


def _node_ready(world: World, c: dict[str, Any], n: dict[str, Any]) -> None:
    n["Status"] = "Running"
    if n.get("_dhc_at"):
        n["_dhc"] = "Passed"
    world.touch()
    _event(
        world,
        c,
        f"Node {n['InstanceId']} is running.",
        rtype="Instance",
        group=n["InstanceGroupName"],
        instance=n["InstanceId"],
    )


def _apply_health_fault(world: World, c: dict[str, Any], n: dict[str, Any], f: dict[str, Any], now: float) -> None:
    n["_fault"] = (f.get("fault_type", "GpuHealthCheckFailed"), f.get("fault_reason", "DcgmDiagnosticLevel4Failed"))
    n["_dhc"] = "Failed"
    automatic = c.get("NodeRecovery", "Automatic") == "Automatic"
    n["_health"] = "UnschedulablePendingReplacement" if automatic else "Unschedulable"
    _event(
        world,
        c,
        f"Node {n['InstanceId']} failed health checks: {n['_fault'][1]}.",
        "Error",
        "Instance",
        n["InstanceGroupName"],
        n["InstanceId"],
    )
    if automatic:
        n["_op"], n["_op_due"] = "replace", world.due("hp_node_replace", 0.3)
    world.touch()


def _finish_op(world: World, tbl: dict[str, Any], name: str, c: dict[str, Any], now: float) -> None:
    op = c["_op"]
    c["_op"], c["_due"] = None, None
    world.touch()
    if op == "delete":
        tbl.pop(name, None)
        return
    failures = [g["_fail"] for g in c["_groups"].values() if g.get("_fail")]
    if op == "create" and (c.get("_fail") or failures):
        c["ClusterStatus"] = "Failed"
        c["FailureMessage"] = c.get("_fail") or failures[0]
        for g in c["_groups"].values():
            g["Status"] = "Failed" if g.get("_fail") or c.get("_fail") else "InService"
        c["_nodes"].clear()
        _event(world, c, f"Cluster {name} creation failed: {c['FailureMessage']}", "Error")
        return
    for n in c["_nodes"].values():  # anything still coming up is up once the operation completes
        if n["_op"] is None and n["Status"] in ("Pending", "DeepHealthCheckInProgress"):
            _node_ready(world, c, n)
        if n["Status"] == "SystemUpdating":
            n["Status"], n["LastSoftwareUpdateTime"] = "Running", now
    for gname, g in list(c["_groups"].items()):
        if g["Status"] == "Deleting":
            c["_groups"].pop(gname)
            for iid in [i for i, n in c["_nodes"].items() if n["InstanceGroupName"] == gname]:
                c["_nodes"].pop(iid)
        elif g.get("_fail"):
            g["Status"] = "Failed"
        else:
            g["Status"] = "InService"
    c["ClusterStatus"] = "InService"
    if failures:
        c["FailureMessage"] = failures[0]
        _event(world, c, f"Cluster {name} update failed: {failures[0]}", "Error")
    else:
        _event(world, c, f"Cluster {name} is InService.")


# ---- nodes for the kube half ------------------------------------------------------------------
def kube_nodes(world: World, account: str, region: str, eks_arn: str) -> list[dict[str, Any]]:
    from sandbox.aws.instance_types import hardware

    out = []
    for c in _table(world, account, region).values():
        if ((c.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn") != eks_arn:
            continue
        for n in c["_nodes"].values():
            if n["Status"] not in ("Running", "SystemUpdating") and not (n["_op"] == "reboot"):
                continue
            g = c["_groups"].get(n["InstanceGroupName"], {"spec": {}})
            spec = g["spec"]
            labels = dict((spec.get("KubernetesConfig") or {}).get("Labels") or {})
            labels.update(
                {
                    "node.kubernetes.io/instance-type": n["InstanceType"],
                    "topology.kubernetes.io/zone": n["_zone"],
                    "topology.kubernetes.io/region": region,
                    "sagemaker.amazonaws.com/instance-group-name": n["InstanceGroupName"],
                    "sagemaker.amazonaws.com/compute-type": "hyperpod",
                    "sagemaker.amazonaws.com/cluster-name": c["ClusterName"],
                    "sagemaker.amazonaws.com/node-health-status": n["_health"],
                    "sagemaker.amazonaws.com/capacity-type": n["CapacityType"],
                }
            )
            if n.get("_dhc"):
                labels["sagemaker.amazonaws.com/deep-health-check-status"] = n["_dhc"]
            if n.get("_fault"):
                labels["sagemaker.amazonaws.com/fault-types"] = n["_fault"][0]
                labels["sagemaker.amazonaws.com/fault-reasons"] = n["_fault"][1]
            hw = hardware(n["InstanceType"])
            out.append(
                {
                    "name": f"hyperpod-{n['InstanceId']}",
                    "instance_id": n["InstanceId"],
                    "instance_group": n["InstanceGroupName"],
                    "instance_type": n["InstanceType"],
                    "zone": n["_zone"],
                    "capacity_type": n["CapacityType"],
                    "labels": labels,
                    "taints": [
                        {"key": t["Key"], "value": t.get("Value", ""), "effect": t["Effect"]}
                        for t in (spec.get("KubernetesConfig") or {}).get("Taints") or []
                    ],
                    "gpus": hw["gpus"],
                    "efa": hw["efa"],
                    "cpu": hw["cpu"],
                    "memory_gib": hw["memory_gib"],
                    "ready": n["_op"] != "reboot",
                }
            )
    return out
