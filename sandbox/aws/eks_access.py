"""EKS pod identity associations, access entries and access policies (moto has none of them)."""

from __future__ import annotations

import uuid
from typing import Any

from sandbox.aws.eks_clusters import moto_cluster
from sandbox.aws.eks_records import policy_arn
from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import new_id

ACCESS_POLICIES = [
    "AmazonEKSAdminPolicy",
    "AmazonEKSAdminViewPolicy",
    "AmazonEKSClusterAdminPolicy",
    "AmazonEKSEditPolicy",
    "AmazonEKSViewPolicy",
    "AmazonEKSAutoNodePolicy",
    "AmazonEKSComputePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSHybridPolicy",
    "AmazonSagemakerHyperpodClusterPolicy",
    "AmazonSagemakerHyperpodControllerPolicy",
    "AmazonSagemakerHyperpodSystemNamespacePolicy",
]


def _cluster(ctx: Ctx) -> tuple[str, Any]:
    name = ctx.req.path_params["name"]
    c = moto_cluster(ctx.account, ctx.region, name)
    if c is None or c.status == "DELETING":
        raise AwsError("ResourceNotFoundException", f"No cluster found for name: {name}.", 404, {"clusterName": name})
    return name, c


# ---- pod identity associations ---------------------------------------------------------------
def new_pod_identity(
    ctx: Ctx,
    cluster: str,
    namespace: str,
    service_account: str,
    role_arn: str,
    extra: dict[str, Any],
    owner: str | None = None,
) -> dict[str, Any]:
    tbl = ctx.world.table("eks_pod_identity", ctx.account, ctx.region)
    for a in tbl.values():
        if a["clusterName"] == cluster and a["namespace"] == namespace and a["serviceAccount"] == service_account:
            raise AwsError(
                "ResourceInUseException",
                "Association already exists for the provided service account and namespace",
                409,
            )
    aid = new_id("a-", 17, "abcdefghijklmnopqrstuvwxyz0123456789")
    now = ctx.world.now()
    a = {
        "clusterName": cluster,
        "namespace": namespace,
        "serviceAccount": service_account,
        "roleArn": role_arn,
        "associationArn": f"arn:aws:eks:{ctx.region}:{ctx.account}:podidentityassociation/{cluster}/{aid}",
        "associationId": aid,
        "tags": extra.get("tags") or {},
        "createdAt": now,
        "modifiedAt": now,
        "disableSessionTags": bool(extra.get("disableSessionTags", False)),
    }
    if owner:
        a["ownerArn"] = owner
    for k in ("targetRoleArn", "policy"):
        if extra.get(k):
            a[k] = extra[k]
    tbl[f"{cluster}/{aid}"] = a
    return a


@handles("eks", "CreatePodIdentityAssociation")
def create_pia(ctx: Ctx) -> Response:
    cluster, _ = _cluster(ctx)
    p = ctx.params
    a = new_pod_identity(ctx, cluster, p["namespace"], p["serviceAccount"], p["roleArn"], p)
    return ctx.ok({"association": a})


def _pia(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    cluster, _ = _cluster(ctx)
    aid = ctx.req.path_params["associationId"]
    a = ctx.world.table("eks_pod_identity", ctx.account, ctx.region).get(f"{cluster}/{aid}")
    if a is None:
        raise AwsError("ResourceNotFoundException", f"Pod identity association {aid} not found", 404)
    return cluster, a


@handles("eks", "DescribePodIdentityAssociation")
def describe_pia(ctx: Ctx) -> Response:
    return ctx.ok({"association": _pia(ctx)[1]})


@handles("eks", "DeletePodIdentityAssociation")
def delete_pia(ctx: Ctx) -> Response:
    cluster, a = _pia(ctx)
    if a.get("ownerArn"):
        raise AwsError(
            "InvalidRequestException",
            "Pod identity association is owned by an add-on and cannot be deleted directly",
            400,
        )
    ctx.world.table("eks_pod_identity", ctx.account, ctx.region).pop(f"{cluster}/{a['associationId']}")
    return ctx.ok({"association": a})


@handles("eks", "ListPodIdentityAssociations")
def list_pia(ctx: Ctx) -> Response:
    cluster, _ = _cluster(ctx)
    ns, sa = ctx.req.q("namespace"), ctx.req.q("serviceAccount")
    out = []
    for a in ctx.world.table("eks_pod_identity", ctx.account, ctx.region).values():
        if a["clusterName"] != cluster or ns and a["namespace"] != ns or sa and a["serviceAccount"] != sa:
            continue
        out.append(
            {k: a[k] for k in ("clusterName", "namespace", "serviceAccount", "associationArn", "associationId")}
            | ({"ownerArn": a["ownerArn"]} if a.get("ownerArn") else {})
        )
    return ctx.ok({"associations": out})


# ---- access entries ----------------------------------------------------------------------------
def _require_api_mode(c: Any) -> None:
    mode = (getattr(c, "access_config", None) or {}).get("authenticationMode", "API_AND_CONFIG_MAP")
    if mode not in ("API", "API_AND_CONFIG_MAP"):
        raise AwsError(
            "InvalidRequestException",
            "The cluster's authentication mode must be set to one of "
            "[API, API_AND_CONFIG_MAP] to perform this operation.",
            400,
        )


def _entry_arn(ctx: Ctx, cluster: str, principal: str) -> str:
    kind, _, name = principal.split(":", 5)[-1].partition("/")
    return (
        f"arn:aws:eks:{ctx.region}:{ctx.account}:access-entry/{cluster}/{kind}/{ctx.account}/"
        f"{name.rsplit('/', 1)[-1]}/{uuid.uuid4().hex[:8]}"
    )


def make_entry(ctx: Ctx, cluster: str, principal: str, p: dict[str, Any]) -> dict[str, Any]:
    now = ctx.world.now()
    name = principal.rsplit("/", 1)[-1]
    if ":role/" in principal:
        username = f"arn:aws:sts::{ctx.account}:assumed-role/{name}/{{{{SessionName}}}}"
    else:
        username = principal
    return {
        "clusterName": cluster,
        "principalArn": principal,
        "kubernetesGroups": p.get("kubernetesGroups") or [],
        "accessEntryArn": _entry_arn(ctx, cluster, principal),
        "createdAt": now,
        "modifiedAt": now,
        "tags": p.get("tags") or {},
        "username": p.get("username") or username,
        "type": p.get("type") or "STANDARD",
        "_policies": {},
    }


def _entries(ctx: Ctx, cluster: str) -> dict[str, Any]:
    return ctx.world.table("eks_access_entries", ctx.account, ctx.region)


def _view(e: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in e.items() if not k.startswith("_")}


@handles("eks", "CreateAccessEntry")
def create_entry(ctx: Ctx) -> Response:
    cluster, c = _cluster(ctx)
    _require_api_mode(c)
    p = ctx.params
    principal = p["principalArn"]
    tbl = _entries(ctx, cluster)
    if f"{cluster}/{principal}" in tbl:
        raise AwsError(
            "ResourceInUseException",
            "The specified access entry resource is already in use on this cluster.",
            409,
            {"clusterName": cluster},
        )
    e = make_entry(ctx, cluster, principal, p)
    tbl[f"{cluster}/{principal}"] = e
    return ctx.ok({"accessEntry": _view(e)})


def _entry(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    cluster, _ = _cluster(ctx)
    principal = ctx.req.path_params["principalArn"]
    e = _entries(ctx, cluster).get(f"{cluster}/{principal}")
    if e is None:
        raise AwsError(
            "ResourceNotFoundException",
            "The specified principalArn could not be found. You can view your available access "
            "entries with 'list-access-entries'.",
            404,
            {"clusterName": cluster},
        )
    return cluster, e


@handles("eks", "DescribeAccessEntry")
def describe_entry(ctx: Ctx) -> Response:
    return ctx.ok({"accessEntry": _view(_entry(ctx)[1])})


@handles("eks", "DeleteAccessEntry")
def delete_entry(ctx: Ctx) -> Response:
    cluster, e = _entry(ctx)
    _entries(ctx, cluster).pop(f"{cluster}/{e['principalArn']}")
    return ctx.ok({})


@handles("eks", "ListAccessEntries")
def list_entries(ctx: Ctx) -> Response:
    cluster, _ = _cluster(ctx)
    pol = ctx.req.q("associatedPolicyArn")
    out = [
        e["principalArn"]
        for k, e in _entries(ctx, cluster).items()
        if e["clusterName"] == cluster and (not pol or pol in e["_policies"])
    ]
    return ctx.ok({"accessEntries": sorted(out)})


@handles("eks", "AssociateAccessPolicy")
def associate_policy(ctx: Ctx) -> Response:
    cluster, e = _entry(ctx)
    p = ctx.params
    arn = p["policyArn"]
    if arn not in {policy_arn(n) for n in ACCESS_POLICIES}:
        raise AwsError("ResourceNotFoundException", f"The specified policy {arn} could not be found.", 404)
    now = ctx.world.now()
    prev = e["_policies"].get(arn)
    e["_policies"][arn] = {
        "policyArn": arn,
        "accessScope": p["accessScope"],
        "associatedAt": prev["associatedAt"] if prev else now,
        "modifiedAt": now,
    }
    return ctx.ok(
        {"clusterName": cluster, "principalArn": e["principalArn"], "associatedAccessPolicy": e["_policies"][arn]}
    )


@handles("eks", "ListAssociatedAccessPolicies")
def list_associated(ctx: Ctx) -> Response:
    cluster, e = _entry(ctx)
    return ctx.ok(
        {
            "clusterName": cluster,
            "principalArn": e["principalArn"],
            "associatedAccessPolicies": list(e["_policies"].values()),
        }
    )


@handles("eks", "DisassociateAccessPolicy")
def disassociate(ctx: Ctx) -> Response:
    _, e = _entry(ctx)
    arn = ctx.req.path_params["policyArn"]
    if e["_policies"].pop(arn, None) is None:
        raise AwsError("ResourceNotFoundException", f"The specified policy {arn} is not associated.", 404)
    return ctx.ok({})


@handles("eks", "ListAccessPolicies")
def list_policies(ctx: Ctx) -> Response:
    return ctx.ok({"accessPolicies": [{"name": n, "arn": policy_arn(n)} for n in ACCESS_POLICIES]})
