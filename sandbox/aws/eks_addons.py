"""EKS add-ons (moto has none): CreateAddon / DescribeAddon / ListAddons / UpdateAddon / DeleteAddon /
DescribeAddonVersions / DescribeAddonConfiguration, with CREATING -> ACTIVE timing, configuration
values checked against the add-on's schema, add-on-owned pod identity associations, the
dependencies AWS enforces (the HyperPod operators need cert-manager; inference also needs the S3 and
FSx CSI drivers and metrics-server), and the failure faults `addon_create_failed` / `addon_degraded`.

The catalog lives in eks_addon_catalog.py; what each add-on runs inside the cluster, in sandbox/kube.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import jsonschema
import yaml

from sandbox.aws.eks_access import new_pod_identity
from sandbox.aws.eks_addon_catalog import CATALOG, K8S_VERSIONS, AddonSpec, Dependency, versions_for
from sandbox.aws.eks_clusters import moto_cluster, require_active_cluster
from sandbox.aws.eks_update_log import record_update, view
from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World

# statuses in which an add-on's software runs in the cluster (and satisfies a dependency)
RUNNING = ("ACTIVE", "UPDATING", "DEGRADED")
DEGRADED_REPLICAS = (
    "InsufficientNumberOfReplicas",
    "The add-on is unhealthy because it doesn't have the desired number of replicas.",
)


def _not_found(cluster: str, addon: str) -> AwsError:
    return AwsError(
        "ResourceNotFoundException",
        f"No addon: {addon} found in cluster: {cluster}",
        404,
        {"clusterName": cluster, "addonName": addon},
    )


def _invalid(message: str, cluster: str | None = None, addon: str | None = None) -> AwsError:
    extra = {k: v for k, v in (("clusterName", cluster), ("addonName", addon)) if v}
    return AwsError("InvalidParameterException", message, 400, extra)


def _view(a: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in a.items() if not k.startswith("_")}


def _spec(name: str, cluster: str | None = None) -> AddonSpec:
    spec = CATALOG.get(name)
    if spec is None:
        raise _invalid(f"Addon {name} specified is not supported", cluster, name)
    return spec


def parse_configuration(spec: AddonSpec, raw: str | None, cluster: str | None = None) -> dict[str, Any]:
    """configurationValues (JSON or YAML) checked against the add-on's schema, as EKS does."""
    if raw is None or raw == "":
        values: Any = {}
    else:
        try:
            values = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise _invalid("ConfigurationValue is not in valid JSON or YAML format.", cluster, spec.name) from None
        if values is None:
            values = {}
    errors = sorted(jsonschema.Draft7Validator(spec.schema).iter_errors(values), key=lambda e: list(e.absolute_path))
    if errors:
        parts = []
        for e in errors:
            path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
            if e.validator == "additionalProperties":
                extra = sorted(set(e.instance) - set(e.schema.get("properties", {})))
                parts += [
                    f"{path}.{k}: is not defined in the schema and the schema does not allow additional properties"
                    for k in extra
                ]
            elif e.validator == "required":
                parts.append(f"{path}.{e.message.split(chr(39))[1]}: is missing but it is required")
            else:
                parts.append(f"{path}: {e.message}")
        if raw in (None, "") and spec.requires_configuration:
            raise _invalid(
                f"Addon {spec.name} requires configuration values. Json schema validation failed with error: "
                f"[{', '.join(parts)}]",
                cluster,
                spec.name,
            )
        raise _invalid(
            "ConfigurationValue provided in request is not supported: Json schema validation failed with error: "
            f"[{', '.join(parts)}]",
            cluster,
            spec.name,
        )
    return values if isinstance(values, dict) else {}


def _check_pod_identity(spec: AddonSpec, version: str, pias: list[dict[str, Any]], cluster: str) -> None:
    if not pias:
        return
    if not spec.requires_iam(version):
        raise _invalid(f"Pod Identity feature is not supported for addon version: {version}", cluster, spec.name)
    allowed = {sa for sa, _ in spec.pod_identity}
    for pia in pias:
        if pia.get("serviceAccount") not in allowed:
            raise _invalid(
                f"ServiceAccount {pia.get('serviceAccount')} is not supported by addon {spec.name}. "
                f"Supported service accounts: {', '.join(sorted(allowed))}",
                cluster,
                spec.name,
            )


def _own_associations(ctx: Ctx, addon: dict[str, Any], pias: list[dict[str, Any]]) -> list[str]:
    namespace = (addon.get("namespaceConfig") or {}).get("namespace") or CATALOG[addon["addonName"]].namespace
    arns = []
    for pia in pias:
        a = new_pod_identity(
            ctx, addon["clusterName"], namespace, pia["serviceAccount"], pia["roleArn"], {}, owner=addon["addonArn"]
        )
        arns.append(a["associationArn"])
    return arns


def _drop_associations(world: World, account: str, region: str, owner_arn: str, keep: set[str] = frozenset()) -> None:
    """The associations an add-on created go with it (those created on their own stay)."""
    tbl = world.table("eks_pod_identity", account, region)
    for k in [k for k, a in tbl.items() if a.get("ownerArn") == owner_arn and a["serviceAccount"] not in keep]:
        tbl.pop(k)


@handles("eks", "DescribeAddonVersions")
def describe_addon_versions(ctx: Ctx) -> Response:
    k8s = ctx.req.q("kubernetesVersion")
    name = ctx.req.q("addonName")
    types = ctx.req.query.get("types", [])
    out = []
    for addon, spec in CATALOG.items():
        if name and name != addon or types and spec.type not in types:
            continue
        versions = []
        for i, v in enumerate(spec.versions):
            version = v.format(k8s=k8s or K8S_VERSIONS[1])
            compat = [
                {"clusterVersion": kv, "platformVersions": ["*"], "defaultVersion": i == 0}
                for kv in ([k8s] if k8s else K8S_VERSIONS)
            ]
            versions.append(
                {
                    "addonVersion": version,
                    "architecture": ["amd64", "arm64"],
                    "computeTypes": ["ec2", "hyperpod"],
                    "compatibilities": compat,
                    "requiresConfiguration": spec.requires_configuration,
                    "requiresIamPermissions": spec.requires_iam(version),
                }
            )
        out.append(
            {
                "addonName": addon,
                "type": spec.type,
                "addonVersions": versions,
                "publisher": spec.publisher,
                "owner": spec.owner,
                "defaultNamespace": spec.namespace,
            }
        )
    return ctx.ok({"addons": out})


@handles("eks", "DescribeAddonConfiguration")
def describe_addon_configuration(ctx: Ctx) -> Response:
    name = ctx.req.q("addonName") or ""
    version = ctx.req.q("addonVersion") or ""
    spec = CATALOG.get(name)
    if spec is None:
        raise AwsError("ResourceNotFoundException", f"Addon {name} not found", 404, {"addonName": name})
    if version not in {v.format(k8s=k) for v in spec.versions for k in K8S_VERSIONS}:
        raise _invalid(f"Addon version {version} specified is not supported for addon {name}", addon=name)
    pod_identity = [
        {"serviceAccount": sa, "recommendedManagedPolicies": list(policies)}
        for sa, policies in spec.pod_identity
        if spec.requires_iam(version)
    ]
    return ctx.ok(
        {
            "addonName": name,
            "addonVersion": version,
            "configurationSchema": json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", **spec.schema}),
            "podIdentityConfiguration": pod_identity,
        }
    )


@handles("eks", "CreateAddon")
def create_addon(ctx: Ctx) -> Response:
    cluster_name = ctx.req.path_params["name"]
    cluster = require_active_cluster(ctx, cluster_name)
    p = ctx.params
    name = p.get("addonName", "")
    spec = _spec(name, cluster_name)
    k8s = str(cluster.version)
    allowed = versions_for(name, k8s)
    version = p.get("addonVersion") or allowed[0]
    if version not in allowed:
        raise _invalid(
            f"Addon version specified is not supported for addon {name} on Kubernetes {k8s}", cluster_name, name
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
    config = parse_configuration(spec, p.get("configurationValues"), cluster_name)
    pias = p.get("podIdentityAssociations") or []
    _check_pod_identity(spec, version, pias, cluster_name)
    now = ctx.world.now()
    addon: dict[str, Any] = {
        "addonName": name,
        "clusterName": cluster_name,
        "status": "CREATING",
        "addonVersion": version,
        "health": {"issues": []},
        "addonArn": f"arn:aws:eks:{ctx.region}:{ctx.account}:addon/{cluster_name}/{name}/{uuid.uuid4()}",
        "createdAt": now,
        "modifiedAt": now,
        "tags": p.get("tags") or {},
        "publisher": spec.publisher,
        "owner": spec.owner,
        "podIdentityAssociations": [],
    }
    for k in ("serviceAccountRoleArn", "configurationValues", "namespaceConfig"):
        if p.get(k):
            addon[k] = p[k]
    addon["podIdentityAssociations"] = _own_associations(ctx, addon, pias)
    match = {"addon": name, "cluster": cluster_name, "account": ctx.account}
    fault = ctx.world.faults.take("addon_create_failed", **match) or ctx.world.faults.take(
        "create_fails", service="eks", name=name, account=ctx.account
    )
    addon["_config"] = config
    addon["_due"] = ctx.world.due("addon_create")
    addon["_fail"] = _fault_issue(fault, spec) if fault else None
    tbl[key] = addon
    ctx.world.table("eks_addons_preserved", ctx.account, ctx.region).pop(key, None)
    return ctx.ok({"addon": _view(addon)})


def _fault_issue(fault: dict[str, Any], spec: AddonSpec) -> dict[str, Any]:
    if fault["kind"] == "addon_degraded":
        code, message = DEGRADED_REPLICAS
    else:
        code = "ConfigurationConflict"
        message = (
            "Conflicts found when trying to apply. Will not continue due to resolve conflicts mode. Conflicts:\n"
            f"ServiceAccount {spec.namespace}/{spec.name} - .metadata.labels"
        )
    return {"code": fault.get("code") or code, "message": fault.get("message") or message, "resourceIds": []}


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
    spec = CATALOG[name]
    p = ctx.params
    params = []
    version = addon["addonVersion"]
    if p.get("addonVersion"):
        k8s = str(moto_cluster(ctx.account, ctx.region, cluster_name).version)
        if p["addonVersion"] not in versions_for(name, k8s):
            raise _invalid(f"Addon version specified is not supported for addon {name}", cluster_name, name)
        version = p["addonVersion"]
        params.append({"type": "AddonVersion", "value": version})
    config = addon.get("_config", {})
    if "configurationValues" in p:
        config = parse_configuration(spec, p["configurationValues"], cluster_name)
    pias = p.get("podIdentityAssociations")
    if pias is not None:
        _check_pod_identity(spec, version, pias, cluster_name)
    # validated: now change
    addon["addonVersion"], addon["_config"] = version, config
    for key, ptype in (
        ("serviceAccountRoleArn", "ServiceAccountRoleArn"),
        ("configurationValues", "ConfigurationValues"),
        ("resolveConflicts", "ResolveConflicts"),
    ):
        if key in p:
            if key != "resolveConflicts":
                addon[key] = p[key]
            params.append({"type": ptype, "value": str(p[key])})
    if pias is not None:
        # the add-on's associations become exactly the requested ones
        keep = {x["serviceAccount"] for x in pias}
        _drop_associations(ctx.world, ctx.account, ctx.region, addon["addonArn"], keep)
        existing = {
            a["serviceAccount"]
            for a in ctx.world.table("eks_pod_identity", ctx.account, ctx.region).values()
            if a.get("ownerArn") == addon["addonArn"]
        }
        _own_associations(ctx, addon, [x for x in pias if x["serviceAccount"] not in existing])
        addon["podIdentityAssociations"] = sorted(
            a["associationArn"]
            for a in ctx.world.table("eks_pod_identity", ctx.account, ctx.region).values()
            if a.get("ownerArn") == addon["addonArn"]
        )
        params.append({"type": "PodIdentityAssociations", "value": json.dumps(pias)})
    addon["status"] = "UPDATING"
    addon["modifiedAt"] = ctx.world.now()
    addon["_due"] = ctx.world.due("addon_update")
    addon["_fail"] = None
    addon["_degraded_by"] = None
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
        addon["_preserve"] = (ctx.req.q("preserve") or "").lower() == "true"
        _drop_associations(ctx.world, ctx.account, ctx.region, addon["addonArn"])
        addon["podIdentityAssociations"] = []
    return ctx.ok({"addon": _view(addon)})


def _present(world: World, account: str, region: str, cluster: str, dep: Dependency) -> bool | None:
    """True when the dependency runs in the cluster, None while its add-on is still being created."""
    d = world.table("eks_addons", account, region).get(f"{cluster}/{dep.addon}")
    if d is not None and d["status"] in RUNNING:
        return True
    report = world.kube_reports.get(f"{account}/{region}/{cluster}") or {}
    kind, name = dep.kube
    if name in (report.get({"crd": "crds", "csidriver": "csi_drivers", "deployment": "deployments"}[kind]) or ()):
        return True  # installed some other way (Helm, kubectl): it counts, as the add-on only checks the cluster
    if d is not None and d["status"] == "CREATING":
        return None
    return False


def _missing(world: World, account: str, region: str, a: dict[str, Any]) -> list[dict[str, Any]] | None:
    out = []
    for dep in CATALOG[a["addonName"]].requires:
        here = _present(world, account, region, a["clusterName"], dep)
        if here is None:
            return None
        if not here:
            out.append({"code": dep.code, "message": dep.message, "resourceIds": []})
    return out


def tick_addons(world: World) -> None:
    now = world.now()
    for account, region, tbl in world.tables("eks_addons"):
        for key, a in list(tbl.items()):
            cluster = moto_cluster(account, region, a["clusterName"])
            if a["status"] in ("ACTIVE", "DEGRADED") and cluster is not None:
                _watch_health(world, account, region, a, now)
            if a.get("_due") is None or now < a["_due"]:
                continue
            if cluster is None or a["status"] == "DELETING":
                tbl.pop(key)
                if cluster is not None and a.get("_preserve"):
                    world.table("eks_addons_preserved", account, region)[key] = a.get("_config", {})
                world.touch()
                continue
            if a["status"] == "CREATING" and not a.get("_fail"):
                missing = _missing(world, account, region, a)
                if missing is None:
                    continue  # a dependency is still coming up: wait for it, as the operator's pods would
                if missing:
                    a["_fail"] = missing
            a["_due"] = None
            world.touch()
            if a["status"] == "CREATING" and a.get("_fail"):
                fail = a["_fail"]
                a["status"] = "CREATE_FAILED"
                a["health"] = {"issues": fail if isinstance(fail, list) else [fail]}
            elif a["status"] in ("CREATING", "UPDATING"):
                a["status"], a["health"] = "ACTIVE", {"issues": []}
                _watch_health(world, account, region, a, now)
            a["modifiedAt"] = now


def _watch_health(world: World, account: str, region: str, a: dict[str, Any], now: float) -> None:
    """ACTIVE <-> DEGRADED while the add-on runs: a degrade fault, or a dependency that went away."""
    if a.get("_degraded_by") == "fault":
        return  # stays DEGRADED until updated or re-created
    match = {"addon": a["addonName"], "cluster": a["clusterName"], "account": account}
    fault = world.faults.take("addon_degraded", **match)
    if fault:
        a["status"], a["_degraded_by"] = "DEGRADED", "fault"
        a["health"] = {"issues": [_fault_issue(fault, CATALOG[a["addonName"]])]}
        a["modifiedAt"] = now
        world.touch()
        return
    if f"{account}/{region}/{a['clusterName']}" not in world.kube_reports:
        return  # nothing observed yet (e.g. just restarted): no verdict on dependencies
    missing = _missing(world, account, region, a) or []
    if missing and a["status"] == "ACTIVE":
        a["status"], a["_degraded_by"], a["health"] = "DEGRADED", "dependency", {"issues": missing}
    elif not missing and a.get("_degraded_by") == "dependency":
        a["status"], a["_degraded_by"], a["health"] = "ACTIVE", None, {"issues": []}
    else:
        return
    a["modifiedAt"] = now
    world.touch()


def kube_addons(world: World, account: str, region: str, cluster: str) -> dict[str, dict[str, Any] | None]:
    """What the Kubernetes half runs: add-on name -> its configuration values, or None for an add-on
    deleted with preserve=true (its software stays in the cluster, no longer managed)."""
    tbl = world.table("eks_addons", account, region)
    out: dict[str, dict[str, Any] | None] = {
        k.split("/", 1)[1]: None
        for k in world.table("eks_addons_preserved", account, region)
        if k.split("/", 1)[0] == cluster
    }
    for k, a in tbl.items():
        if k.split("/", 1)[0] == cluster and a["status"] in RUNNING:
            out[a["addonName"]] = dict(a.get("_config") or {})
    return out


def active_addons(world: World, account: str, region: str, cluster: str) -> set[str]:
    return {name for name, config in kube_addons(world, account, region, cluster).items() if config is not None}
