"""SageMaker HyperPod cluster actions: CreateCluster, DescribeCluster, ListClusters, DeleteCluster,
UpdateCluster (a partial upsert of instance groups) and UpdateClusterSoftware.
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox.aws.constraints import validate_input
from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.hyperpod import settings
from sandbox.aws.hyperpod.capacity import launch_nodes
from sandbox.aws.hyperpod.limits import create_delta, require_quota, update_delta
from sandbox.aws.hyperpod.store import (
    ALNUM,
    describe,
    eks_cluster_for,
    event,
    group_spec,
    lookup,
    paginate,
    require_in_service,
    require_plan,
    table,
    validate_kubernetes_config,
    validate_role,
    validate_vpc,
)
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import new_id


@handles("sagemaker", "CreateCluster")
def create_cluster(ctx: Ctx) -> Response:
    p = ctx.params
    validate_input("sagemaker", "CreateCluster", p)
    validate_kubernetes_config(p.get("InstanceGroups") or [])
    name = p["ClusterName"]
    tbl = table(ctx.world, ctx.account, ctx.region)
    if name in tbl:
        raise AwsError("ResourceInUse", f"Cluster with name {name} already exists. Choose a different name.", 400)
    orch = p.get("Orchestrator") or {}
    eks_arn = (orch.get("Eks") or {}).get("ClusterArn")
    if eks_arn:
        eks = eks_cluster_for(ctx.account, ctx.region, eks_arn)
        if eks is None:
            raise AwsError("ValidationException", f"The EKS cluster {eks_arn} does not exist.", 400)
        if eks.status != "ACTIVE":
            raise AwsError(
                "ValidationException",
                f"The EKS cluster {eks_arn} is not in ACTIVE state (current state: {eks.status}).",
                400,
            )
    validate_vpc(ctx, p.get("VpcConfig"))
    settings.validate(ctx, p)
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
        validate_role(ctx, g["ExecutionRole"])
        validate_vpc(ctx, g.get("OverrideVpcConfig"))
        if g.get("TrainingPlanArn"):
            require_plan(ctx, g["TrainingPlanArn"], g, p.get("VpcConfig"))
    require_quota(ctx, create_delta(groups))
    now = ctx.world.now()
    c: dict[str, Any] = {
        "ClusterArn": f"arn:aws:sagemaker:{ctx.region}:{ctx.account}:cluster/{new_id('', 12, ALNUM)}",
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
    for k in ("VpcConfig", "Orchestrator", "RestrictedInstanceGroups"):
        if k in p:
            c[k] = copy.deepcopy(p[k])
    settings.apply(ctx.world, c, p)
    c.setdefault("NodeRecovery", "Automatic")
    fault = ctx.world.faults.take("create_fails", service="sagemaker", name=name, account=ctx.account)
    if fault:
        c["_fail"] = fault.get("message") or (
            "An internal error occurred while creating the cluster. Please delete the cluster and try again."
        )
    duration = c["_due"] - now
    for raw in groups:
        g = {"spec": group_spec(raw), "Status": "Creating"}
        c["_groups"][raw["InstanceGroupName"]] = g
        failure = launch_nodes(ctx.world, ctx.account, ctx.region, c, g, raw.get("InstanceCount", 0), duration)
        if failure:
            g["_fail"] = failure
    tbl[name] = c
    event(ctx.world, c, f"Cluster {name} creation started.")
    return ctx.ok({"ClusterArn": c["ClusterArn"]})


@handles("sagemaker", "DescribeCluster")
def describe_cluster(ctx: Ctx) -> Response:
    return ctx.ok(describe(lookup(ctx, ctx.params["ClusterName"])))


@handles("sagemaker", "ListClusters")
def list_clusters(ctx: Ctx) -> Response:
    p = ctx.params
    items = list(table(ctx.world, ctx.account, ctx.region).values())
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
    page, token = paginate(items, p)
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


@handles("sagemaker", "DeleteCluster")
def delete_cluster(ctx: Ctx) -> Response:
    c = lookup(ctx, ctx.params["ClusterName"])
    if c["ClusterStatus"] != "Deleting":
        c["ClusterStatus"] = "Deleting"
        c["_op"], c["_due"] = "delete", ctx.world.due("hp_delete")
        for g in c["_groups"].values():
            g["Status"] = "Deleting"
        for n in c["_nodes"].values():
            n["Status"], n["_op"], n["_op_due"] = "ShuttingDown", "delete", c["_due"]
        event(ctx.world, c, f"Cluster {c['ClusterName']} deletion started.")
    return ctx.ok({"ClusterArn": c["ClusterArn"]})


@handles("sagemaker", "UpdateCluster")
def update_cluster(ctx: Ctx) -> Response:
    p = ctx.params
    validate_input("sagemaker", "UpdateCluster", p)
    validate_kubernetes_config(p.get("InstanceGroups") or [])
    c = lookup(ctx, p["ClusterName"])
    require_in_service(c)
    settings.validate(ctx, p, c)
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
            validate_role(ctx, raw["ExecutionRole"])
        validate_vpc(ctx, raw.get("OverrideVpcConfig"))
        if raw.get("TrainingPlanArn"):
            old = c["_groups"].get(raw["InstanceGroupName"])
            have = (
                0
                if old is None
                else sum(1 for n in c["_nodes"].values() if n["InstanceGroupName"] == raw["InstanceGroupName"])
            )
            require_plan(ctx, raw["TrainingPlanArn"], raw, c.get("VpcConfig"), already=have)
    require_quota(ctx, update_delta(c, p.get("InstanceGroups") or []), c)
    world = ctx.world
    now = world.now()
    c["ClusterStatus"], c["_op"], c["_due"] = "Updating", "update", world.due("hp_update")
    c.pop("FailureMessage", None)
    duration = c["_due"] - now
    settings.apply(world, c, p)
    for raw in p.get("InstanceGroups") or []:
        name = raw["InstanceGroupName"]
        g = c["_groups"].get(name)
        if g is None:
            g = c["_groups"][name] = {"spec": group_spec(raw), "Status": "Creating"}
            have = 0
        else:
            g["spec"] = group_spec({**g["spec"], **raw})
            g["Status"] = "Updating"
            g.pop("_fail", None)
            have = sum(1 for n in c["_nodes"].values() if n["InstanceGroupName"] == name and n["_op"] is None)
        want = int(raw.get("InstanceCount", 0))
        if want > have:
            failure = launch_nodes(world, ctx.account, ctx.region, c, g, want - have, duration)
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
    event(world, c, f"Cluster {c['ClusterName']} update started.")
    return ctx.ok({"ClusterArn": c["ClusterArn"]})


@handles("sagemaker", "UpdateClusterSoftware")
def update_software(ctx: Ctx) -> Response:
    c = lookup(ctx, ctx.params["ClusterName"])
    require_in_service(c)
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
    event(world, c, f"Cluster {c['ClusterName']} software update started.")
    return ctx.ok({"ClusterArn": c["ClusterArn"]})
