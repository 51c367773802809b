"""SageMaker HyperPod node actions: the Batch{Add,Reboot,Replace,Delete}ClusterNodes operations,
ListClusterNodes, DescribeClusterNode and ListClusterEvents. `add_nodes` / `delete_node` are also
what managed autoscaling does (hyperpod/autoscaling.py).
"""

from __future__ import annotations

from typing import Any

from sandbox.aws.eks_clusters import subnet_zone
from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.hyperpod.capacity import launch_nodes
from sandbox.aws.hyperpod.store import IMAGE_ID, IMAGE_RELEASE, event, lookup, paginate, zone_id
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World


def delete_node(world: World, c: dict[str, Any], node: dict[str, Any], why: str = "") -> None:
    """BatchDeleteClusterNodes for one node: it shuts down and its group's count drops by one."""
    node["Status"] = "ShuttingDown"
    node["_op"], node["_op_due"] = "delete", world.due("hp_node_delete")
    g = c["_groups"].get(node["InstanceGroupName"])
    if g:
        g["spec"]["InstanceCount"] = max(0, int(g["spec"].get("InstanceCount", 0)) - 1)
    node_event(world, c, node, "delete", why)


def node_event(world: World, c: dict[str, Any], node: dict[str, Any], op: str, why: str = "") -> None:
    text = f"Node {node['InstanceId']} {op} requested." + (f" {why}" if why else "")
    event(world, c, text, rtype="Instance", group=node["InstanceGroupName"], instance=node["InstanceId"])


def add_nodes(
    world: World, account: str, region: str, c: dict[str, Any], group: dict[str, Any], count: int, why: str = ""
) -> list[dict[str, Any]] | str:
    """BatchAddClusterNodes for one group: the target count rises by `count` and the nodes start
    coming up; returns them, or the failure message when no zone has capacity (the count stays)."""
    before = set(c["_nodes"])
    failure = launch_nodes(world, account, region, c, group, count, world.due("hp_update") - world.now())
    if failure:
        event(world, c, failure, "Error", "InstanceGroup", group["spec"]["InstanceGroupName"])
        return failure
    group["spec"]["InstanceCount"] = int(group["spec"].get("InstanceCount", 0)) + count
    name = group["spec"]["InstanceGroupName"]
    event(world, c, f"Instance group {name} target count raised by {count}.{' ' + why if why else ''}", group=name)
    return [n for iid, n in c["_nodes"].items() if iid not in before]


def _resolve_nodes(c: dict[str, Any], p: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    out: list[tuple[str, str, dict[str, Any] | None]] = []
    for nid in p.get("NodeIds") or []:
        out.append(("id", nid, c["_nodes"].get(nid)))
    for lid in p.get("NodeLogicalIds") or []:
        out.append(("logical", lid, next((n for n in c["_nodes"].values() if n["NodeLogicalId"] == lid), None)))
    return out


def _batch(ctx: Ctx, op: str) -> Response:
    c = lookup(ctx, ctx.params["ClusterName"])
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
            delete_node(world, c, node)
        if op != "delete":
            node_event(world, c, node, op)
        (ok if kind == "id" else ok_logical).append(ident)
    out: dict[str, Any] = {"Successful": ok, "Failed": failed}
    if ctx.params.get("NodeLogicalIds"):
        out["SuccessfulNodeLogicalIds"], out["FailedNodeLogicalIds"] = ok_logical, failed_logical
    return ctx.ok(out)


@handles("sagemaker", "BatchAddClusterNodes")
def batch_add(ctx: Ctx) -> Response:
    c = lookup(ctx, ctx.params["ClusterName"])
    if c["ClusterStatus"] in ("Creating", "Deleting", "Failed"):
        raise AwsError("ValidationException", f"Cluster {c['ClusterName']} is in {c['ClusterStatus']} status.", 400)
    if c.get("NodeProvisioningMode") != "Continuous":
        raise AwsError(
            "ValidationException",
            "BatchAddClusterNodes is only supported for clusters with NodeProvisioningMode set to Continuous.",
            400,
        )
    ok: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for req in ctx.params.get("NodesToAdd") or []:
        name, count = req["InstanceGroupName"], int(req["IncrementTargetCountBy"])
        g = c["_groups"].get(name)
        code, message = None, ""
        if g is None:
            code, message = (
                "InstanceGroupNotFound",
                f"Instance group {name} does not exist in cluster {c['ClusterName']}.",
            )
        elif g["Status"] not in ("InService", "Updating"):
            code, message = "InvalidInstanceGroupStatus", f"Instance group {name} is in {g['Status']} status."
        elif req.get("InstanceTypes") and g["spec"]["InstanceType"] not in req["InstanceTypes"]:
            code, message = "IncompatibleInstanceTypes", f"Instance group {name} uses {g['spec']['InstanceType']}."
        elif req.get("AvailabilityZones") and not set(req["AvailabilityZones"]) & _zones(ctx, c, g):
            code, message = "IncompatibleAvailabilityZones", f"Instance group {name} has no subnet in those zones."
        if code is None:
            added = add_nodes(ctx.world, ctx.account, ctx.region, c, g, count)
            if isinstance(added, str):
                code, message = "IncompatibleAvailabilityZones", added
            else:
                ok += [
                    {"NodeLogicalId": n["NodeLogicalId"], "InstanceGroupName": name, "Status": n["Status"]}
                    for n in added
                ]
                continue
        failed.append({"InstanceGroupName": name, "ErrorCode": code, "FailedCount": count, "Message": message})
    return ctx.ok({"Successful": ok, "Failed": failed})


def _zones(ctx: Ctx, c: dict[str, Any], g: dict[str, Any]) -> set[str]:
    spec = g["spec"]
    subnets = (spec.get("OverrideVpcConfig") or {}).get("Subnets") or (c.get("VpcConfig") or {}).get("Subnets") or []
    return {subnet_zone(ctx.account, ctx.region, s) for s in subnets}


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
    c = lookup(ctx, p["ClusterName"])
    nodes = list(c["_nodes"].values())
    if p.get("InstanceGroupNameContains"):
        nodes = [n for n in nodes if p["InstanceGroupNameContains"] in n["InstanceGroupName"]]
    if p.get("CreationTimeAfter"):
        nodes = [n for n in nodes if n["LaunchTime"] > float(p["CreationTimeAfter"])]
    if p.get("CreationTimeBefore"):
        nodes = [n for n in nodes if n["LaunchTime"] < float(p["CreationTimeBefore"])]
    key = "InstanceId" if p.get("SortBy") == "NAME" else "LaunchTime"
    nodes.sort(key=lambda n: (n[key], n["InstanceId"]), reverse=p.get("SortOrder", "Ascending") == "Descending")
    page, token = paginate(nodes, p)
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
    c = lookup(ctx, p["ClusterName"])
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
            "Placement": {
                "AvailabilityZone": node["_zone"],
                "AvailabilityZoneId": zone_id(node["_zone"], ctx.account, node.get("_subnet")),
            },
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


@handles("sagemaker", "ListClusterEvents")
def list_events(ctx: Ctx) -> Response:
    p = ctx.params
    c = lookup(ctx, p["ClusterName"])
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
    page, token = paginate(evs, p)
    return ctx.ok({"Events": page, **({"NextToken": token} if token else {})})
