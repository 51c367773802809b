"""The actual state of every feature of a cluster, read now from AWS and Kubernetes.

One read of each resource per call, in parallel: ListAddons + DescribeAddon per catalog add-on
present, one ListPodIdentityAssociations, one GetRole per identity, one CRD list, the Helm
releases' Deployments, one DescribeCluster (HyperPod). Nothing here writes.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kubernetes import client as k8s

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from instantstart.errors import cloud_read

from ..catalog import CATALOG, Feature, association_target, role_name
from ..charts import HELM_RELEASES

# EKS add-on status -> feature status
_ADDON_STATUS = {
    "ACTIVE": "enabled",
    "CREATING": "enabling",
    "UPDATING": "enabling",
    "DELETING": "disabling",
    "CREATE_FAILED": "failed",
    "DELETE_FAILED": "failed",
    "UPDATE_FAILED": "failed",
    "DEGRADED": "degraded",
}


@dataclass
class Actual:
    """What one feature is in the cloud right now."""

    enabled: bool = False
    status: str = "disabled"  # enabled | disabled | enabling | disabling | failed | degraded
    detail: str = ""
    settings: dict = field(default_factory=dict)
    pieces: dict = field(default_factory=dict)  # what exists: addon, role, association, ...


@dataclass
class ClusterState:
    """Everything read for one cluster (kept so the service can diff and the steps can skip)."""

    features: dict[str, Actual]
    hyperpod: dict | None = None  # DescribeCluster, when the cluster has a HyperPod cluster


def _cloud(cluster: Cluster):
    return team_cloud(cluster.team, cluster.region)


def _addons(eks, name: str) -> dict[str, dict]:
    wanted = {f.addon for f in CATALOG.values() if f.addon}
    listed = [a for a in eks.list_addons(clusterName=name).get("addons", []) if a in wanted]

    def describe(addon: str) -> dict | None:
        try:
            return eks.describe_addon(clusterName=name, addonName=addon)["addon"]
        except eks.exceptions.ResourceNotFoundException:  # deleted between the list and the describe
            return None

    with ThreadPoolExecutor(max_workers=4) as pool:
        described = list(pool.map(describe, listed))
    return {a["addonName"]: a for a in described if a is not None}


def _associations(eks, name: str) -> dict[tuple[str, str], dict]:
    found: dict[tuple[str, str], dict] = {}
    kwargs: dict = {"clusterName": name}
    while True:
        page = eks.list_pod_identity_associations(**kwargs)
        for a in page.get("associations", []):
            found[(a["namespace"], a["serviceAccount"])] = a
        if not page.get("nextToken"):
            return found
        kwargs["nextToken"] = page["nextToken"]


def _role(iam, name: str) -> dict | None:
    try:
        return iam.get_role(RoleName=name)["Role"]
    except iam.exceptions.NoSuchEntityException:
        return None


def _kube(cluster: Cluster, cloud) -> tuple[set[str], dict[str, dict | None]]:
    api = api_client(cloud, cluster.eks_cluster_name, cluster.region)
    crds = {c.metadata.name for c in k8s.ApiextensionsV1Api(api).list_custom_resource_definition().items}
    apps = k8s.AppsV1Api(api)
    deployments: dict[str, dict | None] = {}
    for release, chart in HELM_RELEASES.items():
        try:
            d = apps.read_namespaced_deployment(chart.deployment, chart.namespace)
            deployments[release] = {"ready": (d.status.ready_replicas or 0) > 0}
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
            deployments[release] = None
    return crds, deployments


def _hyperpod(sagemaker, cluster: Cluster) -> dict | None:
    if not cluster.hyperpod_cluster_name:
        return None
    try:
        return sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    except sagemaker.exceptions.ResourceNotFound:
        return None


@cloud_read()
def read_state(cluster: Cluster) -> ClusterState:
    """The actual state of every catalog entry on ``cluster``."""
    cloud = _cloud(cluster)
    eks = cloud.client("eks")
    iam = cloud.client("iam")
    sagemaker = cloud.client("sagemaker")
    name = cluster.eks_cluster_name
    roles = [f for f in CATALOG.values() if f.identity is not None]
    with ThreadPoolExecutor(max_workers=6) as pool:
        addons_f = pool.submit(_addons, eks, name)
        assoc_f = pool.submit(_associations, eks, name)
        kube_f = pool.submit(_kube, cluster, cloud)
        hp_f = pool.submit(_hyperpod, sagemaker, cluster)
        role_fs = {f.name: pool.submit(_role, iam, role_name(cluster, f)) for f in roles}
        addons, associations = addons_f.result(), assoc_f.result()
        crds, deployments = kube_f.result()
        hyperpod = hp_f.result()
        found_roles = {n: fut.result() for n, fut in role_fs.items()}
    features = {
        f.name: _actual(cluster, f, addons, associations, found_roles.get(f.name), crds, deployments, hyperpod)
        for f in CATALOG.values()
    }
    return ClusterState(features=features, hyperpod=hyperpod)


def _identity_missing(cluster: Cluster, f: Feature, associations, role) -> list[str]:
    if f.identity is None:
        return []
    missing = [] if role is not None else [f"IAM role {role_name(cluster, f)}"]
    target = association_target(cluster, f)
    if target is not None and target not in associations:
        missing.append(f"pod identity association {target[0]}/{target[1]}")
    return missing


def _actual(cluster, f: Feature, addons, associations, role, crds, deployments, hyperpod) -> Actual:
    pieces = {"role": role["Arn"] if role else None}
    target = association_target(cluster, f)
    if target is not None:
        pieces["association"] = (associations.get(target) or {}).get("associationId")
    if f.addon:
        addon = addons.get(f.addon)
        if addon is None:
            return Actual(pieces={**pieces, "addon": None})
        pieces["addon"] = addon["status"]
        status = _ADDON_STATUS.get(addon["status"], "failed")
        issues = (addon.get("health") or {}).get("issues") or []
        detail = f"EKS add-on {f.addon} is {addon['status']}" + (f": {issues[0].get('message')}" if issues else "")
        actual = Actual(enabled=status in ("enabled", "degraded"), status=status, detail=detail, pieces=pieces)
        return _with_identity(cluster, f, actual, associations, role)
    if f.helm:
        chart = HELM_RELEASES[f.helm]
        deployment = deployments.get(f.helm)
        served = all(crd in crds for crd in chart.crd_names)
        pieces.update(deployment=deployment is not None, crds=served)
        if deployment is None and not served:
            return Actual(pieces=pieces)
        if deployment is None or not served:
            what = "its CRDs are not served" if deployment is not None else f"Deployment {chart.deployment} is missing"
            return Actual(enabled=False, status="degraded", detail=f"{f.title}: {what}", pieces=pieces)
        actual = Actual(enabled=True, status="enabled", detail=f"Deployment {chart.namespace}/{chart.deployment}")
        actual.pieces = pieces
        if not deployment["ready"]:
            actual.status, actual.detail = "degraded", f"Deployment {chart.deployment} has no ready replica"
        return _with_identity(cluster, f, actual, associations, role)
    if f.name == "tiered_checkpointing":
        config = (hyperpod or {}).get("TieredStorageConfig") or {}
        if config.get("Mode") != "Enable":
            return Actual(pieces=pieces)
        settings = {"memory_percent": config.get("InstanceMemoryAllocationPercentage")}
        actual = Actual(enabled=True, status="enabled", detail="TieredStorageConfig Mode Enable", settings=settings)
        actual.pieces = pieces
        if (hyperpod or {}).get("ClusterStatus") == "Updating":
            actual.status = "enabling"
        return _with_identity(cluster, f, actual, associations, role)
    if f.name == "autoscaling":
        return _autoscaling(cluster, f, hyperpod, pieces, associations, role)
    return Actual(pieces=pieces)


_AUTOSCALING_STATUS = {"InService": "enabled", "Creating": "enabling", "Deleting": "disabling", "Failed": "failed"}


def _autoscaling(cluster, f: Feature, hyperpod, pieces, associations, role) -> Actual:
    config = (hyperpod or {}).get("AutoScaling") or {}
    if not config:
        return Actual(pieces=pieces)
    status = _AUTOSCALING_STATUS.get(config.get("Status", ""), "failed")
    if config.get("Mode") != "Enable":
        status = "disabling" if config.get("Status") == "Deleting" else "disabled"
    detail = f"AutoScaling {config.get('Mode')} ({config.get('Status')})"
    if config.get("FailureMessage"):
        detail += f": {config['FailureMessage']}"
    actual = Actual(enabled=status == "enabled", status=status, detail=detail, pieces={**pieces, "autoscaling": True})
    return _with_identity(cluster, f, actual, associations, role)


def _with_identity(cluster, f: Feature, actual: Actual, associations, role) -> Actual:
    missing = _identity_missing(cluster, f, associations, role)
    if missing and actual.status == "enabled":
        actual.status = "degraded"
        actual.detail = f"{actual.detail}; missing {', '.join(missing)}"
    return actual
