"""EKS add-ons (moto has none): CreateAddon / DescribeAddon / ListAddons / UpdateAddon / DeleteAddon /
DescribeAddonVersions, with CREATING -> ACTIVE timing and the cert-manager dependency of the HyperPod
training operator."""

from __future__ import annotations

import uuid
from typing import Any

from sandbox.aws.eks_access import new_pod_identity
from sandbox.aws.eks_clusters import moto_cluster, require_active_cluster
from sandbox.aws.eks_update_log import record_update, view
from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World

# name -> (type, publisher, owner, versions newest first, defaultNamespace)
CATALOG: dict[str, dict[str, Any]] = {
    "vpc-cni": {
        "type": "networking",
        "publisher": "eks",
        "owner": "aws",
        "ns": "kube-system",
        "versions": ["v1.19.2-eksbuild.1", "v1.19.0-eksbuild.1", "v1.18.6-eksbuild.1"],
    },
    "coredns": {
        "type": "networking",
        "publisher": "eks",
        "owner": "aws",
        "ns": "kube-system",
        "versions": ["v1.11.4-eksbuild.2", "v1.11.3-eksbuild.1"],
    },
    "kube-proxy": {
        "type": "networking",
        "publisher": "eks",
        "owner": "aws",
        "ns": "kube-system",
        "versions": ["v{k8s}.0-eksbuild.2", "v{k8s}.0-eksbuild.1"],
    },
    "eks-pod-identity-agent": {
        "type": "security",
        "publisher": "eks",
        "owner": "aws",
        "ns": "kube-system",
        "versions": ["v1.3.4-eksbuild.1", "v1.3.2-eksbuild.2"],
    },
    "cert-manager": {
        "type": "security",
        "publisher": "cert-manager",
        "owner": "community",
        "ns": "cert-manager",
        "versions": ["v1.17.1-eksbuild.1", "v1.16.3-eksbuild.1"],
    },
    "aws-fsx-csi-driver": {
        "type": "storage",
        "publisher": "eks",
        "owner": "aws",
        "ns": "kube-system",
        "versions": ["v1.3.0-eksbuild.1", "v1.2.0-eksbuild.1"],
    },
    "aws-mountpoint-s3-csi-driver": {
        "type": "storage",
        "publisher": "s3",
        "owner": "aws",
        "ns": "kube-system",
        "versions": ["v1.13.0-eksbuild.1", "v1.12.0-eksbuild.1"],
    },
    "amazon-sagemaker-hyperpod-training-operator": {
        "type": "machine-learning",
        "publisher": "sagemaker",
        "owner": "aws",
        "ns": "aws-hyperpod",
        "versions": ["v1.1.0-eksbuild.1", "v1.0.0-eksbuild.1"],
    },
    "amazon-sagemaker-hyperpod-observability": {
        "type": "observability",
        "publisher": "sagemaker",
        "owner": "aws",
        "ns": "hyperpod-observability",
        "versions": ["v1.0.1-eksbuild.1", "v1.0.0-eksbuild.1"],
    },
    "metrics-server": {
        "type": "observability",
        "publisher": "eks",
        "owner": "community",
        "ns": "kube-system",
        "versions": ["v0.7.2-eksbuild.2"],
    },
    "amazon-cloudwatch-observability": {
        "type": "observability",
        "publisher": "eks",
        "owner": "aws",
        "ns": "amazon-cloudwatch",
        "versions": ["v3.3.1-eksbuild.1"],
    },
}
K8S_VERSIONS = ["1.33", "1.32", "1.31", "1.30", "1.29"]
DEPENDS_ON = {"amazon-sagemaker-hyperpod-training-operator": "cert-manager"}


def versions_for(name: str, k8s: str) -> list[str]:
    return [v.format(k8s=k8s) for v in CATALOG[name]["versions"]]


def _not_found(cluster: str, addon: str) -> AwsError:
    return AwsError(
        "ResourceNotFoundException",
        f"No addon: {addon} found in cluster: {cluster}",
        404,
        {"clusterName": cluster, "addonName": addon},
    )


def _view(a: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in a.items() if not k.startswith("_")}


@handles("eks", "DescribeAddonVersions")
def describe_addon_versions(ctx: Ctx) -> Response:
    k8s = ctx.req.q("kubernetesVersion")
    name = ctx.req.q("addonName")
    types = ctx.req.query.get("types", [])
    out = []
    for addon, info in CATALOG.items():
        if name and name != addon or types and info["type"] not in types:
            continue
        versions = []
        for i, v in enumerate(CATALOG[addon]["versions"]):
            compat = [
                {"clusterVersion": kv, "platformVersions": ["*"], "defaultVersion": i == 0}
                for kv in ([k8s] if k8s else K8S_VERSIONS)
            ]
            versions.append(
                {
                    "addonVersion": v.format(k8s=k8s or K8S_VERSIONS[1]),
                    "architecture": ["amd64", "arm64"],
                    "computeTypes": ["ec2", "hyperpod"],
                    "compatibilities": compat,
                    "requiresConfiguration": False,
                    "requiresIamPermissions": addon
                    in (
                        "vpc-cni",
                        "aws-fsx-csi-driver",
                        "aws-mountpoint-s3-csi-driver",
                        "amazon-sagemaker-hyperpod-observability",
                    ),
                }
            )
        out.append(
            {
                "addonName": addon,
                "type": info["type"],
                "addonVersions": versions,
                "publisher": info["publisher"],
                "owner": info["owner"],
                "defaultNamespace": info["ns"],
            }
        )
    return ctx.ok({"addons": out})


@handles("eks", "CreateAddon")
def create_addon(ctx: Ctx) -> Response:
    cluster_name = ctx.req.path_params["name"]
    cluster = require_active_cluster(ctx, cluster_name)
    p = ctx.params
    name = p.get("addonName", "")
    if name not in CATALOG:
        raise AwsError(
            "InvalidParameterException",
            f"Addon {name} specified is not supported",
            400,
            {"clusterName": cluster_name, "addonName": name},
        )
    k8s = str(cluster.version)
    allowed = versions_for(name, k8s)
    version = p.get("addonVersion") or allowed[0]
    if version not in allowed:
        raise AwsError(
            "InvalidParameterException",
            f"Addon version specified is not supported for addon {name} on Kubernetes {k8s}",
            400,
            {"clusterName": cluster_name, "addonName": name},
        )
    tbl = ctx.world.table("eks_addons", ctx.account, ctx.region)
    key = f"{cluster_name}/{name}"
    if key in tbl:
        raise AwsError(
            "ResourceInUseException",
            f"Addon already exists: {name}",
            409,
            {"clusterName": cluster_name, "addonName": name},
        )
    now = ctx.world.now()
    arn = f"arn:aws:eks:{ctx.region}:{ctx.account}:addon/{cluster_name}/{name}/{uuid.uuid4()}"
    assoc_arns = []
    for pia in p.get("podIdentityAssociations") or []:
        ns = (p.get("namespaceConfig") or {}).get("namespace") or CATALOG[name]["ns"]
        a = new_pod_identity(ctx, cluster_name, ns, pia["serviceAccount"], pia["roleArn"], {}, owner=arn)
        assoc_arns.append(a["associationArn"])
    fault = ctx.world.faults.take("create_fails", service="eks", name=name, account=ctx.account)
    addon = {
        "addonName": name,
        "clusterName": cluster_name,
        "status": "CREATING",
        "addonVersion": version,
        "health": {"issues": []},
        "addonArn": arn,
        "createdAt": now,
        "modifiedAt": now,
        "tags": p.get("tags") or {},
        "publisher": CATALOG[name]["publisher"],
        "owner": CATALOG[name]["owner"],
        "podIdentityAssociations": assoc_arns,
    }
    for k in ("serviceAccountRoleArn", "configurationValues", "namespaceConfig"):
        if p.get(k):
            addon[k] = p[k]
    addon["_due"] = ctx.world.due("addon_create")
    addon["_fail"] = (fault.get("message") or "Addon failed to create") if fault else None
    tbl[key] = addon
    return ctx.ok({"addon": _view(addon)})


def _get(ctx: Ctx) -> tuple[dict[str, Any], str, str]:
    cluster_name = ctx.req.path_params["name"]
    name = ctx.req.path_params["addonName"]
    if moto_cluster(ctx.account, ctx.region, cluster_name) is None:
        raise AwsError(
            "ResourceNotFoundException",
            f"No cluster found for name: {cluster_name}.",
            404,
            {"clusterName": cluster_name},
        )
    addon = ctx.world.table("eks_addons", ctx.account, ctx.region).get(f"{cluster_name}/{name}")
    if addon is None:
        raise _not_found(cluster_name, name)
    return addon, cluster_name, name


@handles("eks", "DescribeAddon")
def describe_addon(ctx: Ctx) -> Response:
    return ctx.ok({"addon": _view(_get(ctx)[0])})


@handles("eks", "ListAddons")
def list_addons(ctx: Ctx) -> Response:
    cluster_name = ctx.req.path_params["name"]
    if moto_cluster(ctx.account, ctx.region, cluster_name) is None:
        raise AwsError(
            "ResourceNotFoundException",
            f"No cluster found for name: {cluster_name}.",
            404,
            {"clusterName": cluster_name},
        )
    tbl = ctx.world.table("eks_addons", ctx.account, ctx.region)
    return ctx.ok({"addons": sorted(a["addonName"] for k, a in tbl.items() if k.split("/", 1)[0] == cluster_name)})


@handles("eks", "UpdateAddon")
def update_addon(ctx: Ctx) -> Response:
    addon, cluster_name, name = _get(ctx)
    if addon["status"] in ("CREATING", "DELETING", "UPDATING"):
        raise AwsError(
            "ResourceInUseException",
            f"Addon {name} is in {addon['status']} status",
            409,
            {"clusterName": cluster_name, "addonName": name},
        )
    p = ctx.params
    params = []
    if p.get("addonVersion"):
        k8s = str(moto_cluster(ctx.account, ctx.region, cluster_name).version)
        if p["addonVersion"] not in versions_for(name, k8s):
            raise AwsError(
                "InvalidParameterException", f"Addon version specified is not supported for addon {name}", 400
            )
        addon["addonVersion"] = p["addonVersion"]
        params.append({"type": "AddonVersion", "value": p["addonVersion"]})
    for key, ptype in (
        ("serviceAccountRoleArn", "ServiceAccountRoleArn"),
        ("configurationValues", "ConfigurationValues"),
        ("resolveConflicts", "ResolveConflicts"),
    ):
        if key in p:
            if key != "resolveConflicts":
                addon[key] = p[key]
            params.append({"type": ptype, "value": str(p[key])})
    addon["status"] = "UPDATING"
    addon["modifiedAt"] = ctx.world.now()
    addon["_due"] = ctx.world.due("addon_update")
    addon["_fail"] = None
    u = record_update(
        ctx.world, ctx.account, ctx.region, cluster_name, "AddonUpdate", params, "addon_update", addon=name
    )
    return ctx.ok({"update": view(u)})


@handles("eks", "DeleteAddon")
def delete_addon(ctx: Ctx) -> Response:
    addon, cluster_name, name = _get(ctx)
    if addon["status"] != "DELETING":
        addon["status"] = "DELETING"
        addon["_due"] = ctx.world.due("addon_delete")
        # pod identity associations owned by the add-on go with it
        pia = ctx.world.table("eks_pod_identity", ctx.account, ctx.region)
        for k in [k for k, a in pia.items() if a.get("ownerArn") == addon["addonArn"]]:
            pia.pop(k)
    return ctx.ok({"addon": _view(addon)})


def tick_addons(world: World) -> None:
    now = world.now()
    for account, region, tbl in world.tables("eks_addons"):
        for key, a in list(tbl.items()):
            if a.get("_due") is None or now < a["_due"]:
                continue
            cluster = moto_cluster(account, region, a["clusterName"])
            dep = DEPENDS_ON.get(a["addonName"])
            if a["status"] == "CREATING" and dep and not a.get("_fail"):
                d = tbl.get(f"{a['clusterName']}/{dep}")
                if d is None or d["status"] not in ("ACTIVE", "UPDATING"):
                    if d is not None and d["status"] == "CREATING":
                        continue  # wait for the dependency, as the operator's pods would
                    a["_fail"] = (
                        f"{dep} is not installed on the cluster. {a['addonName']} requires the {dep} "
                        f"add-on to be installed and ACTIVE before it can be created."
                    )
            a["_due"] = None
            world.touch()
            if a["status"] == "DELETING" or cluster is None:
                tbl.pop(key)
            elif a["status"] == "CREATING" and a.get("_fail"):
                a["status"] = "CREATE_FAILED"
                a["health"] = {"issues": [{"code": "ConfigurationConflict", "message": a["_fail"], "resourceIds": []}]}
            elif a["status"] in ("CREATING", "UPDATING"):
                a["status"] = "ACTIVE"
            a["modifiedAt"] = now


def active_addons(world: World, account: str, region: str, cluster: str) -> set[str]:
    tbl = world.table("eks_addons", account, region)
    return {
        a["addonName"]
        for k, a in tbl.items()
        if k.split("/", 1)[0] == cluster and a["status"] in ("ACTIVE", "UPDATING", "DEGRADED")
    }
