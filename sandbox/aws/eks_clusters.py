"""EKS clusters and managed nodegroups: moto stores them, we add the time they take and failures.

moto answers ACTIVE at once; after moto stored a create we put the object in CREATING and let the
controller tick (lifecycle.py) move it on. Deletes become DELETING and disappear later.
"""

from __future__ import annotations

import uuid
from typing import Any

from sandbox.aws.addresses import release_nodegroup
from sandbox.aws.eks_records import ensure_creator_entry
from sandbox.aws.eks_update_log import record_update, view
from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World

DEFAULT_VERSION = "1.33"


def eks_backend(account: str, region: str) -> Any:
    from moto.eks.models import eks_backends

    return eks_backends[account][region]


def moto_cluster(account: str, region: str, name: str) -> Any | None:
    return eks_backend(account, region).clusters.get(name)


def require_active_cluster(ctx: Ctx, name: str) -> Any:
    cluster = moto_cluster(ctx.account, ctx.region, name)
    if cluster is None:
        raise AwsError("ResourceNotFoundException", f"No cluster found for name: {name}.", 404, {"clusterName": name})
    if cluster.status != "ACTIVE":
        raise AwsError(
            "InvalidRequestException",
            f"Cluster '{name}' is not in ACTIVE status. Current status: {cluster.status}",
            400,
            {"clusterName": name},
        )
    return cluster


def kube_endpoint(world: World, account: str, region: str, name: str) -> str:
    """The cluster's API server at the root of a loopback port of its own (sandbox/endpoints.py);
    the path form on the main port where no Sandbox server hands out ports (bare World in tools)."""
    key = f"{account}/{region}/{name}"
    if world.endpoint_of is not None:
        return world.endpoint_of(key)
    return f"{world.base_url}/k8s/{key}"


def _caller_role_arn(ctx: Ctx) -> str | None:
    from moto.iam.models import iam_backends

    key = iam_backends[ctx.account]["aws"].access_keys.get(ctx.req.access_key)
    return getattr(key, "role_arn", None) if key is not None else None


@handles("eks", "CreateCluster")
def create_cluster(ctx: Ctx) -> Response:
    name = ctx.params.get("name", "")
    status, headers, body = ctx.moto()
    if status >= 300:
        return status, headers, body
    cluster = moto_cluster(ctx.account, ctx.region, name)
    if not ctx.params.get("version"):
        cluster.version = DEFAULT_VERSION  # moto's default (1.19) is long out of support
    access = ctx.params.get("accessConfig") or {}
    cluster.access_config = {
        "bootstrapClusterCreatorAdminPermissions": access.get("bootstrapClusterCreatorAdminPermissions", True),
        "authenticationMode": access.get("authenticationMode", "API_AND_CONFIG_MAP"),
    }
    cluster.upgrade_policy = ctx.params.get("upgradePolicy") or {"supportType": "STANDARD"}
    # every cluster has its own OIDC issuer (moto gives all clusters of a process the same one), so an
    # IRSA trust names exactly one cluster
    cluster.identity = {
        "oidc": {"issuer": f"https://oidc.eks.{ctx.region}.amazonaws.com/id/{uuid.uuid4().hex.upper()}"}
    }
    cluster.status = "CREATING"
    cluster.endpoint = None
    cluster.certificate_authority = {}
    cluster.health = {"issues": []}
    fault = ctx.world.faults.take("create_fails", service="eks", name=name, account=ctx.account)
    meta = ctx.world.table("eks_clusters", ctx.account, ctx.region)
    meta[name] = {
        "phase": "CREATING",
        "due": ctx.world.due("eks_cluster_create"),
        "fail": fault.get("message") if fault else None,
        "failed": bool(fault),
        "creator": _caller_role_arn(ctx),
    }
    return _describe(ctx, f"/clusters/{name}", status)


def _describe(ctx: Ctx, path: str, status: int = 200) -> Response:
    s, headers, body = ctx.moto("GET", path, b"")
    return (status if s < 300 else s), headers, body


@handles("eks", "DeleteCluster")
def delete_cluster(ctx: Ctx) -> Response | None:
    name = ctx.req.path_params.get("name", "")
    cluster = moto_cluster(ctx.account, ctx.region, name)
    if cluster is None or cluster.nodegroups:
        return None  # moto answers ResourceNotFound / ResourceInUse exactly like EKS
    if cluster.status == "CREATING":
        raise AwsError(
            "ResourceInUseException", f"Cluster {name} is currently being created.", 409, {"clusterName": name}
        )
    if cluster.status != "DELETING":
        cluster.status = "DELETING"
        meta = ctx.world.table("eks_clusters", ctx.account, ctx.region)
        meta[name] = {**meta.get(name, {}), "phase": "DELETING", "due": ctx.world.due("eks_cluster_delete")}
    return _describe(ctx, f"/clusters/{name}")


@handles("eks", "CreateNodegroup")
def create_nodegroup(ctx: Ctx) -> Response:
    cluster_name = ctx.req.path_params.get("name", "")
    require_active_cluster(ctx, cluster_name)
    ng_name = ctx.params.get("nodegroupName", "")
    status, headers, body = ctx.moto()
    if status >= 300:
        return status, headers, body
    ng = moto_cluster(ctx.account, ctx.region, cluster_name).nodegroups[ng_name]
    ng.status = "CREATING"
    ng.health = {"issues": []}
    meta = ctx.world.table("eks_nodegroups", ctx.account, ctx.region)
    fault = ctx.world.faults.take("create_fails", service="eks", name=ng_name, account=ctx.account)
    meta[f"{cluster_name}/{ng_name}"] = {
        "phase": "CREATING",
        "due": ctx.world.due("nodegroup_create"),
        "fail": (fault.get("message") or "Instances failed to join the kubernetes cluster") if fault else None,
    }
    return _describe(ctx, f"/clusters/{cluster_name}/node-groups/{ng_name}", status)


@handles("eks", "DeleteNodegroup")
def delete_nodegroup(ctx: Ctx) -> Response | None:
    cluster_name = ctx.req.path_params.get("name", "")
    ng_name = ctx.req.path_params.get("nodegroupName", "")
    cluster = moto_cluster(ctx.account, ctx.region, cluster_name)
    if cluster is None or ng_name not in cluster.nodegroups:
        return None
    ng = cluster.nodegroups[ng_name]
    if ng.status != "DELETING":
        ng.status = "DELETING"
        meta = ctx.world.table("eks_nodegroups", ctx.account, ctx.region)
        meta[f"{cluster_name}/{ng_name}"] = {"phase": "DELETING", "due": ctx.world.due("nodegroup_delete")}
    return _describe(ctx, f"/clusters/{cluster_name}/node-groups/{ng_name}")


@handles("eks", "UpdateNodegroupConfig")
def update_nodegroup_config(ctx: Ctx) -> Response | None:
    cluster_name = ctx.req.path_params.get("name", "")
    ng_name = ctx.req.path_params.get("nodegroupName", "")
    cluster = moto_cluster(ctx.account, ctx.region, cluster_name)
    if cluster is None or ng_name not in cluster.nodegroups:
        return None
    ng = cluster.nodegroups[ng_name]
    if ng.status != "ACTIVE":
        raise AwsError("ResourceInUseException", f"Nodegroup {ng_name} is not in ACTIVE status", 409)
    body = ctx.params
    if body.get("scalingConfig"):
        ng.scaling_config = {**ng.scaling_config, **body["scalingConfig"]}
    labels = body.get("labels") or {}
    ng.labels = {**(ng.labels or {}), **labels.get("addOrUpdateLabels", {})}
    for k in labels.get("removeLabels", []):
        ng.labels.pop(k, None)
    ng.status = "UPDATING"
    meta = ctx.world.table("eks_nodegroups", ctx.account, ctx.region)
    meta[f"{cluster_name}/{ng_name}"] = {"phase": "UPDATING", "due": ctx.world.due("nodegroup_update")}
    u = record_update(
        ctx.world,
        ctx.account,
        ctx.region,
        cluster_name,
        "ConfigUpdate",
        [{"type": "DesiredSize", "value": str(ng.scaling_config.get("desiredSize"))}],
        "nodegroup_update",
        nodegroup=ng_name,
    )
    return ctx.ok({"update": view(u)})


def capacity_failure_message(instance_type: str, zone: str) -> str:
    return (
        f"We currently do not have sufficient {instance_type} capacity in the Availability Zone you "
        f"requested ({zone}). Our system will be working on provisioning additional capacity. You can "
        f"currently get {instance_type} capacity by not specifying an Availability Zone in your request "
        f"or choosing a different Availability Zone."
    )


def subnet_zone(account: str, region: str, subnet_id: str) -> str:
    from moto.ec2.models import ec2_backends

    try:
        return ec2_backends[account][region].get_subnet(subnet_id).availability_zone
    except Exception:
        return f"{region}a"


def tick_eks(world: World) -> None:
    """Advance EKS clusters and nodegroups whose phase is due (called under world.lock)."""
    now = world.now()
    for account, region, meta in world.tables("eks_clusters"):
        backend = eks_backend(account, region)
        for name, m in list(meta.items()):
            cluster = backend.clusters.get(name)
            if cluster is None:
                meta.pop(name, None)
                continue
            if m.get("due") is None or now < m["due"]:
                continue
            phase = m["phase"]
            m["due"] = None
            if phase == "CREATING":
                if m.get("failed"):
                    cluster.status = "FAILED"
                    cluster.health = {
                        "issues": [
                            {
                                "code": "InternalFailure",
                                "message": m.get("fail")
                                or (
                                    "Amazon EKS was unable to create the cluster control plane because of an internal "
                                    "failure. Delete the cluster and try again."
                                ),
                                "resourceIds": [name],
                            }
                        ]
                    }
                else:
                    cluster.status = "ACTIVE"
                    cluster.endpoint = kube_endpoint(world, account, region, name)
                    cluster.certificate_authority = {"data": world.ca_data()}
                    m["phase"] = "ACTIVE"
                    if (getattr(cluster, "access_config", None) or {}).get("bootstrapClusterCreatorAdminPermissions"):
                        ensure_creator_entry(world, account, region, name, m.get("creator"), now)
                world.touch()
            elif phase == "DELETING":
                backend.clusters.pop(name, None)
                backend.cluster_count = max(0, backend.cluster_count - 1)
                meta.pop(name, None)
                for kind in (
                    "eks_addons",
                    "eks_addons_preserved",
                    "eks_pod_identity",
                    "eks_access_entries",
                    "eks_nodegroups",
                ):
                    tbl = world.table(kind, account, region)
                    for k in [k for k in tbl if k.split("/", 1)[0] == name]:
                        tbl.pop(k)
                world.touch()
    for account, region, meta in world.tables("eks_nodegroups"):
        backend = eks_backend(account, region)
        for key, m in list(meta.items()):
            cluster_name, ng_name = key.split("/", 1)
            cluster = backend.clusters.get(cluster_name)
            ng = cluster.nodegroups.get(ng_name) if cluster else None
            if ng is None:
                meta.pop(key, None)
                continue
            if m.get("due") is None or now < m["due"]:
                continue
            m["due"] = None
            phase = m["phase"]
            world.touch()
            if phase == "CREATING":
                failure = m.get("fail")
                code = "NodeCreationFailure"
                if not failure:
                    for itype in ng.instance_types or []:
                        for subnet in ng.subnets or []:
                            zone = subnet_zone(account, region, subnet)
                            f = world.faults.peek("insufficient_capacity", instance_type=itype, availability_zone=zone)
                            f = f or world.faults.peek(
                                "insufficient_capacity", instance_type=f"ml.{itype}", availability_zone=zone
                            )
                            if f:
                                code = "AsgInstanceLaunchFailures"
                                failure = (
                                    "Could not launch On-Demand Instances. InsufficientInstanceCapacity - "
                                    + capacity_failure_message(itype, zone)
                                    + " Launching EC2 instance failed."
                                )
                if failure:
                    ng.status = "CREATE_FAILED"
                    ng.health = {
                        "issues": [{"code": code, "message": failure, "resourceIds": [f"eks-{ng_name}-{ng.uuid}"]}]
                    }
                    m["phase"] = "CREATE_FAILED"
                else:
                    ng.status = "ACTIVE"
                    m["phase"] = "ACTIVE"
            elif phase == "UPDATING":
                ng.status = "ACTIVE"
                m["phase"] = "ACTIVE"
            elif phase == "DELETING":
                release_nodegroup(world, account, region, ng.arn)
                cluster.nodegroups.pop(ng_name, None)
                cluster.nodegroup_count = max(0, cluster.nodegroup_count - 1)
                meta.pop(key, None)


def active_clusters(world: World) -> list[tuple[str, str, str, str]]:
    """(account, region, name, version) of every ACTIVE EKS cluster, for the kube half."""
    from moto.eks.models import eks_backends

    out = []
    for account, asb in list(eks_backends.items()):
        for region, backend in list(asb.items()):
            for name, c in list(backend.clusters.items()):
                if c.status in ("ACTIVE", "UPDATING"):
                    out.append((account, region, name, str(c.version)))
    return out
