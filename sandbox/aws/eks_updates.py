"""EKS updates: UpdateClusterVersion (ACTIVE -> UPDATING -> ACTIVE), DescribeUpdate / ListUpdates for
every update we hand out (cluster version, add-on, nodegroup config), DescribeClusterVersions,
UpdateAccessEntry and UpdatePodIdentityAssociation. (DescribeAddonConfiguration is in eks_addons.py.)"""

from __future__ import annotations

from typing import Any

from sandbox.aws.eks_access import _entry, _pia, _view
from sandbox.aws.eks_clusters import moto_cluster, require_active_cluster
from sandbox.aws.eks_update_log import record_update, view
from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World

VERSIONS = [
    ("1.33", "STANDARD_SUPPORT", True),
    ("1.32", "STANDARD_SUPPORT", False),
    ("1.31", "STANDARD_SUPPORT", False),
    ("1.30", "EXTENDED_SUPPORT", False),
    ("1.29", "EXTENDED_SUPPORT", False),
]


@handles("eks", "UpdateClusterVersion")
def update_cluster_version(ctx: Ctx) -> Response:
    name = ctx.req.path_params["name"]
    cluster = require_active_cluster(ctx, name)
    version = ctx.params["version"]
    known = [v for v, _, _ in VERSIONS]
    if version not in known:
        raise AwsError("InvalidParameterException", f"unsupported Kubernetes version {version}", 400)
    if known.index(version) != known.index(str(cluster.version)) - 1:
        raise AwsError(
            "InvalidParameterException",
            f"Unsupported Kubernetes minor version update from {cluster.version} to {version}",
            400,
            {"clusterName": name},
        )
    cluster.status = "UPDATING"
    u = record_update(
        ctx.world,
        ctx.account,
        ctx.region,
        name,
        "VersionUpdate",
        [{"type": "Version", "value": version}, {"type": "PlatformVersion", "value": "eks.1"}],
        "eks_cluster_update",
    )
    u["_version"] = version
    return ctx.ok({"update": view(u)})


def _find(ctx: Ctx) -> dict[str, Any]:
    name = ctx.req.path_params["name"]
    if moto_cluster(ctx.account, ctx.region, name) is None:
        raise AwsError("ResourceNotFoundException", f"No cluster found for name: {name}.", 404, {"clusterName": name})
    u = ctx.world.table("eks_updates", ctx.account, ctx.region).get(f"{name}/{ctx.req.path_params['updateId']}")
    if u is None:
        raise AwsError(
            "ResourceNotFoundException",
            f"No update found for ID: {ctx.req.path_params['updateId']}",
            404,
            {"clusterName": name},
        )
    return u


@handles("eks", "DescribeUpdate")
def describe_update(ctx: Ctx) -> Response:
    return ctx.ok({"update": view(_find(ctx))})


@handles("eks", "ListUpdates")
def list_updates(ctx: Ctx) -> Response:
    name = ctx.req.path_params["name"]
    if moto_cluster(ctx.account, ctx.region, name) is None:
        raise AwsError("ResourceNotFoundException", f"No cluster found for name: {name}.", 404, {"clusterName": name})
    ng, addon = ctx.req.q("nodegroupName"), ctx.req.q("addonName")
    ids = [
        u["id"]
        for u in sorted(ctx.world.table("eks_updates", ctx.account, ctx.region).values(), key=lambda u: u["createdAt"])
        if u["_cluster"] == name and u["_nodegroup"] == ng and u["_addon"] == addon
    ]
    return ctx.ok({"updateIds": ids})


@handles("eks", "DescribeClusterVersions")
def describe_cluster_versions(ctx: Ctx) -> Response:
    wanted = set(ctx.req.query.get("clusterVersions", []))
    out = []
    for v, status, default in VERSIONS:
        if wanted and v not in wanted or ctx.req.q("defaultOnly") == "true" and not default:
            continue
        out.append(
            {
                "clusterVersion": v,
                "clusterType": "eks",
                "defaultPlatformVersion": "eks.1",
                "defaultVersion": default,
                "status": status.lower().replace("_", "-"),
                "versionStatus": status,
                "kubernetesPatchVersion": f"{v}.4",
            }
        )
    return ctx.ok({"clusterVersions": out})


@handles("eks", "UpdateAccessEntry")
def update_access_entry(ctx: Ctx) -> Response:
    _, e = _entry(ctx)
    for k in ("kubernetesGroups", "username"):
        if k in ctx.params:
            e[k] = ctx.params[k]
    e["modifiedAt"] = ctx.world.now()
    return ctx.ok({"accessEntry": _view(e)})


@handles("eks", "UpdatePodIdentityAssociation")
def update_pod_identity(ctx: Ctx) -> Response:
    _, a = _pia(ctx)
    for k in ("roleArn", "disableSessionTags", "targetRoleArn", "policy"):
        if k in ctx.params:
            a[k] = ctx.params[k]
    a["modifiedAt"] = ctx.world.now()
    return ctx.ok({"association": a})


def tick_updates(world: World) -> None:
    now = world.now()
    for account, region, tbl in world.tables("eks_updates"):
        for u in tbl.values():
            if u.get("_due") is None or now < u["_due"]:
                continue
            u["_due"] = None
            u["status"] = "Successful"
            world.touch()
            if u["type"] == "VersionUpdate":
                c = moto_cluster(account, region, u["_cluster"])
                if c is not None:
                    c.version = u["_version"]
                    c.status = "ACTIVE"
