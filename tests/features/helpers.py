"""Helpers of the features tests: an active cluster, mutating call counts, what features left behind."""

from __future__ import annotations

from kubernetes import client as k8s

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from tests.clusters.helpers import cluster_body, sandbox_calls, wait_for_operation

READS = ("Describe", "List", "Get")


def active_cluster(api, name: str = "feat", **extra) -> Cluster:
    body = api.post("/api/v1/clusters/", cluster_body(name, **extra), format="json").json()
    wait_for_operation(body["operation"]["id"])
    return Cluster.objects.get(pk=body["cluster"]["id"])


def mutating_calls(sandbox, team) -> dict[str, int]:
    calls = sandbox_calls(sandbox, team.sandbox_account_id)
    return {a: n for a, n in calls.items() if not a.split(":", 1)[1].startswith(READS)}


def features_of(api, cluster) -> dict[str, dict]:
    response = api.get(f"/api/v1/clusters/{cluster.pk}/features/")
    assert response.status_code == 200, response.json()
    return {f["name"]: f for f in response.json()["features"]}


def leftovers(team, cluster) -> dict[str, list[str]]:
    """Everything tagged or labelled with a feature that still exists."""
    cloud = team_cloud(team, cluster.region)
    iam, eks = cloud.client("iam"), cloud.client("eks")
    roles = []
    for role in iam.list_roles()["Roles"]:
        tags = iam.list_role_tags(RoleName=role["RoleName"])["Tags"]
        if any(t["Key"] == "instantstart:feature" for t in tags):
            roles.append(role["RoleName"])
    associations = []
    for a in eks.list_pod_identity_associations(clusterName=cluster.eks_cluster_name)["associations"]:
        tags = eks.list_tags_for_resource(resourceArn=a["associationArn"]).get("tags", {})
        if "instantstart:feature" in tags:
            associations.append(f"{a['namespace']}/{a['serviceAccount']}")
    addons = []
    for name in eks.list_addons(clusterName=cluster.eks_cluster_name)["addons"]:
        tags = eks.describe_addon(clusterName=cluster.eks_cluster_name, addonName=name)["addon"].get("tags", {})
        if "instantstart:feature" in tags:
            addons.append(name)
    api = api_client(cloud, cluster.eks_cluster_name, cluster.region)
    selector = "instantstart.io/feature"
    kube = [
        f"crd/{c.metadata.name}"
        for c in k8s.ApiextensionsV1Api(api).list_custom_resource_definition(label_selector=selector).items
    ]
    kube += [f"namespace/{n.metadata.name}" for n in k8s.CoreV1Api(api).list_namespace(label_selector=selector).items]
    kube += [
        f"deployment/{d.metadata.namespace}/{d.metadata.name}"
        for d in k8s.AppsV1Api(api).list_deployment_for_all_namespaces(label_selector=selector).items
    ]
    kube += [
        f"serviceaccount/{s.metadata.namespace}/{s.metadata.name}"
        for s in k8s.CoreV1Api(api).list_service_account_for_all_namespaces(label_selector=selector).items
    ]
    return {k: v for k, v in {"iam": roles, "pod_identity": associations, "addons": addons, "kube": kube}.items() if v}
